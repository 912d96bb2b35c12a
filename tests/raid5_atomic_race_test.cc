// The windows of RAID5 atomics (a data unit's server or another member of the stripe slow or
// stopped while the parity server counts an atomic) and of a partner's key granted late, held
// open with test holds as in redundancy_race_test.cc (docs/robustness.md, "Redundant regions:
// the windows").
#include <signal.h>

#include <atomic>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "race_test.h"

namespace fampool_test {
namespace {

// A RAID5 atomic while a data member of its stripe other than the word's is stopped and not
// yet declared dead: the parity server has the word's server apply it, and must count it in
// parity then, whatever the stopped member does. Had it read the stopped member's unit for
// that and failed, the word would have changed with parity left without the change; the
// client, holding as the member is declared dead (client.degraded-atomic), makes the call
// again only after the member continued and was rebuilt in place from that parity: its unit
// rebuilt wrong (the difference landed there), and with the word's server lost next the word
// read back without the add.
class StripeMemberStoppedMidAtomicTest : public RaceTest {
  protected:
    std::string Holds() const override { return "client.degraded-atomic=8000"; }
};

TEST_P(StripeMemberStoppedMidAtomicTest, TheStripeStaysWhole) {
    constexpr size_t kStopped = 2;
    cluster()->Pause(kStopped);
    // One add per word: on some words server 2 holds another unit of the stripe.
    std::vector<uint64_t> old(kWords, ~uint64_t{0});
    std::vector<std::string> failed(kWords);
    std::vector<std::thread> adders;
    for (uint64_t word = 0; word < kWords; ++word) {
        adders.emplace_back([&, word] {
            try {
                old[word] = fam()->fam_fetch_add(words_.get(), word * kStride, uint64_t{1});
            } catch (const Fam_Exception &error) {
                failed[word] = error.fam_error_msg();
            }
        });
    }
    bool degraded = WaitDegraded("raid", 15);
    cluster()->Resume(kStopped);
    bool healthy = WaitHealthy("raid", 60);
    for (std::thread &adder : adders) adder.join();
    ASSERT_TRUE(degraded) << "memory server 2 stopped but not declared dead";
    ASSERT_TRUE(healthy) << "memory server 2 continued but not rebuilt";
    for (uint64_t word = 0; word < kWords; ++word) {
        EXPECT_EQ(failed[word], "") << "word " << word;
        EXPECT_EQ(old[word], 0u) << "word " << word;
    }
    // Every word 1, every other byte of the item 0 (never written).
    CheckWithEachServerKilled([&](const std::string &when) {
        std::vector<uint64_t> values = ReadWords(when);
        for (uint64_t word = 0; word < kWords; ++word)
            EXPECT_EQ(values[word], 1u) << "word " << word << ", " << when;
    });
}

// The data unit's server of a RAID5 atomic answers its parity server late, after the parity
// server gave up on it (atomic.applied=1500x1: each server's first answer, past the parity
// server's 1 s bound): the word holds the change, parity not. Other atomics on the same
// words go on meanwhile. The atomic is pending at the parity server, which asks again (the
// data unit's server answers from memory) and counts it in parity before anything else is
// done to the stripe; counted by the difference to the word's value as it is then instead (a
// later atomic's change in it), parity lost that later atomic: with the word's server killed,
// the word read back one short.
class DataServerAnswersLateTest : public RaceTest {
  protected:
    std::string Holds() const override { return "atomic.applied=1500x1"; }
};

TEST_P(DataServerAnswersLateTest, ParityCountsItOnce) {
    Adders adders;
    std::vector<size_t> before = LogLineCounts();
    StartAdders(adders, 4, 2);
    EXPECT_TRUE(WaitCalls(adders, 400));
    StopAdders(adders);
    bool held = false;
    for (size_t server : {1, 2, 3})
        held |= LastLinesMention(server, before[server], "atomic.applied");
    EXPECT_TRUE(held) << "no data unit's server answered late";
    CheckWithEachServerKilled([&](const std::string &when) { CheckAdders(adders, when.c_str()); });
}

// A killed server's partners have their keys revoked at its loss and again as its members'
// rebuild starts, and each server is slower to grant a key again than a lookup waits for one
// (server.key-regranted=1500x2: each server's first two grants after a revocation): a
// client's view then has some words with one member lost or being rebuilt and a partner with
// no key. That partner is not lost, so no call may fail: the call waits for its key. RAID5
// reads failed "no live member left" (FAM_ERR_RESOURCE) before, every run.
class KeylessPartnerTest : public RaceTest {
  protected:
    std::string Holds() const override { return "server.key-regranted=1500x2"; }
};

TEST_P(KeylessPartnerTest, NoCallFails) {
    Adders adders;
    StartAdders(adders, 2, kWords);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> reads{0};
    std::string failure;
    std::thread reader([&] {
        std::vector<uint8_t> back(kWords * kStride);
        while (!stop.load() && failure.empty()) {
            try {
                fam()->fam_get_blocking(back.data(), words_.get(), 0, back.size());
                reads.fetch_add(1);
            } catch (const Fam_Exception &error) {
                failure = error.fam_error_msg();
            }
        }
    });
    StopAndJoin join_reader{stop, reader};
    EXPECT_TRUE(WaitCalls(adders, 100));
    std::vector<size_t> before = LogLineCounts();
    cluster()->Kill(1, SIGKILL);
    EXPECT_TRUE(WaitDegraded("raid", 10));
    EXPECT_TRUE(WaitCalls(adders, 100)) << "no atomics with memory server 1 dead";
    uint64_t reads_then = reads.load();
    cluster()->Restart(1);
    cluster()->WaitReady();
    EXPECT_TRUE(WaitHealthy("raid", 60));
    EXPECT_TRUE(WaitCalls(adders, 100));
    stop.store(true);
    reader.join();
    StopAdders(adders);
    // The window was open: a partner's key granted again only after a lookup gave up on it.
    bool held = false;
    for (size_t server : {2, 3})
        held |= LastLinesMention(server, before[server], "server.key-regranted");
    EXPECT_TRUE(held) << "no key of memory servers 2 and 3 was granted again after the loss";
    EXPECT_GT(reads.load(), reads_then) << "no reads after memory server 1 came back";
    EXPECT_EQ(failure, "") << "a read";
    CheckAdders(adders, "after a loss whose partners' keys came late");
}

// A RAID5 atomic while its data member is being rebuilt, after the rebuild copied its stripe
// (held at rebuild.copied): the parity server applies it from parity and the other units and
// writes the new word to that member, and the write fails (stripe.atomic-rejoin=failx1: each
// parity server's first), so the call fails; then the rebuild ends. Parity counts the change,
// the rebuilt member does not. Before, only the client's next call wrote the word there, and
// only while the member was still being rebuilt: with another data member of the stripe lost
// next, its unit read back as parity and the rest make it, the difference in its bytes.
class RebuildingMemberMissesAtomicTest : public RaceTest {
  protected:
    std::string Holds() const override {
        return "rebuild.copied=3000x1,stripe.atomic-rejoin=failx1";
    }
};

TEST_P(RebuildingMemberMissesAtomicTest, TheStripeStaysWhole) {
    constexpr size_t kRebuilt = 1;
    cluster()->Kill(kRebuilt, SIGKILL);
    ASSERT_TRUE(WaitDegraded("raid", 10));
    std::vector<size_t> before = LogLineCounts();
    cluster()->Restart(kRebuilt);
    cluster()->WaitReady();
    ASSERT_TRUE(WaitMention(0, before[0], "rebuild.copied", 30))
        << "the metadata service did not hold the rebuild after its copy";
    // One add per word, the words of memory server 1 going to their parity servers; the last
    // words of each stripe first, so that no later add on its stripe writes a failed word
    // before the rebuild ends.
    std::vector<std::string> failed(kWords);
    for (uint64_t word = kWords; word-- > 0;) {
        try {
            EXPECT_EQ(fam()->fam_fetch_add(words_.get(), word * kStride, uint64_t{1}), 0u)
                << "word " << word;
        } catch (const Fam_Exception &error) {
            failed[word] = error.fam_error_msg();
            EXPECT_NE(failed[word].find("test failure at stripe.atomic-rejoin"), std::string::npos)
                << "word " << word << ": " << failed[word];
        }
    }
    ASSERT_TRUE(WaitHealthy("raid", 60)) << "memory server 1 not rebuilt";
    std::set<size_t> failing;  // the parity servers whose write to memory server 1 failed
    for (size_t server = 0; server < 4; ++server) {
        if (LastLinesMention(server, before[server], "stripe.atomic-rejoin"))
            failing.insert(server);
    }
    ASSERT_FALSE(failing.empty()) << "no parity server wrote a word to the member being rebuilt";
    // The window is open: a failed word's member lacks it after the rebuild ended, parity has it.
    for (uint64_t word = 0; word < kWords; ++word) {
        if (failed[word].empty()) continue;
        uint64_t value = ~uint64_t{0};  // read from its member (an atomic would finish it)
        fam()->fam_get_blocking(&value, words_.get(), word * kStride, sizeof value);
        EXPECT_EQ(value, 0u) << "word " << word << ": written to its member before the rebuild "
                             << "ended (nothing tested)";
    }
    // Each word as acknowledged; a word whose call failed 0 or 1 (the add made or not), and
    // never 1 and then 0; every other byte 0 (never written).
    std::vector<uint64_t> seen(kWords, 0);
    auto check = [&](const std::string &when) {
        std::vector<uint64_t> values = ReadWords(when);
        for (uint64_t word = 0; word < kWords; ++word) {
            if (failed[word].empty()) {
                EXPECT_EQ(values[word], 1u) << "word " << word << ", " << when;
                continue;
            }
            EXPECT_LE(values[word], 1u) << "word " << word << " (its add failed), " << when;
            EXPECT_GE(values[word], seen[word]) << "word " << word << " went back, " << when;
            seen[word] = values[word];
        }
    };
    // Killed first: a server holding another data unit of such a stripe (neither its parity
    // nor memory server 1), which reads back as parity and the others make it.
    std::vector<size_t> order;
    for (size_t server : {2, 3})
        if (!failing.count(server)) order.push_back(server);
    for (size_t server : {2, 3})
        if (failing.count(server)) order.push_back(server);
    order.push_back(kRebuilt);
    CheckWithEachServerKilled(check, order);
    check("after every server was killed and rebuilt");
}

auto Name = [](const ::testing::TestParamInfo<Level> &info) { return LevelName(info.param); };
INSTANTIATE_TEST_SUITE_P(Levels, KeylessPartnerTest, ::testing::Values(RAID1, RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, DataServerAnswersLateTest, ::testing::Values(RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, StripeMemberStoppedMidAtomicTest, ::testing::Values(RAID5), Name);
INSTANTIATE_TEST_SUITE_P(Levels, RebuildingMemberMissesAtomicTest, ::testing::Values(RAID5), Name);

}  // namespace
}  // namespace fampool_test
