// gen_sort: gensort-like input for a sort benchmark, written into FAM by all PEs.
//
// N records of 100 bytes: a 10-byte key and a 90-byte payload. Record i is a function of
// (seed, i) alone: its key is the first 10 bytes of Mix64(key + 2i) and Mix64(key + 2i + 1)
// (key = Mix64(seed)); its payload starts with i as a little-endian uint64 (so a sort can be
// checked: the payloads of a sorted output are a permutation of 0..N-1) followed by 82 filler
// bytes derived from i. PE p writes records [p*N/P, (p+1)*N/P) of the item "records" in
// chunks; the item "sort_info" says what was generated, with the fingerprint of the key
// multiset (sum of Mix64 over the keys), which a sort must preserve.
//
// Check: every PE re-reads --sample records at random indices of the whole item (other PEs'
// blocks too) with one indexed fam_gather per batch, regenerates them from (seed, index) and
// compares all 100 bytes; the error counts meet in FAM (fam_add).
//
//   gen_sort [--records 262144] [--seed 1] [--region gensort] [--keep] [--sample 4096]
//   mpirun -np 2 gen_sort ...        fampool run -n 2 gen_sort ...
#include <fam/fam.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "appkit/app.h"

using namespace openfam;

namespace {

const char *kUsage =
    "gen_sort [--records N] [--seed S] [--region NAME] [--keep] [--sample K]\n"
    "  N gensort-like 100-byte records (10-byte key, 90-byte payload; default N=262144, seed 1)\n"
    "  in the item \"records\" of the FAM region NAME (default \"gensort\"); each PE re-reads K\n"
    "  random records to check them (default 4096); --keep leaves the region in FAM";

constexpr uint64_t kRecordBytes = 100, kKeyBytes = 10;
constexpr uint64_t kChunkRecords = 10000;  // records per put (1 MB)
// "GENSORT1" read as a little-endian word: the first word of sort_info.
constexpr uint64_t kInfoMagic = 0x3154524f534e4547ull;

// Words of the "board" item, where the PEs' partial results meet.
enum Board : uint64_t { kKeyPrint = 0, kErrors = 1, kChecked = 2, kBoardWords = 8 };

struct Records {
    uint64_t count = 262144, seed = 1, key = 0;

    // Record i's 100 bytes into `out`.
    void Make(uint64_t i, unsigned char *out) const {
        uint64_t high = apps::Mix64(key + 2 * i), low = apps::Mix64(key + 2 * i + 1);
        for (int b = 0; b < 8; ++b) out[b] = static_cast<unsigned char>(high >> (56 - 8 * b));
        out[8] = static_cast<unsigned char>(low >> 56);
        out[9] = static_cast<unsigned char>(low >> 48);
        unsigned char *payload = out + kKeyBytes;
        for (int b = 0; b < 8; ++b) payload[b] = static_cast<unsigned char>(i >> (8 * b));
        uint64_t fill = apps::Mix64(~i ^ key);
        for (uint64_t b = 8; b < kRecordBytes - kKeyBytes; ++b) {
            payload[b] = static_cast<unsigned char>('A' + (fill >> (b % 8 * 8)) % 26);
        }
    }

    // The part of the key-multiset fingerprint that one key contributes.
    static uint64_t KeyPrint(const unsigned char *record) {
        uint64_t high = 0, low = 0;
        for (int b = 0; b < 8; ++b) high = high << 8 | record[b];
        low = uint64_t{record[8]} << 8 | record[9];
        return apps::Mix64(high ^ apps::Mix64(low));
    }

    // The index stored in a record's payload.
    static uint64_t IndexOf(const unsigned char *record) {
        uint64_t i = 0;
        for (int b = 7; b >= 0; --b) i = i << 8 | record[kKeyBytes + b];
        return i;
    }
};

struct Job {
    fam *f = nullptr;
    apps::Pe pe;
    Records r;
    uint64_t sample = 4096;
    Fam_Descriptor *records = nullptr, *info = nullptr, *board = nullptr;
};

// This PE's block of records into FAM; returns the bytes it wrote.
uint64_t Write(Job &job) {
    uint64_t begin = job.pe.BlockBegin(job.r.count), end = job.pe.BlockEnd(job.r.count);
    std::vector<unsigned char> chunk(kChunkRecords * kRecordBytes);
    uint64_t print = 0;
    for (uint64_t first = begin; first < end; first += kChunkRecords) {
        uint64_t n = std::min(kChunkRecords, end - first);
        for (uint64_t k = 0; k < n; ++k) {
            unsigned char *record = chunk.data() + k * kRecordBytes;
            job.r.Make(first + k, record);
            print += Records::KeyPrint(record);
        }
        job.f->fam_put_blocking(chunk.data(), job.records, first * kRecordBytes, n * kRecordBytes);
    }
    job.f->fam_add(job.board, kKeyPrint * 8, print);
    job.f->fam_quiet();
    return (end - begin) * kRecordBytes;
}

// Re-reads `sample` records at random indices (all of them when the sample covers the item)
// and compares them with their regeneration.
void Verify(Job &job) {
    uint64_t n = std::min(job.sample, job.r.count);
    std::vector<uint64_t> index(n);
    for (uint64_t k = 0; k < n; ++k) {
        index[k] = job.sample >= job.r.count
                       ? k
                       : apps::Mix64(job.r.key ^ (job.pe.rank << 40) ^ k) % job.r.count;
    }
    std::vector<unsigned char> got(n * kRecordBytes);
    constexpr uint64_t kBatch = 8192;
    for (uint64_t done = 0; done < n; done += kBatch) {
        uint64_t m = std::min(kBatch, n - done);
        job.f->fam_gather_blocking(got.data() + done * kRecordBytes, job.records, m,
                                   index.data() + done, kRecordBytes);
    }
    uint64_t errors = 0;
    unsigned char want[kRecordBytes];
    for (uint64_t k = 0; k < n; ++k) {
        const unsigned char *record = got.data() + k * kRecordBytes;
        job.r.Make(index[k], want);
        if (std::memcmp(record, want, kRecordBytes) != 0 || Records::IndexOf(record) != index[k]) {
            ++errors;
        }
    }
    job.f->fam_add(job.board, kErrors * 8, errors);
    job.f->fam_add(job.board, kChecked * 8, n);
    job.f->fam_quiet();
}

std::string Fields(const Job &job, const char *phase, double seconds, uint64_t bytes) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "phase=%s model=%s pes=%lu records=%lu bytes=%lu seconds=%.4f rate=%.4g "
                  "unit=records/s bandwidth=%.1f bandwidth_unit=MB/s",
                  phase, apps::ModelOf(*job.f).c_str(), static_cast<unsigned long>(job.pe.count),
                  static_cast<unsigned long>(job.r.count), static_cast<unsigned long>(bytes),
                  seconds, seconds > 0 ? bytes / kRecordBytes / seconds : 0.0,
                  seconds > 0 ? bytes / seconds / 1e6 : 0.0);
    return text;
}

int Run(Job &job) {
    fam &f = *job.f;
    apps::Timer timer;
    Write(job);
    f.fam_barrier_all();
    double write_seconds = timer.Seconds();
    timer.Restart();
    Verify(job);
    f.fam_barrier_all();
    double check_seconds = timer.Seconds();
    uint64_t board[kBoardWords];
    f.fam_get_blocking(board, job.board, 0, sizeof board);
    bool passed = board[kErrors] == 0;
    if (job.pe.first()) {
        uint64_t info[8] = {kInfoMagic, 1,          job.r.count,      kRecordBytes,
                            kKeyBytes,  job.r.seed, board[kKeyPrint], 0};
        f.fam_put_blocking(info, job.info, 0, sizeof info);
        apps::Result("gen_sort", Fields(job, "write", write_seconds, job.r.count * kRecordBytes) +
                                     " peak_rss=" + std::to_string(apps::PeakRss()));
        apps::Result("gen_sort",
                     Fields(job, "check", check_seconds, board[kChecked] * kRecordBytes));
        char detail[160];
        std::snprintf(detail, sizeof detail, "checked=%lu errors=%lu key_fingerprint=%016lx",
                      static_cast<unsigned long>(board[kChecked]),
                      static_cast<unsigned long>(board[kErrors]),
                      static_cast<unsigned long>(board[kKeyPrint]));
        apps::Check("gen_sort", passed, detail);
    }
    return passed ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Job job;
    job.r.count = args.Count("records", 262144);
    job.r.seed = args.Count("seed", 1);
    job.r.key = apps::Mix64(job.r.seed);
    job.sample = args.Count("sample", 4096);
    std::string region_name = args.Text("region", "gensort");
    bool keep = args.Flag("keep");
    if (job.r.count == 0 || job.r.count > (uint64_t{1} << 40) || region_name.empty()) {
        std::fprintf(stderr, "gen_sort: --records must be 1..2^40 and --region a name\n%s\n",
                     kUsage);
        return 2;
    }
    return apps::RunJob("gen_sort", [&](fam &f, const apps::Pe &pe) {
        job.f = &f;
        job.pe = pe;
        uint64_t bytes = job.r.count * kRecordBytes;
        Fam_Region_Descriptor *region =
            apps::FreshRegion(f, job.pe, region_name.c_str(), bytes + bytes / 16 + (4 << 20));
        job.records = apps::SharedItem(f, job.pe, region, "records", bytes);
        job.info = apps::SharedItem(f, job.pe, region, "sort_info", 64);
        job.board = apps::SharedItem(f, job.pe, region, "board", kBoardWords * 8);
        int status = Run(job);
        f.fam_barrier_all();
        if (job.pe.first()) {
            if (keep) {
                f.fam_deallocate(job.board);
                std::printf("gen_sort: kept region \"%s\" (items records, sort_info)\n",
                            region_name.c_str());
            } else {
                f.fam_destroy_region(region);
            }
        }
        delete job.records;
        delete job.info;
        delete job.board;
        delete region;
        return status;
    });
}
