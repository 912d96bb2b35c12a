#include "client/async_queue.h"

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
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(operation));
        ++posted_;
        if (!worker_.joinable()) worker_ = std::thread(&AsyncQueue::Run, this);
    }
    work_ready_.notify_one();
}

uint64_t AsyncQueue::Pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_ - completed_;
}

void AsyncQueue::Drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    all_done_.wait(lock, [this] { return completed_ == posted_; });
}

void AsyncQueue::Quiet() {
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        all_done_.wait(lock, [this] { return completed_ == posted_; });
        std::swap(error, first_error_);
    }
    if (error) std::rethrow_exception(error);
}

void AsyncQueue::Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to do
        std::function<void()> operation = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        std::exception_ptr error;
        try {
            operation();
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !first_error_) first_error_ = error;
        if (++completed_ == posted_) all_done_.notify_all();
    }
}

}  // namespace fampool
