// at_once_test.cc: AtOnce (common/at_once.h), the calls the metadata service makes to a
// region's servers together: each call runs, at the same time when asked, and each failure is
// returned at its call's index.
#include "common/at_once.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fampool_test {
namespace {

using fampool::AtOnce;
using fampool::RethrowFirst;

TEST(AtOnceTest, TogetherEveryCallRunsWhileTheOthersDo) {
    constexpr size_t kCalls = 8;
    std::mutex mutex;
    std::condition_variable all_started;
    size_t started = 0;
    std::vector<size_t> seen(kCalls, 0);
    // Each call waits (bounded) until every call has started: one after the other, the first
    // would see only itself.
    auto failures = AtOnce(
        kCalls,
        [&](size_t i) {
            std::unique_lock<std::mutex> lock(mutex);
            ++started;
            all_started.notify_all();
            all_started.wait_for(lock, std::chrono::seconds(10), [&] { return started == kCalls; });
            seen[i] = started;
        },
        /*together=*/true);
    for (size_t i = 0; i < kCalls; ++i) {
        EXPECT_FALSE(failures[i]) << "call " << i;
        EXPECT_EQ(seen[i], kCalls) << "call " << i << " did not run beside the others";
    }
}

TEST(AtOnceTest, NotTogetherRunsInOrderOnTheCallersThread) {
    std::vector<size_t> order;
    std::vector<std::thread::id> threads;
    AtOnce(
        5,
        [&](size_t i) {
            order.push_back(i);
            threads.push_back(std::this_thread::get_id());
        },
        /*together=*/false);
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
    for (std::thread::id id : threads) EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(AtOnceTest, EachFailureIsReturnedAtItsIndexAndTheLowestIsRethrown) {
    for (bool together : {true, false}) {
        auto failures = AtOnce(
            6,
            [](size_t i) {
                if (i == 2 || i == 4) throw std::runtime_error("call " + std::to_string(i));
            },
            together);
        ASSERT_EQ(failures.size(), 6u);
        for (size_t i : {0, 1, 3, 5}) EXPECT_FALSE(failures[i]) << "call " << i;
        ASSERT_TRUE(failures[2]);
        ASSERT_TRUE(failures[4]);
        try {
            RethrowFirst(failures);
            ADD_FAILURE() << "RethrowFirst threw nothing";
        } catch (const std::runtime_error &error) {
            EXPECT_EQ(std::string(error.what()), "call 2");
        }
    }
}

TEST(AtOnceTest, NoCallsAndNoFailures) {
    EXPECT_TRUE(AtOnce(
                    0, [](size_t) { throw std::logic_error("never"); }, true)
                    .empty());
    RethrowFirst({nullptr, nullptr});
}

}  // namespace
}  // namespace fampool_test
