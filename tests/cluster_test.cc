// The memory-server model's own behaviour: placement over several memory servers, interleaving
// reported by fam_stat, transfers over every server, memory-side copy, backup and restore
// between servers (cluster_failure_test.cc: dead and restarted servers, zeroing, other users).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_fixtures.h"

namespace fampool_test {
namespace {

TEST_F(ClusterTest, InterleavedRegionStatNamesItsServersAndInterleaveSize) {
    Fam_Region_Attributes attrs{};
    attrs.interleaveEnable = ENABLE;
    auto region = CreateRegion("striped", 16 << 20, 0777, &attrs);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.num_memservers, 3u);
    EXPECT_EQ(stat.interleaveSize, 4096u);
    EXPECT_EQ(stat.memory_servers[0], 0u);
    EXPECT_EQ(stat.memory_servers[1], 1u);
    EXPECT_EQ(stat.memory_servers[2], 2u);
    auto item = Allocate("x", 1 << 20, region.get());
    fam()->fam_stat(item.get(), &stat);
    EXPECT_EQ(stat.num_memservers, 3u);
    EXPECT_EQ(stat.interleaveSize, 4096u);
    EXPECT_EQ(item->get_used_memsrv_cnt(), 3u);
}

// Blocking transfers that span many blocks of each server go through the channel's staging
// buffer (one operation per server and MiB), the others piece by piece: each reads back what
// the other wrote, at an offset and length that split blocks and cross the 1 MiB chunks.
TEST_F(ClusterTest, StagedAndPiecewiseTransfersOfAStripedItemAgreeByteForByte) {
    Fam_Region_Attributes attrs{};
    attrs.interleaveEnable = ENABLE;
    auto region = CreateRegion("striped", 16 << 20, 0777, &attrs);
    auto item = Allocate("x", 4 << 20, region.get());
    ASSERT_EQ(item->get_used_memsrv_cnt(), 3u);
    const uint64_t offset = 777, length = (5 << 19) + 123;  // 2.5 MiB and a bit
    std::vector<char> written(length), read(length);
    for (uint64_t i = 0; i < length; ++i) written[i] = static_cast<char>((i * 131) ^ (i >> 12));
    fam()->fam_put_blocking(written.data(), item.get(), offset, length);  // staged
    for (uint64_t at = 0; at < length; at += 4096) {                      // piece by piece
        fam()->fam_get_blocking(read.data() + at, item.get(), offset + at,
                                std::min<uint64_t>(4096, length - at));
    }
    EXPECT_EQ(read, written);
    std::reverse(written.begin(), written.end());
    fam()->fam_put_nonblocking(written.data(), item.get(), offset, length);  // by iov
    fam()->fam_quiet();
    std::fill(read.begin(), read.end(), 0);
    fam()->fam_get_blocking(read.data(), item.get(), offset, length);  // staged
    EXPECT_EQ(read, written);
}

// An item of a region without interleaving lives on one server: fam_stat names that one.
TEST_F(EveryServerClusterTest, StatOfAnItemNamesTheOneServerHoldingIt) {
    auto region = CreateRegion("plain", 12 << 20);
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int i = 0; i < 6; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 1 << 20, region.get()));
        Fam_Stat stat{};
        fam()->fam_stat(items.back().get(), &stat);
        EXPECT_EQ(stat.num_memservers, 1u);
        EXPECT_EQ(stat.interleaveSize, 0u);
        EXPECT_EQ(stat.memory_servers[0], ServerIndexOfItem(items.back().get()));  // ids 0, 1, 2
        EXPECT_EQ(items.back()->get_used_memsrv_cnt(), 1u);
        EXPECT_EQ(items.back()->get_memserver_ids()[0], stat.memory_servers[0]);
    }
}

// --- placement: which memory servers a region gets ---------------------------------------------

class HashSpanOneClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0:tcp:placement=hash,region_span=1"; }
};

TEST_F(HashSpanOneClusterTest, RegionLivesOnTheServerItsNameHashesTo) {
    std::set<uint64_t> used;
    for (int i = 0; i < 12; ++i) {
        std::string name = "hashed" + std::to_string(i);
        auto region = CreateRegion(name.c_str(), 4 << 20);
        std::vector<uint64_t> first = ServersOf(fam(), region.get());
        ASSERT_EQ(first.size(), 1u) << name;
        used.insert(first[0]);
        fam()->fam_destroy_region(region.get());
        auto again = CreateRegion(name.c_str(), 4 << 20);
        EXPECT_EQ(ServersOf(fam(), again.get()), first)
            << name << ": the same name, the same server";
        fam()->fam_destroy_region(again.get());
    }
    EXPECT_GT(used.size(), 1u) << "twelve names all hashed to one server";
}

class LeastUsedClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0:tcp:placement=least-used,region_span=1"; }
};

TEST_F(LeastUsedClusterTest, NewRegionGoesToTheServerWithFewestBytes) {
    std::vector<std::unique_ptr<Fam_Region_Descriptor>> regions;
    std::set<uint64_t> used;
    for (int i = 0; i < 3; ++i) {
        regions.push_back(CreateRegion(("r" + std::to_string(i)).c_str(), 16 << 20));
        std::vector<uint64_t> servers = ServersOf(fam(), regions.back().get());
        ASSERT_EQ(servers.size(), 1u);
        used.insert(servers[0]);
    }
    EXPECT_EQ(used.size(), 3u) << "three regions of the same size on three empty servers";
    uint64_t freed = ServersOf(fam(), regions[1].get())[0];
    fam()->fam_destroy_region(regions[1].get());
    auto next = CreateRegion("next", 1 << 20);
    EXPECT_EQ(ServersOf(fam(), next.get()), std::vector<uint64_t>{freed});
}

// By default a region without interleaving takes one server per GiB (OpenFAM's default span
// size); each item lies on one server. A small region holds OpenFAM's smallest heap, 1 MiB.
TEST_F(PlainClusterTest, SmallRegionLivesOnOneServerAndTakesItemsOfHalfItsSize) {
    auto region = CreateRegion("small", 8 << 20);
    EXPECT_EQ(ServersOf(fam(), region.get()).size(), 1u);
    auto half = Allocate("half", 4 << 20, region.get());
    auto quarter = Allocate("quarter", 2 << 20, region.get());
    std::vector<uint8_t> bytes = Pattern(4 << 20, 8);
    PutBytes(half.get(), 0, bytes);
    EXPECT_EQ(GetBytes(half.get(), 0, bytes.size()), bytes);
    auto tiny = CreateRegion("tiny", 96 << 10);
    auto tiny_half = Allocate("x", 512 << 10, tiny.get());
    auto tiny_rest = Allocate("y", 480 << 10, tiny.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("z", 64 << 10, 0777, tiny.get()), FAM_ERR_NO_SPACE,
                     "fam_allocate");
}

TEST_F(PlainClusterTest, RegionTakesOneServerPerGibibyte) {
    auto one = CreateRegion("one", 1ull << 30);
    auto two = CreateRegion("two", (1ull << 30) + 1);
    auto all = CreateRegion("all", 5ull << 30);
    EXPECT_EQ(ServersOf(fam(), one.get()).size(), 1u);
    EXPECT_EQ(ServersOf(fam(), two.get()).size(), 2u);
    EXPECT_EQ(ServersOf(fam(), all.get()).size(), 3u) << "at most every server";
}

// An interleaved region stripes every item over all its servers, so it takes them all.
TEST_F(ClusterTest, SmallInterleavedRegionTakesEveryServer) {
    Fam_Region_Attributes striped{};
    striped.interleaveEnable = ENABLE;
    auto region = CreateRegion("s", 96 << 10, 0777, &striped);
    EXPECT_EQ(ServersOf(fam(), region.get()).size(), 3u);
    auto item = Allocate("x", 64 << 10, region.get());
    EXPECT_EQ(item->get_used_memsrv_cnt(), 3u);
}

class SpanSizeClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override {
        return "3:0:tcp:region_span_size_per_memoryserver=16777216";  // 16 MiB
    }
};

TEST_F(SpanSizeClusterTest, RegionTakesOneServerPerSpanSize) {
    auto small = CreateRegion("small", 8 << 20);
    auto middle = CreateRegion("middle", 24 << 20);
    auto large = CreateRegion("large", 256 << 20);
    EXPECT_EQ(ServersOf(fam(), small.get()).size(), 1u);
    EXPECT_EQ(ServersOf(fam(), middle.get()).size(), 2u);
    EXPECT_EQ(ServersOf(fam(), large.get()).size(), 3u) << "at most every server";
}

// delayed_free_threads: 0 (OpenFAM's key): fam_deallocate zeroes the item itself.
class ImmediateFreeClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "1:0:tcp:delayed_free_threads=0"; }
};

TEST_F(ImmediateFreeClusterTest, DeallocatedBytesAreZeroInTheHeapWhenDeallocateReturns) {
    auto region = CreateRegion("r", 1 << 20);
    std::unique_ptr<Fam_Descriptor> whole = Allocate("whole", 1 << 20, region.get());
    PutBytes(whole.get(), 0, Pattern(1 << 20, 5));
    std::vector<FileEntry> heaps = ListFiles(VolatileHeapDirs()[0]);
    ASSERT_EQ(heaps.size(), 1u) << "the region's heap file";
    fam()->fam_deallocate(whole.get());
    // Read the heap file itself: the scrubber of the background path would still be waiting
    // out its 5 ms round here.
    std::vector<uint8_t> bytes(1 << 20);
    FILE *heap = fopen(heaps[0].path.c_str(), "rb");
    ASSERT_NE(heap, nullptr) << heaps[0].path;
    EXPECT_EQ(fread(bytes.data(), 1, bytes.size(), heap), bytes.size());
    fclose(heap);
    EXPECT_EQ(bytes, std::vector<uint8_t>(1 << 20, 0));
    auto again = Allocate("again", 1 << 20, region.get());
    EXPECT_EQ(GetBytes(again.get(), 0, 1 << 20), std::vector<uint8_t>(1 << 20, 0));
}

class NoSpanningClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0:tcp:enable_region_spanning=false"; }
};

TEST_F(NoSpanningClusterTest, EveryRegionLivesOnOneServer) {
    auto region = CreateRegion("one", 64 << 20);
    EXPECT_EQ(ServersOf(fam(), region.get()).size(), 1u);
    auto item = Allocate("x", 32 << 20, region.get());
    std::vector<uint8_t> bytes = Pattern(1 << 20, 4);
    PutBytes(item.get(), 31 << 20, bytes);
    EXPECT_EQ(GetBytes(item.get(), 31 << 20, bytes.size()), bytes);
}

// One memory server offering 16 MiB (capacity): regions and resizes fit in it or are refused
// with FAM_ERR_NO_SPACE naming the server and its capacity; a destroyed region's bytes count no
// more.
class CapacityClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "1:0:tcp:server0.capacity=16MiB"; }
};

TEST_F(CapacityClusterTest, RegionsBeyondAServersCapacityAreRefusedNamingIt) {
    auto first = CreateRegion("first", 8 << 20);
    EXPECT_FAM_ERROR(CreateRegion("second", 12 << 20), FAM_ERR_NO_SPACE,
                     "capacity is 16777216 bytes");
    EXPECT_FAM_ERROR(fam()->fam_resize_region(first.get(), 20 << 20), FAM_ERR_NO_SPACE,
                     "memory server 0");
    auto third = CreateRegion("third", 8 << 20);  // exactly full
    fam()->fam_destroy_region(third.get());
    auto fourth = CreateRegion("fourth", 8 << 20);  // the destroyed region's room is free again
    auto item = Allocate("x", 4 << 20, fourth.get());
    std::vector<uint8_t> bytes = Pattern(4 << 20, 6);
    PutBytes(item.get(), 0, bytes);
    EXPECT_EQ(GetBytes(item.get(), 0, bytes.size()), bytes);
}

constexpr uint64_t KiB = 1024, MiB = KiB * KiB;

// Three memory servers without interleaving whose regions take a server per 4 MiB (OpenFAM's
// region_span_size_per_memoryserver): an 8 MiB region spans two.
class TwoServerRegionTest : public ClusterTest {
  protected:
    const char *Spec() const override {
        return "3:0:tcp:region_span_size_per_memoryserver=4194304";
    }
};

TEST_F(TwoServerRegionTest, ItemAsLargeAsTheRegionFitsOnOneOfItsServers) {
    auto region = CreateRegion("two", 8 * MiB);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    ASSERT_EQ(stat.num_memservers, 2u);
    EXPECT_EQ(stat.interleaveSize, 0u);
    auto whole = Allocate("whole", 8 * MiB, region.get());
    std::vector<uint8_t> bytes = Pattern(8 * MiB, 7);
    PutBytes(whole.get(), 0, bytes);
    EXPECT_EQ(GetBytes(whole.get(), 0, bytes.size()), bytes);
    // The other server takes one as large too; then both are full.
    auto other = Allocate("other", 8 * MiB, region.get());
    EXPECT_NE(other->get_memserver_ids()[0], whole->get_memserver_ids()[0]);
    PutBytes(other.get(), 8 * MiB - 4096, Pattern(4096, 8));
    EXPECT_EQ(GetBytes(other.get(), 8 * MiB - 4096, 4096), Pattern(4096, 8));
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("more", 64, 0777, region.get()), FAM_ERR_NO_SPACE,
                     "fam_allocate");
}

TEST_F(TwoServerRegionTest, OpenFamProgramsSmallRegionsWork) {
    auto small = CreateRegion("eight_kib", 8 * KiB);
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int i = 0; i < 10; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), KiB, small.get()));
        PutBytes(items.back().get(), 0, Pattern(KiB, i));
    }
    for (int i = 0; i < 10; ++i) EXPECT_EQ(GetBytes(items[i].get(), 0, KiB), Pattern(KiB, i));
}

// A region counts its size, and what its items hold past it (its slack), never the span of its
// heap (docs/semantics.md, "Region capacity"); what does not fit is refused naming the server.
TEST_F(CapacityClusterTest, CapacityCountsWhatItemsHoldNotTheHeapsSpan) {
    auto slack = CreateRegion("slack", 6 * MiB);             // an 8 MiB heap; counts 6 MiB
    auto fixed = CreateRegion("fixed", 8 * MiB);             // counts 8 MiB: 14 of 16 MiB
    auto seven = Allocate("seven", 7 * MiB, slack.get());    // 1 MiB past the share: 15
    auto one = Allocate("one", MiB, slack.get());            // 16: full
    auto within = Allocate("within", 8 * MiB, fixed.get());  // inside its share: still 16
    PutBytes(within.get(), 8 * MiB - 4096, Pattern(4096, 3));
    EXPECT_EQ(GetBytes(within.get(), 8 * MiB - 4096, 4096), Pattern(4096, 3));
    EXPECT_FAM_ERROR(CreateRegion("third", MiB), FAM_ERR_NO_SPACE, "capacity is 16777216 bytes");
    EXPECT_FAM_ERROR(fam()->fam_resize_region(fixed.get(), 9 * MiB), FAM_ERR_NO_SPACE,
                     "memory server 0");
    fam()->fam_deallocate(one.get());
    // Deallocated items are zeroed before their space counts as free again.
    std::unique_ptr<Fam_Region_Descriptor> third;
    for (int attempt = 0; attempt < 100 && !third; ++attempt) {
        try {
            third = CreateRegion("third", MiB);
        } catch (const Fam_Exception &e) {
            if (e.fam_error() != FAM_ERR_NO_SPACE) throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ASSERT_NE(third, nullptr) << "the deallocated item's megabyte never counted as free";
    // 7 + 8 + 1 MiB again: an item 2 MiB past the share does not fit.
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("past", 2 * MiB, 0777, slack.get()),
                     FAM_ERR_NO_SPACE, "memory server 0");
}

TEST_F(ClusterTest, TransferSpanningEveryServerRoundTrips) {
    Fam_Region_Attributes attrs{};
    attrs.interleaveEnable = ENABLE;
    auto region = CreateRegion("striped", 64 << 20, 0777, &attrs);
    auto item = Allocate("x", 3 << 20, region.get());
    // An odd offset and length: chunks start and end inside interleave blocks.
    std::vector<uint8_t> bytes = Pattern((3 << 20) - 4097, 7);
    PutBytes(item.get(), 1234, bytes);
    EXPECT_EQ(GetBytes(item.get(), 1234, bytes.size()), bytes);
}

// if_device chooses the interface of the client's fabric endpoints (without it, the one the
// metadata service is reached through: loopback here).
TEST_F(PlainClusterTest, IfDeviceNamesTheClientsInterface) {
    SetEnv("FAMPOOL_IF_DEVICE", "lo");
    ReinitializeFam();
    auto region = CreateRegion("r", 16 << 20);
    auto item = Allocate("x", 1 << 20, region.get());
    std::vector<uint8_t> bytes = Pattern(1 << 20, 3);
    PutBytes(item.get(), 0, bytes);
    EXPECT_EQ(GetBytes(item.get(), 0, bytes.size()), bytes);
}

// fam_initialize keeps trying an unreachable metadata service (a job's PEs connecting at once
// find it slow to accept) for connect_timeout_ms, then says so.
TEST_F(PlainClusterTest, InitializeGivesUpOnAnAbsentServiceAfterConnectTimeout) {
    FinalizeFam();
    std::string config = home_dir() + "/nobody-home.yaml";
    FILE *file = fopen(config.c_str(), "w");
    ASSERT_NE(file, nullptr);
    fprintf(file, "openfam_model: memory_server\nprovider: tcp\nmetadata_address: 127.0.0.1:%d\n",
            FreePort());
    fclose(file);
    SetEnv("FAMPOOL_CONFIG", config);
    SetEnv("FAMPOOL_CONNECT_TIMEOUT_MS", "1500");
    auto f = std::make_unique<openfam::fam>();
    auto start = Clock::now();
    CaughtError caught = CatchFamError([&] { f->fam_initialize("default", nullptr); });
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_TRUE(IsFamError(caught, FAM_ERR_RPC, {"fam_initialize"}));
    EXPECT_NE(caught.message.find("connect_timeout_ms"), std::string::npos) << caught.message;
    EXPECT_GE(seconds, 1.0) << "gave up before trying again";
    EXPECT_LT(seconds, 6.0) << "kept trying past connect_timeout_ms";
}

// The cluster file's value of `key` (one "key: value" line).
std::string ClusterKey(const TestCluster &cluster, const std::string &key) {
    std::ifstream in(cluster.config_path());
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
    }
    return "";
}

// PlainClusterTest with client configuration files of the test's own.
class ClientFileTest : public PlainClusterTest {
  protected:
    // Writes `text` to `name` in the test's home; FAMPOOL_CONFIG names it from now on.
    void UseClientFile(const std::string &name, const std::string &text) {
        std::string path = home_dir() + "/" + name;
        std::ofstream(path) << text;
        SetEnv("FAMPOOL_CONFIG", path);
    }
};

// A client that names another provider than the cluster's is refused at fam_initialize,
// naming both, instead of timing out on its first transfer; one that names none takes the
// cluster's.
TEST_F(ClientFileTest, ProviderIsTheClustersOrRefusedNamingBoth) {
    const std::string provider = ClusterKey(*cluster(), "provider");
    const std::string address = ClusterKey(*cluster(), "metadata_address");
    ASSERT_FALSE(provider.empty());
    const std::string other = provider == "sockets" ? "tcp" : "sockets";
    FinalizeFam();
    SetEnv("FAMPOOL_PROVIDER", other);
    auto refused = std::make_unique<openfam::fam>();
    auto start = Clock::now();
    CaughtError caught = CatchFamError([&] { refused->fam_initialize("default", nullptr); });
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_EQ(caught.code, FAM_ERR_INVALID) << caught.message;
    EXPECT_NE(caught.message.find("\"" + other + "\""), std::string::npos) << caught.message;
    EXPECT_NE(caught.message.find("\"" + provider + "\""), std::string::npos) << caught.message;
    EXPECT_LT(seconds, 1.0);

    SetEnv("FAMPOOL_PROVIDER", std::nullopt);
    UseClientFile("unnamed.yaml",
                  "openfam_model: memory_server\nmetadata_address: " + address + "\n");
    InitializeFam();
    auto *named = static_cast<const char *>(fam()->fam_get_option("LIBFABRIC_PROVIDER"));
    EXPECT_EQ(std::string(named), provider);
    free(const_cast<char *>(named));
    auto region = CreateRegion("r", 4 << 20);
    auto item = Allocate("x", 4096, region.get());
    PutBytes(item.get(), 0, {1, 2, 3});
    EXPECT_EQ(GetBytes(item.get(), 0, 3), (std::vector<uint8_t>{1, 2, 3}));
}

// cisServer / grpcPort in Fam_Options name the metadata service ahead of the file's
// metadata_address (here a port nobody listens on).
TEST_F(ClientFileTest, OptionsNameTheServiceAheadOfTheClusterFile) {
    const std::string address = ClusterKey(*cluster(), "metadata_address");
    const size_t colon = address.rfind(':');
    ASSERT_NE(colon, std::string::npos) << address;
    std::string host = address.substr(0, colon), port = address.substr(colon + 1);
    FinalizeFam();
    UseClientFile("elsewhere.yaml",
                  "openfam_model: memory_server\nprovider: " + ClusterKey(*cluster(), "provider") +
                      "\nmetadata_address: 127.0.0.1:" + std::to_string(FreePort()) + "\n");
    SetEnv("FAMPOOL_CONNECT_TIMEOUT_MS", "2000");
    Fam_Options options{};
    options.cisServer = host.data();
    options.grpcPort = port.data();
    InitializeFam(&options);
    auto region = CreateRegion("r", 4 << 20);
    auto item = Allocate("x", 4096, region.get());
    PutBytes(item.get(), 0, {9});
    EXPECT_EQ(GetBytes(item.get(), 0, 1), (std::vector<uint8_t>{9}));
}

TEST_F(PlainClusterTest, IfDeviceThatIsNeitherInterfaceNorDomainFailsInitialize) {
    SetEnv("FAMPOOL_IF_DEVICE", "nosuch0");
    FinalizeFam();
    auto f = std::make_unique<openfam::fam>();
    Fam_Options options{};
    CaughtError caught = CatchFamError([&] { f->fam_initialize("default", &options); });
    EXPECT_EQ(caught.code, FAM_ERR_LIBFABRIC) << caught.message;
    EXPECT_NE(caught.message.find("if_device \"nosuch0\""), std::string::npos) << caught.message;
    EXPECT_NE(caught.message.find("lo"), std::string::npos) << "names the interfaces there are";
}

TEST_F(ClusterTest, MapOfStripedItemThrowsInvalidOp) {
    // Striped over three servers, the item has no contiguous range to map: refused by design.
    Fam_Region_Attributes striped{};
    striped.interleaveEnable = ENABLE;
    auto region = CreateRegion("r", 4 << 20, 0777, &striped);
    auto item = Allocate("striped", 1 << 20, region.get());
    EXPECT_FAM_ERROR(fam()->fam_map(item.get()), FAM_ERR_INVALIDOP, "fam_map");
}

TEST_F(EveryServerClusterTest, ItemsOfARegionSpreadOverItsServers) {
    auto region = CreateRegion("spread", 12 << 20);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.num_memservers, 3u);
    EXPECT_EQ(stat.interleaveSize, 0u);
    // Named items go where their names hash: 12 of them reach every server.
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    std::set<uint64_t> servers;
    for (int i = 0; i < 12; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 1 << 20, region.get()));
        PutBytes(items.back().get(), 0, Pattern(1 << 20, i));
        servers.insert(items.back()->get_memserver_ids()[0]);
    }
    EXPECT_EQ(servers.size(), 3u);
    for (int i = 0; i < 12; ++i)
        EXPECT_EQ(GetBytes(items[i].get(), 0, 1 << 20), Pattern(1 << 20, i));
    // Each server's extent can hold an item as large as the region (docs/semantics.md, "Region
    // capacity"): 3 x 12 MiB in all.
    for (int i = 12; i < 36; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 1 << 20, region.get()));
    }
    EXPECT_FAM_ERROR(fam()->fam_allocate("one_more", 1 << 20, 0777, region.get()), FAM_ERR_NO_SPACE,
                     "fam_allocate");
}

TEST_F(EveryServerClusterTest, CopyBetweenItemsOnDifferentServersCopiesBytes) {
    auto region = CreateRegion("spread", 12 << 20);
    // Allocate until two items sit on different memory servers.
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    Fam_Descriptor *src = nullptr, *dest = nullptr;
    for (int i = 0; i < 32 && !dest; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 64 << 10, region.get()));
        if (!src) {
            src = items.back().get();
        } else if (ServerIndexOfItem(items.back().get()) != ServerIndexOfItem(src)) {
            dest = items.back().get();
        }
    }
    ASSERT_NE(dest, nullptr) << "every item landed on one memory server";
    std::vector<uint8_t> data = Pattern(64 << 10, 4);
    PutBytes(src, 0, data);
    Copy(fam(), src, 1001, dest, 333, 50000);
    EXPECT_EQ(GetBytes(dest, 0, 64 << 10),
              With(std::vector<uint8_t>(64 << 10, 0), 333, data, 1001, 50000));
    // And back the other way, the whole item.
    PutBytes(dest, 0, Pattern(64 << 10, 5));
    Copy(fam(), dest, 0, src, 0, 64 << 10);
    EXPECT_EQ(GetBytes(src, 0, 64 << 10), Pattern(64 << 10, 5));
}

TEST_F(MemorySideTest, CopyFromStripedItemIntoPlainItemAndBack) {
    auto striped = Allocate("a", kSize, striped_.get());
    auto plain = Allocate("b", kSize, plain_.get());
    std::vector<uint8_t> a = Pattern(kSize, 1);
    PutBytes(striped.get(), 0, a);
    // Unaligned at both ends, across several 4 KiB blocks on all three servers.
    const uint64_t n = 5 * 4096 + 99;
    Copy(fam(), striped.get(), 1234, plain.get(), 777, n);
    std::vector<uint8_t> b = With(std::vector<uint8_t>(kSize, 0), 777, a, 1234, n);
    EXPECT_EQ(GetBytes(plain.get(), 0, kSize), b);

    Copy(fam(), plain.get(), 5, striped.get(), 4095, 3 * 4096 + 3);
    EXPECT_EQ(GetBytes(striped.get(), 0, kSize), With(a, 4095, b, 5, 3 * 4096 + 3));
}

TEST_F(MemorySideTest, CopyBetweenStripedItemsShiftedByPartOfABlock) {
    auto src = Allocate("a", kSize, striped_.get());
    auto dest = Allocate("b", kSize, striped_.get());
    std::vector<uint8_t> data = Pattern(kSize, 2);
    PutBytes(src.get(), 0, data);
    Copy(fam(), src.get(), 100, dest.get(), 2100, kSize - 2100);
    EXPECT_EQ(GetBytes(dest.get(), 0, kSize),
              With(std::vector<uint8_t>(kSize, 0), 2100, data, 100, kSize - 2100));
}

TEST_F(MemorySideTest, BackupOfStripedItemRestoresIntoANewItem) {
    auto item = Allocate("a", kSize - 555, striped_.get());
    PutBytes(item.get(), 0, Pattern(kSize - 555, 3));
    Backup(item.get(), "striped");
    Fam_Descriptor *created = nullptr;
    fam()->fam_restore_wait(fam()->fam_restore("striped", striped_.get(), "copy", 0600, &created));
    std::unique_ptr<Fam_Descriptor> owned(created);
    ASSERT_NE(created, nullptr);
    EXPECT_EQ(GetBytes(created, 0, kSize - 555), Pattern(kSize - 555, 3));
}

TEST_F(MemorySideTest, BackupOfStripedItemRestoresIntoExistingItems) {
    auto item = Allocate("a", kSize, striped_.get());
    PutBytes(item.get(), 0, Pattern(kSize, 3));
    Backup(item.get(), "striped");
    // Into another striped item, larger: the bytes past the backup stay as they were.
    auto larger = Allocate("larger", 2 * kSize, striped_.get());
    PutBytes(larger.get(), 0, Pattern(2 * kSize, 4));
    Restore("striped", larger.get());
    EXPECT_EQ(GetBytes(larger.get(), 0, 2 * kSize),
              With(Pattern(2 * kSize, 4), 0, Pattern(kSize, 3), 0, kSize));
    // Into an item on one server, and from a backup of that item into the striped one.
    auto plain = Allocate("b", kSize, plain_.get());
    Restore("striped", plain.get());
    EXPECT_EQ(GetBytes(plain.get(), 0, kSize), Pattern(kSize, 3));
    PutBytes(plain.get(), 0, Pattern(kSize, 5));
    Backup(plain.get(), "plain");
    Restore("plain", item.get());
    EXPECT_EQ(GetBytes(item.get(), 0, kSize), Pattern(kSize, 5));
}

TEST_F(MemorySideTest, CorruptedBackupOfStripedItemFailsRestoreAndWritesNothing) {
    auto item = Allocate("a", kSize, striped_.get());
    PutBytes(item.get(), 0, Pattern(kSize, 3));
    Backup(item.get(), "striped");
    // One flipped byte, in a block the item's second server holds.
    int fd = open(ArchivePath("striped").c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << ArchivePath("striped");
    const off_t where = 4096 + 4096 + 17;  // the 4 KiB header, then item byte 4113
    unsigned char byte = 0;
    ASSERT_EQ(pread(fd, &byte, 1, where), 1);
    byte ^= 0x5A;
    ASSERT_EQ(pwrite(fd, &byte, 1, where), 1);
    close(fd);

    auto dest = Allocate("dest", kSize, striped_.get());
    PutBytes(dest.get(), 0, Pattern(kSize, 6));
    EXPECT_FAM_ERROR(Restore("striped", dest.get()), FAM_ERR_RESOURCE, "fam_restore");
    EXPECT_EQ(GetBytes(dest.get(), 0, kSize), Pattern(kSize, 6));
}

}  // namespace
}  // namespace fampool_test
