// FAMSort (seed paper 001, section III-E): a two-phase sort of gensort records in FAM for data
// larger than the PEs' DRAM. Phase 1 streams each PE's block of records through a burst trie
// held under a DRAM budget and spills it to FAM, depth first, as sorted runs with a directory;
// phase 2 turns the directories into a work queue of key-prefix tasks in FAM, which the PEs
// take with fam_fetch_add and finish by merging the runs of each task into the output.
//
// This header holds what the phases share: the record and FAM layouts, the DRAM budget, and the
// job (descriptors and options).
#ifndef FAMPOOL_APPS_FAMSORT_FAMSORT_H_
#define FAMPOOL_APPS_FAMSORT_FAMSORT_H_

#include <fam/fam.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "appkit/app.h"

namespace famsort {

constexpr uint64_t kRecordBytes = 100, kKeyBytes = 10;
// "GENSORT1" read as a little-endian word: sort_info[0] as gen_sort writes it.
constexpr uint64_t kInfoMagic = 0x3154524f534e4547ull;

// What the sort orders: the 10-byte key, then the record's index big-endian, so that memcmp
// over all 18 bytes is the order (key, then index) and every entry is distinct.
constexpr int kEntryBytes = 18;
struct Entry {
    unsigned char b[kEntryBytes];
    bool operator<(const Entry &other) const { return std::memcmp(b, other.b, kEntryBytes) < 0; }
    uint64_t Index() const {
        uint64_t i = 0;
        for (int k = kKeyBytes; k < kEntryBytes; ++k) i = i << 8 | b[k];
        return i;
    }
    // From a record's first bytes: key, then its index as gen_sort stores it (little-endian).
    static Entry FromRecord(const unsigned char *record) {
        Entry e;
        std::memcpy(e.b, record, kKeyBytes);
        for (int k = 0; k < 8; ++k) e.b[kKeyBytes + k] = record[kKeyBytes + 7 - k];
        return e;
    }
};
static_assert(sizeof(Entry) == kEntryBytes, "entries are packed");

// One key's term of the key-multiset fingerprint (sort_info[6] is their sum): Mix64(hi ^
// Mix64(lo)), hi the key's bytes 0-7 big-endian, lo bytes 8-9.
inline uint64_t KeyPrint(const unsigned char *record) {
    uint64_t high = 0;
    for (int b = 0; b < 8; ++b) high = high << 8 | record[b];
    uint64_t low = uint64_t{record[8]} << 8 | record[9];
    return apps::Mix64(high ^ apps::Mix64(low));
}

// One spilled bucket: its entries, sorted, at runs[first, first + count), all starting with
// prefix[0, depth). Item "directory", one segment per PE.
struct DirEntry {
    unsigned char prefix[kEntryBytes];
    uint8_t depth;
    uint8_t unused;
    uint32_t count;
    uint64_t first;
};
static_assert(sizeof(DirEntry) == 32, "directory entries are 32 bytes");

// One task of the work queue (item "tasks", in key order): every entry starting with
// prefix[0, depth) lands at sorted_index[out, out + count); its runs are
// sources[first_source, first_source + sources).
struct TaskRecord {
    unsigned char prefix[kEntryBytes];
    uint8_t depth;
    uint8_t unused[5];
    uint64_t out;
    uint64_t count;
    uint64_t first_source;
    uint64_t sources;
};
static_assert(sizeof(TaskRecord) == 56, "task records are 56 bytes");

// A piece of a task: a sorted run runs[first, first + count) (adjacent pieces of one spill
// with the task's prefix, joined).
struct Source {
    uint64_t first;
    uint64_t count;
};

// One spill of one PE: its directory entries dir[first, first + count) of the PE's segment.
struct SpillRecord {
    uint64_t first;
    uint64_t count;
};
constexpr uint64_t kMaxSpills = 1 << 16;  // per PE

// Words of the item "board", where the PEs meet. Per-PE words start at kPeWords + 16 * rank.
enum Board : uint64_t {
    kQueueHead = 0,  // next task to take (fam_fetch_add)
    kTaskCount = 1,
    kPieces = 2,
    kSpills = 3,
    kErrors = 4,
    kKeyPrint = 5,
    kIndexSum = 6,  // sum of Mix64(i) over the output minus over 0..N-1
    kIndexXor = 7,
    kChecked = 8,
    kPeWords = 16,
};
enum PeWord : uint64_t {
    kPeSpills = 0,
    kPePieces = 1,
    kPePeakRss = 2,
    kPeAccounted = 3,
    kPeAnon = 4,
    kPeFirst = 5,  // first and last entries of the PE's block of the output, 3 words each
    kPeLast = 8,
    kPeHasOutput = 11,
    kPeAnonBase = 12,  // RssAnon once FAM is set up, before the sort
    kPeWordCount = 16,
};

// Bytes of DRAM the application holds on purpose (trie, buckets, buffers), against the cap.
class Budget {
  public:
    explicit Budget(uint64_t cap) : cap_(cap) {}
    bool Fits(uint64_t bytes) const { return used_ + bytes <= cap_; }
    void Take(uint64_t bytes) {
        used_ += bytes;
        if (used_ > peak_) peak_ = used_;
    }
    void Give(uint64_t bytes) { used_ -= bytes; }
    uint64_t cap() const { return cap_; }
    uint64_t used() const { return used_; }
    uint64_t peak() const { return peak_; }

  private:
    uint64_t cap_, used_ = 0, peak_ = 0;
};

// Resident anonymous memory of this process now (RssAnon), in bytes: unlike VmHWM it leaves out
// FAM heap pages the embedded model maps into the process.
uint64_t AnonRss();

struct Options {
    std::string region = "gensort";
    uint64_t dram_cap = 16 << 20;
    uint64_t bucket = 8192;   // entries per bucket before it bursts
    uint64_t chunk = 8192;    // records per read
    bool gather = false;      // read only key and index of each record (strided gather)
    uint64_t run_buffer = 0;  // entries per run buffer in a merge at most (0: what fits)
    bool keep = false;
};

struct Job {
    openfam::fam *f = nullptr;
    apps::Pe pe;
    Options opt;
    Budget *budget = nullptr;
    uint64_t records = 0, key_print = 0;
    uint64_t anon_peak = 0;  // highest AnonRss sampled
    uint64_t anon_base = 0;  // AnonRss before the sort starts
    // Input (region opt.region) and the sort's own items (region "famsort").
    openfam::Fam_Descriptor *input = nullptr;
    openfam::Fam_Descriptor *runs = nullptr, *directory = nullptr, *spill_table = nullptr;
    openfam::Fam_Descriptor *tasks = nullptr, *sources = nullptr, *sorted_index = nullptr;
    openfam::Fam_Descriptor *board = nullptr;

    uint64_t PeWord(uint64_t rank, uint64_t word) const {
        return (kPeWords + kPeWordCount * rank + word) * 8;
    }
    void SampleAnon() {
        uint64_t now = AnonRss();
        if (now > anon_peak) anon_peak = now;
    }
};

// Phase 1: this PE's block of records into sorted runs in FAM; returns the number of spills.
uint64_t SpillBlock(Job &job);
// Phase 2, PE 0: the work queue from every PE's directory; returns the number of tasks.
uint64_t BuildTasks(Job &job);
// Phase 2, every PE: takes tasks until the queue is empty; returns the tasks it did.
uint64_t RunTasks(Job &job, uint64_t task_count);
// --generate: `records` gensort records of `seed` into the items "records" and "sort_info"
// of `region`, laid out as gen_sort writes them; every PE writes its block.
void GenerateInput(openfam::fam &f, const apps::Pe &pe, openfam::Fam_Region_Descriptor *region,
                   uint64_t records, uint64_t seed, uint64_t chunk);
// The check of sorted_index (every PE its block); the results meet on the board.
void CheckBlock(Job &job);

}  // namespace famsort

#endif  // FAMPOOL_APPS_FAMSORT_FAMSORT_H_
