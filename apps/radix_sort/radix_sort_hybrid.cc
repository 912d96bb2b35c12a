// radix_sort_hybrid: parallel LSD radix sort with OpenSHMEM and FAM side by side, the seed
// paper's hybrid mode (README.md). What the paper's Fig. 12 moves to disaggregated memory is
// in FAM, as items of the region "radix_sort": the input keys (phase 0), the global histogram
// (phase 3), the send counts (phase 6) and the sorted output. Everything else stays on the
// symmetric heap, and the PEs synchronize with shmem_barrier_all.
//
// Before the clock starts, the PEs store the generated keys in the FAM item "keys", the way
// the SHMEM-only version writes its input file.
#include <shmem.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "appkit/app.h"
#include "radix_sort/radix_sort.h"

using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

const char *kUsage =
    "radix_sort_hybrid: LSD radix sort over OpenSHMEM + FAM; input, global histogram, send\n"
    "counts and output in FAM (region \"radix_sort\")\n"
    "  oshrun -np N radix_sort_hybrid [options]\n"
    "  fampool run -n N radix_sort_hybrid [options]\n";
const char *kRegion = "radix_sort";
constexpr uint64_t kChunk = uint64_t{1} << 20;  // bytes per non-blocking get or put
constexpr uint64_t kCheckSums = 8;              // words of summed fingerprints in "check"

// The FAM items of the sort.
struct Items {
    Fam_Descriptor *keys = nullptr;       // the input, keys words
    Fam_Descriptor *output = nullptr;     // the sorted keys, keys words
    Fam_Descriptor *histogram = nullptr;  // buckets x npes words, digit-major
    Fam_Descriptor *counts = nullptr;     // npes x npes words: counts[p * npes + q]
    Fam_Descriptor *check = nullptr;      // kCheckSums words, then (count, first, last) per PE
};

// The hybrid version's global histogram (phase 3) and send counts (phase 6), through FAM.
class FamExchange : public radix::Exchange {
  public:
    FamExchange(openfam::fam *fam, const Items &items, const radix::Config &config,
                const apps::Pe &pe)
        : fam_(fam), items_(items), config_(config), pe_(pe) {}

    // Each PE writes its histogram into its column of the digit-major matrix with one strided
    // scatter; after the barrier one get brings the whole matrix (2 calls per PE, where the
    // SHMEM-only version makes npes - 1 gets).
    void GlobalHistogram(const uint64_t *local, std::vector<uint64_t> *matrix) override {
        fam_->fam_scatter_blocking(const_cast<uint64_t *>(local), items_.histogram,
                                   config_.Buckets(), pe_.rank, pe_.count, sizeof(uint64_t));
        shmem_barrier_all();
        fam_->fam_get_blocking(matrix->data(), items_.histogram, 0,
                               matrix->size() * sizeof(uint64_t));
    }

    // Each PE writes its row of the count matrix, waits for it with fam_quiet and meets the
    // others at the barrier; then one get reads the whole matrix, because a PE needs the
    // columns (what the PEs before it send to each PE) for its send displacements as well as
    // its own column (its receive counts).
    void SendCounts(const std::vector<uint64_t> &row, std::vector<uint64_t> *counts) override {
        const uint64_t npes = pe_.count;
        fam_->fam_put_nonblocking(const_cast<uint64_t *>(row.data()), items_.counts,
                                  pe_.rank * npes * sizeof(uint64_t), npes * sizeof(uint64_t));
        fam_->fam_quiet();
        shmem_barrier_all();
        fam_->fam_get_blocking(counts->data(), items_.counts, 0, npes * npes * sizeof(uint64_t));
    }

  private:
    openfam::fam *fam_;
    Items items_;
    radix::Config config_;
    apps::Pe pe_;
};

// Moves `bytes` between `buffer` and `item` at `offset` in non-blocking pieces of kChunk,
// so that the pieces of an interleaved item travel to their memory servers together.
void Transfer(openfam::fam &fam, bool put, Fam_Descriptor *item, void *buffer, uint64_t bytes,
              uint64_t offset) {
    char *at = static_cast<char *>(buffer);
    for (uint64_t done = 0; done < bytes; done += kChunk) {
        uint64_t size = std::min(kChunk, bytes - done);
        if (put) {
            fam.fam_put_nonblocking(at + done, item, offset + done, size);
        } else {
            fam.fam_get_nonblocking(at + done, item, offset + done, size);
        }
    }
    fam.fam_quiet();
}

// The check through FAM: the fingerprints are summed (and xor-ed) with FAM atomics into
// "check", each PE puts its block's length and ends beside them, and every PE reads it all.
int CheckThroughFam(openfam::fam &fam, const Items &items, const radix::Config &config,
                    const apps::Pe &pe, const std::vector<uint64_t> &stored) {
    radix::BlockCheck mine = radix::CheckBlock(config, pe, stored);
    fam.fam_add(items.check, 0 * sizeof(uint64_t), mine.in_sum);
    fam.fam_xor(items.check, 1 * sizeof(uint64_t), mine.in_xor);
    fam.fam_add(items.check, 2 * sizeof(uint64_t), mine.out_sum);
    fam.fam_xor(items.check, 3 * sizeof(uint64_t), mine.out_xor);
    fam.fam_add(items.check, 4 * sizeof(uint64_t), mine.descents);
    uint64_t ends[3] = {mine.count, mine.first, mine.last};
    fam.fam_put_blocking(ends, items.check, (kCheckSums + 3 * pe.rank) * sizeof(uint64_t),
                         sizeof ends);
    fam.fam_quiet();
    shmem_barrier_all();
    std::vector<uint64_t> words(kCheckSums + 3 * pe.count);
    fam.fam_get_blocking(words.data(), items.check, 0, words.size() * sizeof(uint64_t));
    radix::BlockCheck total;
    total.in_sum = words[0];
    total.in_xor = words[1];
    total.out_sum = words[2];
    total.out_xor = words[3];
    total.descents = words[4];
    std::vector<radix::BlockCheck> blocks(pe.count);
    for (uint64_t p = 0; p < pe.count; ++p) {
        blocks[p].count = words[kCheckSums + 3 * p];
        blocks[p].first = words[kCheckSums + 3 * p + 1];
        blocks[p].last = words[kCheckSums + 3 * p + 2];
    }
    return radix::Judge(config, pe, total, blocks);
}

// Everything between fam_initialize and fam_finalize; returns the exit status.
int Run(openfam::fam &fam, const radix::Config &config, const apps::Pe &pe) {
    const std::string model = apps::ModelOf(fam);
    const uint64_t key_bytes = config.keys * sizeof(uint64_t);
    const uint64_t histogram_bytes = config.Buckets() * pe.count * sizeof(uint64_t);
    const uint64_t counts_bytes = pe.count * pe.count * sizeof(uint64_t);
    const uint64_t check_bytes = (kCheckSums + 3 * pe.count) * sizeof(uint64_t);
    // Items are rounded up to whole stripes on interleaved regions: room for that.
    uint64_t region_bytes = 2 * key_bytes + histogram_bytes + counts_bytes + check_bytes;
    region_bytes += region_bytes / 8 + (uint64_t{16} << 20);

    Fam_Region_Descriptor *region = apps::FreshRegion(fam, pe, kRegion, region_bytes);
    Items items;
    items.keys = apps::SharedItem(fam, pe, region, "keys", key_bytes);
    items.output = apps::SharedItem(fam, pe, region, "output", key_bytes);
    items.histogram = apps::SharedItem(fam, pe, region, "histogram", histogram_bytes);
    items.counts = apps::SharedItem(fam, pe, region, "counts", counts_bytes);
    items.check = apps::SharedItem(fam, pe, region, "check", check_bytes);

    int status = 0;
    {
        FamExchange exchange(&fam, items, config, pe);
        radix::Sorter sorter(config, pe, &exchange);
        const uint64_t begin = pe.BlockBegin(config.keys);
        const uint64_t offset = begin * sizeof(uint64_t);
        const uint64_t bytes = sorter.Count() * sizeof(uint64_t);

        // Untimed: the input into FAM, staged in the (then cleared) key buffer.
        uint64_t *keys = sorter.Keys();
        for (uint64_t i = 0; i < sorter.Count(); ++i) keys[i] = radix::KeyAt(config, begin + i);
        Transfer(fam, true, items.keys, keys, bytes, offset);
        std::memset(keys, 0, bytes);

        radix::PhaseTimes times;
        shmem_barrier_all();
        apps::Timer total;
        apps::Timer phase;
        Transfer(fam, false, items.keys, keys, bytes, offset);
        times.seconds[radix::kInput] = phase.Seconds();

        sorter.Sort(&times);

        phase.Restart();
        Transfer(fam, true, items.output, sorter.Keys(), bytes, offset);
        times.seconds[radix::kOutput] = phase.Seconds();
        shmem_barrier_all();
        double seconds = total.Seconds();
        radix::Report("hybrid", model, config, pe, times, seconds);

        // The check reads back what the output item holds.
        std::vector<uint64_t> stored(sorter.Count());
        Transfer(fam, false, items.output, stored.data(), bytes, offset);
        status = CheckThroughFam(fam, items, config, pe, stored);
    }

    shmem_barrier_all();  // every PE is done with the region
    for (Fam_Descriptor *item :
         {items.keys, items.output, items.histogram, items.counts, items.check}) {
        delete item;
    }
    if (pe.first()) fam.fam_destroy_region(region);
    delete region;
    return status;
}

}  // namespace

int main(int argc, char **argv) {
    std::string usage = std::string(kUsage) + radix::kCommonUsage;
    apps::Args args(argc, argv, usage.c_str());
    radix::Config config = radix::ConfigOf(args);

    shmem_init();
    apps::Pe pe = radix::ShmemPe();
    int status = 1;
    openfam::fam fam;
    try {
        Fam_Options options;
        std::memset(&options, 0, sizeof options);
        fam.fam_initialize("default", &options);
        apps::Pe fam_pe = apps::PeOf(fam);
        if (fam_pe.rank != pe.rank || fam_pe.count != pe.count) {
            radix::Fail(pe, "fampool sees PE " + std::to_string(fam_pe.rank) + " of " +
                                std::to_string(fam_pe.count) + ", OpenSHMEM PE " +
                                std::to_string(pe.rank) + " of " + std::to_string(pe.count));
        }
        status = Run(fam, config, pe);
        fam.fam_finalize("default");
    } catch (const Fam_Exception &e) {
        radix::Fail(pe, std::string("FAM error: ") + e.what());
    }
    shmem_finalize();
    return status;
}
