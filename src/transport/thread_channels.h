// A Channel that gives each thread its own: threads sharing one fam object (or one context)
// under FAM_THREAD_MULTIPLE post, wait and complete in parallel instead of taking turns on one
// channel's lock for a whole round trip.
//
// A thread's operations all go to its channel, so their order among themselves is what one
// channel gives. Fence, Quiet, Drain and Pending cover every thread's channel: a quiet waits
// for each operation any thread issued before it started (docs/semantics.md, "Threads").
//
// The channel opened with this one goes to the first thread that uses it; others are opened
// when a thread first uses this one, up to kMostChannels; threads beyond that share them in
// turn. A channel outlives its thread (a later thread may take its id).
#ifndef FAMPOOL_TRANSPORT_THREAD_CHANNELS_H_
#define FAMPOOL_TRANSPORT_THREAD_CHANNELS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/data_path.h"

namespace fampool {

class ThreadChannels : public Channel {
  public:
    static constexpr size_t kMostChannels = 16;
    // Opens a channel; `first`: the one opened at construction, which should show a failure
    // to open at once (the others may open their resources when first used).
    using Opener = std::function<std::unique_ptr<Channel>(bool first)>;

    explicit ThreadChannels(Opener open);
    ~ThreadChannels() override;

    void Read(const std::shared_ptr<Binding> &item, uint64_t offset, void *local, uint64_t nbytes,
              bool blocking) override {
        Mine().Read(item, offset, local, nbytes, blocking);
    }
    void Write(const std::shared_ptr<Binding> &item, uint64_t offset, const void *local,
               uint64_t nbytes, bool blocking) override {
        Mine().Write(item, offset, local, nbytes, blocking);
    }
    void WriteCopies(const std::vector<std::shared_ptr<Binding>> &items, uint64_t offset,
                     const void *local, uint64_t nbytes) override {
        Mine().WriteCopies(items, offset, local, nbytes);
    }
    void Elements(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                  uint64_t count, uint64_t element_size, bool to_fam, bool blocking) override {
        Mine().Elements(item, std::move(plan), local, count, element_size, to_fam, blocking);
    }
    void ApplyElements(const std::shared_ptr<Binding> &item, ElementOp op, const uint64_t *index,
                       uint64_t count, uint64_t element_size, char *data) override {
        Mine().ApplyElements(item, op, index, count, element_size, data);
    }
    void Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type, const void *operand,
                const void *compare, void *result) override {
        Mine().Atomic(item, offset, op, type, operand, compare, result);
    }
    void Fence() override;
    void Quiet() override;
    void Drain() override;
    uint64_t Pending() override;

    // Channels opened so far (for tests).
    size_t opened();
    // The calling thread's channel (for tests).
    Channel &OfThisThread() { return Mine(); }

  private:
    // The calling thread's channel: from a one-entry cache per thread, else looked up (and
    // opened) under the lock.
    Channel &Mine();
    Channel &Lookup();
    // Runs `step` on every channel opened so far; throws the first failure after all ran.
    void OnEvery(const std::function<void(Channel &)> &step);

    Opener open_;
    const uint64_t serial_;  // tells this object from one later built at the same address
    std::mutex mutex_;       // opening channels, by_thread_
    // Channels [0, opened_) are open; they are never closed before this object, so that
    // OnEvery reads them without the lock.
    std::array<std::unique_ptr<Channel>, kMostChannels> channels_;
    std::atomic<size_t> opened_{0};
    std::map<std::thread::id, Channel *> by_thread_;
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_THREAD_CHANNELS_H_
