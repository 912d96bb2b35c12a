// The non-blocking engine of a channel whose memory it can load and store (an embedded-model
// channel; a fabric channel's items on same-node heaps): operations posted here run in order on
// the channel's own background thread, so the posting call returns before the copy is done.
// Pending counts what is posted and not yet complete; Quiet waits for all of it and reports
// the first error.
#ifndef FAMPOOL_COMMON_ASYNC_QUEUE_H_
#define FAMPOOL_COMMON_ASYNC_QUEUE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace fampool {

class AsyncQueue {
  public:
    AsyncQueue() = default;
    ~AsyncQueue();
    AsyncQueue(const AsyncQueue &) = delete;
    AsyncQueue &operator=(const AsyncQueue &) = delete;

    void Post(std::function<void()> operation);
    // Posted operations not yet complete.
    uint64_t Pending();
    // Waits until every posted operation is complete. Rethrows (and clears) the first error.
    void Quiet();
    // Waits like Quiet but keeps any error for the next Quiet.
    void Drain();

  private:
    // Every posted operation complete and no error kept: what Quiet and Drain check first,
    // without the lock.
    bool Idle() const;
    void Run();
    // Waits until every operation posted so far is complete: a short spin, then the condition.
    void WaitAllDone(std::unique_lock<std::mutex> &lock);

    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable all_done_;
    std::deque<std::function<void()>> queue_;
    uint64_t posted_ = 0;
    std::atomic<uint64_t> posted_hint_{0};  // posted_, readable without the lock
    uint64_t completed_ = 0;
    std::atomic<uint64_t> completed_hint_{0};  // completed_, readable without the lock
    std::exception_ptr first_error_;
    std::atomic<bool> error_hint_{false};  // first_error_ is set, readable without the lock
    bool stopping_ = false;
    bool worker_idle_ = false;  // the worker waits for work: Post must wake it
    std::thread worker_;        // started on the first Post
};

}  // namespace fampool

#endif  // FAMPOOL_COMMON_ASYNC_QUEUE_H_
