// aggregation_test.cc: memory-side operations. fam_queue_operation queues OP_ADD_INDEXED,
// OP_SCATTER and OP_GATHER at the PE; the queue ships to the memory servers at
// fam_aggregate_flush, at the configured threshold, at fam_close and at fam_finalize. Also the
// gathers and scatters of many scattered elements that memory servers do themselves.
#include <fam/fam.h>
#include <fam/fam_c.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kItemSize = 8 * kMiB;  // 1 Mi 8-byte words: every server of an interleaved
                                          // region holds some

// A region "r" with a zeroed 8 MiB item "i".
class AggregationTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure() || !fam()) return;
        MakeItem();
    }
    void TearDown() override {
        item_.reset();
        region_.reset();
        FamTest::TearDown();
    }
    void MakeItem() {
        region_ = CreateRegion("r", 64 * kMiB);
        item_ = Allocate("i", kItemSize, region_.get());
    }

    uint64_t Word(uint64_t index) {
        uint64_t value = 0;
        fam()->fam_get_blocking(&value, item_.get(), index * 8, 8);
        return value;
    }

    // `n` distinct word indices spread over the whole item, in random order.
    static std::vector<uint64_t> SpreadIndices(uint64_t n, uint32_t seed) {
        std::vector<uint64_t> index(n);
        uint64_t step = kItemSize / 8 / n;
        for (uint64_t i = 0; i < n; ++i) index[i] = i * step + (i * 7919) % step;
        std::shuffle(index.begin(), index.end(), std::mt19937(seed));
        return index;
    }

    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
};

TEST_F(AggregationTest, AddIndexedAppliesAtFlushNotBefore) {
    std::vector<uint64_t> index = {5, 1000, 77777, 3};
    std::vector<int64_t> add = {10, -4, 1 << 20, 7};
    fam()->fam_queue_operation(OP_ADD_INDEXED, add.data(), item_.get(), index.size(), index.data(),
                               8);
    EXPECT_EQ(Word(1000), 0u) << "applied before the queue was shipped";
    fam()->fam_aggregate_flush(item_.get());
    for (size_t i = 0; i < index.size(); ++i) {
        EXPECT_EQ(static_cast<int64_t>(Word(index[i])), add[i]) << "element " << index[i];
    }
}

TEST_F(AggregationTest, AddIndexedSumsRepeatedIndicesAndCallsExactly) {
    std::vector<uint64_t> index(3000);
    for (size_t i = 0; i < index.size(); ++i) index[i] = i % 7;
    std::vector<uint64_t> ones(index.size(), 1);
    for (int call = 0; call < 3; ++call) {
        fam()->fam_queue_operation(OP_ADD_INDEXED, ones.data(), item_.get(), index.size(),
                                   index.data(), 8);
    }
    fam()->fam_aggregate_flush(item_.get());
    uint64_t total = 0;
    for (uint64_t w = 0; w < 7; ++w) total += Word(w);
    EXPECT_EQ(total, 9000u);
    EXPECT_EQ(Word(0), 3u * 429);  // indices 0, 7, ... 2996: 429 of them per call
}

TEST_F(AggregationTest, AddIndexedOfFourByteElementsWraps) {
    std::vector<uint32_t> start = {0xFFFFFFF0u, 5};
    fam()->fam_put_blocking(start.data(), item_.get(), 0, 8);
    std::vector<uint64_t> index = {0, 1};
    std::vector<uint32_t> add = {0x20, 0xFFFFFFFFu};  // +32 wraps; -1
    fam()->fam_queue_operation(OP_ADD_INDEXED, add.data(), item_.get(), 2, index.data(), 4);
    fam()->fam_aggregate_flush(item_.get());
    std::vector<uint32_t> got(2);
    fam()->fam_get_blocking(got.data(), item_.get(), 0, 8);
    EXPECT_EQ(got[0], 0x10u);
    EXPECT_EQ(got[1], 4u);
}

TEST_F(AggregationTest, ScatterWritesEveryElementAtFlush) {
    for (uint64_t size : {8u, 24u}) {
        SCOPED_TRACE("element size " + std::to_string(size));
        std::vector<uint64_t> index = SpreadIndices(500, 1);
        for (uint64_t &each : index) each = each * 8 / size;  // stay inside the item
        std::vector<uint8_t> local = Pattern(index.size() * size, 70 + size);
        fam()->fam_queue_operation(OP_SCATTER, local.data(), item_.get(), index.size(),
                                   index.data(), size);
        fam()->fam_aggregate_flush(item_.get());
        for (size_t i = 0; i < index.size(); i += 37) {
            std::vector<uint8_t> want(local.begin() + i * size, local.begin() + (i + 1) * size);
            EXPECT_EQ(GetBytes(item_.get(), index[i] * size, size), want) << "element " << i;
        }
    }
}

TEST_F(AggregationTest, GatherFillsLocalAtFlush) {
    std::vector<uint8_t> contents = Pattern(kItemSize, 71);
    PutBytes(item_.get(), 0, contents);
    std::vector<uint64_t> index = SpreadIndices(2000, 2);
    std::vector<uint64_t> local(index.size(), 0);
    // Two calls into two halves of one buffer: each lands where its call said.
    size_t half = index.size() / 2;
    fam()->fam_queue_operation(OP_GATHER, local.data(), item_.get(), half, index.data(), 8);
    fam()->fam_queue_operation(OP_GATHER, local.data() + half, item_.get(), index.size() - half,
                               index.data() + half, 8);
    fam()->fam_aggregate_flush(item_.get());
    for (size_t i = 0; i < index.size(); ++i) {
        uint64_t want;
        std::memcpy(&want, &contents[index[i] * 8], 8);
        ASSERT_EQ(local[i], want) << "element " << i << " (index " << index[i] << ")";
    }
}

TEST_F(AggregationTest, OperationsOfOneItemApplyInTheOrderQueued) {
    uint64_t index = 42;
    uint64_t value = 100, add = 5;
    fam()->fam_queue_operation(OP_ADD_INDEXED, &add, item_.get(), 1, &index, 8);
    fam()->fam_queue_operation(OP_SCATTER, &value, item_.get(), 1, &index, 8);
    fam()->fam_queue_operation(OP_ADD_INDEXED, &add, item_.get(), 1, &index, 8);
    uint64_t seen = 0;
    fam()->fam_queue_operation(OP_GATHER, &seen, item_.get(), 1, &index, 8);
    fam()->fam_aggregate_flush(item_.get());
    EXPECT_EQ(seen, 105u);
    EXPECT_EQ(Word(index), 105u);
}

TEST_F(AggregationTest, FlushWithNothingQueuedReturns) {
    fam()->fam_aggregate_flush(item_.get());
    fam()->fam_aggregate_flush(item_.get());
}

TEST_F(AggregationTest, LocalOperandsMayBeReusedAfterTheCall) {
    uint64_t index = 9, add = 3;
    fam()->fam_queue_operation(OP_ADD_INDEXED, &add, item_.get(), 1, &index, 8);
    add = 1000;
    index = 10;
    fam()->fam_aggregate_flush(item_.get());
    EXPECT_EQ(Word(9), 3u);
    EXPECT_EQ(Word(10), 0u);
}

TEST_F(AggregationTest, FinalizeShipsWhatIsQueued) {
    std::vector<uint64_t> index = SpreadIndices(300, 3);
    std::vector<uint64_t> add(index.size(), 11);
    fam()->fam_queue_operation(OP_ADD_INDEXED, add.data(), item_.get(), index.size(), index.data(),
                               8);
    item_.reset();
    region_.reset();
    ReinitializeFam();
    region_.reset(fam()->fam_lookup_region("r"));
    item_.reset(fam()->fam_lookup("i", "r"));
    for (size_t i = 0; i < index.size(); i += 29) EXPECT_EQ(Word(index[i]), 11u);
}

TEST_F(AggregationTest, CloseShipsWhatIsQueued) {
    uint64_t index = 12345, add = 6;
    fam()->fam_queue_operation(OP_ADD_INDEXED, &add, item_.get(), 1, &index, 8);
    fam()->fam_close(item_.get());
    item_.reset(fam()->fam_lookup("i", "r"));
    EXPECT_EQ(Word(index), 6u);
}

TEST_F(AggregationTest, DeallocateDropsWhatIsQueued) {
    uint64_t index = 1, add = 6;
    fam()->fam_queue_operation(OP_ADD_INDEXED, &add, item_.get(), 1, &index, 8);
    fam()->fam_deallocate(item_.get());
    fam()->fam_aggregate_flush(item_.get());  // nothing left to ship
    item_ = Allocate("i", kItemSize, region_.get());
    EXPECT_EQ(Word(index), 0u);
}

TEST_F(AggregationTest, UnknownOperationThrowsQueueInsert) {
    uint64_t index = 0, value = 1;
    EXPECT_FAM_ERROR(
        fam()->fam_queue_operation(static_cast<FAM_QUEUE_OP>(9), &value, item_.get(), 1, &index, 8),
        FAM_ERR_ATL_QUEUE_INSERT, "fam_queue_operation");
}

TEST_F(AggregationTest, AddOfTwoByteElementsThrowsQueueInsert) {
    uint64_t index = 0, value = 1;
    EXPECT_FAM_ERROR(fam()->fam_queue_operation(OP_ADD_INDEXED, &value, item_.get(), 1, &index, 2),
                     FAM_ERR_ATL_QUEUE_INSERT, "fam_queue_operation");
}

TEST_F(AggregationTest, IndexPastEndThrowsOutOfRangeAndQueuesNothing) {
    std::vector<uint64_t> index = {0, kItemSize / 8};
    std::vector<uint64_t> add = {1, 1};
    EXPECT_FAM_ERROR(
        fam()->fam_queue_operation(OP_ADD_INDEXED, add.data(), item_.get(), 2, index.data(), 8),
        FAM_ERR_OUTOFRANGE, "fam_queue_operation");
    fam()->fam_aggregate_flush(item_.get());
    EXPECT_EQ(Word(0), 0u);
}

TEST_F(AggregationTest, NullArgumentsThrowNullPtr) {
    uint64_t index = 0, value = 1;
    EXPECT_FAM_ERROR(fam()->fam_queue_operation(OP_SCATTER, nullptr, item_.get(), 1, &index, 8),
                     FAM_ERR_NULLPTR, "fam_queue_operation");
    EXPECT_FAM_ERROR(fam()->fam_queue_operation(OP_SCATTER, &value, item_.get(), 1, nullptr, 8),
                     FAM_ERR_NULLPTR, "fam_queue_operation");
    EXPECT_FAM_ERROR(fam()->fam_aggregate_flush(nullptr), FAM_ERR_NULLPTR, "fam_aggregate_flush");
}

TEST_F(AggregationTest, ZeroElementSizeThrowsInvalid) {
    uint64_t index = 0, value = 1;
    EXPECT_FAM_ERROR(fam()->fam_queue_operation(OP_SCATTER, &value, item_.get(), 1, &index, 0),
                     FAM_ERR_INVALID, "fam_queue_operation");
}

TEST_F(AggregationTest, AddToReadOnlyItemThrowsNoPerm) {
    Fam_Region_Attributes by_item = FamAttributes(MEMORY_TYPE_DEFAULT, DATAITEM);
    auto per_item = CreateRegion("per_item", 16 * kMiB, 0777, &by_item);
    auto read_only = Allocate("ro", 4096, per_item.get(), 0400);
    uint64_t index = 0, value = 1;
    EXPECT_FAM_ERROR(
        fam()->fam_queue_operation(OP_ADD_INDEXED, &value, read_only.get(), 1, &index, 8),
        FAM_ERR_NOPERM, "fam_queue_operation");
    uint64_t got = 7;
    fam()->fam_queue_operation(OP_GATHER, &got, read_only.get(), 1, &index, 8);
    fam()->fam_aggregate_flush(read_only.get());
    EXPECT_EQ(got, 0u);
}

TEST_F(AggregationTest, PermissionWithdrawnBeforeFlushThrowsNoPermAndEmptiesTheQueue) {
    Fam_Region_Attributes by_item = FamAttributes(MEMORY_TYPE_DEFAULT, DATAITEM);
    auto per_item = CreateRegion("per_item", 16 * kMiB, 0777, &by_item);
    auto item = Allocate("w", 4096, per_item.get(), 0600);
    uint64_t index = 0, value = 1;
    fam()->fam_queue_operation(OP_ADD_INDEXED, &value, item.get(), 1, &index, 8);
    fam()->fam_change_permissions(item.get(), 0400);
    EXPECT_FAM_ERROR(fam()->fam_aggregate_flush(item.get()), FAM_ERR_NOPERM, "fam_aggregate_flush");
    fam()->fam_aggregate_flush(item.get());  // the failed batch is gone
    uint64_t got = 7;
    fam()->fam_get_blocking(&got, item.get(), 0, 8);
    EXPECT_EQ(got, 0u);
}

TEST_F(AggregationTest, CApiQueuesAndFlushes) {
    uint64_t index = 77, value = 9;
    c_fam *handle = fam();  // a c_fam is an openfam::fam
    EXPECT_EQ(c_fam_queue_operation(handle, OP_ADD_INDEXED, &value, item_.get(), 1, &index, 8), 0);
    EXPECT_EQ(c_fam_aggregate_flush(handle, item_.get()), 0);
    EXPECT_EQ(Word(index), 9u);
    EXPECT_EQ(c_fam_queue_operation(handle, OP_ADD_INDEXED, &value, item_.get(), 1, &index, 3),
              -C_FAM_ERR_ATL_QUEUE_INSERT);
}

// ---------------------------------------------------------------------------------------------
// The threshold, the queue's size, and turning aggregation off

class AggregationThresholdTest : public AggregationTest {
  protected:
    void PrepareEnvironment() override { SetEnv("FAMPOOL_AGGREGATION_THRESHOLD", "100"); }
};

// The memory servers holding the item's bytes: the threshold and the queue's size are per server.
uint64_t ServersOf(openfam::fam *f, Fam_Descriptor *item) {
    Fam_Stat info;
    f->fam_stat(item, &info);
    return std::max<uint64_t>(1, info.num_memservers);
}

TEST_F(AggregationThresholdTest, QueueShipsAtThresholdWithoutFlush) {
    uint64_t threshold = 100 * ServersOf(fam(), item_.get());
    std::vector<uint64_t> index(threshold - 1);
    std::iota(index.begin(), index.end(), 0);
    std::vector<uint64_t> ones(index.size(), 1);
    fam()->fam_queue_operation(OP_ADD_INDEXED, ones.data(), item_.get(), index.size(), index.data(),
                               8);
    EXPECT_EQ(Word(0), 0u) << "one element short of the threshold: still queued";
    fam()->fam_queue_operation(OP_ADD_INDEXED, ones.data(), item_.get(), 1, index.data(), 8);
    EXPECT_EQ(Word(0), 2u) << "at the threshold: shipped";
    EXPECT_EQ(Word(1), 1u);
}

class AggregationQueueSizeTest : public AggregationTest {
  protected:
    void PrepareEnvironment() override {
        SetEnv("FAMPOOL_AGGREGATION_THRESHOLD", "0");
        SetEnv("FAMPOOL_ATL_QUEUE_SIZE", "100");
    }
};

TEST_F(AggregationQueueSizeTest, FullQueueThrowsQueueFullAndKeepsWhatItHolds) {
    uint64_t half = 60 * ServersOf(fam(), item_.get());  // the queue holds 100 per server
    std::vector<uint64_t> index(half);
    std::iota(index.begin(), index.end(), 0);
    std::vector<uint64_t> ones(index.size(), 1);
    fam()->fam_queue_operation(OP_ADD_INDEXED, ones.data(), item_.get(), half, index.data(), 8);
    EXPECT_FAM_ERROR(
        fam()->fam_queue_operation(OP_ADD_INDEXED, ones.data(), item_.get(), half, index.data(), 8),
        FAM_ERR_ATL_QUEUE_FULL, "fam_queue_operation");
    EXPECT_EQ(Word(0), 0u);
    fam()->fam_aggregate_flush(item_.get());
    EXPECT_EQ(Word(0), 1u);
    EXPECT_EQ(Word(half - 1), 1u);
}

class AggregationOffTest : public AggregationTest {
  protected:
    void PrepareEnvironment() override { SetEnv("FAMPOOL_AGGREGATION", "0"); }
};

TEST_F(AggregationOffTest, QueueOperationThrowsNotEnabled) {
    uint64_t index = 0, value = 1;
    EXPECT_FAM_ERROR(fam()->fam_queue_operation(OP_ADD_INDEXED, &value, item_.get(), 1, &index, 8),
                     FAM_ERR_ATL_NOT_ENABLED, "fam_queue_operation");
}

// ---------------------------------------------------------------------------------------------
// Threads of one PE (FAM_THREAD_MULTIPLE)

class AggregationThreadsTest : public ThreadMultipleFamTest {};

TEST_F(AggregationThreadsTest, ThreadsQueueingOnOneObjectAndOnContextsAddUpExactly) {
    // Four threads: two share the fam object, two use a context each; all add 1 to the same
    // 1000 words 50 times, flushing as they go and at the end.
    constexpr int kThreads = 4, kRounds = 50;
    constexpr uint64_t kWords = 1000;
    std::vector<uint64_t> index(kWords), ones(kWords, 1);
    std::iota(index.begin(), index.end(), 0);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            fam_context *context = t >= 2 ? fam()->fam_context_open() : nullptr;
            openfam::fam *f = context ? context : fam();
            try {
                for (int round = 0; round < kRounds; ++round) {
                    f->fam_queue_operation(OP_ADD_INDEXED, ones.data(), item_.get(), kWords,
                                           index.data(), 8);
                    if (round % 7 == 0) f->fam_aggregate_flush(item_.get());
                }
                f->fam_aggregate_flush(item_.get());
            } catch (const Fam_Exception &e) {
                errors[t] = e.fam_error_msg();
            }
            if (context) fam()->fam_context_close(context);
        });
    }
    for (auto &thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
    std::vector<uint64_t> words(kWords);
    fam()->fam_get_blocking(words.data(), item_.get(), 0, kWords * 8);
    for (uint64_t w = 0; w < kWords; ++w) {
        ASSERT_EQ(words[w], uint64_t{kThreads} * kRounds) << "word " << w;
    }
}

class AggregationThreadsThresholdTest : public ThreadMultipleFamTest {
  protected:
    void PrepareEnvironment() override { SetEnv("FAMPOOL_AGGREGATION_THRESHOLD", "2"); }
};

TEST_F(AggregationThreadsThresholdTest, FlushWaitsForItsGatherShippedByAnotherThread) {
    // Thread A keeps queueing adds to word 1000, shipping the queue every second element;
    // thread B gathers word 0 and flushes: a shipment of A's may carry B's gather, and B's
    // flush must not return before it is applied.
    uint64_t value = 0x5eed;
    fam()->fam_put_blocking(&value, item_.get(), 0, 8);
    std::atomic<bool> done{false};
    std::string adder_error;
    std::thread adder([&] {
        uint64_t index = 1000, one = 1;
        try {
            while (!done)
                fam()->fam_queue_operation(OP_ADD_INDEXED, &one, item_.get(), 1, &index, 8);
        } catch (const Fam_Exception &e) {
            adder_error = e.fam_error_msg();
        }
    });
    uint64_t wrong = 0;
    for (int round = 0; round < 300; ++round) {
        uint64_t index = 0, seen = 0;
        fam()->fam_queue_operation(OP_GATHER, &seen, item_.get(), 1, &index, 8);
        fam()->fam_aggregate_flush(item_.get());
        wrong += seen != value;
    }
    done = true;
    adder.join();
    EXPECT_EQ(adder_error, "");
    EXPECT_EQ(wrong, 0u) << "gathers seen unfilled after their flush returned";
}

// ---------------------------------------------------------------------------------------------
// Gathers and scatters of many scattered elements (done by the memory servers on a cluster
// whose heaps this process does not map)

class ManyElementsTest : public AggregationTest, public ::testing::WithParamInterface<bool> {
  protected:
    bool blocking() const { return GetParam(); }
    // An indexed gather of 8-byte words, blocking or not as the parameter says.
    void GatherWords(std::vector<uint64_t> &index, std::vector<uint64_t> &local) {
        if (blocking()) {
            fam()->fam_gather_blocking(local.data(), item_.get(), index.size(), index.data(), 8);
        } else {
            fam()->fam_gather_nonblocking(local.data(), item_.get(), index.size(), index.data(), 8);
            fam()->fam_quiet();
        }
    }
};

TEST_P(ManyElementsTest, IndexedGatherReadsEveryElement) {
    std::vector<uint8_t> contents = Pattern(kItemSize, 72);
    PutBytes(item_.get(), 0, contents);
    std::vector<uint64_t> index = SpreadIndices(5000, 4);
    std::vector<uint64_t> local(index.size(), 0);
    GatherWords(index, local);
    for (size_t i = 0; i < index.size(); ++i) {
        uint64_t want;
        std::memcpy(&want, &contents[index[i] * 8], 8);
        ASSERT_EQ(local[i], want) << "element " << i << " (index " << index[i] << ")";
    }
}

TEST_P(ManyElementsTest, GatherSeesTheThreadsEarlierNonFetchingAtomics) {
    std::vector<uint64_t> index = SpreadIndices(500, 6);
    for (uint64_t each : index) fam()->fam_add(item_.get(), each * 8, uint64_t{7});
    std::vector<uint64_t> local(index.size(), 0);
    GatherWords(index, local);
    for (size_t i = 0; i < index.size(); ++i) ASSERT_EQ(local[i], 7u) << "element " << i;
}

TEST_P(ManyElementsTest, StridedScatterWritesEveryElementAndNothingElse) {
    const uint64_t n = 4000, first = 3, stride = 129;  // 8-byte words, 1032 bytes apart
    std::vector<uint64_t> local(n);
    for (uint64_t i = 0; i < n; ++i) local[i] = 0xA000000000000000ull + i;
    if (blocking()) {
        fam()->fam_scatter_blocking(local.data(), item_.get(), n, first, stride, 8);
    } else {
        fam()->fam_scatter_nonblocking(local.data(), item_.get(), n, first, stride, 8);
        fam()->fam_quiet();
    }
    std::vector<uint8_t> all = GetBytes(item_.get(), 0, kItemSize);
    std::vector<uint64_t> words(kItemSize / 8);
    std::memcpy(words.data(), all.data(), kItemSize);
    for (uint64_t w = 0; w < words.size(); ++w) {
        bool element = w >= first && (w - first) % stride == 0 && (w - first) / stride < n;
        uint64_t want = element ? local[(w - first) / stride] : 0;
        ASSERT_EQ(words[w], want) << "word " << w;
    }
}

TEST_P(ManyElementsTest, IndexedGatherOf24ByteElementsReadsEveryElement) {
    std::vector<uint8_t> contents = Pattern(kItemSize, 73);
    PutBytes(item_.get(), 0, contents);
    std::vector<uint64_t> index = SpreadIndices(1000, 5);
    for (uint64_t &each : index) each = each * 8 / 24;
    std::vector<uint8_t> local(index.size() * 24, 0);
    if (blocking()) {
        fam()->fam_gather_blocking(local.data(), item_.get(), index.size(), index.data(), 24);
    } else {
        fam()->fam_gather_nonblocking(local.data(), item_.get(), index.size(), index.data(), 24);
        fam()->fam_quiet();
    }
    for (size_t i = 0; i < index.size(); ++i) {
        ASSERT_EQ(0, std::memcmp(&local[i * 24], &contents[index[i] * 24], 24)) << "element " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(BlockingAndNot, ManyElementsTest, ::testing::Bool(),
                         [](const auto &info) { return info.param ? "Blocking" : "NonBlocking"; });

}  // namespace
}  // namespace fampool_test
