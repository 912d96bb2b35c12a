// The fixture of the race tests (redundancy_race_test.cc, raid5_atomic_race_test.cc): a
// cluster of 4 memory servers and threads of one PE making atomics while a test holds the
// redundancy protocol at one of its steps (common/test_hold.h) and stops, kills and restarts
// servers.
#ifndef FAMPOOL_TESTS_SUPPORT_RACE_TEST_H_
#define FAMPOOL_TESTS_SUPPORT_RACE_TEST_H_

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/test_hold.h"
#include "raid_cluster.h"
#include "raid_state.h"

namespace fampool_test {
using Level = Fam_Redundancy_Level;

inline std::string LevelName(Level level) { return level == RAID1 ? "Raid1" : "Raid5"; }

// Stops (`stop`) and joins a thread of a test however the test ends (a failed assertion, an
// exception).
struct StopAndJoin {
    std::atomic<bool> &stop;
    std::thread &thread;
    ~StopAndJoin() {
        stop.store(true);
        if (thread.joinable()) thread.join();
    }
};

// A cluster of 4 memory servers (server 0 beside the metadata service is never stopped) whose
// processes, and this one, hold where Holds() says.
class RaceTest : public RaidClusterTest, public ::testing::WithParamInterface<Level> {
  protected:
    const char *Spec() const override { return "4:4096"; }
    virtual std::string Holds() const = 0;
    void PrepareEnvironment() override {
        RaidClusterTest::PrepareEnvironment();
        SetEnv("FAMPOOL_TEST_HOLD", Holds());
        fampool::ReloadTestHolds();  // this process's holds too, when it runs several tests
    }
    bool AutoInitialize() const override { return false; }
    void SetUp() override {
        RaidClusterTest::SetUp();
        if (HasFatalFailure()) return;
        Fam_Options options = EmptyOptions();
        options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
        InitializeFam(&options);
        if (HasFatalFailure()) return;
        Fam_Region_Attributes attributes = FamAttributes(VOLATILE);
        attributes.redundancyLevel = GetParam();
        region_ = CreateRegion("raid", 16 << 20, 0777, &attributes);
        words_ = Allocate("words", kWords * kStride, region_.get());
    }
    void TearDown() override {
        // Whatever failed (an assertion on a wait, a check), the servers' side of it.
        if (HasFailure() && cluster())
            std::fprintf(stderr, "the servers' logs:\n%s", cluster()->Logs().c_str());
        words_.reset();
        region_.reset();
        RaidClusterTest::TearDown();
        SetEnv("FAMPOOL_TEST_HOLD", std::nullopt);
        fampool::ReloadTestHolds();  // none for the next test of this process
    }

    // Memory server index (1 to 3) whose log says it reached `point` since `lines_before`
    // lines of it, or 0.
    size_t ServerThatHeld(const char *point, const std::vector<size_t> &lines_before) {
        for (size_t i = 1; i < 4; ++i) {
            if (LogLines(i) > lines_before[i] && LastLinesMention(i, lines_before[i], point))
                return i;
        }
        return 0;
    }
    // Waits (at most `seconds`) until server process `i`'s log says it reached `point` since
    // `from` lines of it.
    bool WaitMention(size_t i, size_t from, const char *point, double seconds) {
        auto deadline = SteadyClock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
        while (!LastLinesMention(i, from, point)) {
            if (SteadyClock::now() > deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return true;
    }
    std::vector<size_t> LogLineCounts() {
        std::vector<size_t> counts;
        for (size_t i = 0; i < 4; ++i) counts.push_back(LogLines(i));
        return counts;
    }
    size_t LogLines(size_t i) {
        std::ifstream in(cluster()->dir() + "/server" + std::to_string(i) + ".log");
        size_t n = 0;
        for (std::string line; std::getline(in, line);) ++n;
        return n;
    }
    bool LastLinesMention(size_t i, size_t from, const char *point) {
        std::ifstream in(cluster()->dir() + "/server" + std::to_string(i) + ".log");
        size_t n = 0;
        for (std::string line; std::getline(in, line); ++n) {
            if (n >= from && line.find(std::string("test hold at ") + point) != std::string::npos) {
                return true;
            }
        }
        return false;
    }

    // Threads making fetch_add(1) on the words until `stop`: every result is remembered,
    // and a result fetched twice, or a failed call, is a failure.
    struct Adders {
        std::atomic<bool> stop{false};
        std::mutex mutex;
        std::map<uint64_t, std::set<uint64_t>> fetched;  // word -> results
        std::map<uint64_t, uint64_t> acked;
        std::vector<std::string> failures;
        std::atomic<uint64_t> calls{0};
        std::vector<std::thread> threads;
        // Stopped and joined however the test ends (a failed assertion, an exception).
        ~Adders() {
            stop.store(true);
            for (std::thread &thread : threads)
                if (thread.joinable()) thread.join();
        }
    };
    void StartAdders(Adders &adders, int threads, uint64_t words) {
        for (int t = 0; t < threads; ++t) {
            adders.threads.emplace_back([this, &adders, t, words] {
                for (uint64_t n = 0; !adders.stop.load(); ++n) {
                    uint64_t word = (n + t) % words;
                    try {
                        uint64_t old =
                            fam()->fam_fetch_add(words_.get(), word * kStride, uint64_t{1});
                        std::lock_guard<std::mutex> lock(adders.mutex);
                        ++adders.acked[word];
                        if (!adders.fetched[word].insert(old).second) {
                            adders.failures.push_back("word " + std::to_string(word) + ": " +
                                                      std::to_string(old) + " fetched twice");
                        }
                    } catch (const Fam_Exception &error) {
                        std::lock_guard<std::mutex> lock(adders.mutex);
                        adders.failures.push_back(std::string("fam_fetch_add failed: ") +
                                                  error.fam_error_msg());
                    }
                    adders.calls.fetch_add(1);
                }
            });
        }
    }
    void StopAdders(Adders &adders) {
        adders.stop.store(true);
        for (std::thread &thread : adders.threads)
            if (thread.joinable()) thread.join();
    }
    // The words hold exactly the acknowledged adds; no result came twice; no call failed.
    void CheckAdders(Adders &adders, const char *when) {
        for (const std::string &failure : adders.failures) ADD_FAILURE() << failure << ", " << when;
        for (auto [word, acked] : adders.acked) {
            uint64_t value = fam()->fam_fetch_uint64(words_.get(), word * kStride);
            EXPECT_EQ(value, acked) << "word " << word << " (below: an add lost; above: one "
                                    << "applied twice), " << when;
        }
    }
    // The words' values, read with one get of the item; every other byte must be 0 (never
    // written), `when` saying when for a failure.
    std::vector<uint64_t> ReadWords(const std::string &when) {
        std::vector<uint8_t> back(kWords * kStride);
        fam()->fam_get_blocking(back.data(), words_.get(), 0, back.size());
        std::vector<uint64_t> values(kWords);
        for (uint64_t word = 0; word < kWords; ++word) {
            std::memcpy(&values[word], back.data() + word * kStride, sizeof(uint64_t));
            std::memset(back.data() + word * kStride, 0, sizeof(uint64_t));
        }
        uint64_t wrong = 0, first = back.size();
        for (uint64_t i = 0; i < back.size(); ++i) {
            if (!back[i]) continue;
            ++wrong;
            first = std::min(first, i);
        }
        EXPECT_EQ(wrong, 0u) << "bytes never written that are not 0 (the first at " << first
                             << "), " << when;
        return values;
    }
    // `check(when)` with every member healthy, then with each of memory servers `order` (1-3)
    // killed in turn (restarted and rebuilt before the next): what parity makes of the killed
    // members' units must be what they held.
    void CheckWithEachServerKilled(const std::function<void(const std::string &)> &check,
                                   const std::vector<size_t> &order = {1, 2, 3}) {
        check("with every member healthy");
        for (size_t server : order) {
            cluster()->Kill(server, SIGKILL);
            ASSERT_TRUE(WaitDegraded("raid", 10));
            check("with memory server " + std::to_string(server) + " killed");
            cluster()->Restart(server);
            cluster()->WaitReady();
            ASSERT_TRUE(WaitHealthy("raid", 60));
        }
    }
    bool WaitCalls(Adders &adders, uint64_t more) {
        uint64_t from = adders.calls.load();
        auto deadline = SteadyClock::now() + std::chrono::seconds(30);
        while (adders.calls.load() < from + more && SteadyClock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return adders.calls.load() >= from + more;
    }

    static constexpr uint64_t kWords = 8;
    // 4 KiB + 8 apart: each word on another server, and on RAID5 in another stripe.
    static constexpr uint64_t kStride = 4096 + 8;
    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> words_;
};

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_RACE_TEST_H_
