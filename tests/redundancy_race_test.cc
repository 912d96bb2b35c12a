// The windows of redundant regions around a failure and a rebuild (docs/robustness.md,
// "Redundant regions: the windows"), each held open with test holds (common/test_hold.h) so
// that a run shows it every time instead of now and then: several threads of one PE make
// atomics (and puts) while a memory server is stopped, killed, restarted and rebuilt; what was
// acknowledged must be what the region holds, and no call may fail while one member is
// unavailable. The RAID5 atomics' and keys' windows: raid5_atomic_race_test.cc.
#include <signal.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "race_test.h"

namespace fampool_test {
namespace {

// The memory server applying an atomic dies after it applied it and before it answered: the
// client makes it again elsewhere, which must not apply it a second time. RAID1: the first
// copy's server, after it mirrored the word to the copy; RAID5: the stripe's parity server,
// after the data unit and parity changed.
class DiesBeforeItAnswersTest : public RaceTest {
  protected:
    std::string Holds() const override {
        return GetParam() == RAID1 ? "atomic.applied=4000" : "stripe.atomic-applied=4000";
    }
};

TEST_P(DiesBeforeItAnswersTest, AnAtomicIsAppliedOnce) {
    // A word whose applying server is not server 0 (beside the metadata service).
    for (uint64_t word = 0; word < kWords; ++word) {
        std::vector<size_t> before = LogLineCounts();
        uint64_t old = ~uint64_t{0};
        std::string failure;
        std::thread adder([&] {
            try {
                old = fam()->fam_fetch_add(words_.get(), word * kStride, uint64_t{5});
            } catch (const Fam_Exception &error) {
                failure = error.fam_error_msg();
            }
        });
        size_t held = 0;
        for (int i = 0; i < 300 && !held; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            held = ServerThatHeld(GetParam() == RAID1 ? "atomic.applied" : "stripe.atomic-applied",
                                  before);
        }
        if (!held) {  // server 0 applies this word's atomics: the next word
            adder.join();
            continue;
        }
        cluster()->Kill(held, SIGKILL);
        adder.join();
        EXPECT_EQ(failure, "");
        EXPECT_EQ(old, 0u);
        EXPECT_EQ(fam()->fam_fetch_uint64(words_.get(), word * kStride), 5u)
            << "the add of 5 applied " << fam()->fam_fetch_uint64(words_.get(), word * kStride) / 5
            << " times (memory server " << held << " killed while it held the answer)";
        return;
    }
    FAIL() << "no word's atomics are applied by a server other than server 0";
}

// A server that applies atomics is stopped in the middle of one, long enough to be declared
// dead; the others go on with its members lost; then it continues and finishes what it had
// begun: nothing it does then may change the region.
class StoppedMidAtomicTest : public RaceTest {
  protected:
    std::string Holds() const override { return "stripe.atomic=300x1,mirror.applied=300x1"; }
};

TEST_P(StoppedMidAtomicTest, WhatItFinishesAfterItContinuesChangesNothing) {
    Adders adders;
    std::vector<size_t> before = LogLineCounts();
    StartAdders(adders, 3, kWords);
    size_t held = 0;
    const char *point = GetParam() == RAID1 ? "mirror.applied" : "stripe.atomic";
    // Every server holds its own first atomic there; the words lie on servers 1-3 too.
    for (int i = 0; i < 2500 && !held; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        held = ServerThatHeld(point, before);
    }
    if (!held) {
        StopAdders(adders);
        FAIL() << "no memory server but server 0 reached " << point << " within 5 s";
    }
    cluster()->Pause(held);
    EXPECT_TRUE(WaitDegraded("raid", 15)) << "not declared dead";
    EXPECT_TRUE(WaitCalls(adders, 200))
        << "no atomics while memory server " << held << " is stopped";
    cluster()->Resume(held);
    EXPECT_TRUE(WaitHealthy("raid", 60));
    EXPECT_TRUE(WaitCalls(adders, 200));
    StopAdders(adders);
    CheckAdders(adders, "after a server stopped in the middle of an atomic continued");
}

// A server stopped long enough to be declared dead, with atomics waiting for it: when it goes
// on it answers them from its lost members (their keys are taken away only once the metadata
// service hears from it), without the copy (whose keys were revoked when it was declared dead);
// the client holds before it makes them again, and meanwhile the server's members are rebuilt
// onto it. It must not answer them again from memory of the extent that was there before.
class StoppedServerAnswersLateTest : public RaceTest {
  protected:
    std::string Holds() const override { return "client.mirror-failed=1500"; }
};

TEST_P(StoppedServerAnswersLateTest, ItsAnswersFromALostMemberAreMadeAgain) {
    Adders adders;
    StartAdders(adders, 4, kWords);
    EXPECT_TRUE(WaitCalls(adders, 100));
    for (size_t server : {1, 2}) {
        cluster()->Pause(server);
        EXPECT_TRUE(WaitDegraded("raid", 15)) << "memory server " << server << " not declared dead";
        EXPECT_TRUE(WaitCalls(adders, 50));
        cluster()->Resume(server);
        EXPECT_TRUE(WaitHealthy("raid", 60));
        EXPECT_TRUE(WaitCalls(adders, 100));
    }
    StopAdders(adders);
    CheckAdders(adders, "after two servers were stopped past their declared death");
}

// Atomics of several threads on the same words while a server is killed, restarted and its
// members rebuilt (three times), with the threads' views of the region held back while it is
// degraded: at every step of the rebuild some threads have the old view and some the new.
class AtomicsAcrossRebuildTest : public RaceTest {
  protected:
    std::string Holds() const override { return "client.degraded-atomic=30"; }
};

TEST_P(AtomicsAcrossRebuildTest, AreExactlyOnce) {
    Adders adders;
    StartAdders(adders, 4, 2);
    EXPECT_TRUE(WaitCalls(adders, 100));
    for (size_t server : {1, 2, 3}) {
        cluster()->Kill(server, SIGKILL);
        EXPECT_TRUE(WaitDegraded("raid", 10));
        EXPECT_TRUE(WaitCalls(adders, 100))
            << "no atomics with memory server " << server << " dead";
        cluster()->Restart(server);
        cluster()->WaitReady();
        EXPECT_TRUE(WaitHealthy("raid", 60));
        EXPECT_TRUE(WaitCalls(adders, 100));
    }
    StopAdders(adders);
    CheckAdders(adders, "after three servers were killed and rebuilt in turn");
}

// Puts, gets and atomics of several threads while a server is stopped (SIGSTOP) for 4 s, long
// enough to be declared dead, and continues; then killed and restarted: no call fails, and
// every slot reads back as last written.
class OneMemberUnavailableTest : public RaceTest {
  protected:
    std::string Holds() const override { return ""; }
};

TEST_P(OneMemberUnavailableTest, NoCallFails) {
    constexpr uint64_t kSlot = 12 << 10, kSlots = 64;
    auto slots = Allocate("slots", kSlot * kSlots, region_.get());
    Adders adders;
    StartAdders(adders, 2, kWords);
    std::atomic<bool> stop{false};
    std::vector<uint32_t> written(kSlots, 0);
    std::string failure;
    std::thread writer([&] {
        std::vector<uint8_t> bytes(kSlot), back(kSlot);
        for (uint64_t round = 0; !stop.load() && failure.empty(); ++round) {
            uint64_t slot = round % kSlots;
            uint32_t seed = static_cast<uint32_t>(round + 1);
            for (uint64_t i = 0; i < kSlot; ++i) bytes[i] = RaidPatternByte(i, seed);
            try {
                if (round % 2) {
                    fam()->fam_put_nonblocking(bytes.data(), slots.get(), slot * kSlot, kSlot);
                    fam()->fam_quiet();
                } else {
                    fam()->fam_put_blocking(bytes.data(), slots.get(), slot * kSlot, kSlot);
                }
                written[slot] = seed;
                fam()->fam_get_blocking(back.data(), slots.get(), slot * kSlot, kSlot);
                if (back != bytes) failure = "slot " + std::to_string(slot) + " read back wrong";
            } catch (const Fam_Exception &error) {
                failure = error.fam_error_msg();
            }
        }
    });
    StopAndJoin join_writer{stop, writer};
    EXPECT_TRUE(WaitCalls(adders, 100));
    cluster()->Pause(2);
    EXPECT_TRUE(WaitDegraded("raid", 15)) << "memory server 2 stopped but not declared dead";
    EXPECT_TRUE(WaitCalls(adders, 100)) << "no atomics while memory server 2 is stopped";
    std::this_thread::sleep_for(std::chrono::seconds(1));
    cluster()->Resume(2);
    EXPECT_TRUE(WaitHealthy("raid", 60));
    EXPECT_TRUE(WaitCalls(adders, 200));
    cluster()->Kill(3, SIGKILL);
    EXPECT_TRUE(WaitDegraded("raid", 10));
    EXPECT_TRUE(WaitCalls(adders, 100));
    cluster()->Restart(3);
    cluster()->WaitReady();
    EXPECT_TRUE(WaitHealthy("raid", 60));
    EXPECT_TRUE(WaitCalls(adders, 200));
    stop.store(true);
    writer.join();
    StopAdders(adders);
    EXPECT_EQ(failure, "");
    CheckAdders(adders, "after a stop and a kill");
    std::vector<uint8_t> back(kSlot);
    for (uint64_t slot = 0; slot < kSlots; ++slot) {
        if (!written[slot]) continue;
        fam()->fam_get_blocking(back.data(), slots.get(), slot * kSlot, kSlot);
        uint64_t wrong = 0;
        for (uint64_t i = 0; i < kSlot; ++i) wrong += back[i] != RaidPatternByte(i, written[slot]);
        EXPECT_EQ(wrong, 0u) << "slot " << slot;
    }
}

// A lookup's key granted just before a member's server is declared dead (which revokes the
// keys of that region's other members) and kept by the metadata service just after: kept, it
// would be handed to every later lookup and refused by its server for good. The first grants
// of the item are held until the loss has been recorded.
class KeyGrantedAcrossALossTest : public RaidClusterTest,
                                  public ::testing::WithParamInterface<Level> {
  protected:
    const char *Spec() const override { return "4:4096"; }
    void PrepareEnvironment() override {
        RaidClusterTest::PrepareEnvironment();
        SetEnv("FAMPOOL_TEST_HOLD", "meta.key-granted=3000x2");
    }
};

TEST_P(KeyGrantedAcrossALossTest, IsNotHandedOutAgain) {
    // Keys per item, so that the first allocation's grants are the first the service makes.
    Fam_Region_Attributes attributes = FamAttributes(VOLATILE, DATAITEM);
    attributes.redundancyLevel = GetParam();
    auto region = CreateRegion("raid", 16 << 20, 0777, &attributes);
    std::unique_ptr<Fam_Descriptor> item;
    std::atomic<bool> allocated{false};
    std::string failed;
    std::thread allocate([&] {
        try {
            item.reset(fam()->fam_allocate("late", 4096, 0777, region.get()));
        } catch (const Fam_Exception &e) {
            failed = e.fam_error_msg();
        }
        allocated.store(true);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cluster()->Kill(1, SIGKILL);
    EXPECT_TRUE(WaitDegraded("raid", 10));
    // The loss recorded while the allocation's grants were held (else nothing was tested).
    EXPECT_FALSE(allocated.load()) << "memory server 1 declared dead only after the grants";
    allocate.join();
    ASSERT_EQ(failed, "");
    ASSERT_NE(item, nullptr);
    std::vector<uint8_t> bytes(4096, 7), back(4096);
    fam()->fam_put_blocking(bytes.data(), item.get(), 0, bytes.size());
    fam()->fam_get_blocking(back.data(), item.get(), 0, back.size());
    EXPECT_EQ(back, bytes);
    EXPECT_EQ(fam()->fam_fetch_add(item.get(), 0, uint64_t{1}), 0x0707070707070707u);
}

// An atomic whose client took its view while a member was lost and made the call only after
// the member was rebuilt (its view held back 12 s), with other threads' atomics on the same
// word meanwhile at the rebuilt member: applied with no mirror at the other copy, after the
// rebuild copied the word, it would be missed by the rebuilt member, which would answer the
// others' next atomic from the word without it (RAID1: a result fetched twice, an add lost).
class StaleViewAcrossRebuildTest : public RaceTest {
  protected:
    std::string Holds() const override { return "client.degraded-atomic=12000x1"; }
};

TEST_P(StaleViewAcrossRebuildTest, AtomicIsNotLost) {
    // Word 1 lies in the item's second interleave unit: its first copy on memory server 1.
    cluster()->Kill(1, SIGKILL);
    ASSERT_TRUE(WaitDegraded("raid", 10));
    // A read of the word first, which finds the member lost: the atomic's view says so.
    uint64_t word = 0;
    fam()->fam_get_blocking(&word, words_.get(), 1 * kStride, sizeof word);
    Adders adders;
    std::thread stale([&] {
        try {
            uint64_t old = fam()->fam_fetch_add(words_.get(), 1 * kStride, uint64_t{1});
            std::lock_guard<std::mutex> lock(adders.mutex);
            ++adders.acked[1];
            if (!adders.fetched[1].insert(old).second)
                adders.failures.push_back("word 1: " + std::to_string(old) + " fetched twice");
        } catch (const Fam_Exception &error) {
            std::lock_guard<std::mutex> lock(adders.mutex);
            adders.failures.push_back(std::string("the held fam_fetch_add failed: ") +
                                      error.fam_error_msg());
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // in its hold by then
    auto restarted = SteadyClock::now();
    cluster()->Restart(1);
    cluster()->WaitReady();
    EXPECT_TRUE(WaitHealthy("raid", 60));
    EXPECT_LT(SteadyClock::now() - restarted, std::chrono::milliseconds(11000))
        << "rebuilt only after the held atomic was made (nothing tested)";
    StartAdders(adders, 2, 2);
    stale.join();
    EXPECT_TRUE(WaitCalls(adders, 200));
    StopAdders(adders);
    CheckAdders(adders, "with one atomic's view from before the rebuild");
}

// A RAID5 write that fails part-way, its parity written and its data units not (the point
// stripe.write-parity fails once on each server, as a stopped data server would make it): the
// stripe's parity and data no longer match. Then a data server is killed: its unit must read
// back as it was, or as the failed put meant it (a byte of each), not as torn parity and the
// others make it (the change of the other units' bytes landed there), and the member rebuilt
// from the stripe, then another member lost, must read the same.
class TornStripeWriteTest : public RaceTest {
  protected:
    std::string Holds() const override { return "stripe.write-parity=failx1"; }
};

TEST_P(TornStripeWriteTest, LeavesNoOtherByteChanged) {
    // The end of one unit and the start of the next: parts of stripes, which go to their
    // parity servers. Every other data unit of the stripes is left as it was, and so would be
    // what torn parity makes of it (a put made again with it missing does not write it).
    constexpr uint64_t kUnit = 4096, kSize = 8 * kUnit, kBegin = kUnit - 1000, kLength = 2000;
    auto item = Allocate("torn", kSize, region_.get());
    std::vector<uint8_t> bytes(kLength);
    for (uint64_t i = 0; i < kLength; ++i) bytes[i] = RaidPatternByte(i, 7) | 1;  // never 0
    std::vector<size_t> before = LogLineCounts();
    try {
        fam()->fam_put_blocking(bytes.data(), item.get(), kBegin, kLength);
        ADD_FAILURE() << "the put did not fail at stripe.write-parity";
    } catch (const Fam_Exception &error) {
        EXPECT_NE(std::string(error.fam_error_msg()).find("test failure at stripe.write-parity"),
                  std::string::npos)
            << error.fam_error_msg();
    }
    // Every byte as it was (zero) or, inside the put, as the put wrote it.
    auto check = [&](const std::string &when) {
        std::vector<uint8_t> back(kSize);
        fam()->fam_get_blocking(back.data(), item.get(), 0, kSize);
        uint64_t wrong = 0, first = kSize;
        for (uint64_t i = 0; i < kSize; ++i) {
            bool inside = i >= kBegin && i < kBegin + kLength;
            if (back[i] == 0 || (inside && back[i] == bytes[i - kBegin])) continue;
            ++wrong;
            first = std::min(first, i);
        }
        EXPECT_EQ(wrong, 0u) << "bytes neither as they were nor as the failed put wrote them (the "
                                "first at "
                             << first << "), " << when;
        return back;
    };
    // Killed: a server whose member holds no parity of the stripes the put reached (server 0
    // holds the metadata service; the put reached two stripes at most), then another.
    size_t victim = 1;
    while (LastLinesMention(victim, before[victim], "stripe.write-parity")) ++victim;
    size_t next = victim == 1 ? 2 : 1;
    cluster()->Kill(victim, SIGKILL);
    ASSERT_TRUE(WaitDegraded("raid", 10));
    std::vector<uint8_t> degraded =
        check("with memory server " + std::to_string(victim) + " killed after the put failed");
    cluster()->Restart(victim);
    cluster()->WaitReady();
    ASSERT_TRUE(WaitHealthy("raid", 60));
    EXPECT_EQ(check("after memory server " + std::to_string(victim) + " was rebuilt"), degraded);
    cluster()->Kill(next, SIGKILL);
    ASSERT_TRUE(WaitDegraded("raid", 10));
    EXPECT_EQ(check("with memory server " + std::to_string(next) + " killed after the rebuild"),
              degraded);
}

auto Name = [](const ::testing::TestParamInfo<Level> &info) { return LevelName(info.param); };
INSTANTIATE_TEST_SUITE_P(Levels, DiesBeforeItAnswersTest, ::testing::Values(RAID1, RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, StoppedMidAtomicTest, ::testing::Values(RAID1, RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, AtomicsAcrossRebuildTest, ::testing::Values(RAID1, RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, StoppedServerAnswersLateTest, ::testing::Values(RAID1, RAID5),
                         Name);
INSTANTIATE_TEST_SUITE_P(Levels, KeyGrantedAcrossALossTest, ::testing::Values(RAID1, RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, StaleViewAcrossRebuildTest, ::testing::Values(RAID1, RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, TornStripeWriteTest, ::testing::Values(RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, OneMemberUnavailableTest, ::testing::Values(RAID1, RAID5), Name);

}  // namespace
}  // namespace fampool_test
