// A rebuild copies a lost member's bytes the moment it marks the member rebuilding, without
// waiting for the clients to learn of it: a writer that still has the member as lost writes
// the healthy members only, and must make its write again once it sees the new state (see
// transport/redundant/redundant_transport.h). Here one PE writes without pause through a kill
// of a memory server, its restart and its members' rebuild: each slot of a large item once
// per pass and an atomic add to one counter word per write, so that a write the rebuild
// missed is not covered by a later one before the check. The check reads the rebuilt members:
// RAID1 reads a column's first copy while healthy, and with a second server killed the other
// column's rebuilt copy answers too; RAID5 reads healthy data units where they are, and
// rebuilds the second server's units from the rebuilt ones.
#include <signal.h>

#include <atomic>
#include <thread>

#include "raid_cluster.h"
#include "raid_state.h"

namespace fampool_test {
namespace {

constexpr uint64_t kSlot = 12 << 10;  // three 4 KiB units: every server's member
constexpr uint64_t kSlots = 1024;     // a pass over them outlasts a rebuild
constexpr uint64_t kWords = 4096;     // counters, one add per write

class RebuildRaceTest : public RaidClusterTest,
                        public ::testing::WithParamInterface<Fam_Redundancy_Level> {
  protected:
    const char *Spec() const override { return "3:4096"; }
    void Race();
    // Writes to wait for while the region is degraded.
    virtual uint64_t DegradedRounds() const { return 100; }
};

// The same with every write made on a view of the region with a member not healthy held for
// 120 ms between the view and its transfers: writes made on the view from before the rebuild
// began land after the rebuild copied their bytes (docs/robustness.md, the windows).
class HeldRebuildRaceTest : public RebuildRaceTest {
  protected:
    void PrepareEnvironment() override {
        RebuildRaceTest::PrepareEnvironment();
        SetEnv("FAMPOOL_TEST_HOLD", "client.degraded-write=120");
    }
    uint64_t DegradedRounds() const override { return 5; }
};

void RebuildRaceTest::Race() {
    Fam_Region_Attributes attributes = FamAttributes(PERSISTENT);
    attributes.redundancyLevel = GetParam();
    // Small, so that the rebuild reaches every item while writers may still have the old view.
    auto region = CreateRegion("raid", 16 << 20, 0777, &attributes);
    auto words = Allocate("words", kWords * 8, region.get());
    auto slots = Allocate("slots", kSlot * kSlots, region.get());
    std::vector<uint64_t> zeros(kWords, 0);
    fam()->fam_put_blocking(zeros.data(), words.get(), 0, kWords * 8);

    // The writer: pass p writes the pattern of seed p + 1 into every slot in turn, blocking
    // and non-blocking puts alternating, and adds 1 to word `round % kWords` each time.
    std::vector<uint32_t> written(kSlots, 0);  // the seed each slot holds
    std::vector<uint64_t> added(kWords, 0);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> rounds{0};
    std::string failure;
    std::thread writer([&] {
        std::vector<uint8_t> bytes(kSlot);
        try {
            for (uint64_t round = 0; !stop.load(); ++round) {
                uint64_t slot = round % kSlots;
                uint32_t seed = static_cast<uint32_t>(round / kSlots + 1);
                for (uint64_t i = 0; i < kSlot; ++i) bytes[i] = RaidPatternByte(i, seed + slot);
                if (round % 2) {
                    fam()->fam_put_nonblocking(bytes.data(), slots.get(), slot * kSlot, kSlot);
                    fam()->fam_quiet();
                } else {
                    fam()->fam_put_blocking(bytes.data(), slots.get(), slot * kSlot, kSlot);
                }
                written[slot] = seed;
                fam()->fam_add(words.get(), (round % kWords) * 8, uint64_t{1});
                ++added[round % kWords];
                rounds.store(round + 1);
            }
        } catch (const Fam_Exception &error) {
            failure = error.fam_error_msg();
        }
    });
    auto wait_rounds = [&](uint64_t more) {
        uint64_t from = rounds.load();
        auto deadline = SteadyClock::now() + std::chrono::seconds(30);
        while (rounds.load() < from + more && SteadyClock::now() < deadline && failure.empty()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return rounds.load() >= from + more;
    };
    EXPECT_TRUE(wait_rounds(100));
    cluster()->Kill(2, SIGKILL);
    EXPECT_TRUE(WaitDegraded("raid", 5));
    EXPECT_TRUE(wait_rounds(DegradedRounds())) << "no writes in degraded mode";
    // Back: its members are rebuilt by the metadata service on its own, the writer going on.
    cluster()->Restart(2);
    cluster()->WaitReady();
    bool healthy = WaitHealthy("raid", 60);
    stop.store(true);
    writer.join();
    ASSERT_TRUE(healthy) << cluster()->Logs();
    ASSERT_EQ(failure, "") << cluster()->Logs();
    // (A pass takes 1-3 s here, the rebuild about 0.1 s: a write it missed is not rewritten
    // before the writer stops. Without the writes made again, RAID1 failed 3 runs in 3 and
    // RAID5 2 in 3.)

    auto check = [&](const char *when) {
        std::vector<uint8_t> bytes(kSlot);
        uint64_t wrong = 0;
        for (uint64_t slot = 0; slot < kSlots; ++slot) {
            if (written[slot] == 0) continue;
            fam()->fam_get_blocking(bytes.data(), slots.get(), slot * kSlot, kSlot);
            for (uint64_t i = 0; i < kSlot; ++i) {
                if (bytes[i] != RaidPatternByte(i, written[slot] + slot)) {
                    if (++wrong <= 3)
                        ADD_FAILURE() << "slot " << slot << " byte " << i << ", " << when;
                    break;
                }
            }
        }
        std::vector<uint64_t> now(kWords);
        fam()->fam_get_blocking(now.data(), words.get(), 0, kWords * 8);
        uint64_t off = 0;
        for (uint64_t w = 0; w < kWords; ++w) off += now[w] != added[w];
        EXPECT_EQ(wrong, 0u) << "slots not as last written, " << when;
        EXPECT_EQ(off, 0u) << "counter words not as many as the adds, " << when;
    };
    check("with every member healthy after the rebuild");
    cluster()->Kill(1, SIGKILL);
    EXPECT_TRUE(WaitDegraded("raid", 5));
    check("with memory server 1 killed after the rebuild");
}

TEST_P(RebuildRaceTest, WritesMadeAsTheRebuildBeganReachTheRebuiltMember) { Race(); }
TEST_P(HeldRebuildRaceTest, WritesMadeAsTheRebuildBeganReachTheRebuiltMember) { Race(); }

auto LevelName = [](const ::testing::TestParamInfo<Fam_Redundancy_Level> &info) {
    return std::string(info.param == RAID1 ? "Raid1" : "Raid5");
};
INSTANTIATE_TEST_SUITE_P(Levels, RebuildRaceTest, ::testing::Values(RAID1, RAID5), LevelName);
INSTANTIATE_TEST_SUITE_P(Levels, HeldRebuildRaceTest, ::testing::Values(RAID1, RAID5), LevelName);

}  // namespace
}  // namespace fampool_test
