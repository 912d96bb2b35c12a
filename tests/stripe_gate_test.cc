// The locks and leases of RAID5 stripes on the server holding their parity
// (memserver/stripe_gate.h).
#include "memserver/stripe_gate.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "common/error.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::StripeGate;
using std::chrono::milliseconds;

constexpr uint64_t kClient = uint64_t{1} << 63;
constexpr uint64_t kRegion = 7;

TEST(StripeGateTest, ALeaseKeepsOutRequestsUntilReleasedAndIsAllOrNone) {
    StripeGate gate;
    ASSERT_TRUE(gate.Lease(kRegion, {1, 2}, kClient | 1, milliseconds(60000), milliseconds(0)));
    // Another client wanting 2 and 3 gets neither, within its wait.
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(gate.Lease(kRegion, {2, 3}, kClient | 2, milliseconds(60000), milliseconds(50)));
    EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(50));
    EXPECT_TRUE(gate.Lease(kRegion, {3}, kClient | 3, milliseconds(60000), milliseconds(0)));
    // The same stripe number of another region is another stripe.
    EXPECT_TRUE(gate.Lease(kRegion + 1, {1}, kClient | 4, milliseconds(60000), milliseconds(0)));
    // A request on stripe 1 waits for the release.
    std::atomic<bool> held{false};
    std::thread request([&] {
        StripeGate::Hold hold(gate, kRegion, {1});
        held = true;
    });
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_FALSE(held.load());
    EXPECT_TRUE(gate.Release(kRegion, {1, 2}, kClient | 1, true));
    request.join();
    EXPECT_TRUE(held.load());
    EXPECT_EQ(gate.counts().granted, 3u);
    EXPECT_EQ(gate.counts().lapsed, 0u);
    // A release by a client that does not hold them says so.
    EXPECT_FALSE(gate.Release(kRegion, {3}, kClient | 9, true));
    EXPECT_TRUE(gate.Release(kRegion, {3}, kClient | 3, true));
}

TEST(StripeGateTest, ALapsedLeaseIsTakenBackAndItsStripesAreSuspectUntilRepaired) {
    StripeGate gate;
    ASSERT_TRUE(gate.Lease(kRegion, {5, 6}, kClient | 1, milliseconds(100), milliseconds(0)));
    auto start = std::chrono::steady_clock::now();
    {
        StripeGate::Hold hold(gate, kRegion, {4, 5});
        EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(100));
        EXPECT_EQ(hold.suspects(), std::vector<uint64_t>{5});
        hold.Repaired();
        EXPECT_TRUE(hold.suspects().empty());
    }
    EXPECT_EQ(gate.counts().lapsed, 1u);
    // The lapsed client's release: it no longer held 5, and its writes there may have come
    // after the repair: suspect again. 6, which nobody took meanwhile, it still held.
    EXPECT_FALSE(gate.Release(kRegion, {5, 6}, kClient | 1, true));
    EXPECT_FALSE(gate.Lease(kRegion, {5}, kClient | 3, milliseconds(60000), milliseconds(0)))
        << "no lease of a suspect stripe";
    {
        StripeGate::Hold hold(gate, kRegion, {5, 6});
        EXPECT_EQ(hold.suspects(), std::vector<uint64_t>{5});
        hold.Repaired();
    }
    // A release of transfers that did not all end well leaves the stripes suspect.
    ASSERT_TRUE(gate.Lease(kRegion, {8}, kClient | 2, milliseconds(60000), milliseconds(0)));
    EXPECT_TRUE(gate.Release(kRegion, {8}, kClient | 2, false));
    StripeGate::Hold hold(gate, kRegion, {8});
    EXPECT_EQ(hold.suspects(), std::vector<uint64_t>{8});
}

TEST(StripeGateTest, LeaseOwnersMustBeClients) {
    StripeGate gate;
    EXPECT_THROW(gate.Lease(kRegion, {1}, 5, milliseconds(1000), milliseconds(0)),
                 fampool::Failure);
}

}  // namespace
}  // namespace fampool_test
