// small_ops_bench: how many small non-blocking operations per second fampool completes, with
// 1 to 8 threads, on the default context and on a context per thread, next to a raw libfabric
// loop with the same window (large transfers: `transfer_bench api`). Runs the model the
// configuration names: the embedded model by default, a cluster's memory-server model with
// --cluster (FAMPOOL_CONFIG of `fampool up`).
//
//   small_ops_bench [--cluster] [--quick] [--threads 1,2,4,8] [--model NAME] [--csv PATH]
//
// Message rate (kind "rate"): threads that live for the whole run (each opens its own context
// once) issue operations on their own 256 KiB of one item, kWindow at a time: kWindow
// non-blocking calls (fam_get_nonblocking, fam_put_nonblocking, or fam_add of a uint64), then
// fam_quiet on the object the thread uses. Each measured run lasts about 0.05 s (--quick:
// 0.01 s), sized from a short probe run. Columns:
//   fampool   operations per second, all threads together (millions)
//   blocking  the same operations as blocking calls (atomics: fam_fetch_add), same threads
//   raw       cluster only: each thread its own libfabric endpoint (fabric_raw.h) against a
//             target thread that polls without sleeping, keeping kWindow operations in flight
//             (posting as completions free slots). Reads take the faster of libfabric's
//             default flags and FI_DELIVERY_COMPLETE; writes and atomics complete on delivery
//             (what a quiet must mean). Atomics over shm are fetching adds (docs/semantics.md
//             says why fampool's are too).
//   raw_batch cluster only: the same raw loop shaped as fampool's: kWindow operations posted,
//             then all waited for (a quiet), then the next kWindow
//   nb/bl, vs raw   fampool / blocking, fampool / raw
// Every figure is the median of kTrials runs; the trials of one row alternate fampool and raw.
// --quick (a smoke run): one trial per figure, sizes 8 and 256 B only.
//
// Writes PATH (default small_ops.csv), one line per row:
// model,kind,op,size_bytes,threads,context,fampool,blocking,raw,raw_batch,nb_vs_blocking,vs_raw
// (model: NAME, default "embedded" or "cluster-<provider>").
#include <fam/fam.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fabric_raw.h"

using namespace openfam;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kSlice = 256 * kKiB;  // each thread's part of the item
constexpr size_t kWindow = 64;           // operations between quiets (raw: in flight)
constexpr double kRunSeconds = 0.05;     // each measured run, about
constexpr int kTrials = 3;
constexpr uint64_t kSizes[] = {8, 64, 256, 1024, 4096};
constexpr uint64_t kQuickSizes[] = {8, 256};

struct Settings {
    bool cluster = false;
    bool quick = false;
    std::vector<int> threads = {1, 2, 4, 8};
    std::string csv = "small_ops.csv";
    std::string model;  // the CSV's model column; empty: embedded or cluster-<provider>
};

enum class Op { kGet, kPut, kAdd };
const char *Name(Op op) { return op == Op::kGet ? "get" : op == Op::kPut ? "put" : "add"; }

struct Row {
    std::string kind, op;
    uint64_t size = 0;
    int threads = 1;
    std::string context;
    double fampool = 0, blocking = 0, raw = NAN, raw_batch = NAN;
};

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// A fam option as a string (fam_get_option hands out a copy the caller frees).
std::string Option(fam &f, const char *name) {
    auto *value =
        static_cast<char *>(const_cast<void *>(f.fam_get_option(const_cast<char *>(name))));
    std::string text = value ? value : "";
    std::free(value);
    return text;
}

// Threads that live across measurements, as an application's do: each keeps what it opened
// (its channel of the fam object, its context). Run(body) runs body(t) on each, releases them
// together, and returns the seconds from the release to the last one's end.
class Crew {
  public:
    explicit Crew(int size) : size_(size) {
        for (int t = 0; t < size; ++t) threads_.emplace_back([this, t] { Work(t); });
    }
    ~Crew() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread &thread : threads_) thread.join();
    }
    int size() const { return size_; }

    double Run(const std::function<void(int)> &body) {
        ready_ = 0;
        done_ = 0;
        go_ = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            body_ = &body;
            ++generation_;
        }
        wake_.notify_all();
        while (ready_.load() < size_) std::this_thread::yield();
        auto start = Clock::now();
        go_.store(true, std::memory_order_release);
        while (done_.load(std::memory_order_acquire) < size_) std::this_thread::yield();
        return std::chrono::duration<double>(Clock::now() - start).count();
    }

  private:
    void Work(int t) {
        uint64_t seen = 0;
        for (;;) {
            const std::function<void(int)> *body;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                body = body_;
            }
            ++ready_;
            while (!go_.load(std::memory_order_acquire)) std::this_thread::yield();
            (*body)(t);
            done_.fetch_add(1, std::memory_order_release);
        }
    }

    const int size_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_;
    uint64_t generation_ = 0;
    bool stop_ = false;
    const std::function<void(int)> *body_ = nullptr;
    std::atomic<int> ready_{0}, done_{0};
    std::atomic<bool> go_{false};
};

class Bench {
  public:
    Bench(fam &f, const Settings &settings) : f_(f), s_(settings) {
        std::string name = "small_ops_" + std::to_string(getpid());
        region_.reset(f_.fam_create_region(name.c_str(), 16 * kMiB, 0600, nullptr));
        item_.reset(f_.fam_allocate("item", 8 * kSlice, 0600, region_.get()));
        std::vector<char> zeros(kSlice * 8, 0);
        f_.fam_put_blocking(zeros.data(), item_.get(), 0, zeros.size());  // first touch
        for (int t = 0; t < 8; ++t) locals_.emplace_back(kSlice, 1);
        provider_ = s_.cluster ? Option(f_, "LIBFABRIC_PROVIDER") : "";
    }
    ~Bench() {
        item_.reset();
        if (region_) f_.fam_destroy_region(region_.get());
    }

    std::vector<Row> Run() {
        std::vector<Row> rows;
        for (int threads : s_.threads) {
            Crew crew(threads);
            const std::vector<uint64_t> sizes =
                s_.quick ? std::vector<uint64_t>(std::begin(kQuickSizes), std::end(kQuickSizes))
                         : std::vector<uint64_t>(std::begin(kSizes), std::end(kSizes));
            // Each thread opens its own context, as a program with a context per thread does.
            std::vector<fam_context *> contexts(threads);
            crew.Run([&](int t) { contexts[t] = f_.fam_context_open(); });
            for (Op op : {Op::kGet, Op::kPut, Op::kAdd}) {
                for (uint64_t size : sizes) {
                    if (op == Op::kAdd && size != 8) continue;
                    for (bool per_thread : {false, true}) {
                        rows.push_back(Rate(crew, per_thread ? &contexts : nullptr, op, size));
                        Print(rows.back());
                    }
                }
            }
            crew.Run([&](int t) { f_.fam_context_close(contexts[t]); });
        }
        return rows;
    }

  private:
    // Operations per thread for a run of about kRunSeconds (quick: a fifth), from the time of
    // a short probe run: `run(count)` returns a run's seconds.
    uint64_t Calibrated(const std::function<double(uint64_t)> &run) const {
        const uint64_t probe = s_.quick ? 256 : 1024;
        double seconds = std::max(run(probe), 1e-6);
        double target = s_.quick ? kRunSeconds / 5 : kRunSeconds;
        return std::clamp<uint64_t>(static_cast<uint64_t>(target / seconds * probe), probe,
                                    uint64_t{1} << 22);
    }

    // One thread's loop: `count` operations, kWindow between quiets (or blocking ones).
    void Loop(fam &f, int t, Op op, uint64_t size, uint64_t count, bool blocking) {
        char *local = locals_[t].data();
        const uint64_t base = t * kSlice, slots = kSlice / size;
        Fam_Descriptor *item = item_.get();
        for (uint64_t i = 0; i < count; ++i) {
            uint64_t at = (i % slots) * size;
            switch (op) {
                case Op::kGet:
                    if (blocking)
                        f.fam_get_blocking(local + at, item, base + at, size);
                    else
                        f.fam_get_nonblocking(local + at, item, base + at, size);
                    break;
                case Op::kPut:
                    if (blocking)
                        f.fam_put_blocking(local + at, item, base + at, size);
                    else
                        f.fam_put_nonblocking(local + at, item, base + at, size);
                    break;
                case Op::kAdd:
                    if (blocking)
                        f.fam_fetch_add(item, base + at, uint64_t{1});
                    else
                        f.fam_add(item, base + at, uint64_t{1});
                    break;
            }
            if (!blocking && (i + 1) % kWindow == 0) f.fam_quiet();
        }
        if (!blocking) f.fam_quiet();
    }

    // `contexts`: each thread's context; null: every thread on the fam object.
    Row Rate(Crew &crew, const std::vector<fam_context *> *contexts, Op op, uint64_t size) {
        const int threads = crew.size();
        Row row{"rate", Name(op), size, threads, contexts ? "per-thread" : "default"};
        auto on = [&](int t) -> fam & { return contexts ? *(*contexts)[t] : f_; };
        auto run = [&](bool blocking) {
            return [&, blocking](uint64_t count) {
                return crew.Run([&](int t) { Loop(on(t), t, op, size, count, blocking); });
            };
        };
        uint64_t nb_count = Calibrated(run(false)), blocking_count = Calibrated(run(true));
        std::vector<double> nb, blocking, raw, raw_batch;
        for (int trial = 0, trials = s_.quick ? 1 : kTrials; trial < trials; ++trial) {
            nb.push_back(static_cast<double>(nb_count) * threads / run(false)(nb_count) / 1e6);
            blocking.push_back(static_cast<double>(blocking_count) * threads /
                               run(true)(blocking_count) / 1e6);
            if (s_.cluster) {
                raw.push_back(RawRate(crew, op, size, kWindow, false) / 1e6);
                raw_batch.push_back(RawRate(crew, op, size, kWindow, true) / 1e6);
            }
        }
        row.fampool = Median(nb);
        row.blocking = Median(blocking);
        if (s_.cluster) {
            row.raw = Median(raw);
            row.raw_batch = Median(raw_batch);
        }
        return row;
    }

    // Operations per second of `threads` raw endpoints against one polling target.
    double RawRate(Crew &crew, Op op, uint64_t size, size_t window, bool batches) {
        const int threads = crew.size();
        auto once = [&](fabric_raw::Semantics semantics) {
            uint64_t span = std::max<uint64_t>(window * size, kSlice);
            fabric_raw::RawTarget target(provider_, "127.0.0.1", std::to_string(NextPort()),
                                         span * threads);
            std::vector<std::unique_ptr<fabric_raw::RawClient>> clients;
            for (int t = 0; t < threads; ++t) {
                clients.push_back(std::make_unique<fabric_raw::RawClient>(provider_, "127.0.0.1",
                                                                          span, semantics));
            }
            fabric_raw::Op raw_op = op == Op::kGet       ? fabric_raw::Op::kRead
                                    : op == Op::kPut     ? fabric_raw::Op::kWrite
                                    : provider_ == "shm" ? fabric_raw::Op::kFetchAdd
                                                         : fabric_raw::Op::kAdd;
            fabric_raw::Target where = target.target();
            auto run = [&](uint64_t count) {
                return crew.Run([&](int t) {
                    fabric_raw::Target mine = where;
                    mine.base += t * span;
                    clients[t]->RunWindowed(mine, raw_op, size, count, window, 10, batches);
                });
            };
            uint64_t count = Calibrated(run);
            return static_cast<double>(count) * threads / run(count);
        };
        double rate = once(fabric_raw::Semantics::kDelivery);
        if (op == Op::kGet) rate = std::max(rate, once(fabric_raw::Semantics::kDefault));
        return rate;
    }

    int NextPort() { return 26000 + (port_++ % 2000); }

    void Print(const Row &row) {
        std::printf("%-9s %-4s %8lu %2d %-10s | %9.3f %9.3f %9.3f %9.3f | %6.2f %6.2f  Mops\n",
                    row.kind.c_str(), row.op.c_str(), static_cast<unsigned long>(row.size),
                    row.threads, row.context.c_str(), row.fampool, row.blocking, row.raw,
                    row.raw_batch, row.fampool / row.blocking, row.fampool / row.raw);
        std::fflush(stdout);
    }

    fam &f_;
    Settings s_;
    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
    std::vector<std::vector<char>> locals_;
    std::string provider_;
    int port_ = 0;
};

Settings Parse(int argc, char **argv) {
    Settings s;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--cluster") {
            s.cluster = true;
        } else if (arg == "--quick") {
            s.quick = true;
        } else if (arg == "--csv") {
            s.csv = value();
        } else if (arg == "--model") {
            s.model = value();
        } else if (arg == "--threads") {
            s.threads.clear();
            std::stringstream list(value());
            for (std::string n; std::getline(list, n, ',');) s.threads.push_back(std::stoi(n));
            for (int n : s.threads) {
                if (n < 1 || n > 8) throw std::runtime_error("--threads: 1 to 8 each");
            }
        } else {
            throw std::runtime_error(
                "unknown argument " + arg +
                " (use --cluster, --quick, --threads 1,2,4,8, --model NAME, --csv PATH)");
        }
    }
    return s;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        Settings settings = Parse(argc, argv);
        Fam_Options options{};
        options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
        fam f;
        f.fam_initialize("small_ops_bench", &options);
        std::string model = !settings.model.empty() ? settings.model
                            : settings.cluster      ? "cluster-" + Option(f, "LIBFABRIC_PROVIDER")
                                                    : "embedded";
        std::printf("model %s; window %zu\n", model.c_str(), kWindow);
        std::printf("%-9s %-4s %8s %2s %-10s | %9s %9s %9s %9s | %6s %6s\n", "kind", "op", "size",
                    "th", "context", "fampool", "blocking", "raw", "raw_batch", "nb/bl", "vs raw");
        std::vector<Row> rows;
        {
            Bench bench(f, settings);
            rows = bench.Run();
        }
        f.fam_finalize("small_ops_bench");
        FILE *csv = std::fopen(settings.csv.c_str(), "w");
        if (!csv) throw std::runtime_error("cannot write " + settings.csv);
        std::fprintf(csv,
                     "model,kind,op,size_bytes,threads,context,fampool,blocking,raw,"
                     "raw_batch,nb_vs_blocking,vs_raw\n");
        for (const Row &row : rows) {
            std::fprintf(csv, "%s,%s,%s,%lu,%d,%s,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f\n", model.c_str(),
                         row.kind.c_str(), row.op.c_str(), static_cast<unsigned long>(row.size),
                         row.threads, row.context.c_str(), row.fampool, row.blocking, row.raw,
                         row.raw_batch, row.fampool / row.blocking, row.fampool / row.raw);
        }
        std::fclose(csv);
        std::printf("wrote %s\n", settings.csv.c_str());
        return 0;
    } catch (const Fam_Exception &error) {
        std::fprintf(stderr, "small_ops_bench: %s\n", error.fam_error_msg());
    } catch (const std::exception &error) {
        std::fprintf(stderr, "small_ops_bench: %s\n", error.what());
    }
    return 1;
}
