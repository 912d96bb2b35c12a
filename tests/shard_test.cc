// The metadata service as shards (common/shards.h): regions partitioned by name, each shard
// with a store of its own; clients send each call to the owning shard; a shard's restart keeps
// its names; a shard that is down takes only its own regions with it; a call sent to the wrong
// shard is refused by name. (The API suites run on two shards too: tests/CMakeLists.txt.)
#include <signal.h>

#include <set>
#include <string>

#include "cluster_fixtures.h"
#include "common/cluster_config.h"
#include "common/shards.h"
#include "meta/client/metadata_client.h"
#include "meta/client/sharded_metadata.h"
#include "meta/lmdb.h"
#include "meta/metadata_store.h"

namespace fampool_test {
namespace {

using fampool::ShardOfName;
using fampool::ShardOfRegion;

// One memory server, the metadata service in two shards; shard 1 is process index 1.
class ShardTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "1:0:tcp:metadata_shards=2"; }
    static constexpr size_t kShardOne = 1;

    // A region name owned by `shard` (of two), made from `stem`.
    static std::string NameOnShard(uint32_t shard, const std::string &stem) {
        for (int i = 0;; ++i) {
            std::string name = stem + std::to_string(i);
            if (ShardOfName(name, 2) == shard) return name;
        }
    }

    std::vector<std::string> Shards() {
        return fampool::MetadataShards(fampool::LoadClusterConfig(cluster()->config_path()));
    }
};

TEST_F(ShardTest, RegionsAreSpreadOverTheShardsByNameAndTheirIdsNameTheirShard) {
    std::set<uint32_t> used;
    for (int i = 0; i < 16; ++i) {
        std::string name = "spread" + std::to_string(i);
        auto region = CreateRegion(name.c_str(), 1 << 20);
        uint64_t id = region->get_global_descriptor().regionId;
        EXPECT_EQ(ShardOfRegion(id), ShardOfName(name, 2)) << name << " has id " << id;
        used.insert(ShardOfRegion(id));
        std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region(name.c_str()));
        EXPECT_EQ(found->get_global_descriptor().regionId, id);
    }
    EXPECT_EQ(used.size(), 2u) << "16 names all hashed to one shard";
}

TEST_F(ShardTest, EachShardKeepsOnlyItsOwnRegions) {
    std::string zero = NameOnShard(0, "own"), one = NameOnShard(1, "own");
    auto a = CreateRegion(zero.c_str(), 1 << 20);
    auto b = CreateRegion(one.c_str(), 1 << 20);
    std::vector<std::string> shards = Shards();
    ASSERT_EQ(shards.size(), 2u);
    for (uint32_t k = 0; k < 2; ++k) {
        fampool::MetadataClient client(shards[k], std::chrono::seconds(10));
        fampool::rpc::ClusterStatus status = client.Status();
        ASSERT_EQ(status.regions_size(), 1) << "shard " << k;
        EXPECT_EQ(status.regions(0).region().name(), k == 0 ? zero : one);
        EXPECT_EQ(status.shard(), k);
        EXPECT_EQ(status.shards(), 2u);
    }
    fampool::ShardedMetadata both(shards, std::chrono::seconds(10));
    EXPECT_EQ(both.Status().regions_size(), 2);
}

TEST_F(ShardTest, ACallSentToTheWrongShardIsRefusedNamingTheOwner) {
    std::string zero = NameOnShard(0, "wrong");
    fampool::MetadataClient shard_one(Shards()[1], std::chrono::seconds(10));
    fampool::Caller caller{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid())};
    Fam_Region_Attributes attributes{};
    CaughtError caught =
        CatchFamError([&] { shard_one.CreateRegion(zero, 1 << 20, 0777, attributes, caller); });
    EXPECT_EQ(caught.code, FAM_ERR_INVALID);
    EXPECT_NE(caught.message.find("belongs to metadata shard 0"), std::string::npos)
        << caught.message;
    auto region = CreateRegion(zero.c_str(), 1 << 20);
    caught = CatchFamError(
        [&] { shard_one.GetRegion(region->get_global_descriptor().regionId, caller); });
    EXPECT_EQ(caught.code, FAM_ERR_INVALID);
    EXPECT_NE(caught.message.find("belongs to metadata shard 0"), std::string::npos)
        << caught.message;
}

TEST_F(ShardTest, AShardsRestartKeepsItsNamesAndTheirData) {
    std::string one = NameOnShard(1, "kept");
    auto region = CreateRegion(one.c_str(), 1 << 20);
    uint64_t id = region->get_global_descriptor().regionId;
    auto item = Allocate("x", 4096, region.get());
    PutBytes(item.get(), 0, Pattern(4096, 3));
    cluster()->Kill(kShardOne, SIGKILL);
    cluster()->Restart(kShardOne);
    WaitForCluster();
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region(one.c_str()));
    EXPECT_EQ(found->get_global_descriptor().regionId, id);
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("x", one.c_str()));
    EXPECT_EQ(GetBytes(again.get(), 0, 4096), Pattern(4096, 3));
    // It goes on numbering its regions where it left off.
    auto next = CreateRegion(NameOnShard(1, "next").c_str(), 1 << 20);
    EXPECT_GT(next->get_global_descriptor().regionId, id);
    EXPECT_EQ(ShardOfRegion(next->get_global_descriptor().regionId), 1u);
}

TEST_F(ShardTest, AShardThatIsDownTakesOnlyItsOwnRegions) {
    std::string zero = NameOnShard(0, "up"), one = NameOnShard(1, "down");
    auto a = CreateRegion(zero.c_str(), 1 << 20);
    auto b = CreateRegion(one.c_str(), 1 << 20);
    cluster()->Kill(kShardOne, SIGKILL);
    // Shard 0's regions: lookups, allocation, data, as before.
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region(zero.c_str()));
    auto item = Allocate("y", 4096, a.get());
    PutBytes(item.get(), 0, Pattern(4096, 5));
    EXPECT_EQ(GetBytes(item.get(), 0, 4096), Pattern(4096, 5));
    // Shard 1's: an error naming the control path, within the call's bound.
    CaughtError caught = CatchFamError([&] { fam()->fam_lookup_region(one.c_str()); });
    EXPECT_EQ(caught.code, FAM_ERR_RPC) << caught.message;
    cluster()->Restart(kShardOne);
    WaitForCluster();
}

// A store keeps the shard it was made as: opened as another (or for another count), it is
// refused, since its names would lead clients elsewhere.
TEST(ShardStoreTest, AStoreMadeAsOneShardIsRefusedAsAnother) {
    TempDir dir;
    auto env = fampool::LmdbEnv::Open(dir.path(), false);
    fampool::MetadataStore::Prepare(*env, 0, 1);
    CaughtError caught = CatchFamError([&] { fampool::MetadataStore::Prepare(*env, 0, 2); });
    EXPECT_EQ(caught.code, FAM_ERR_INVALID);
    EXPECT_NE(caught.message.find("is shard 0/1"), std::string::npos) << caught.message;
    caught = CatchFamError([&] { fampool::MetadataStore::Prepare(*env, 1, 2); });
    EXPECT_EQ(caught.code, FAM_ERR_INVALID);
    fampool::MetadataStore::Prepare(*env, 0, 1);  // as made: fine
}

TEST(ShardNameTest, EveryNameHasOneShardAndNamesSpreadEvenly) {
    std::vector<int> count(4);
    for (int i = 0; i < 4000; ++i) ++count[ShardOfName("region" + std::to_string(i), 4)];
    for (int c : count) {
        EXPECT_GT(c, 800);
        EXPECT_LT(c, 1200);
    }
    EXPECT_EQ(ShardOfName("anything", 1), 0u);
    EXPECT_EQ(ShardOfRegion(fampool::FirstRegionId(3)), 3u);
    EXPECT_EQ(ShardOfRegion(1), 0u);  // a store from before shards
}

}  // namespace
}  // namespace fampool_test
