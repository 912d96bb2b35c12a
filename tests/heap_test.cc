// Heap files (memserver/heap.h): which parts of a sparse heap hold data; pages made present
// ahead of a rebuild's writes.
#include "memserver/heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::FileAccess;

// What a RAID1 rebuild copies (Resync): the parts of a heap that hold data, not its holes.
TEST(HeapDataRangesTest, NameTheWrittenPartsOfASparseHeapAndNotItsHoles) {
    for (std::string parent : {std::string("/dev/shm"), std::string("/tmp")}) {
        TempDir dir(parent);
        std::string path = dir.path() + "/heap";
        constexpr uint64_t kMiB = 1 << 20;
        fampool::heap::Create(path, 64 * kMiB, FileAccess());
        EXPECT_TRUE(fampool::heap::DataRanges(path, 0, 64 * kMiB).empty()) << parent;
        {
            auto mapping = fampool::heap::Map(path);
            std::memset(mapping->base() + 4096, 1, 100);
            std::memset(mapping->base() + 40 * kMiB, 2, 2 * kMiB);
        }
        auto ranges = fampool::heap::DataRanges(path, 0, 64 * kMiB);
        ASSERT_EQ(ranges.size(), 2u) << parent;
        EXPECT_LE(ranges[0].first, 4096u);
        EXPECT_GE(ranges[0].second, 4196u);
        EXPECT_LT(ranges[0].second, 40 * kMiB);
        EXPECT_LE(ranges[1].first, 40 * kMiB);
        EXPECT_GE(ranges[1].second, 42 * kMiB);
        EXPECT_LE(ranges[1].second, 64 * kMiB);
        // Clipped to the range asked for.
        auto inner = fampool::heap::DataRanges(path, 41 * kMiB, 48 * kMiB);
        ASSERT_EQ(inner.size(), 1u) << parent;
        EXPECT_EQ(inner[0].first, 41 * kMiB);
        EXPECT_EQ(inner[0].second, 42 * kMiB);
        EXPECT_TRUE(fampool::heap::DataRanges(path, 43 * kMiB, 64 * kMiB).empty()) << parent;
    }
}

// What a RAID1 rebuild's target does ahead of the copy (RedundancyService::Populate): the
// pages of the range are there afterwards, their bytes unchanged, and no page outside it.
TEST(HeapPopulateTest, MakesTheRangesPagesPresentAndLeavesTheirBytes) {
    TempDir dir("/dev/shm");
    std::string path = dir.path() + "/heap";
    constexpr uint64_t kMiB = 1 << 20;
    fampool::heap::Create(path, 32 * kMiB, FileAccess());
    auto mapping = fampool::heap::Map(path);
    std::memset(mapping->base() + 8 * kMiB, 7, 4096);
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    auto resident = [&](uint64_t begin, uint64_t end) {
        std::vector<unsigned char> pages((end - begin) / page);
        EXPECT_EQ(mincore(mapping->base() + begin, end - begin, pages.data()), 0);
        uint64_t count = 0;
        for (unsigned char p : pages) count += p & 1;
        return count;
    };
    EXPECT_EQ(resident(0, 4 * kMiB), 0u);
    fampool::heap::PopulateForWrite(mapping->base() + 4 * kMiB, 20 * kMiB);
    EXPECT_EQ(resident(4 * kMiB, 24 * kMiB), 20 * kMiB / page);
    EXPECT_EQ(resident(0, 4 * kMiB), 0u);
    EXPECT_EQ(resident(24 * kMiB, 32 * kMiB), 0u);
    EXPECT_EQ(mapping->base()[8 * kMiB], 7);
    EXPECT_EQ(mapping->base()[8 * kMiB + 4095], 7);
    EXPECT_EQ(mapping->base()[4 * kMiB], 0);
    EXPECT_TRUE(fampool::heap::DataRanges(path, 0, 4 * kMiB).empty());
    // Several ranges on several threads (a large put's pages): each range's pages, no others.
    fampool::heap::PopulateForWrite(
        {{mapping->base() + 1 * kMiB, kMiB + 8192}, {mapping->base() + 26 * kMiB, 5 * kMiB}}, 3);
    EXPECT_EQ(resident(0, 1 * kMiB), 0u);
    EXPECT_EQ(resident(1 * kMiB, 2 * kMiB + 8192), (kMiB + 8192) / page);
    EXPECT_EQ(resident(2 * kMiB + 8192, 4 * kMiB), 0u);
    EXPECT_EQ(resident(24 * kMiB, 26 * kMiB), 0u);
    EXPECT_EQ(resident(26 * kMiB, 31 * kMiB), 5 * kMiB / page);
    EXPECT_EQ(resident(31 * kMiB, 32 * kMiB), 0u);
}

}  // namespace
}  // namespace fampool_test
