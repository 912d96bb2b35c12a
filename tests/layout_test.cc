// layout_test.cc: where an item's bytes lie among its region's memory servers
// (common/fam_objects.h): the offset encoding of items of regions without interleaving, the
// round-robin blocks of interleaved ones, and what fam_stat reports of both.
#include <gtest/gtest.h>

#include <map>

#include "common/fam_objects.h"
#include "common/memory_server.h"

namespace fampool_test {
namespace {

using fampool::BytePlace;
using fampool::ItemInfo;
using fampool::PlaceOfByte;

constexpr uint64_t kShift = fampool::kServerIndexShift;

TEST(LayoutTest, OffsetOfAnItemWithoutInterleavingNamesItsServerAndPhysicalOffset) {
    uint64_t offset = (uint64_t{2} << kShift) | 4096;
    EXPECT_EQ(fampool::ServerIndexOf(offset), 2u);
    EXPECT_EQ(fampool::PhysicalOf(offset), 4096u);
}

TEST(LayoutTest, WithoutInterleavingEveryByteIsOnTheItemsServerAndContiguous) {
    uint64_t offset = (uint64_t{1} << kShift) | 640;
    BytePlace place = PlaceOfByte(offset, 0, 3, 1000);
    EXPECT_EQ(place.index, 1u);
    EXPECT_EQ(place.physical, 1640u);
    EXPECT_EQ(place.contiguous, ~uint64_t{0});
}

TEST(LayoutTest, InterleavedBlocksGoRoundRobinOverTheServers) {
    // Interleave 4096 over 3 servers: block b on server b % 3, at (b / 3) * 4096.
    const uint64_t interleave = 4096, servers = 3;
    for (uint64_t block = 0; block < 9; ++block) {
        BytePlace place = PlaceOfByte(0, interleave, servers, block * interleave);
        EXPECT_EQ(place.index, block % servers) << "block " << block;
        EXPECT_EQ(place.physical, (block / servers) * interleave) << "block " << block;
        EXPECT_EQ(place.contiguous, interleave) << "block " << block;
    }
}

TEST(LayoutTest, ByteInsideABlockIsContiguousToTheBlocksEnd) {
    BytePlace place = PlaceOfByte(0, 4096, 3, 4096 + 100);
    EXPECT_EQ(place.index, 1u);
    EXPECT_EQ(place.physical, 100u);
    EXPECT_EQ(place.contiguous, 4096u - 100);
}

TEST(LayoutTest, AnItemsVirtualOffsetShiftsWhereItsBytesStart) {
    // An item at virtual offset 3 * 4096 of the region starts a new round on server 0.
    BytePlace first = PlaceOfByte(3 * 4096, 4096, 3, 0);
    EXPECT_EQ(first.index, 0u);
    EXPECT_EQ(first.physical, 4096u);
    BytePlace next = PlaceOfByte(3 * 4096, 4096, 3, 4096);
    EXPECT_EQ(next.index, 1u);
    EXPECT_EQ(next.physical, 4096u);
}

TEST(LayoutTest, EveryServerGetsAnEqualShareOfWholeStripes) {
    std::map<uint64_t, uint64_t> bytes;  // server index -> bytes
    const uint64_t interleave = 256, servers = 4, size = interleave * servers * 5;
    for (uint64_t at = 0; at < size;) {
        BytePlace place = PlaceOfByte(0, interleave, servers, at);
        uint64_t run = std::min(place.contiguous, size - at);
        bytes[place.index] += run;
        at += run;
    }
    ASSERT_EQ(bytes.size(), servers);
    for (auto [index, count] : bytes) EXPECT_EQ(count, size / servers) << "server " << index;
}

TEST(LayoutTest, StripedItemIsHeldByEveryServerOfItsRegion) {
    ItemInfo item;
    item.region.interleave_size = 4096;
    item.region.memory_servers = {4, 5, 6};
    EXPECT_TRUE(item.striped());
    EXPECT_EQ(item.first_server(), 0u);
    EXPECT_EQ(item.server_count(), 3u);
}

TEST(LayoutTest, ItemWithoutInterleavingIsHeldByTheServerItsOffsetNames) {
    ItemInfo item;
    item.region.memory_servers = {4, 5, 6};
    item.offset = (uint64_t{2} << kShift) | 64;
    EXPECT_FALSE(item.striped());
    EXPECT_EQ(item.first_server(), 2u);
    EXPECT_EQ(item.server_count(), 1u);
    item.region.interleave_size = 4096;
    item.region.memory_servers = {4};
    item.offset = 64;
    EXPECT_FALSE(item.striped()) << "one server: nothing to stripe over";
}

TEST(LayoutTest, ItemLayoutLocatesBytesAsTheClientDoes) {
    fampool::ItemLayout layout;
    layout.offset = 2 * 4096;
    layout.interleave = 4096;
    layout.servers.resize(3);
    for (uint64_t at : {0ull, 100ull, 4096ull, 3 * 4096ull + 5}) {
        BytePlace a = layout.Locate(at), b = PlaceOfByte(2 * 4096, 4096, 3, at);
        EXPECT_EQ(a.index, b.index);
        EXPECT_EQ(a.physical, b.physical);
        EXPECT_EQ(a.contiguous, b.contiguous);
    }
}

TEST(LayoutTest, OwnerGroupAndOtherBitsApplyToTheirOwnCallersOnly) {
    fampool::Caller owner{10, 20}, member{11, 20}, other{12, 21};
    const uint32_t mode = 0640;
    using fampool::kRead;
    using fampool::kWrite;
    EXPECT_TRUE(fampool::Allowed(mode, 10, 20, owner, kRead | kWrite));
    EXPECT_TRUE(fampool::Allowed(mode, 10, 20, member, kRead));
    EXPECT_FALSE(fampool::Allowed(mode, 10, 20, member, kWrite));
    EXPECT_FALSE(fampool::Allowed(mode, 10, 20, other, kRead));
    EXPECT_FALSE(fampool::Allowed(0077, 10, 20, owner, kRead)) << "the owner's bits, not others'";
}

}  // namespace
}  // namespace fampool_test
