#include "common/async_queue.h"

namespace fampool {

AsyncQueue::~AsyncQueue() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void AsyncQueue::Post(std::function<void()> operation) {
    bool wake;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(operation));
        posted_hint_.store(++posted_, std::memory_order_release);
        if (!worker_.joinable()) worker_ = std::thread(&AsyncQueue::Run, this);
        wake = worker_idle_;
    }
    // A busy worker picks the operation up with its next batch: no wake-up system call.
    if (wake) work_ready_.notify_one();
}

uint64_t AsyncQueue::Pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_ - completed_;
}

void AsyncQueue::WaitAllDone(std::unique_lock<std::mutex> &lock) {
    uint64_t target = posted_;
    if (completed_ == target) return;
    lock.unlock();
    for (int spin = 0; spin < 2000 && completed_hint_.load(std::memory_order_acquire) < target;
         ++spin) {
        __builtin_ia32_pause();
    }
    lock.lock();
    all_done_.wait(lock, [this] { return completed_ == posted_; });
}

bool AsyncQueue::Idle() const {
    uint64_t posted = posted_hint_.load(std::memory_order_acquire);
    return completed_hint_.load(std::memory_order_acquire) == posted &&
           !error_hint_.load(std::memory_order_acquire);
}

void AsyncQueue::Drain() {
    if (Idle()) return;
    std::unique_lock<std::mutex> lock(mutex_);
    WaitAllDone(lock);
}

void AsyncQueue::Quiet() {
    // Nothing in flight and no error: no lock. Threads sharing a channel quiet it often (every
    // 64 operations in small_ops_bench), and its lock was where they met.
    if (Idle()) return;
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        WaitAllDone(lock);
        std::swap(error, first_error_);
        error_hint_.store(false, std::memory_order_release);
    }
    if (error) std::rethrow_exception(error);
}

void AsyncQueue::Run() {
    std::deque<std::function<void()>> batch;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        worker_idle_ = true;
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        worker_idle_ = false;
        if (queue_.empty()) return;  // stopping, and nothing left to do
        // Take everything posted so far in one go; run it in order without the lock.
        batch.swap(queue_);
        lock.unlock();
        std::exception_ptr error;
        for (auto &operation : batch) {
            try {
                operation();
            } catch (...) {
                if (!error) error = std::current_exception();
            }
        }
        uint64_t done = batch.size();
        batch.clear();
        lock.lock();
        if (error && !first_error_) {
            first_error_ = error;
            error_hint_.store(true, std::memory_order_release);
        }
        completed_ += done;
        completed_hint_.store(completed_, std::memory_order_release);
        if (completed_ == posted_) all_done_.notify_all();
        // Spin briefly for more work before sleeping: a stream of small operations then costs
        // no wake-up per operation. The spin is short (about 20 us) so an idle context does
        // not take a core from the application.
        uint64_t seen = completed_;
        lock.unlock();
        for (int spin = 0; spin < 2000 && posted_hint_.load(std::memory_order_acquire) == seen;
             ++spin) {
            __builtin_ia32_pause();
        }
        lock.lock();
    }
}

}  // namespace fampool
