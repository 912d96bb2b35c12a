// The memory-server model's own behaviour: placement over several memory servers, interleaving
// reported by fam_stat, memory-side copy, backup and restore between servers, errors within
// bounded time when a server dies, and what survives a restart (persistent regions and their
// data; every name of the metadata service) and what does not (volatile regions of a restarted
// memory server, whose names are released).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;
using Clock = std::chrono::steady_clock;

// A FamTest on a cluster of its own, whatever FAMPOOL_TEST_CLUSTER says.
class ClusterTest : public FamTest {
  protected:
    virtual const char *Spec() const { return "3:4096"; }
    void PrepareEnvironment() override { SetEnv("FAMPOOL_TEST_CLUSTER", Spec()); }
    void WaitForCluster() {
        try {
            cluster()->WaitReady();
        } catch (const std::exception &e) {
            FAIL() << e.what();
        }
    }
};

class PlainClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0"; }
};

// Three servers without interleaving, every region on all of them (span size 0).
class EveryServerClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override {
        return "3:0:tcp:region_span_size_per_memoryserver=0";
    }
};

// The index of the memory server holding an item of a non-interleaved region.
uint64_t ServerIndexOfItem(Fam_Descriptor *item) {
    return item->get_global_descriptor().offset >> 48;
}

void Copy(fam *f, Fam_Descriptor *src, uint64_t src_offset, Fam_Descriptor *dest,
          uint64_t dest_offset, uint64_t nbytes) {
    f->fam_copy_wait(f->fam_copy(src, src_offset, dest, dest_offset, nbytes));
}

// `bytes` with `part` (from byte `at` of `source`) written at `offset`.
std::vector<uint8_t> With(std::vector<uint8_t> bytes, uint64_t offset,
                          const std::vector<uint8_t> &source, uint64_t at, uint64_t n) {
    std::copy(source.begin() + at, source.begin() + at + n, bytes.begin() + offset);
    return bytes;
}

// Memory-side work on a cluster of three servers: a region striped over all of them (4 KiB
// blocks, "s") and one whose items each lie on one server ("p").
class MemorySideTest : public ClusterTest {
  protected:
    static constexpr uint64_t kSize = 256 << 10;
    void SetUp() override {
        ClusterTest::SetUp();
        if (HasFatalFailure()) return;
        Fam_Region_Attributes striped{}, plain{};
        striped.interleaveEnable = ENABLE;
        plain.interleaveEnable = DISABLE;
        striped_ = CreateRegion("s", 16 << 20, 0777, &striped);
        plain_ = CreateRegion("p", 16 << 20, 0777, &plain);
    }
    void TearDown() override {
        plain_.reset();
        striped_.reset();
        ClusterTest::TearDown();
    }
    void Backup(Fam_Descriptor *item, const char *name) {
        fam()->fam_backup_wait(fam()->fam_backup(item, name, nullptr));
    }
    void Restore(const char *name, Fam_Descriptor *item) {
        fam()->fam_restore_wait(fam()->fam_restore(name, item));
    }
    // The archive file of a backup (the cluster's archive_dir, see FamTest::SetUp).
    std::string ArchivePath(const char *name) const {
        const char *archive = std::getenv("FAMPOOL_ARCHIVE_DIR");
        return (archive ? std::string(archive) : home_dir() + "/backup") + "/" + name +
               ".fambackup";
    }

    std::unique_ptr<Fam_Region_Descriptor> striped_, plain_;
};

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

// The memory servers of a region, as fam_stat names them.
std::vector<uint64_t> ServersOf(fam *f, Fam_Region_Descriptor *region) {
    Fam_Stat stat{};
    f->fam_stat(region, &stat);
    return std::vector<uint64_t>(stat.memory_servers, stat.memory_servers + stat.num_memservers);
}

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
        EXPECT_EQ(ServersOf(fam(), again.get()), first) << name << ": the same name, the same server";
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
// size), so that any item up to its free size fits: each item lies on one server.
TEST_F(PlainClusterTest, SmallRegionLivesOnOneServerAndTakesItemsOfHalfItsSize) {
    auto region = CreateRegion("small", 8 << 20);
    EXPECT_EQ(ServersOf(fam(), region.get()).size(), 1u);
    auto half = Allocate("half", 4 << 20, region.get());
    auto quarter = Allocate("quarter", 2 << 20, region.get());
    std::vector<uint8_t> bytes = Pattern(4 << 20, 8);
    PutBytes(half.get(), 0, bytes);
    EXPECT_EQ(GetBytes(half.get(), 0, bytes.size()), bytes);
    auto tiny = CreateRegion("tiny", 96 << 10);
    auto tiny_half = Allocate("x", 48 << 10, tiny.get());
    auto tiny_rest = Allocate("y", 32 << 10, tiny.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("z", 32 << 10, 0777, tiny.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
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
    // Each server holds a third of the region: 12 items of 1 MiB fit only if all three are used.
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int i = 0; i < 12; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 1 << 20, region.get()));
        PutBytes(items.back().get(), 0, Pattern(1 << 20, i));
    }
    for (int i = 0; i < 12; ++i) EXPECT_EQ(GetBytes(items[i].get(), 0, 1 << 20), Pattern(1 << 20, i));
    EXPECT_FAM_ERROR(fam()->fam_allocate("one_more", 1 << 20, 0777, region.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
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

// Two servers, every region on both.
class FailureTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "2:0:tcp:region_span_size_per_memoryserver=0"; }
};

TEST_F(FailureTest, DeadMemoryServerGivesAnErrorWithinBoundedTime) {
    auto region = CreateRegion("r", 8 << 20);
    // Allocate until an item lands on memory server 1 (the process of index 1).
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    Fam_Descriptor *on_one = nullptr;
    for (int i = 0; i < 64 && !on_one; ++i) {
        items.emplace_back(fam()->fam_allocate(("n" + std::to_string(i)).c_str(), 4096, 0777,
                                               region.get()));
        if ((items.back()->get_global_descriptor().offset >> 48) == 1) on_one = items.back().get();
    }
    ASSERT_NE(on_one, nullptr) << "no item placed on memory server 1";
    char buffer[256] = {};
    fam()->fam_put_blocking(buffer, on_one, 0, sizeof buffer);
    cluster()->Kill(1, SIGKILL);
    auto start = Clock::now();
    int error = FAM_NO_ERROR;
    try {
        fam()->fam_get_blocking(buffer, on_one, 0, sizeof buffer);
    } catch (const Fam_Exception &e) {
        error = e.fam_error();
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_TRUE(error == FAM_ERR_LIBFABRIC || error == FAM_ERR_RPC)
        << "got " << FamErrorName(error);
    EXPECT_LT(seconds, 15.0);
    // The control path reports the dead server too, also within bounded time.
    start = Clock::now();
    EXPECT_THROW(fam()->fam_copy_wait(fam()->fam_copy(on_one, 0, on_one, 128, 64)),
                 Fam_Exception);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
}

TEST_F(FailureTest, CopyToDeadServerGivesAnErrorWithinBoundedTimeAndSourceServerLives) {
    auto region = CreateRegion("r", 8 << 20);
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    Fam_Descriptor *on_zero = nullptr, *on_one = nullptr;
    for (int i = 0; i < 64 && !(on_zero && on_one); ++i) {
        items.push_back(Allocate(("n" + std::to_string(i)).c_str(), 4096, region.get()));
        (ServerIndexOfItem(items.back().get()) == 0 ? on_zero : on_one) = items.back().get();
    }
    ASSERT_TRUE(on_zero && on_one) << "items did not land on both memory servers";
    PutBytes(on_zero, 0, Pattern(4096, 1));
    Copy(fam(), on_zero, 0, on_one, 0, 4096);  // both descriptors now hold their keys
    cluster()->Kill(1, SIGKILL);
    // Memory server 0 writes to memory server 1, which is gone.
    auto start = Clock::now();
    CaughtError caught = CatchFamError([&] { Copy(fam(), on_zero, 0, on_one, 0, 4096); });
    EXPECT_TRUE(caught.thrown);
    EXPECT_TRUE(caught.code == FAM_ERR_LIBFABRIC || caught.code == FAM_ERR_RPC)
        << "got " << FamErrorName(caught.code) << ": " << caught.message;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
    // Memory server 0 still serves.
    Copy(fam(), on_zero, 0, on_zero, 0, 16);
    EXPECT_EQ(GetBytes(on_zero, 0, 4096), Pattern(4096, 1));
}

TEST_F(FailureTest, RestartedServicesKeepPersistentRegionsAndReleaseVolatileOnes) {
    Fam_Region_Attributes persistent{};
    persistent.memoryType = PERSISTENT;
    auto kept = CreateRegion("kept", 4 << 20, 0777, &persistent);
    auto item = Allocate("data", 1 << 20, kept.get());
    PutBytes(item.get(), 0, Pattern(1 << 20, 3));
    Fam_Region_Attributes volatile_attrs{};
    volatile_attrs.memoryType = VOLATILE;
    auto lost = CreateRegion("lost", 4 << 20, 0777, &volatile_attrs);
    FinalizeFam();

    // Both server processes die without warning, then come back.
    cluster()->Kill(0, SIGKILL);
    cluster()->Kill(1, SIGKILL);
    cluster()->Restart(1);
    cluster()->Restart(0);
    ASSERT_NO_FATAL_FAILURE(WaitForCluster());

    InitializeFam();
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("data", "kept"));
    EXPECT_EQ(GetBytes(again.get(), 0, 1 << 20), Pattern(1 << 20, 3));
    // The restarted memory servers lost their volatile heaps: the region and its name are gone.
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("lost"), FAM_ERR_NOTFOUND,
                     "fam_lookup_region");
    auto reused = CreateRegion("lost", 1 << 20, 0777, &volatile_attrs);
    EXPECT_NE(reused, nullptr);
}

TEST_F(FailureTest, SigtermShutsDownCleanlyAndPersistentDataIsBack) {
    Fam_Region_Attributes persistent{};
    persistent.memoryType = PERSISTENT;
    auto kept = CreateRegion("kept", 4 << 20, 0777, &persistent);
    auto item = Allocate("data", 4096, kept.get());
    PutBytes(item.get(), 0, Pattern(4096, 9));
    FinalizeFam();
    cluster()->Kill(0, SIGTERM);
    cluster()->Kill(1, SIGTERM);
    cluster()->Restart(1);
    cluster()->Restart(0);
    ASSERT_NO_FATAL_FAILURE(WaitForCluster());
    InitializeFam();
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("data", "kept"));
    EXPECT_EQ(GetBytes(again.get(), 0, 4096), Pattern(4096, 9));
}

// Deallocated space is zeroed by the metadata service after fam_deallocate returns: the next
// allocation of that space, at once (the region is full, so it waits for the zeroing) or
// later, reads zeros, never the previous item's bytes.
TEST_F(PlainClusterTest, SpaceOfADeallocatedItemIsZeroedBeforeReuse) {
    Fam_Region_Attributes plain{};
    plain.interleaveEnable = DISABLE;
    plain.memoryType = VOLATILE;
    // Three servers with 64 KiB each: the item fills one of them; the others stay empty,
    // so fill them too, and the only free space is what the item gives back.
    auto region = CreateRegion("r", 3 * 65536, 0777, &plain);
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int i = 0; i < 3; ++i) {
        items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 65536, region.get()));
    }
    for (int round = 0; round < 20; ++round) {
        PutBytes(items[0].get(), 0, Pattern(65536, round + 1));
        fam()->fam_deallocate(items[0].get());
        if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        items[0] = Allocate(("n" + std::to_string(round)).c_str(), 65536, region.get());
        EXPECT_EQ(GetBytes(items[0].get(), 0, 65536), std::vector<uint8_t>(65536, 0))
            << "round " << round;
    }
}

TEST_F(ClusterTest, SpaceOfADeallocatedStripedItemIsZeroedBeforeReuse) {
    Fam_Region_Attributes striped{};
    striped.interleaveEnable = ENABLE;
    striped.memoryType = VOLATILE;
    const uint64_t size = 3 * 65536;  // the whole region, striped over its three servers
    auto region = CreateRegion("r", size, 0777, &striped);
    auto item = Allocate("first", size, region.get());
    for (int round = 0; round < 20; ++round) {
        PutBytes(item.get(), 0, Pattern(size, round + 1));
        fam()->fam_deallocate(item.get());
        if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        item = Allocate(("n" + std::to_string(round)).c_str(), size, region.get());
        EXPECT_EQ(GetBytes(item.get(), 0, size), std::vector<uint8_t>(size, 0))
            << "round " << round;
    }
}

// The metadata service zeroes what was deallocated in many regions in one pass, one call per
// memory server: every region gets its space back zeroed, and a region destroyed while its
// items wait for zeroing does not hold up the others.
TEST_F(ClusterTest, DeallocationsInManyRegionsAreZeroedTogether) {
    Fam_Region_Attributes plain{};
    plain.interleaveEnable = DISABLE;
    plain.memoryType = VOLATILE;
    constexpr int kRegions = 6;
    std::vector<std::unique_ptr<Fam_Region_Descriptor>> regions;
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int r = 0; r < kRegions; ++r) {
        // One server's share of the region is one item: its space comes back only once zeroed.
        regions.push_back(CreateRegion(("many" + std::to_string(r)).c_str(), 3 * 65536, 0777,
                                       &plain));
        for (int i = 0; i < 3; ++i) {
            items.push_back(Allocate(("i" + std::to_string(i)).c_str(), 65536,
                                     regions.back().get()));
            PutBytes(items.back().get(), 0, Pattern(65536, r * 3 + i + 1));
        }
    }
    for (auto &item : items) fam()->fam_deallocate(item.get());
    fam()->fam_destroy_region(regions[0].get());
    for (int r = 1; r < kRegions; ++r) {
        for (int i = 0; i < 3; ++i) {
            auto again = Allocate(("again" + std::to_string(i)).c_str(), 65536, regions[r].get());
            EXPECT_EQ(GetBytes(again.get(), 0, 65536), std::vector<uint8_t>(65536, 0))
                << "region " << r << ", item " << i;
        }
    }
}

TEST_F(FailureTest, SpaceOfAnItemDeallocatedJustBeforeACrashIsNotLost) {
    Fam_Region_Attributes persistent{};
    persistent.memoryType = PERSISTENT;
    persistent.interleaveEnable = DISABLE;
    auto region = CreateRegion("kept", 2 * 65536, 0777, &persistent);
    auto first = Allocate("a", 65536, region.get());
    auto second = Allocate("b", 65536, region.get());
    PutBytes(first.get(), 0, Pattern(65536, 5));
    PutBytes(second.get(), 0, Pattern(65536, 6));
    fam()->fam_deallocate(first.get());
    FinalizeFam();
    cluster()->Kill(0, SIGKILL);  // the metadata service, perhaps before it zeroed "a"
    cluster()->Restart(0);
    ASSERT_NO_FATAL_FAILURE(WaitForCluster());
    InitializeFam();
    std::unique_ptr<Fam_Region_Descriptor> again(fam()->fam_lookup_region("kept"));
    auto reused = Allocate("c", 65536, again.get());
    EXPECT_EQ(GetBytes(reused.get(), 0, 65536), std::vector<uint8_t>(65536, 0));
    std::unique_ptr<Fam_Descriptor> kept(fam()->fam_lookup("b", "kept"));
    EXPECT_EQ(GetBytes(kept.get(), 0, 65536), Pattern(65536, 6));
}

// Another user, in a program of its own (exec'd as uid/gid 65534), against the permission bits:
// what the API suites check in forked children on the embedded model.
std::map<std::string, int> AccessAsNobody(const std::string &region, const std::string &item) {
    ProgramSpec spec;
    spec.argv = {WorkerPath("access_worker"), region, item};
    spec.uid = 65534;
    spec.gid = 65534;
    ProcessResult result = RunProgram(spec, 60);
    EXPECT_TRUE(result.ok()) << result.err;
    std::map<std::string, int> codes;
    std::istringstream lines(result.out);
    std::string operation;
    int code;
    while (lines >> operation >> code) codes[operation] = code;
    return codes;
}

TEST_F(PlainClusterTest, OtherUserReadsButCannotWriteOrManageAReadOnlyRegion) {
    auto region = CreateRegion("shared", 16 << 20, 0755);
    auto item = Allocate("i", 4096, region.get(), 0644);
    PutBytes(item.get(), 0, Pattern(4096, 3));
    std::map<std::string, int> codes = AccessAsNobody("shared", "i");
    EXPECT_EQ(codes["lookup_region"], 0);
    EXPECT_EQ(codes["lookup_item"], 0);
    EXPECT_EQ(codes["get"], 0);
    EXPECT_EQ(codes["put"], FAM_ERR_NOPERM);
    EXPECT_EQ(codes["set"], FAM_ERR_NOPERM);
    EXPECT_EQ(codes["allocate"], FAM_ERR_NOPERM);
    EXPECT_EQ(codes["resize_region"], FAM_ERR_NOPERM);
    EXPECT_EQ(codes["destroy_region"], FAM_ERR_NOPERM);
    EXPECT_EQ(GetBytes(item.get(), 0, 4096), Pattern(4096, 3));
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.size, uint64_t{16} << 20);
}

TEST_F(PlainClusterTest, OtherUserWritesAndAllocatesInAnOpenRegionButCannotDestroyIt) {
    auto region = CreateRegion("open", 16 << 20, 0777);
    auto item = Allocate("i", 4096, region.get(), 0666);
    std::map<std::string, int> codes = AccessAsNobody("open", "i");
    EXPECT_EQ(codes["put"], 0);
    EXPECT_EQ(codes["set"], 0);
    EXPECT_EQ(codes["allocate"], 0);
    EXPECT_EQ(codes["deallocate"], 0);
    EXPECT_EQ(codes["destroy_region"], FAM_ERR_NOPERM);
    EXPECT_EQ(fam()->fam_fetch_uint64(item.get(), 8), 7u);
    uint64_t first = 0;
    fam()->fam_get_blocking(&first, item.get(), 0, sizeof first);
    EXPECT_EQ(first, 0x5555555555555555ull);
}

}  // namespace
}  // namespace fampool_test
