// transfer_bench large: one blocking put of a whole large item into fresh memory (its first
// write), the same put again, and one blocking get, on the model the configuration gives, next
// to the raw rates of the same kind of memory measured in the same run: a fresh file of the
// volatile heap directory (FAMPOOL_SHM_DIR, else /dev/shm) mapped shared, as a heap is, and
// written from the same source buffer two ways: memcpy straight into it (each page faults in
// under the copy), and MADV_POPULATE_WRITE first, then memcpy (the kernel makes the pages in
// large steps; the fastest first write measured here, and the baseline of the targets); then
// written again.
//
//   transfer_large [--label L] [--sizes 268435456,1073741824,4294967296] [--trials N]
//                  [--redundancy none|raid1|raid5] [--interleave on|off] [--csv PATH]
//
// Before anything is timed, twice the largest item of memory is written once and freed: in
// a virtual machine the host backs a page of the guest the first time the guest touches it,
// and whichever side touched new pages first paid for that (here: 0.3 against 1.3 GB/s for
// the same memcpy), not for anything fampool or the kernel does.
//
// Each trial creates a region of twice the item (the redundancy and interleaving asked; off:
// one server holds the item), allocates the item, times the transfers, checks every byte the
// get brought back, and destroys the region. Appends one row per size and trial to PATH
// (header once):
//   label,size_bytes,trial,redundancy,interleave  what ran
//   create_region_s, allocate_s                   fam_create_region and fam_allocate
//   raw_first_gbps        memcpy into the fresh mapping
//   raw_best_first_gbps   MADV_POPULATE_WRITE, then memcpy, into another fresh mapping (both
//                         timed): the raw first write the targets compare with
//   raw_again_gbps        memcpy into the same mapping again
//   first_put_gbps, put_again_gbps, get_gbps      fampool, GB/s (1e9 bytes a second)
//   first_ratio      first_put / raw_best_first
//   first_of_best    first_put / min(raw_best_first, put_again): on a cluster the link may be
//                    slower than the memory, and a first write cannot beat a rewrite over it
#include <fam/fam.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_args.h"
#include "bench_stats.h"

using namespace openfam;
using bench_stats::Clock;
using bench_stats::Seconds;

namespace {

struct Options {
    std::string label = "large";
    std::vector<uint64_t> sizes = {256ull << 20, 1ull << 30, 4ull << 30};
    int trials = 1;
    Fam_Redundancy_Level redundancy = NONE;
    Fam_Interleave_Enable interleave = DISABLE;
    std::string csv = "transfer_large.csv";
};

struct Row {
    double create_region = 0, allocate = 0;
    double raw_first = 0, raw_best_first = 0, raw_again = 0;
    double first_put = 0, put_again = 0, get = 0;
};

double Rate(uint64_t bytes, double seconds) { return bytes / seconds / 1e9; }

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif

// A fresh file of the heap directory, `size` bytes, mapped shared (unlinked at once).
char *FreshMapping(uint64_t size) {
    const char *dir = std::getenv("FAMPOOL_SHM_DIR");
    std::string path = std::string(dir && *dir ? dir : "/dev/shm") + "/transfer_large_raw." +
                       std::to_string(getpid());
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) throw std::runtime_error("cannot create " + path);
    unlink(path.c_str());
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        close(fd);
        throw std::runtime_error("cannot size " + path);
    }
    void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    return static_cast<char *>(mapped);
}

// Writes `size` bytes of fresh memory once and frees them (see the top of the file).
void Warm(uint64_t size) {
    char *memory = FreshMapping(size);
    for (uint64_t at = 0; at < size; at += 4096) memory[at] = 1;
    munmap(memory, size);
}

// The raw rates: fresh mappings of the heap directory, written as the top of the file says.
void MeasureRaw(const char *source, uint64_t size, Row *row) {
    char *memory = FreshMapping(size);
    auto start = Clock::now();
    std::memcpy(memory, source, size);
    row->raw_first = Rate(size, Seconds(start));
    start = Clock::now();
    std::memcpy(memory, source, size);
    row->raw_again = Rate(size, Seconds(start));
    munmap(memory, size);
    memory = FreshMapping(size);
    start = Clock::now();
    if (madvise(memory, size, MADV_POPULATE_WRITE) != 0) {
        munmap(memory, size);
        throw std::runtime_error("madvise(MADV_POPULATE_WRITE) failed: Linux 5.14 or later");
    }
    std::memcpy(memory, source, size);
    row->raw_best_first = Rate(size, Seconds(start));
    munmap(memory, size);
}

void MeasureFampool(fam *f, const Options &o, const char *source, char *back, uint64_t size,
                    int trial, Row *row) {
    std::string name = "transfer_large_" + std::to_string(getpid()) + "_" + std::to_string(trial);
    Fam_Region_Attributes attributes{};
    attributes.redundancyLevel = o.redundancy;
    attributes.memoryType = VOLATILE;
    attributes.interleaveEnable = o.interleave;
    auto start = Clock::now();
    Fam_Region_Descriptor *region = f->fam_create_region(name.c_str(), 2 * size, 0600, &attributes);
    row->create_region = Seconds(start);
    start = Clock::now();
    Fam_Descriptor *item = f->fam_allocate("item", size, 0600, region);
    row->allocate = Seconds(start);
    start = Clock::now();
    f->fam_put_blocking(const_cast<char *>(source), item, 0, size);
    row->first_put = Rate(size, Seconds(start));
    start = Clock::now();
    f->fam_put_blocking(const_cast<char *>(source), item, 0, size);
    row->put_again = Rate(size, Seconds(start));
    std::memset(back, 0, size);
    start = Clock::now();
    f->fam_get_blocking(back, item, 0, size);
    row->get = Rate(size, Seconds(start));
    bool same = std::memcmp(back, source, size) == 0;
    f->fam_deallocate(item);
    delete item;
    f->fam_destroy_region(region);
    delete region;
    if (!same) throw std::runtime_error("the get brought back other bytes than the puts wrote");
}

Fam_Redundancy_Level RedundancyOf(const std::string &text) {
    if (text == "none") return NONE;
    if (text == "raid1") return RAID1;
    if (text == "raid5") return RAID5;
    throw std::invalid_argument("--redundancy: none, raid1 or raid5, not " + text);
}

const char *NameOf(Fam_Redundancy_Level level) {
    return level == RAID1 ? "raid1" : level == RAID5 ? "raid5" : "none";
}

Options Parse(int argc, char **argv) {
    Options o;
    bench_args::ArgReader args(argv[0], argc, argv);
    while (args.Next()) {
        const std::string &flag = args.flag();
        if (flag == "--label") {
            o.label = args.Value();
        } else if (flag == "--sizes") {
            o.sizes.clear();
            for (const std::string &part : bench_args::SplitList(args.Value())) {
                o.sizes.push_back(std::stoull(part));
            }
        } else if (flag == "--trials") {
            o.trials = std::max(1, std::stoi(args.Value()));
        } else if (flag == "--redundancy") {
            o.redundancy = RedundancyOf(args.Value());
        } else if (flag == "--interleave") {
            std::string value = args.Value();
            if (value != "on" && value != "off") {
                throw std::invalid_argument("--interleave: on or off, not " + value);
            }
            o.interleave = value == "on" ? ENABLE : DISABLE;
        } else if (flag == "--csv") {
            o.csv = args.Value();
        } else {
            throw std::invalid_argument("unknown flag " + flag);
        }
    }
    return o;
}

}  // namespace

int LargeMain(int argc, char **argv) {
    Options o;
    try {
        o = Parse(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 2;
    }
    uint64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
    // Both buffers are written before anything is timed: no page of theirs faults in a figure.
    std::unique_ptr<char[]> source(new char[largest]);
    std::unique_ptr<char[]> back(new char[largest]);
    for (uint64_t i = 0; i < largest; ++i) source[i] = static_cast<char>(i * 131 + (i >> 20));
    std::memset(back.get(), 0, largest);

    bool header = !std::ifstream(o.csv).good();
    std::ofstream csv(o.csv, std::ios::app);
    if (header) {
        csv << "label,size_bytes,trial,redundancy,interleave,create_region_s,allocate_s,"
               "raw_first_gbps,raw_best_first_gbps,raw_again_gbps,first_put_gbps,"
               "put_again_gbps,get_gbps,first_ratio,first_of_best\n";
    }
    Warm(2 * largest);
    fam f;
    Fam_Options options{};
    try {
        f.fam_initialize("default", &options);
        std::printf("%-8s %11s %5s %8s %8s %8s %8s %8s %8s %8s %8s %7s\n", "label", "size", "trial",
                    "create_s", "alloc_s", "raw_1st", "raw_best", "raw_2nd", "put_1st", "put_2nd",
                    "get", "1st/raw");
        for (uint64_t size : o.sizes) {
            for (int trial = 0; trial < o.trials; ++trial) {
                Row row;
                MeasureRaw(source.get(), size, &row);
                MeasureFampool(&f, o, source.get(), back.get(), size, trial, &row);
                double first_ratio = row.first_put / row.raw_best_first;
                double first_of_best = row.first_put / std::min(row.raw_best_first, row.put_again);
                std::printf(
                    "%-8s %11llu %5d %8.3f %8.3f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f\n",
                    o.label.c_str(), static_cast<unsigned long long>(size), trial,
                    row.create_region, row.allocate, row.raw_first, row.raw_best_first,
                    row.raw_again, row.first_put, row.put_again, row.get, first_ratio);
                std::fflush(stdout);
                csv << o.label << ',' << size << ',' << trial << ',' << NameOf(o.redundancy) << ','
                    << (o.interleave == ENABLE ? "on" : "off") << ',' << row.create_region << ','
                    << row.allocate << ',' << row.raw_first << ',' << row.raw_best_first << ','
                    << row.raw_again << ',' << row.first_put << ',' << row.put_again << ','
                    << row.get << ',' << first_ratio << ',' << first_of_best << '\n';
                csv.flush();
            }
        }
        f.fam_finalize("default");
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.fam_error_msg());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 1;
    }
    std::printf("rows appended to %s\n", o.csv.c_str());
    return 0;
}
