// threads_test.cc: the ordering rules of docs/semantics.md ("Threads") with many threads sharing
// one fam object under FAM_THREAD_MULTIPLE: a thread's fam_fence orders its earlier puts before
// its later ones (seen by other threads), a fam_quiet covers what other threads issued before
// it, atomics after a fenced put see the put, and non-fetching atomics of many threads add up
// exactly; transfers through a descriptor go on while another thread changes its item's mode. Runs
// on every model configuration (tests/CMakeLists.txt).
#include <fam/fam.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr int kThreads = 4;

class ThreadOrderTest : public ThreadMultipleFamTest {
  protected:
    uint64_t RegionSize() const override { return 64 * kMiB; }
    uint64_t ItemSize() const override { return 16 * kMiB; }

    // Runs `body(t)` on kThreads threads; returns what each reported, "" when all went well.
    std::vector<std::string> OnThreads(const std::function<std::string(int)> &body) {
        std::vector<std::string> errors(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                try {
                    errors[t] = body(t);
                } catch (const Fam_Exception &e) {
                    errors[t] = std::string("threw ") + FamErrorName(e.fam_error()) + ": " +
                                e.fam_error_msg();
                }
            });
        }
        for (std::thread &thread : threads) thread.join();
        return errors;
    }
};

TEST_F(ThreadOrderTest, FenceMakesAThreadsDataVisibleBeforeItsFlag) {
    // Threads 0 and 1 each write rounds of a 16 KiB block (every word = the round), fence,
    // then set their flag to the round. Threads 2 and 3 watch them: once a flag says round r,
    // every word of that block holds r or later.
    constexpr int kRounds = 150;  // below 256: a word torn between two rounds is one of them
    constexpr uint64_t kBlock = 16 * kKiB;
    auto block_of = [](int producer) { return producer * 64 * kKiB; };
    auto flag_of = [](int producer) { return 8 * kMiB + producer * 64; };
    std::atomic<int> producers_done{0};
    auto errors = OnThreads([&](int t) -> std::string {
        openfam::fam *f = fam();
        if (t < 2) {
            std::vector<uint64_t> words(kBlock / 8);
            for (uint64_t round = 1; round <= kRounds; ++round) {
                std::fill(words.begin(), words.end(), round);
                f->fam_put_nonblocking(words.data(), item_.get(), block_of(t), kBlock);
                f->fam_fence();
                f->fam_put_nonblocking(&round, item_.get(), flag_of(t), 8);
                f->fam_quiet();  // `words` and `round` change next round
            }
            ++producers_done;
            return "";
        }
        int producer = t - 2;
        std::vector<uint64_t> seen(kBlock / 8);
        int checks = 0;
        while (true) {
            bool last = producers_done.load() == 2;
            uint64_t flag = f->fam_fetch_uint64(item_.get(), flag_of(producer));
            f->fam_get_blocking(seen.data(), item_.get(), block_of(producer), kBlock);
            for (uint64_t word : seen) {
                if (word < flag) {
                    return "flag " + std::to_string(flag) + " seen before its data (a word " +
                           std::to_string(word) + ")";
                }
            }
            ++checks;
            if (last) break;
        }
        return checks > 0 ? "" : "never checked";
    });
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(fam()->fam_fetch_uint64(item_.get(), flag_of(0)), uint64_t{kRounds});
    EXPECT_EQ(fam()->fam_fetch_uint64(item_.get(), flag_of(1)), uint64_t{kRounds});
}

TEST_F(ThreadOrderTest, QuietCoversWhatOtherThreadsIssuedBeforeIt) {
    // Each thread posts 1 MiB puts (large enough to be in flight on every model) and says so;
    // the main thread's one quiet completes them all while the threads still live.
    constexpr uint64_t kChunk = kMiB;
    constexpr int kPuts = 3;
    std::vector<std::vector<uint8_t>> chunks;
    for (int i = 0; i < kThreads * kPuts; ++i) chunks.push_back(Pattern(kChunk, 40 + i));
    std::atomic<int> posted{0};
    std::atomic<bool> checked{false};
    std::thread checker([&] {
        while (posted.load() < kThreads) std::this_thread::yield();
        fam()->fam_quiet();
        EXPECT_EQ(fam()->fam_progress(), 0u);
        for (int i = 0; i < kThreads * kPuts; ++i) {
            EXPECT_EQ(GetBytes(item_.get(), i * kChunk, kChunk), chunks[i]) << "put " << i;
        }
        checked = true;
    });
    auto errors = OnThreads([&](int t) -> std::string {
        for (int k = 0; k < kPuts; ++k) {
            int i = t * kPuts + k;
            fam()->fam_put_nonblocking(chunks[i].data(), item_.get(), i * kChunk, kChunk);
        }
        ++posted;
        while (!checked.load()) std::this_thread::yield();  // alive until the quiet is done
        return "";
    });
    checker.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

TEST_F(ThreadOrderTest, AtomicAfterAFencedPutSeesThePut) {
    constexpr int kRounds = 100;
    auto errors = OnThreads([&](int t) -> std::string {
        openfam::fam *f = fam();
        uint64_t word = 12 * kMiB + t * 64;
        for (uint64_t round = 0; round < kRounds; ++round) {
            uint64_t value = round * 1000 + t;
            f->fam_put_nonblocking(&value, item_.get(), word, 8);
            f->fam_fence();
            uint64_t old = f->fam_fetch_add(item_.get(), word, uint64_t{1});
            if (old != value) {
                return "round " + std::to_string(round) + ": fetch_add saw " + std::to_string(old) +
                       ", the fenced put wrote " + std::to_string(value);
            }
            f->fam_quiet();
        }
        return "";
    });
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

TEST_F(ThreadOrderTest, NonFetchingAtomicsOfManyThreadsAddUpExactly) {
    constexpr int kAdds = 500;
    constexpr uint64_t kCounter = 14 * kMiB;
    auto errors = OnThreads([&](int t) -> std::string {
        for (int i = 0; i < kAdds; ++i) fam()->fam_add(item_.get(), kCounter, uint64_t(t + 1));
        fam()->fam_quiet();
        return "";
    });
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
    // 500 x (1 + 2 + 3 + 4)
    EXPECT_EQ(fam()->fam_fetch_uint64(item_.get(), kCounter), uint64_t{kAdds * 10});
}

TEST_F(ThreadOrderTest, PutsOfOneThreadAfterAFenceLandInOrder) {
    // Each thread writes rounds of one word non-blocking, fencing between them: the word ends
    // at the last round, never an earlier one that overtook it.
    constexpr int kRounds = 200;
    auto errors = OnThreads([&](int t) -> std::string {
        openfam::fam *f = fam();
        uint64_t word = 15 * kMiB + t * 64;
        std::vector<uint64_t> values(kRounds);
        for (int round = 0; round < kRounds; ++round) {
            values[round] = round + 1;
            f->fam_put_nonblocking(&values[round], item_.get(), word, 8);
            f->fam_fence();
        }
        f->fam_quiet();
        uint64_t last = f->fam_fetch_uint64(item_.get(), word);
        return last == kRounds ? "" : "word ends at " + std::to_string(last);
    });
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

TEST_F(ThreadOrderTest, TransfersGoOnWhileAnotherThreadChangesTheItemsPermissions) {
    // Thread 0 changes the item's mode back and forth (the owner keeps read and write) and
    // reads it back with fam_stat, which each give the descriptor a new item record and keys;
    // the other threads put and get through the same descriptor meanwhile, and every transfer
    // must work and move the right bytes (under ThreadSanitizer: with no race on the record).
    constexpr int kChanges = 40;
    constexpr int kMostRounds = 20000;  // a bound, should the changes never end
    constexpr uint64_t kBlock = 4 * kKiB;
    // The item's own mode applies in a region of permission level DATAITEM.
    Fam_Region_Attributes by_item = FamAttributes(MEMORY_TYPE_DEFAULT, DATAITEM);
    auto per_item = CreateRegion("per_item", 4 * kMiB, 0777, &by_item);
    auto item = Allocate("changing", kMiB, per_item.get(), 0600);
    std::atomic<bool> changing{true};
    auto errors = OnThreads([&](int t) -> std::string {
        openfam::fam *f = fam();
        if (t == 0) {
            struct Done {
                std::atomic<bool> &changing;
                ~Done() { changing = false; }  // also when a call throws
            } done{changing};
            for (int i = 0; i < kChanges; ++i) {
                mode_t mode = i % 2 ? 0640 : 0600;
                f->fam_change_permissions(item.get(), mode);
                Fam_Stat stat{};
                f->fam_stat(item.get(), &stat);
                if ((stat.perm & 0777) != mode) {
                    return "fam_stat shows mode " + std::to_string(stat.perm & 0777) +
                           " after a change to " + std::to_string(mode);
                }
            }
            return "";
        }
        uint64_t at = t * 64 * kKiB;  // below 1 MiB
        int rounds = 0;
        std::vector<uint8_t> seen(kBlock);
        while ((changing.load() || rounds == 0) && rounds < kMostRounds) {
            std::vector<uint8_t> bytes = Pattern(kBlock, t * 1000 + rounds);
            f->fam_put_blocking(bytes.data(), item.get(), at, kBlock);
            f->fam_get_blocking(seen.data(), item.get(), at, kBlock);
            if (seen != bytes) return "round " + std::to_string(rounds) + ": wrong bytes back";
            ++rounds;
        }
        return "";
    });
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

}  // namespace
}  // namespace fampool_test
