// gups: HPCC RandomAccess (GUPS) on a table in FAM, two ways.
//
//   atomic      every update is one fam_xor on the table word (a fabric atomic, or a CPU
//               atomic on mapped memory): table[ran % size] ^= ran.
//   aggregated  updates are queued with fam_queue_operation(OP_ADD_INDEXED) and shipped to the
//               memory servers in batches, which add them with their own CPUs:
//               table[ran % size] += ran.
//
// The table holds 2^log-size 64-bit words, word i starting as i. Each PE makes its share of
// `updates` updates from HPCC's random stream (x <- x << 1 ^ (x < 0 ? POLY : 0)), PE p starting
// where PE p-1's share ends. Verification as HPCC does it: the same updates are applied a second
// time (xor again; add the negation), after which every word must hold its index again; the
// words that do not are the errors. With atomic updates there must be none.
//
//   gups [--log-size 16] [--updates N (default 4 * 2^log-size)] [--variant atomic|aggregated|both]
//   mpirun -n 2 gups ...            fampool run -n 2 gups ...
#include <fam/fam.h>

#include <cstdio>
#include <string>
#include <vector>

#include "appkit/app.h"

using namespace openfam;

namespace {

const char *kUsage =
    "gups [--log-size L] [--updates N] [--variant atomic|aggregated|both] [--batch B]\n"
    "  HPCC RandomAccess on a 2^L-word table in FAM (default L=16, N=4*2^L updates,\n"
    "  both variants; B updates per fam_queue_operation call, default 1024)";

constexpr uint64_t kPoly = 0x0000000000000007ull;

uint64_t Next(uint64_t x) { return (x << 1) ^ (static_cast<int64_t>(x) < 0 ? kPoly : 0); }

// The stream's value after `steps` steps from its start (1).
uint64_t StreamAt(uint64_t steps) {
    uint64_t x = 1;
    for (uint64_t i = 0; i < steps; ++i) x = Next(x);
    return x;
}

struct Setup {
    fam *f;
    apps::Pe pe;
    Fam_Descriptor *table;
    Fam_Descriptor *errors;  // one uint64 word: the error count of the check
    uint64_t log_size, updates, batch;
};

// This PE's updates, applied once (`undo` false) or as their inverse.
void Apply(const Setup &s, const std::string &variant, bool undo) {
    uint64_t mask = (uint64_t{1} << s.log_size) - 1;
    uint64_t first = s.pe.BlockBegin(s.updates), last = s.pe.BlockEnd(s.updates);
    uint64_t x = StreamAt(first);
    if (variant == "atomic") {
        for (uint64_t u = first; u < last; ++u) {
            x = Next(x);
            s.f->fam_xor(s.table, (x & mask) * 8, x);  // xor is its own inverse
        }
        s.f->fam_quiet();
        return;
    }
    std::vector<uint64_t> index(s.batch), value(s.batch);
    for (uint64_t u = first; u < last;) {
        uint64_t n = std::min(s.batch, last - u);
        for (uint64_t k = 0; k < n; ++k) {
            x = Next(x);
            index[k] = x & mask;
            value[k] = undo ? ~x + 1 : x;  // adding the negation undoes the add
        }
        s.f->fam_queue_operation(OP_ADD_INDEXED, value.data(), s.table, n, index.data(), 8);
        u += n;
    }
    s.f->fam_aggregate_flush(s.table);
}

// Sets word i of this PE's block of the table to i.
void InitializeTable(const Setup &s) {
    uint64_t words = uint64_t{1} << s.log_size;
    uint64_t begin = s.pe.BlockBegin(words), end = s.pe.BlockEnd(words);
    std::vector<uint64_t> block(end - begin);
    for (uint64_t i = begin; i < end; ++i) block[i - begin] = i;
    if (!block.empty()) s.f->fam_put_blocking(block.data(), s.table, begin * 8, block.size() * 8);
    if (s.pe.first()) {
        uint64_t zero = 0;
        s.f->fam_put_blocking(&zero, s.errors, 0, 8);
    }
}

// Counts the words of this PE's block that do not hold their index; adds them to the total.
void CountErrors(const Setup &s) {
    uint64_t words = uint64_t{1} << s.log_size;
    uint64_t begin = s.pe.BlockBegin(words), end = s.pe.BlockEnd(words);
    std::vector<uint64_t> block(end - begin);
    if (!block.empty()) s.f->fam_get_blocking(block.data(), s.table, begin * 8, block.size() * 8);
    uint64_t errors = 0;
    for (uint64_t i = begin; i < end; ++i) errors += block[i - begin] != i;
    s.f->fam_add(s.errors, 0, errors);
    s.f->fam_quiet();
}

// One variant: initialize, update (timed), undo, check. Returns the exit status.
int Run(Setup &s, const std::string &variant) {
    InitializeTable(s);
    s.f->fam_barrier_all();
    apps::Timer timer;
    Apply(s, variant, false);
    s.f->fam_barrier_all();
    double seconds = timer.Seconds();
    Apply(s, variant, true);
    s.f->fam_barrier_all();
    CountErrors(s);
    s.f->fam_barrier_all();
    uint64_t errors = s.f->fam_fetch_uint64(s.errors, 0);
    int status = 0;
    if (s.pe.first()) {
        char fields[512];
        std::snprintf(fields, sizeof fields,
                      "variant=%s model=%s pes=%lu table_words=%lu updates=%lu seconds=%.4f "
                      "rate=%.4g unit=updates/s",
                      variant.c_str(), apps::ModelOf(*s.f).c_str(),
                      static_cast<unsigned long>(s.pe.count),
                      static_cast<unsigned long>(uint64_t{1} << s.log_size),
                      static_cast<unsigned long>(s.updates), seconds, s.updates / seconds);
        apps::Result("gups", fields);
        status = apps::Check("gups", errors == 0,
                             "variant=" + variant + " errors=" + std::to_string(errors));
    }
    s.f->fam_barrier_all();
    return errors == 0 ? status : 1;
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Setup s{};
    s.log_size = args.Count("log-size", 16);
    s.updates = args.Count("updates", 4ull << s.log_size);
    s.batch = std::max<uint64_t>(1, args.Count("batch", 1024));
    std::string which = args.Text("variant", "both");
    if (s.log_size < 3 || s.log_size > 34 ||
        (which != "atomic" && which != "aggregated" && which != "both")) {
        std::fprintf(stderr,
                     "gups: --log-size must be 3..34 and --variant atomic, aggregated "
                     "or both\n%s\n",
                     kUsage);
        return 2;
    }
    return apps::RunJob("gups", [&](fam &f, const apps::Pe &pe) {
        s.f = &f;
        s.pe = pe;
        uint64_t table_bytes = 8ull << s.log_size;
        Fam_Region_Descriptor *region = apps::FreshRegion(f, s.pe, "gups", table_bytes + (1 << 20));
        s.table = apps::SharedItem(f, s.pe, region, "table", table_bytes);
        s.errors = apps::SharedItem(f, s.pe, region, "errors", 64);
        int status = 0;
        for (std::string variant : {"atomic", "aggregated"}) {
            if (which == "both" || which == variant) status |= Run(s, variant);
        }
        f.fam_barrier_all();
        if (s.pe.first()) f.fam_destroy_region(region);
        delete s.table;
        delete s.errors;
        delete region;
        return status;
    });
}
