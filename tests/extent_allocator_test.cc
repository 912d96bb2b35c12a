// extent_allocator_test.cc: the allocator of items inside an extent (meta/extent_allocator.h),
// on an LMDB store of its own: best fit, 64-byte rounding, coalescing on free, growth and
// shrinking, usage, and changes that vanish with an aborted transaction.
#include "meta/extent_allocator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "meta/lmdb.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::ExtentAllocator;
using fampool::LmdbEnv;
using fampool::Txn;

constexpr uint64_t kExtent = 7;
constexpr uint64_t kSize = 64 * 1024;

class ExtentAllocatorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        env_ = LmdbEnv::Open(dir_.path(), /*sync_commits=*/false);
        Txn txn(*env_, true);
        ExtentAllocator::AddExtent(txn, kExtent, kSize);
        txn.Commit();
    }
    uint64_t Allocate(uint64_t nbytes) {
        Txn txn(*env_, true);
        uint64_t offset = ExtentAllocator::Allocate(txn, kExtent, nbytes);
        txn.Commit();
        return offset;
    }
    void Free(uint64_t offset, uint64_t nbytes) {
        Txn txn(*env_, true);
        ExtentAllocator::Free(txn, kExtent, offset, nbytes);
        txn.Commit();
    }
    std::pair<uint64_t, uint64_t> Usage() {
        Txn txn(*env_, false);
        uint64_t free_bytes = 0, largest = 0;
        ExtentAllocator::Usage(txn, kExtent, &free_bytes, &largest);
        return {free_bytes, largest};
    }

    TempDir dir_{"/tmp", "fampool-allocator-"};
    std::shared_ptr<LmdbEnv> env_;
};

TEST_F(ExtentAllocatorTest, NewExtentIsOneFreeRange) {
    EXPECT_EQ(Usage(), std::make_pair(kSize, kSize));
}

TEST_F(ExtentAllocatorTest, AllocationsAreRoundedTo64BytesAndDoNotOverlap) {
    uint64_t a = Allocate(1), b = Allocate(65), c = Allocate(64);
    EXPECT_EQ(a % 64, 0u);
    EXPECT_EQ(b % 64, 0u);
    EXPECT_EQ(c % 64, 0u);
    EXPECT_EQ(Usage().first, kSize - 64 - 128 - 64);
    EXPECT_NE(a, b);
    EXPECT_TRUE(b >= a + 64 || a >= b + 128);
    EXPECT_TRUE(c >= b + 128 || b >= c + 64);
}

TEST_F(ExtentAllocatorTest, BestFitTakesTheSmallestRangeThatFits) {
    uint64_t a = Allocate(1024), b = Allocate(4096), c = Allocate(1024), d = Allocate(8192);
    (void)a;
    (void)c;
    Free(d, 8192);  // joins the tail: a large range
    Free(b, 4096);  // a 4 KiB hole between a and c
    EXPECT_EQ(Allocate(4096), b) << "the 4 KiB hole is the best fit, not the tail";
}

TEST_F(ExtentAllocatorTest, FullExtentRefusesWithNoSpace) {
    Allocate(kSize);
    EXPECT_FAM_ERROR(Allocate(64), openfam::FAM_ERR_NO_SPACE, nullptr);
}

TEST_F(ExtentAllocatorTest, FreeCoalescesWithBothNeighbours) {
    uint64_t a = Allocate(kSize / 4), b = Allocate(kSize / 4), c = Allocate(kSize / 4);
    Allocate(kSize / 4);
    Free(a, kSize / 4);
    Free(c, kSize / 4);
    EXPECT_EQ(Usage().second, kSize / 4);
    Free(b, kSize / 4);
    EXPECT_EQ(Usage(), std::make_pair(3 * kSize / 4, 3 * kSize / 4));
    EXPECT_EQ(Allocate(3 * kSize / 4), a) << "the three ranges are one again";
}

TEST_F(ExtentAllocatorTest, FreeingFreeSpaceFailsWithAllocatorError) {
    uint64_t a = Allocate(4096);
    Free(a, 4096);
    EXPECT_FAM_ERROR(Free(a, 4096), openfam::FAM_ERR_ALLOCATOR, nullptr);
    EXPECT_EQ(Usage().first, kSize) << "the refused free changed nothing";
}

TEST_F(ExtentAllocatorTest, AbortedTransactionLeavesNoTrace) {
    {
        Txn txn(*env_, true);
        ExtentAllocator::Allocate(txn, kExtent, 4096);
    }  // not committed
    EXPECT_EQ(Usage().first, kSize);
}

TEST_F(ExtentAllocatorTest, GrowAddsFreeSpaceAtTheEnd) {
    Allocate(kSize);
    {
        Txn txn(*env_, true);
        ExtentAllocator::Grow(txn, kExtent, kSize, 2 * kSize);
        txn.Commit();
    }
    EXPECT_EQ(Allocate(kSize), kSize);
}

TEST_F(ExtentAllocatorTest, ShrinkIsRefusedPastAnAllocationAndAllowedBeforeIt) {
    uint64_t a = Allocate(kSize / 2);
    EXPECT_EQ(a, 0u);
    Txn txn(*env_, true);
    EXPECT_FALSE(ExtentAllocator::Shrink(txn, kExtent, kSize, kSize / 4));
    EXPECT_TRUE(ExtentAllocator::Shrink(txn, kExtent, kSize, kSize / 2));
    txn.Commit();
    EXPECT_EQ(Usage().first, 0u);
    EXPECT_FAM_ERROR(Allocate(64), openfam::FAM_ERR_NO_SPACE, nullptr);
}

TEST_F(ExtentAllocatorTest, DropExtentForgetsItsFreeSpace) {
    Txn txn(*env_, true);
    ExtentAllocator::DropExtent(txn, kExtent);
    txn.Commit();
    EXPECT_EQ(Usage(), std::make_pair(uint64_t{0}, uint64_t{0}));
}

TEST_F(ExtentAllocatorTest, ExtentsAreIndependent) {
    {
        Txn txn(*env_, true);
        ExtentAllocator::AddExtent(txn, kExtent + 1, 128);
        txn.Commit();
    }
    Allocate(kSize);
    Txn txn(*env_, true);
    EXPECT_EQ(ExtentAllocator::Allocate(txn, kExtent + 1, 128), 0u);
}

}  // namespace
}  // namespace fampool_test
