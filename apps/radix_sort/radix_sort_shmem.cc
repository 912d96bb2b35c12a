// radix_sort_shmem: parallel LSD radix sort with OpenSHMEM only, the seed paper's baseline
// (README.md). The input is a file that every PE reads its block of; every data item of the
// sort is on the symmetric heap; the sorted keys go to an output file.
//
// Before the clock starts, the PEs write the input file (each its block of the generated
// keys), flush it to the disk and drop it from the page cache, so that phase 0 reads from the
// disk as the paper's did. The output is flushed to the disk (fdatasync) inside the output
// phase. --page-cache keeps both in the page cache instead.
#include <fcntl.h>
#include <shmem.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "appkit/app.h"
#include "radix_sort/radix_sort.h"

namespace {

const char *kUsage =
    "radix_sort_shmem: LSD radix sort over OpenSHMEM; input and output in files\n"
    "  oshrun -np N radix_sort_shmem [options]\n";
const char *kShmemUsage =
    "  --input FILE     input file, written before the timed sort (default\n"
    "                   $TMPDIR/radix_sort.SEED.KEYS.input, TMPDIR defaulting to /tmp)\n"
    "  --output FILE    output file (default the same with .output)\n"
    "  --keep           leave both files behind\n"
    "  --page-cache     no fdatasync and no page-cache drop: file I/O from memory\n"
    "Every PE must see the same files (one node, or a shared file system).";

// The SHMEM-only version's global histogram (phase 3) and send counts (phase 6), exchanged
// through the symmetric heap as the paper describes: each PE gets every other PE's local
// histogram, and puts its send counts into every PE's copy of the count matrix.
class ShmemExchange : public radix::Exchange {
  public:
    ShmemExchange(const radix::Config &config, const apps::Pe &pe) : config_(config), pe_(pe) {
        counts_ = static_cast<uint64_t *>(shmem_malloc(pe.count * pe.count * sizeof(uint64_t)));
        if (counts_ == nullptr) radix::Fail(pe, "shmem_malloc of the count matrix failed");
        histogram_.resize(config.Buckets());
    }
    ~ShmemExchange() override {
        shmem_barrier_all();
        shmem_free(counts_);
    }

    void GlobalHistogram(const uint64_t *local, std::vector<uint64_t> *matrix) override {
        const uint64_t buckets = config_.Buckets(), npes = pe_.count;
        shmem_barrier_all();  // every PE's local histogram is complete
        for (uint64_t i = 0; i < npes; ++i) {
            uint64_t p = (pe_.rank + i) % npes;
            const uint64_t *from = local;
            if (p != pe_.rank) {
                shmem_get64(histogram_.data(), local, buckets, static_cast<int>(p));
                from = histogram_.data();
            }
            for (uint64_t d = 0; d < buckets; ++d) (*matrix)[d * npes + p] = from[d];
        }
    }

    void SendCounts(const std::vector<uint64_t> &row, std::vector<uint64_t> *counts) override {
        const uint64_t npes = pe_.count;
        for (uint64_t q = 0; q < npes; ++q) {
            shmem_put64(counts_ + pe_.rank * npes, row.data(), npes, static_cast<int>(q));
        }
        shmem_barrier_all();  // completes every PE's puts
        counts->assign(counts_, counts_ + npes * npes);
    }

  private:
    radix::Config config_;
    apps::Pe pe_;
    uint64_t *counts_;  // symmetric: counts_[p * npes + q], row p put by PE p
    std::vector<uint64_t> histogram_;
};

// Opens `path` (every PE), or ends the job saying why.
int Open(const apps::Pe &pe, const std::string &path, int flags) {
    int fd = open(path.c_str(), flags, 0644);
    if (fd < 0) radix::Fail(pe, "cannot open " + path + ": " + std::strerror(errno));
    return fd;
}

// Reads or writes `bytes` at `offset` of the file, all of them.
void Transfer(const apps::Pe &pe, bool write, int fd, const std::string &path, void *buffer,
              uint64_t bytes, uint64_t offset) {
    char *at = static_cast<char *>(buffer);
    while (bytes > 0) {
        ssize_t done = write ? pwrite(fd, at, bytes, static_cast<off_t>(offset))
                             : pread(fd, at, bytes, static_cast<off_t>(offset));
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) {
            radix::Fail(pe, std::string(write ? "cannot write " : "cannot read ") + path + ": " +
                                (done < 0 ? std::strerror(errno) : "unexpected end of file"));
        }
        at += done;
        bytes -= static_cast<uint64_t>(done);
        offset += static_cast<uint64_t>(done);
    }
}

// Untimed: the input file with every PE's block of keys, on the disk and out of the page
// cache (unless `page_cache`), and an empty output file of the right size.
void PrepareFiles(const radix::Config &config, const apps::Pe &pe, const std::string &input,
                  const std::string &output, bool page_cache, uint64_t *staging) {
    if (pe.first()) {
        for (const std::string &path : {input, output}) {
            int fd = Open(pe, path, O_WRONLY | O_CREAT | O_TRUNC);
            if (ftruncate(fd, static_cast<off_t>(config.keys * sizeof(uint64_t))) != 0) {
                radix::Fail(pe, "cannot size " + path + ": " + std::strerror(errno));
            }
            close(fd);
        }
    }
    shmem_barrier_all();
    const uint64_t begin = pe.BlockBegin(config.keys);
    const uint64_t count = pe.BlockEnd(config.keys) - begin;
    for (uint64_t i = 0; i < count; ++i) staging[i] = radix::KeyAt(config, begin + i);
    int fd = Open(pe, input, O_WRONLY);
    Transfer(pe, true, fd, input, staging, count * sizeof(uint64_t), begin * sizeof(uint64_t));
    if (!page_cache) {
        fdatasync(fd);
        posix_fadvise(fd, static_cast<off_t>(begin * sizeof(uint64_t)),
                      static_cast<off_t>(count * sizeof(uint64_t)), POSIX_FADV_DONTNEED);
    }
    close(fd);
    std::memset(staging, 0, count * sizeof(uint64_t));
    shmem_barrier_all();
}

}  // namespace

int main(int argc, char **argv) {
    std::string usage = std::string(kUsage) + radix::kCommonUsage + "\n" + kShmemUsage;
    apps::Args args(argc, argv, usage.c_str());
    radix::Config config = radix::ConfigOf(args);
    const char *tmpdir = std::getenv("TMPDIR");
    std::string stem = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/radix_sort." +
                       std::to_string(config.seed) + "." + std::to_string(config.keys);
    std::string input = args.Text("input", stem + ".input");
    std::string output = args.Text("output", stem + ".output");
    bool page_cache = args.Flag("page-cache");

    shmem_init();
    apps::Pe pe = radix::ShmemPe();
    int status = 0;
    {
        ShmemExchange exchange(config, pe);
        radix::Sorter sorter(config, pe, &exchange);
        PrepareFiles(config, pe, input, output, page_cache, sorter.Keys());
        const uint64_t offset = pe.BlockBegin(config.keys) * sizeof(uint64_t);
        const uint64_t bytes = sorter.Count() * sizeof(uint64_t);

        radix::PhaseTimes times;
        shmem_barrier_all();
        apps::Timer total;
        apps::Timer phase;
        int in = Open(pe, input, O_RDONLY);
        Transfer(pe, false, in, input, sorter.Keys(), bytes, offset);
        close(in);
        times.seconds[radix::kInput] = phase.Seconds();

        sorter.Sort(&times);

        phase.Restart();
        int out = Open(pe, output, O_WRONLY);
        Transfer(pe, true, out, output, sorter.Keys(), bytes, offset);
        if (!page_cache) fdatasync(out);
        close(out);
        times.seconds[radix::kOutput] = phase.Seconds();
        shmem_barrier_all();
        double seconds = total.Seconds();
        radix::Report("shmem", "none", config, pe, times, seconds);

        // The check reads back what the output file holds.
        std::vector<uint64_t> stored(sorter.Count());
        out = Open(pe, output, O_RDONLY);
        Transfer(pe, false, out, output, stored.data(), bytes, offset);
        close(out);
        radix::BlockCheck sum;
        std::vector<radix::BlockCheck> blocks =
            radix::CollectChecks(radix::CheckBlock(config, pe, stored), &sum);
        status = radix::Judge(config, pe, sum, blocks);

        shmem_barrier_all();
        if (pe.first() && !args.Flag("keep")) {
            unlink(input.c_str());
            unlink(output.c_str());
        }
    }
    shmem_finalize();
    return status;
}
