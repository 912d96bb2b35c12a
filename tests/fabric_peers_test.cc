// Memory-side copy, backup and restore between memory servers, below the API: two
// LocalMemoryServers in this process, each with its FabricServer (target) and FabricPeers
// (initiator), moving an item's bytes to and from each other with the keys they are handed.
// Among them the failures a client cannot easily provoke: a key the peer refuses, a read-only
// key used for a write, and a server with no fabric to reach its peers.
#include "transport/fabric/fabric_peers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "memserver/fabric_server.h"
#include "memserver/local_memory_server.h"
#include "test_cluster.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using namespace fampool;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kExtent = 1 << 20;
constexpr uint64_t kItem = 64 << 10;
constexpr int kTimeoutMs = 1500;
const ExtentRef kRegion{7, false};

class FabricPeersTest : public ::testing::TestWithParam<std::string> {
  protected:
    struct Node {
        std::unique_ptr<LocalMemoryServer> heaps;
        std::unique_ptr<FabricServer> fabric;
        std::unique_ptr<FabricPeers> peers;
        KeyGrant writable, read_only;
    };

    void SetUp() override {
        for (uint64_t id = 0; id < 2; ++id) {
            Node &node = nodes_.emplace_back();
            HeapLocation heaps{dir_.path() + "/shm", dir_.path() + "/heaps",
                               "ms" + std::to_string(id), FileAccess()};
            node.heaps = std::make_unique<LocalMemoryServer>(id, heaps, dir_.path() + "/archive");
            FabricConfig config;
            config.provider = GetParam();
            config.timeout_ms = kTimeoutMs;
            for (int attempt = 0; !node.fabric; ++attempt) {
                config.service = std::to_string(FreePort());
                try {
                    node.fabric = std::make_unique<FabricServer>(config);
                } catch (const Failure &) {
                    if (attempt == 5) throw;
                }
            }
            node.heaps->AttachFabric(node.fabric.get());
            node.peers = std::make_unique<FabricPeers>(config);
            node.heaps->AttachPeers(node.peers.get());
            node.heaps->CreateExtent(kRegion, kExtent, kExtent);
            node.writable = node.heaps->GrantKey(kRegion, 0, 0, true, Permissions{});
            node.read_only = node.heaps->GrantKey(kRegion, 0, 0, false, Permissions{});
        }
    }
    void TearDown() override {
        for (Node &node : nodes_) node.heaps->DestroyExtent(kRegion);
        nodes_.clear();  // heaps drop their registrations before the fabric servers close
    }

    // An item of `kItem` bytes: on server `index` alone (at 256 KiB of its extent), or striped
    // over both in 4 KiB blocks (index -1; the first 32 KiB of each extent). `keys` picks the
    // grant each peer is reached with.
    ItemLayout Item(int index, KeyGrant Node::*keys = &Node::writable) {
        ItemLayout item;
        item.extent = kRegion;
        item.size = kItem;
        item.name = "x";
        if (index < 0) {
            item.interleave = 4096;
        } else {
            item.offset = (uint64_t(index) << 48) + (256 << 10);
        }
        for (uint64_t id = 0; id < nodes_.size(); ++id) {
            const KeyGrant &grant = nodes_[id].*keys;
            item.servers.push_back({id, grant.fabric_address, grant.key, grant.base, false, {}});
        }
        return item;
    }

    char *Heap(size_t server) { return nodes_[server].heaps->Map(kRegion, kExtent)->base(); }

    // The item's bytes, gathered from the heaps by the layout.
    std::vector<uint8_t> Bytes(const ItemLayout &item) {
        std::vector<uint8_t> bytes(item.size);
        for (uint64_t at = 0; at < item.size;) {
            BytePlace place = item.Locate(at);
            uint64_t n = std::min(item.size - at, place.contiguous);
            std::memcpy(bytes.data() + at, Heap(place.index) + place.physical, n);
            at += n;
        }
        return bytes;
    }
    void Fill(const ItemLayout &item, const std::vector<uint8_t> &bytes) {
        for (uint64_t at = 0; at < item.size;) {
            BytePlace place = item.Locate(at);
            uint64_t n = std::min(item.size - at, place.contiguous);
            std::memcpy(Heap(place.index) + place.physical, bytes.data() + at, n);
            at += n;
        }
    }

    LocalMemoryServer &Server(size_t index) { return *nodes_[index].heaps; }

    TempDir dir_;
    std::vector<Node> nodes_;
};

TEST_P(FabricPeersTest, CopyWritesIntoThePeersMemory) {
    ItemLayout src = Item(0), dest = Item(1);
    Fill(src, Pattern(kItem, 1));
    Server(0).Copy(src, 0, dest, 0, kItem);
    EXPECT_EQ(Bytes(dest), Pattern(kItem, 1));
}

TEST_P(FabricPeersTest, CopyFromStripedItemMovesEachServersPart) {
    ItemLayout src = Item(-1), dest = Item(1);
    Fill(src, Pattern(kItem, 2));
    // Every server holding source bytes copies them, as the client asks.
    Server(0).Copy(src, 100, dest, 7, kItem - 100);
    Server(1).Copy(src, 100, dest, 7, kItem - 100);
    std::vector<uint8_t> expected(kItem, 0), source = Pattern(kItem, 2);
    std::copy(source.begin() + 100, source.end(), expected.begin() + 7);
    EXPECT_EQ(Bytes(dest), expected);
}

TEST_P(FabricPeersTest, BackupPullsAndRestorePushesStripes) {
    ItemLayout item = Item(-1);
    Fill(item, Pattern(kItem, 3));
    BackupInfo info;
    info.name = "b";
    info.size = kItem;
    Server(0).Backup(item, info);
    Fill(item, std::vector<uint8_t>(kItem, 0));
    Server(1).Restore("b", item, Caller{});  // any server can restore: the archive is shared
    EXPECT_EQ(Bytes(item), Pattern(kItem, 3));
}

TEST_P(FabricPeersTest, CopyWithAKeyThePeerRefusesFailsWithinBoundedTime) {
    ItemLayout src = Item(0), dest = Item(1);
    dest.servers[1].key ^= 0x5a5a0000;
    auto start = Clock::now();
    CaughtError caught = CatchFamError([&] { Server(0).Copy(src, 0, dest, 0, 4096); });
    EXPECT_EQ(openfam::FAM_ERR_LIBFABRIC, caught.code)
        << FamErrorName(caught.code) << ": " << caught.message;
    // A few waits of the fabric timeout at most (the post, the probe, the final wait).
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(),
              3.0 * kTimeoutMs / 1000 + 2);
    // The server goes on serving: the next copy, with the right key, works.
    Fill(src, Pattern(kItem, 4));
    Server(0).Copy(src, 0, Item(1), 0, kItem);
    EXPECT_EQ(Bytes(Item(1)), Pattern(kItem, 4));
}

TEST_P(FabricPeersTest, CopyIntoPeerWithReadOnlyKeyIsRefused) {
    ItemLayout src = Item(0), dest = Item(1, &Node::read_only);
    Fill(src, Pattern(kItem, 5));
    CaughtError caught = CatchFamError([&] { Server(0).Copy(src, 0, dest, 0, 4096); });
    EXPECT_EQ(openfam::FAM_ERR_LIBFABRIC, caught.code)
        << FamErrorName(caught.code) << ": " << caught.message;
    EXPECT_EQ(Bytes(dest), std::vector<uint8_t>(kItem, 0));
}

TEST_P(FabricPeersTest, ServerWithoutPeersRefusesWorkOnOtherServersBytes) {
    Server(0).AttachPeers(nullptr);
    CaughtError caught = CatchFamError([&] { Server(0).Copy(Item(0), 0, Item(1), 0, 64); });
    EXPECT_EQ(caught.code, openfam::FAM_ERR_INVALIDOP) << caught.message;
}

// What a memory server does with its own CPU on its own bytes (copy within the server, backup,
// restore, the atomics the fabric cannot do) goes no further than the key it is handed, as
// the fabric would not: a read-only key cannot write, a revoked or forged one reaches nothing.
TEST_P(FabricPeersTest, CopyWithinServerIntoReadOnlyKeyIsRefused) {
    ItemLayout src = Item(0), dest = Item(0, &Node::read_only);
    dest.offset += kItem;  // the next item of the same server
    Fill(src, Pattern(kItem, 6));
    CaughtError caught = CatchFamError([&] { Server(0).Copy(src, 0, dest, 0, 4096); });
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, caught.code) << caught.message;
    EXPECT_NE(caught.message.find("write"), std::string::npos) << caught.message;
    EXPECT_EQ(Bytes(dest), std::vector<uint8_t>(kItem, 0));
}

TEST_P(FabricPeersTest, AtomicNeedsALiveKeyThatAllowsIt) {
    const uint64_t at = 512 << 10;
    __int128 start = 5, desired = 9, old = 0;
    std::memcpy(Heap(0) + at, &start, 16);
    auto cas = [&](uint64_t key) {
        return CatchFamError([&] {
            Server(0).Atomic(kRegion, key, at, static_cast<int>(AtomicOp::kCompareSwap),
                             static_cast<int>(DataType::kInt128), &desired, &start, &old);
        });
    };
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, cas(nodes_[0].read_only.key).code);
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, cas(nodes_[0].writable.key ^ 0x5a5a0000).code);
    __int128 now;
    std::memcpy(&now, Heap(0) + at, 16);
    EXPECT_TRUE(now == start) << "a refused atomic changed the bytes";
    // A fetch only reads: a read-only key is enough.
    __int128 fetched = 0;
    Server(0).Atomic(kRegion, nodes_[0].read_only.key, at, static_cast<int>(AtomicOp::kFetch),
                     static_cast<int>(DataType::kInt128), &start, nullptr, &fetched);
    EXPECT_TRUE(fetched == start);
    EXPECT_EQ(openfam::FAM_NO_ERROR, cas(nodes_[0].writable.key).code);
    std::memcpy(&now, Heap(0) + at, 16);
    EXPECT_TRUE(now == desired);
    Server(0).RevokeKeys(kRegion, kAllGrants);
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, cas(nodes_[0].writable.key).code) << "a revoked key";
}

// shm reports no refused operation: there the refusal is a timeout, also bounded.
INSTANTIATE_TEST_SUITE_P(Providers, FabricPeersTest, ::testing::Values("tcp", "sockets", "shm"),
                         [](const auto &info) { return info.param; });

}  // namespace
}  // namespace fampool_test
