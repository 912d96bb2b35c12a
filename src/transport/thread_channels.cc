#include "transport/thread_channels.h"

#include <fmt/format.h>

#include <atomic>
#include <exception>

#include "common/error.h"

namespace fampool {
namespace {

std::atomic<uint64_t> next_serial{1};

// Per thread, the channels it used last: (object serial, channel). Serials are never reused,
// so an entry of a destroyed object never matches again.
struct CacheEntry {
    uint64_t serial = 0;
    Channel *channel = nullptr;
};
constexpr size_t kCacheEntries = 4;
thread_local CacheEntry cache[kCacheEntries];
thread_local size_t cache_next = 0;

}  // namespace

ThreadChannels::ThreadChannels(Opener open)
    : open_(std::move(open)), serial_(next_serial.fetch_add(1)) {
    channels_[0] = open_(true);
    opened_.store(1, std::memory_order_release);
}

ThreadChannels::~ThreadChannels() = default;

Channel &ThreadChannels::Mine() {
    for (const CacheEntry &entry : cache) {
        if (entry.serial == serial_) return *entry.channel;
    }
    Channel &channel = Lookup();
    cache[cache_next] = {serial_, &channel};
    cache_next = (cache_next + 1) % kCacheEntries;
    return channel;
}

Channel &ThreadChannels::Lookup() {
    std::lock_guard<std::mutex> lock(mutex_);
    auto id = std::this_thread::get_id();
    auto found = by_thread_.find(id);
    if (found != by_thread_.end()) return *found->second;
    size_t opened = opened_.load(std::memory_order_relaxed);
    Channel *channel;
    if (by_thread_.empty()) {
        // The first thread to use the object takes the channel opened with it: a context
        // opened by one thread for another to use costs one endpoint, as before.
        channel = channels_[0].get();
    } else if (opened < kMostChannels) {
        channels_[opened] = open_(false);
        channel = channels_[opened].get();
        opened_.store(opened + 1, std::memory_order_release);
    } else {
        channel = channels_[by_thread_.size() % kMostChannels].get();
    }
    by_thread_[id] = channel;
    return *channel;
}

size_t ThreadChannels::opened() { return opened_.load(std::memory_order_acquire); }

void ThreadChannels::OnEvery(const std::function<void(Channel &)> &step) {
    std::exception_ptr first;
    size_t more = 0;
    const size_t opened = opened_.load(std::memory_order_acquire);
    for (size_t i = 0; i < opened; ++i) {
        try {
            step(*channels_[i]);
        } catch (...) {
            if (first) {
                ++more;
            } else {
                first = std::current_exception();
            }
        }
    }
    if (!first) return;
    if (more == 0) std::rethrow_exception(first);
    try {
        std::rethrow_exception(first);
    } catch (const Failure &failure) {
        throw Failure(static_cast<openfam::Fam_Error>(failure.fam_error()),
                      fmt::format("{} (operations of {} more threads failed too)",
                                  failure.fam_error_msg(), more));
    }
}

void ThreadChannels::Fence() {
    OnEvery([](Channel &channel) { channel.Fence(); });
}

void ThreadChannels::Quiet() {
    OnEvery([](Channel &channel) { channel.Quiet(); });
}

void ThreadChannels::Drain() {
    OnEvery([](Channel &channel) { channel.Drain(); });
}

uint64_t ThreadChannels::Pending() {
    uint64_t pending = 0;
    const size_t opened = opened_.load(std::memory_order_acquire);
    for (size_t i = 0; i < opened; ++i) pending += channels_[i]->Pending();
    return pending;
}

}  // namespace fampool
