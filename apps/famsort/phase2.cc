// FAMSort phase 2: the work queue, and the PEs working it off.
//
// BuildTasks (PE 0, once every PE has spilled) merges the directories of all spills, each in
// key order, into tasks: a task is a prefix that no other spilled bucket's prefix is a proper
// prefix of, and takes every bucket of every spill whose prefix starts with it. Tasks are
// disjoint key ranges, in key order; a task's output offset is the sum of the sizes of the
// tasks before it. Within one spill the buckets of a task are adjacent in "runs", so each
// spill gives a task at most one source (a sorted run).
//
// RunTasks (every PE) takes tasks with fam_fetch_add on the queue head in FAM and merges the
// task's sorted runs (a k-way merge with a heap) into the indices of sorted_index. Each run is
// read through a buffer whose size is the DRAM budget shared out among the runs, so a task of
// any size is done under the cap: a task that fits is read at once, a larger one streams.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "famsort/famsort.h"

using namespace openfam;

namespace famsort {
namespace {

constexpr uint64_t kStreamEntries = 64;   // directory entries buffered per spill
constexpr uint64_t kTaskBuffer = 256;     // task records held before a put
constexpr uint64_t kSourceBuffer = 1024;  // sources held before a put
constexpr uint64_t kOutEntries = 8192;    // output indices held before a put
constexpr uint64_t kMinRunBuffer = 16;    // entries; below this the merge would crawl
constexpr uint64_t kGrabTasks = 64;       // tasks taken per fam_fetch_add at most
constexpr uint64_t kGrabSources = 4096;   // sources of a grab read in one get at most

// Lexicographic order of prefixes, a prefix before its extensions.
bool PrefixLess(const unsigned char *a, int a_depth, const unsigned char *b, int b_depth) {
    int c = std::memcmp(a, b, std::min(a_depth, b_depth));
    return c != 0 ? c < 0 : a_depth < b_depth;
}

bool StartsWith(const DirEntry &d, const TaskRecord &task) {
    return d.depth >= task.depth && std::memcmp(d.prefix, task.prefix, task.depth) == 0;
}

// One spill's directory, read in order through a small buffer.
class DirStream {
  public:
    DirStream(Job &job, const SpillRecord &spill)
        : job_(job), next_(spill.first), end_(spill.first + spill.count) {}
    bool Done() { return !Fill(); }
    const DirEntry &Head() { return buffer_[pos_]; }
    void Advance() { ++pos_; }

  private:
    bool Fill() {
        if (pos_ < fill_) return true;
        if (next_ == end_) return false;
        uint64_t n = std::min(kStreamEntries, end_ - next_);
        job_.f->fam_get_blocking(buffer_, job_.directory, next_ * sizeof(DirEntry),
                                 n * sizeof(DirEntry));
        next_ += n;
        pos_ = 0;
        fill_ = n;
        return true;
    }

    Job &job_;
    uint64_t next_, end_, pos_ = 0, fill_ = 0;
    DirEntry buffer_[kStreamEntries];
};

// Buffered puts of the task and source records.
class QueueWriter {
  public:
    explicit QueueWriter(Job &job) : job_(job) {}
    void AddSource(const Source &s) {
        sources_.push_back(s);
        ++source_count_;
        if (sources_.size() == kSourceBuffer) FlushSources();
    }
    void AddTask(const TaskRecord &t) {
        tasks_.push_back(t);
        ++task_count_;
        if (tasks_.size() == kTaskBuffer) FlushTasks();
    }
    void Flush() {
        FlushSources();
        FlushTasks();
    }
    uint64_t sources() const { return source_count_; }
    uint64_t tasks() const { return task_count_; }
    static uint64_t Bytes() {
        return kSourceBuffer * sizeof(Source) + kTaskBuffer * sizeof(TaskRecord);
    }

  private:
    void FlushSources() {
        if (sources_.empty()) return;
        uint64_t first = source_count_ - sources_.size();
        job_.f->fam_put_blocking(sources_.data(), job_.sources, first * sizeof(Source),
                                 sources_.size() * sizeof(Source));
        sources_.clear();
    }
    void FlushTasks() {
        if (tasks_.empty()) return;
        uint64_t first = task_count_ - tasks_.size();
        job_.f->fam_put_blocking(tasks_.data(), job_.tasks, first * sizeof(TaskRecord),
                                 tasks_.size() * sizeof(TaskRecord));
        tasks_.clear();
    }

    Job &job_;
    std::vector<Source> sources_;
    std::vector<TaskRecord> tasks_;
    uint64_t source_count_ = 0, task_count_ = 0;
};

// One sorted run of a task, read through a buffer of `capacity` entries.
struct RunCursor {
    uint64_t next = 0, end = 0;  // entries of "runs" not yet read
    std::unique_ptr<Entry[]> buffer;
    uint64_t capacity = 0, pos = 0, fill = 0;

    void Start(Job &job) {
        fill = std::min(capacity, end - next);
        job.f->fam_get_nonblocking(buffer.get(), job.runs, next * sizeof(Entry),
                                   fill * sizeof(Entry));
        next += fill;
        pos = 0;
    }
    // False when the run is used up.
    bool Refill(Job &job) {
        if (next == end) return false;
        fill = std::min(capacity, end - next);
        job.f->fam_get_blocking(buffer.get(), job.runs, next * sizeof(Entry), fill * sizeof(Entry));
        next += fill;
        pos = 0;
        return true;
    }
    const Entry &Head() const { return buffer[pos]; }
};

// The indices a PE writes to sorted_index, held until the buffer is full or the next one is
// not adjacent (the tasks of one grab are, so small tasks share puts).
class OutputWriter {
  public:
    explicit OutputWriter(Job &job) : job_(job), out_(new uint64_t[kOutEntries]) {
        job.budget->Take(kOutEntries * 8);
    }
    ~OutputWriter() { job_.budget->Give(kOutEntries * 8); }
    // The next indices go to sorted_index[at, ...).
    void Seek(uint64_t at) {
        if (at != next_ + held_) Flush();
        next_ = at - held_;
    }
    void Add(uint64_t index) {
        out_[held_++] = index;
        if (held_ == kOutEntries) Flush();
    }
    void Flush() {
        if (held_ == 0) return;
        job_.f->fam_put_blocking(out_.get(), job_.sorted_index, next_ * 8, held_ * 8);
        next_ += held_;
        held_ = 0;
    }
    uint64_t position() const { return next_ + held_; }

  private:
    Job &job_;
    std::unique_ptr<uint64_t[]> out_;
    uint64_t next_ = 0, held_ = 0;
};

// Merges the task's runs into its indices, sorted_index[task.out, task.out + task.count).
void MergeTask(Job &job, const TaskRecord &task, const Source *sources, OutputWriter &out) {
    uint64_t k = task.sources;
    if (k == 0) return;  // an empty task: nothing to write
    uint64_t fixed = k * (sizeof(Source) + sizeof(RunCursor) + 8);
    uint64_t share = job.budget->Fits(fixed)
                         ? (job.budget->cap() - job.budget->used() - fixed) / (k * sizeof(Entry))
                         : 0;
    if (share < kMinRunBuffer) {
        throw std::runtime_error("a task with " + std::to_string(k) +
                                 " runs does not fit --dram-cap: raise it");
    }
    if (job.opt.run_buffer > 0) share = std::min(share, job.opt.run_buffer);
    std::vector<RunCursor> runs(k);
    uint64_t taken = fixed;
    for (uint64_t r = 0; r < k; ++r) {
        runs[r].next = sources[r].first;
        runs[r].end = sources[r].first + sources[r].count;
        runs[r].capacity = std::min(share, sources[r].count);
        runs[r].buffer.reset(new Entry[runs[r].capacity]);
        taken += runs[r].capacity * sizeof(Entry);
    }
    job.budget->Take(taken);
    for (RunCursor &run : runs) run.Start(job);
    job.f->fam_quiet();
    if (taken > (1 << 20)) job.SampleAnon();  // a big task: the run buffers are at their peak

    out.Seek(task.out);
    if (k == 1) {  // one run: already sorted
        RunCursor &run = runs[0];
        do {
            for (; run.pos < run.fill; ++run.pos) out.Add(run.Head().Index());
        } while (run.Refill(job));
    } else {
        // A min-heap of run numbers by head entry.
        auto later = [&runs](uint64_t a, uint64_t b) { return runs[b].Head() < runs[a].Head(); };
        std::vector<uint64_t> heap;
        for (uint64_t r = 0; r < k; ++r) {
            if (runs[r].fill > 0) heap.push_back(r);
        }
        std::make_heap(heap.begin(), heap.end(), later);
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), later);
            RunCursor &run = runs[heap.back()];
            out.Add(run.Head().Index());
            if (++run.pos < run.fill || run.Refill(job)) {
                std::push_heap(heap.begin(), heap.end(), later);
            } else {
                heap.pop_back();
            }
        }
    }
    job.budget->Give(taken);
    if (out.position() != task.out + task.count) {
        throw std::runtime_error("a task merged " + std::to_string(out.position() - task.out) +
                                 " entries of " + std::to_string(task.count));
    }
}

}  // namespace

uint64_t BuildTasks(Job &job) {
    std::vector<SpillRecord> spills;
    for (uint64_t p = 0; p < job.pe.count; ++p) {
        uint64_t n = job.f->fam_fetch_uint64(job.board, job.PeWord(p, kPeSpills));
        size_t old = spills.size();
        spills.resize(old + n);
        if (n > 0) {
            job.f->fam_get_blocking(spills.data() + old, job.spill_table,
                                    p * kMaxSpills * sizeof(SpillRecord), n * sizeof(SpillRecord));
        }
    }
    uint64_t bytes =
        spills.size() * (sizeof(SpillRecord) + sizeof(DirStream)) + QueueWriter::Bytes();
    if (!job.budget->Fits(bytes)) {
        throw std::runtime_error("the directories of " + std::to_string(spills.size()) +
                                 " spills do not fit --dram-cap: raise it");
    }
    job.budget->Take(bytes);
    std::vector<std::unique_ptr<DirStream>> streams;
    for (const SpillRecord &s : spills) streams.emplace_back(new DirStream(job, s));

    QueueWriter writer(job);
    uint64_t out = 0;
    for (;;) {
        DirStream *lowest = nullptr;
        for (auto &s : streams) {
            if (s->Done()) continue;
            if (lowest == nullptr || PrefixLess(s->Head().prefix, s->Head().depth,
                                                lowest->Head().prefix, lowest->Head().depth)) {
                lowest = s.get();
            }
        }
        if (lowest == nullptr) break;
        TaskRecord task{};
        std::memcpy(task.prefix, lowest->Head().prefix, kEntryBytes);
        task.depth = lowest->Head().depth;
        task.out = out;
        task.first_source = writer.sources();
        for (auto &s : streams) {
            Source source{0, 0};
            while (!s->Done() && StartsWith(s->Head(), task)) {
                const DirEntry &d = s->Head();
                if (source.count > 0 && source.first + source.count != d.first) {
                    writer.AddSource(source);  // not adjacent (cannot happen within a spill)
                    source.count = 0;
                }
                if (source.count == 0) source.first = d.first;
                source.count += d.count;
                task.count += d.count;
                s->Advance();
            }
            if (source.count > 0) writer.AddSource(source);
        }
        task.sources = writer.sources() - task.first_source;
        out += task.count;
        writer.AddTask(task);
    }
    writer.Flush();
    job.budget->Give(bytes);
    if (out != job.records) {
        throw std::runtime_error("the tasks hold " + std::to_string(out) + " entries, not " +
                                 std::to_string(job.records));
    }
    job.f->fam_set(job.board, kTaskCount * 8, writer.tasks());
    job.f->fam_quiet();
    return writer.tasks();
}

uint64_t RunTasks(Job &job, uint64_t task_count) {
    // Tasks are taken a grab at a time: one atomic, one read of their records (and of their
    // sources when those are few) and shared output puts for many small tasks, while every PE
    // still makes some 32 grabs, which keeps the load balanced.
    uint64_t grab = std::max<uint64_t>(1, std::min(kGrabTasks, task_count / (job.pe.count * 32)));
    uint64_t bytes = grab * sizeof(TaskRecord) + kGrabSources * sizeof(Source);
    job.budget->Take(bytes);
    std::vector<TaskRecord> tasks(grab);
    std::vector<Source> sources(kGrabSources);
    OutputWriter out(job);
    uint64_t done = 0;
    for (;;) {
        uint64_t t = job.f->fam_fetch_add(job.board, kQueueHead * 8, grab);
        if (t >= task_count) break;
        uint64_t n = std::min(grab, task_count - t);
        job.f->fam_get_blocking(tasks.data(), job.tasks, t * sizeof(TaskRecord),
                                n * sizeof(TaskRecord));
        uint64_t first = tasks[0].first_source;
        uint64_t count = tasks[n - 1].first_source + tasks[n - 1].sources - first;
        bool together = count <= kGrabSources;
        if (together && count > 0) {
            job.f->fam_get_blocking(sources.data(), job.sources, first * sizeof(Source),
                                    count * sizeof(Source));
        }
        for (uint64_t i = 0; i < n; ++i) {
            const TaskRecord &task = tasks[i];
            if (together) {
                MergeTask(job, task, sources.data() + (task.first_source - first), out);
                continue;
            }
            std::vector<Source> own(task.sources);  // counted in MergeTask's fixed bytes
            if (task.sources > 0) {
                job.f->fam_get_blocking(own.data(), job.sources, task.first_source * sizeof(Source),
                                        task.sources * sizeof(Source));
            }
            MergeTask(job, task, own.data(), out);
        }
        done += n;
        job.SampleAnon();
    }
    out.Flush();
    job.budget->Give(bytes);
    return done;
}

}  // namespace famsort
