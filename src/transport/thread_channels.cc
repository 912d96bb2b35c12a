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

// Runs `step` on every channel; throws the first failure after all ran, saying how many other
// channels failed too.
template <typename Step>
void OnEvery(const std::vector<Channel *> &channels, Step &&step) {
    std::exception_ptr first;
    size_t more = 0;
    for (Channel *channel : channels) {
        try {
            step(*channel);
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

}  // namespace

ThreadChannels::ThreadChannels(Opener open)
    : open_(std::move(open)), serial_(next_serial.fetch_add(1)) {
    channels_.push_back(open_());
    by_thread_[std::this_thread::get_id()] = channels_.front().get();
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
    Channel *channel;
    if (channels_.size() < kMostChannels) {
        channels_.push_back(open_());
        channel = channels_.back().get();
    } else {
        channel = channels_[by_thread_.size() % channels_.size()].get();
    }
    by_thread_[id] = channel;
    return *channel;
}

std::vector<Channel *> ThreadChannels::All() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Channel *> all;
    all.reserve(channels_.size());
    for (const auto &channel : channels_) all.push_back(channel.get());
    return all;
}

size_t ThreadChannels::opened() {
    std::lock_guard<std::mutex> lock(mutex_);
    return channels_.size();
}

void ThreadChannels::Fence() {
    OnEvery(All(), [](Channel &channel) { channel.Fence(); });
}

void ThreadChannels::Quiet() {
    OnEvery(All(), [](Channel &channel) { channel.Quiet(); });
}

void ThreadChannels::Drain() {
    OnEvery(All(), [](Channel &channel) { channel.Drain(); });
}

uint64_t ThreadChannels::Pending() {
    uint64_t pending = 0;
    for (Channel *channel : All()) pending += channel->Pending();
    return pending;
}

}  // namespace fampool
