// FAMSort phase 1: each PE reads its block of records in chunks (double buffered: the next
// chunk's read is in flight while the current one goes into the trie), inserts (key, index)
// into a burst trie, and spills the trie to FAM whenever the DRAM budget is reached.
//
// A spill visits the buckets depth first, so they come out in key order, each sorted. Their
// entries go to the PE's segment of "runs" one after the other (the PE's spills fill its
// segment, whose size is its block's), and each bucket gets a DirEntry (prefix, count, where)
// in the PE's segment of "directory"; the spill's range of directory entries goes to the PE's
// row of "spill_table".
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "famsort/burst_trie.h"
#include "famsort/famsort.h"

using namespace openfam;

namespace famsort {
namespace {

constexpr uint64_t kDirBuffer = 1024;  // directory entries held before a put

// Takes the trie's buckets as Drain hands them over and writes them to FAM through a staging
// buffer (runs) and a directory buffer.
class SpillWriter {
  public:
    SpillWriter(Job &job, uint64_t stage_entries)
        : job_(job),
          stage_(new Entry[stage_entries]),
          stage_capacity_(stage_entries),
          dir_(new DirEntry[kDirBuffer]) {
        uint64_t begin = job.pe.BlockBegin(job.records);
        run_next_ = begin;
        dir_next_ = begin;
        job.budget->Take(Bytes());
    }
    ~SpillWriter() { job_.budget->Give(Bytes()); }

    uint64_t Bytes() const {
        return stage_capacity_ * sizeof(Entry) + kDirBuffer * sizeof(DirEntry);
    }

    void Spill(BurstTrie &trie) {
        job_.SampleAnon();
        uint64_t first_dir = dir_next_ + dir_count_;
        trie.Drain([this](const unsigned char *prefix, int depth, const Entry *entries,
                          uint64_t count) { Bucket(prefix, depth, entries, count); });
        FlushRuns();
        FlushDirectory();
        if (spills_ >= kMaxSpills) {
            throw std::runtime_error("more than 65536 spills on one PE: raise --dram-cap");
        }
        SpillRecord record{first_dir, dir_next_ - first_dir};
        job_.f->fam_put_blocking(&record, job_.spill_table,
                                 (job_.pe.rank * kMaxSpills + spills_) * sizeof record,
                                 sizeof record);
        ++spills_;
    }

    uint64_t spills() const { return spills_; }
    uint64_t pieces() const { return pieces_; }

  private:
    void Bucket(const unsigned char *prefix, int depth, const Entry *entries, uint64_t count) {
        DirEntry &d = dir_[dir_count_++];
        std::memcpy(d.prefix, prefix, kEntryBytes);
        std::memset(d.prefix + depth, 0, kEntryBytes - depth);
        d.depth = static_cast<uint8_t>(depth);
        d.unused = 0;
        d.count = static_cast<uint32_t>(count);
        d.first = run_next_ + staged_;
        ++pieces_;
        if (dir_count_ == kDirBuffer) FlushDirectory();
        while (count > 0) {
            uint64_t n = std::min(count, stage_capacity_ - staged_);
            std::copy(entries, entries + n, stage_.get() + staged_);
            staged_ += n;
            entries += n;
            count -= n;
            if (staged_ == stage_capacity_) FlushRuns();
        }
    }

    void FlushRuns() {
        if (staged_ == 0) return;
        job_.f->fam_put_blocking(stage_.get(), job_.runs, run_next_ * sizeof(Entry),
                                 staged_ * sizeof(Entry));
        run_next_ += staged_;
        staged_ = 0;
    }

    void FlushDirectory() {
        if (dir_count_ == 0) return;
        job_.f->fam_put_blocking(dir_.get(), job_.directory, dir_next_ * sizeof(DirEntry),
                                 dir_count_ * sizeof(DirEntry));
        dir_next_ += dir_count_;
        dir_count_ = 0;
    }

    Job &job_;
    std::unique_ptr<Entry[]> stage_;
    uint64_t stage_capacity_, staged_ = 0, run_next_ = 0;
    std::unique_ptr<DirEntry[]> dir_;
    uint64_t dir_count_ = 0, dir_next_ = 0;
    uint64_t spills_ = 0, pieces_ = 0;
};

// Reads records [first, first + n) into `buffer` without waiting: whole records with a get,
// or (--read gather) only their first 20 bytes, key and index, with a strided gather.
void StartRead(Job &job, unsigned char *buffer, uint64_t first, uint64_t n) {
    if (job.opt.gather) {
        job.f->fam_gather_nonblocking(buffer, job.input, n, first * 5, 5, 20);
    } else {
        job.f->fam_get_nonblocking(buffer, job.input, first * kRecordBytes, n * kRecordBytes);
    }
}

}  // namespace

uint64_t SpillBlock(Job &job) {
    uint64_t begin = job.pe.BlockBegin(job.records), end = job.pe.BlockEnd(job.records);
    uint64_t stride = job.opt.gather ? 20 : kRecordBytes;
    uint64_t chunk = job.opt.chunk;
    uint64_t buffer_bytes = chunk * stride;
    std::vector<std::unique_ptr<unsigned char[]>> buffers;
    buffers.emplace_back(new unsigned char[buffer_bytes]);
    buffers.emplace_back(new unsigned char[buffer_bytes]);
    job.budget->Take(2 * buffer_bytes);
    uint64_t pieces = 0, spills = 0;
    {
        SpillWriter writer(job, std::max<uint64_t>(chunk, 4096));
        BurstTrie trie(job.budget, job.opt.bucket);
        if (!job.budget->Fits(64 << 10)) {
            throw std::runtime_error(
                "--dram-cap leaves less than 64 KiB for the trie after "
                "the read and spill buffers: raise it or lower --chunk");
        }
        int current = 0;
        if (begin < end) StartRead(job, buffers[0].get(), begin, std::min(chunk, end - begin));
        job.f->fam_quiet();
        for (uint64_t first = begin; first < end;) {
            uint64_t n = std::min(chunk, end - first), next = first + n;
            if (next < end) {
                StartRead(job, buffers[1 - current].get(), next, std::min(chunk, end - next));
            }
            const unsigned char *records = buffers[current].get();
            for (uint64_t k = 0; k < n; ++k) {
                Entry e = Entry::FromRecord(records + k * stride);
                while (!trie.Insert(e)) {
                    if (trie.size() == 0) {
                        throw std::runtime_error("--dram-cap cannot hold one bucket");
                    }
                    writer.Spill(trie);
                }
            }
            job.f->fam_quiet();  // the next chunk is in
            current = 1 - current;
            first = next;
        }
        if (trie.size() > 0) writer.Spill(trie);
        job.SampleAnon();
        pieces = writer.pieces();
        spills = writer.spills();
    }
    job.budget->Give(2 * buffer_bytes);
    job.f->fam_put_blocking(&spills, job.board, job.PeWord(job.pe.rank, kPeSpills), 8);
    job.f->fam_put_blocking(&pieces, job.board, job.PeWord(job.pe.rank, kPePieces), 8);
    job.f->fam_add(job.board, kPieces * 8, pieces);
    job.f->fam_add(job.board, kSpills * 8, spills);
    job.f->fam_quiet();
    return spills;
}

}  // namespace famsort
