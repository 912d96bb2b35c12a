// config_test.cc: the configuration loaders (common/config.h, common/cluster_config.h,
// common/openfam_config.h): what wins among options, environment and file; the values of
// OpenFAM's own files; cluster files in both server-list forms; a cluster written back by
// ClusterFileText reading as what it was; and errors that name the file, key and value.
#include "common/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/cluster_config.h"
#include "common/config_keys.h"
#include "common/did_you_mean.h"
#include "common/openfam_config.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::ClusterConfig;
using fampool::Config;

void Write(const std::string &path, const std::string &text) {
    std::ofstream out(path);
    out << text;
}

class ConfigTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string &name : FampoolVariablesInEnvironment()) Unset(name);
        for (const char *name : {"PMIX_RANK", "PMIX_NAMESPACE", "PMI_FD", "PMI_PORT"}) {
            Unset(name);
        }
    }
    void Unset(const std::string &name) {
        env_.push_back(std::make_unique<ScopedEnv>(name, std::nullopt));
    }
    void Set(const std::string &name, const std::string &value) {
        env_.push_back(std::make_unique<ScopedEnv>(name, value));
    }
    std::string File(const std::string &name, const std::string &text) {
        std::string path = dir_.path() + "/" + name;
        Write(path, text);
        return path;
    }

    TempDir dir_{"/tmp", "fampool-config-"};
    std::vector<std::unique_ptr<ScopedEnv>> env_;
};

// ---------------------------------------------------------------------------------------------
// Client configuration

TEST_F(ConfigTest, DefaultsWithoutAnyFile) {
    Config c = fampool::LoadConfig(nullptr);
    EXPECT_EQ(c.model, "shared_memory");
    EXPECT_EQ(c.runtime, "NONE");
    EXPECT_EQ(c.thread_model, "FAM_THREAD_SERIALIZE");
    EXPECT_EQ(c.connect_timeout_ms, 60000);
}

TEST_F(ConfigTest, OptionBeatsEnvironmentWhichBeatsTheFile) {
    Set("FAMPOOL_CONFIG", File("pe.yaml", "default_region_name: from_file\n"));
    EXPECT_EQ(fampool::LoadConfig(nullptr).default_region_name, "from_file");
    Set("FAMPOOL_DEFAULT_REGION", "from_env");
    EXPECT_EQ(fampool::LoadConfig(nullptr).default_region_name, "from_env");
    Fam_Options options{};
    options.defaultRegionName = const_cast<char *>("from_option");
    EXPECT_EQ(fampool::LoadConfig(&options).default_region_name, "from_option");
}

// cisServer / grpcPort name the metadata service ahead of the environment and of a cluster
// file's metadata_address and shards, as every option does (and as OpenFAM does).
TEST_F(ConfigTest, MetadataAddressFollowsTheSamePrecedence) {
    Set("FAMPOOL_CONFIG", File("cluster.yaml",
                               "metadata_address: 127.0.0.1:7001\n"
                               "metadata_shards: [127.0.0.1:7001, 127.0.0.1:7002]\n"
                               "provider: tcp\n"));
    Config from_file = fampool::LoadConfig(nullptr);
    EXPECT_EQ(from_file.metadata_address, "127.0.0.1:7001");
    EXPECT_EQ(from_file.metadata_shards.size(), 2u);

    Set("FAMPOOL_METADATA_ADDRESS", "127.0.0.2:7101");
    EXPECT_EQ(fampool::LoadConfig(nullptr).metadata_address, "127.0.0.2:7101");
    Set("FAMPOOL_CIS_SERVER", "127.0.0.3");
    Set("FAMPOOL_GRPC_PORT", "7201");
    EXPECT_EQ(fampool::LoadConfig(nullptr).metadata_address, "127.0.0.2:7101")
        << "FAMPOOL_METADATA_ADDRESS is the more precise of the variables";
    Unset("FAMPOOL_METADATA_ADDRESS");
    Config from_env = fampool::LoadConfig(nullptr);
    EXPECT_EQ(from_env.metadata_address, "127.0.0.3:7201");
    EXPECT_TRUE(from_env.metadata_shards.empty()) << "another service's shards are its own";

    Fam_Options options{};
    options.cisServer = const_cast<char *>("127.0.0.4");
    options.grpcPort = const_cast<char *>("7301");
    Set("FAMPOOL_METADATA_ADDRESS", "127.0.0.2:7101");
    Config from_options = fampool::LoadConfig(&options);
    EXPECT_EQ(from_options.metadata_address, "127.0.0.4:7301");
    EXPECT_TRUE(from_options.metadata_shards.empty());
    EXPECT_EQ(from_options.model, "memory_server") << "the file still names a cluster";
}

TEST_F(ConfigTest, ProviderNamedOrNot) {
    EXPECT_FALSE(fampool::LoadConfig(nullptr).libfabric_provider_set);
    Set("FAMPOOL_CONFIG", File("cluster.yaml", "metadata_address: 127.0.0.1:7001\n"));
    Config unnamed = fampool::LoadConfig(nullptr);
    EXPECT_FALSE(unnamed.libfabric_provider_set);
    Set("FAMPOOL_PROVIDER", "sockets");
    EXPECT_TRUE(fampool::LoadConfig(nullptr).libfabric_provider_set);
    Unset("FAMPOOL_PROVIDER");
    Fam_Options options{};
    options.libfabricProvider = const_cast<char *>("tcp");
    EXPECT_TRUE(fampool::LoadConfig(&options).libfabric_provider_set);
    Set("FAMPOOL_CONFIG", File("named.yaml", "metadata_address: 127.0.0.1:7001\nprovider: tcp\n"));
    EXPECT_TRUE(fampool::LoadConfig(nullptr).libfabric_provider_set);
}

TEST_F(ConfigTest, OpenFamsOwnPeFileIsTaken) {
    std::string root = dir_.path() + "/root";
    std::filesystem::create_directories(root + "/config");
    Write(root + "/config/fam_pe_config.yaml",
          "FamThreadModel: single\nprovider: sockets\nopenfam_model: memory_server\n"
          "runtime: PMIX\nclient_interface_type: rpc\n"
          "fam_client_interface_service_address: 10.0.0.1:9000\ndefault_memory_type: \"\"\n"
          "resource_release: enable\nrpc_framework_type: grpc\n");
    Set("OPENFAM_ROOT", root);
    Config c = fampool::LoadConfig(nullptr);
    EXPECT_EQ(c.thread_model, "FAM_THREAD_SERIALIZE");
    EXPECT_EQ(c.model, "memory_server");
    EXPECT_EQ(c.runtime, "PMIX");
    EXPECT_EQ(c.metadata_address, "10.0.0.1:9000");
    EXPECT_EQ(c.default_memory_type, "volatile");
    Write(root + "/config/fam_pe_config.yaml", "FamThreadModel: multiple\n");
    EXPECT_EQ(fampool::LoadConfig(nullptr).thread_model, "FAM_THREAD_MULTIPLE");
}

TEST_F(ConfigTest, RuntimeFollowsTheLauncher) {
    Set("PMI_FD", "5");
    EXPECT_EQ(fampool::LoadConfig(nullptr).runtime, "PMI2");
    Set("PMIX_RANK", "0");
    EXPECT_EQ(fampool::LoadConfig(nullptr).runtime, "PMIX") << "PMIx first";
}

TEST_F(ConfigTest, BadValuesNameTheOptionAndTheValue) {
    Set("FAMPOOL_THREAD_MODEL", "several");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "\"several\"");
}

TEST_F(ConfigTest, TimeoutsOfZeroOrBeyondAnIntAreRefused) {
    Set("FAMPOOL_CONNECT_TIMEOUT_MS", "0");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "connect_timeout_ms");
    Set("FAMPOOL_CONNECT_TIMEOUT_MS", "5000000000");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "connect_timeout_ms");
}

TEST_F(ConfigTest, SwitchesTakeYesOrNoFromTheFileOrTheEnvironment) {
    EXPECT_FALSE(fampool::LoadConfig(nullptr).fabric_checked_reads);
    EXPECT_TRUE(fampool::LoadConfig(nullptr).metadata_fabric);
    Set("FAMPOOL_CONFIG", File("pe.yaml", "fabric_checked_reads: yes\nmetadata_fabric: no\n"));
    EXPECT_TRUE(fampool::LoadConfig(nullptr).fabric_checked_reads);
    EXPECT_FALSE(fampool::LoadConfig(nullptr).metadata_fabric);
    Set("FAMPOOL_FABRIC_CHECKED_READS", "0");
    EXPECT_FALSE(fampool::LoadConfig(nullptr).fabric_checked_reads);
    Set("FAMPOOL_FABRIC_CHECKED_READS", "sometimes");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID,
                     "fabric_checked_reads");
}

TEST_F(ConfigTest, AggregationKeysComeFromTheFileOrTheEnvironment) {
    fampool::Config defaults = fampool::LoadConfig(nullptr);
    EXPECT_TRUE(defaults.aggregation);
    EXPECT_EQ(defaults.aggregation_threshold, 16384u);
    EXPECT_EQ(defaults.atl_data_size, 4u << 20);
    Set("FAMPOOL_CONFIG", File("pe.yaml",
                               "aggregation_threshold: 0\nATL_queue_size: 500\n"
                               "ATL_data_size: 1048576\nfabric_memory_side_elements: 0\n"));
    fampool::Config c = fampool::LoadConfig(nullptr);
    EXPECT_EQ(c.aggregation_threshold, 0u);
    EXPECT_EQ(c.atl_queue_size, 500u);
    EXPECT_EQ(c.atl_data_size, 1u << 20);
    EXPECT_EQ(c.fabric_memory_side_elements, 0u);
    Set("FAMPOOL_AGGREGATION_THRESHOLD", "many");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID,
                     "aggregation_threshold");
}

TEST_F(ConfigTest, AggregationSizesOutsideTheirBoundsAreRefused) {
    Set("FAMPOOL_ATL_DATA_SIZE", "100");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "ATL_data_size");
    Set("FAMPOOL_ATL_DATA_SIZE", "1G");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "ATL_data_size");
    Set("FAMPOOL_ATL_DATA_SIZE", "4M");
    Set("FAMPOOL_ATL_QUEUE_SIZE", "0");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "ATL_queue_size");
}

TEST_F(ConfigTest, MisspeltKeyNamesTheKeyAndTheFile) {
    std::string path = File("pe.yaml", "FamThreadMode: single\n");
    Set("FAMPOOL_CONFIG", path);
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "FamThreadMode");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, path.c_str());
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID,
                     "did you mean \"FamThreadModel\"?");
    // No suggestion where nothing is close.
    Set("FAMPOOL_CONFIG", File("far.yaml", "zzzzzzzzzz: 1\n"));
    try {
        fampool::LoadConfig(nullptr);
        ADD_FAILURE() << "an unknown key was taken";
    } catch (const Fam_Exception &e) {
        EXPECT_EQ(std::string(e.fam_error_msg()).find("did you mean"), std::string::npos);
    }
}

TEST(ClosestNameTest, NamesTheKnownNameWithinTwoEditsAndNothingFurther) {
    std::set<std::string> known = {"provider", "fabric_timeout_ms", "rpc_timeout_ms"};
    EXPECT_EQ(fampool::ClosestName("provder", known), "provider");   // one missing
    EXPECT_EQ(fampool::ClosestName("porvider", known), "provider");  // two swapped
    EXPECT_EQ(fampool::ClosestName("Provider", known), "provider");  // case aside
    EXPECT_EQ(fampool::ClosestName("rpc_timeot_ms", known), "rpc_timeout_ms");
    EXPECT_EQ(fampool::ClosestName("pro", known), "");  // too far
    EXPECT_EQ(fampool::ClosestName("abc", known), "");
}

TEST_F(ConfigTest, OpenFamKeyWithAValueFampoolDoesNotTakeIsRefused) {
    Set("FAMPOOL_CONFIG", File("pe.yaml", "rpc_framework_type: thallium\n"));
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "thallium");
}

TEST_F(ConfigTest, AuthenticationIsMungeOrNone) {
    Config defaults = fampool::LoadConfig(nullptr);
    EXPECT_EQ(defaults.authentication, "none");
    EXPECT_EQ(defaults.munge_socket, "");
    Set("FAMPOOL_CONFIG",
        File("pe.yaml", "authentication: munge\nmunge_socket: /run/site/munge.socket\n"));
    Config c = fampool::LoadConfig(nullptr);
    EXPECT_EQ(c.authentication, "munge");
    EXPECT_EQ(c.munge_socket, "/run/site/munge.socket");
    Set("FAMPOOL_AUTHENTICATION", "kerberos");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "authentication");
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "\"kerberos\"");
}

// ---------------------------------------------------------------------------------------------
// Cluster files

const char *kCluster =
    "provider: tcp\nmetadata_address: 127.0.0.1:9000\nmetadata_dir: /tmp/m\n"
    "memservers:\n"
    "  - {rpc_interface: 127.0.0.1:9001, libfabric_port: \"9100\", fam_path: /tmp/h0}\n"
    "  - {rpc_interface: 127.0.0.1:9002, libfabric_port: \"9101\", fam_path: /tmp/h1,\n"
    "     memory_type: volatile}\n";

TEST_F(ConfigTest, ClusterFileListsItsServersInOrder) {
    ClusterConfig c = fampool::LoadClusterConfig(File("c.yaml", kCluster));
    ASSERT_EQ(c.memservers.size(), 2u);
    EXPECT_EQ(c.memservers[1].id, 1u);
    EXPECT_EQ(c.memservers[1].rpc_address, "127.0.0.1:9002");
    EXPECT_EQ(c.memservers[1].memory_type, "volatile");
    EXPECT_EQ(c.memservers[1].shm_dir, "/tmp/h1") << "a volatile server keeps heaps in fam_path";
    EXPECT_EQ(c.memservers[0].shm_dir, "/dev/shm");
    EXPECT_FALSE(c.span_size.has_value());
}

TEST_F(ConfigTest, OpenFamsMapOfServersMayListIdsInAnyOrder) {
    ClusterConfig c = fampool::LoadClusterConfig(
        File("c.yaml",
             "metadata_dir: /tmp/m\nMemservers:\n"
             "  1: {rpc_interface: h:2, libfabric_port: \"3\", fam_path: /b}\n"
             "  0: {rpc_interface: h:1, libfabric_port: \"4\", fam_path: /a}\n"));
    ASSERT_EQ(c.memservers.size(), 2u);
    EXPECT_EQ(c.memservers[0].heap_dir, "/a");
    EXPECT_EQ(c.memservers[1].heap_dir, "/b");
}

TEST_F(ConfigTest, ClusterFileErrorsNameTheServerAndTheKey) {
    EXPECT_FAM_ERROR(fampool::LoadClusterConfig(File("c.yaml",
                                                     "memservers:\n  - {libfabric_port: \"1\", "
                                                     "fam_path: /a}\n")),
                     openfam::FAM_ERR_INVALID, "memory server 0 has no rpc_interface");
    EXPECT_FAM_ERROR(fampool::LoadClusterConfig(File("c.yaml",
                                                     "memservers:\n  - {rpc_interface: h:1, "
                                                     "libfabric_port: \"1\", fam_path: /a, "
                                                     "memory_type: dram}\n")),
                     openfam::FAM_ERR_INVALID, "memory_type \"dram\"");
    EXPECT_FAM_ERROR(fampool::LoadClusterConfig(File("c.yaml", "rpc_timeout_ms: 0\n")),
                     openfam::FAM_ERR_INVALID, "rpc_timeout_ms");
    EXPECT_FAM_ERROR(fampool::LoadClusterConfig(File("c.yaml", "authentication: maybe\n")),
                     openfam::FAM_ERR_INVALID, "authentication \"maybe\" is not munge or none");
}

TEST_F(ConfigTest, MetadataShardsAreListedWithShardZeroAtTheMetadataAddress) {
    ClusterConfig c = fampool::LoadClusterConfig(File(
        "c.yaml", std::string(kCluster) + "metadata_shards: [127.0.0.1:9000, 127.0.0.1:9010]\n"));
    EXPECT_EQ(c.metadata_address, "127.0.0.1:9000") << "shard 0 is the metadata address";
    EXPECT_EQ(fampool::MetadataShards(c),
              (std::vector<std::string>{"127.0.0.1:9000", "127.0.0.1:9010"}));
    c.metadata_dir = "/m";
    EXPECT_EQ(fampool::ShardStoreDir(c, 1), "/m/shard1");
    c.metadata_fabric_port = "7000";
    EXPECT_EQ(fampool::ShardFabricPort(c, 1), "7001");
    ClusterConfig back = fampool::LoadClusterConfig(File("back.yaml", fampool::ClusterFileText(c)));
    EXPECT_EQ(back.metadata_shards, c.metadata_shards);
    // One shard: the metadata address, its store the metadata directory itself.
    ClusterConfig one = fampool::LoadClusterConfig(File("one.yaml", kCluster));
    EXPECT_EQ(fampool::MetadataShards(one), std::vector<std::string>{one.metadata_address});
    one.metadata_dir = "/m";
    EXPECT_EQ(fampool::ShardStoreDir(one, 0), "/m");
}

TEST_F(ConfigTest, QuotasBindUsersFieldByFieldOverTheDefault) {
    ClusterConfig c = fampool::LoadClusterConfig(
        File("c.yaml", std::string(kCluster) +
                           "quotas:\n  default: {bytes: 1GiB, sessions: 100}\n"
                           "  users:\n    root: {regions: 4}\n    '4242': {bytes: 2TiB}\n"
                           "  groups:\n    '0': {bytes: 10GiB}\n"));
    fampool::QuotaLimits root = c.quotas.User(0);
    EXPECT_EQ(root.bytes, uint64_t{1} << 30) << "the default's bytes, root's own regions";
    EXPECT_EQ(root.regions, 4u);
    EXPECT_EQ(c.quotas.Sessions(0), 100u);
    EXPECT_EQ(c.quotas.User(4242).bytes, uint64_t{2} << 40) << "a uid without a name";
    EXPECT_FALSE(c.quotas.User(4243).regions.has_value());
    ASSERT_NE(c.quotas.Group(0), nullptr);
    EXPECT_EQ(c.quotas.Group(1), nullptr);
    EXPECT_TRUE(c.quotas.BoundsRegions());
    ClusterConfig none = fampool::LoadClusterConfig(File("n.yaml", kCluster));
    EXPECT_FALSE(none.quotas.BoundsRegions());
    EXPECT_EQ(none.quotas.Sessions(1000), fampool::kDefaultSessionsPerUser);
}

TEST_F(ConfigTest, QuotasThatCannotBeHonouredAreRefusedByName) {
    auto load = [&](const std::string &quotas) {
        return fampool::LoadClusterConfig(File("c.yaml", std::string(kCluster) + quotas));
    };
    EXPECT_FAM_ERROR(load("quotas: {users: {no-such-user-here: {bytes: 1}}}\n"),
                     openfam::FAM_ERR_INVALID, "no user \"no-such-user-here\"");
    EXPECT_FAM_ERROR(load("quotas: {groups: {root: {sessions: 5}}}\n"), openfam::FAM_ERR_INVALID,
                     "sessions are bounded per user, not per group");
    EXPECT_FAM_ERROR(load("quotas: {default: {byte: 5}}\n"), openfam::FAM_ERR_INVALID,
                     "did you mean \"bytes\"");
    EXPECT_FAM_ERROR(load("quotas: {default: {regions: 2GiB}}\n"), openfam::FAM_ERR_INVALID,
                     "must be a whole number");
    EXPECT_FAM_ERROR(load("quotas: {default: {sessions: 0}}\n"), openfam::FAM_ERR_INVALID,
                     "at least 1");
    EXPECT_FAM_ERROR(load("quotas: {users: {root: {}}, usres: {}}\n"), openfam::FAM_ERR_INVALID,
                     "unknown key \"usres\"");
    EXPECT_NO_THROW(
        load("metadata_shards: [127.0.0.1:9000, 127.0.0.1:9010]\n"
             "quotas: {default: {regions: 5}}\n"))
        << "several shards count quotas together";
}

TEST_F(ConfigTest, MetadataShardsThatDisagreeOrRepeatAreRefusedByName) {
    EXPECT_FAM_ERROR(
        fampool::LoadClusterConfig(File("c.yaml",
                                        "metadata_address: 127.0.0.1:1\n"
                                        "metadata_shards: [127.0.0.1:2, 127.0.0.1:3]\n")),
        openfam::FAM_ERR_INVALID, "is not the first of metadata_shards");
    EXPECT_FAM_ERROR(
        fampool::LoadClusterConfig(File("c.yaml", "metadata_shards: [127.0.0.1:2, 127.0.0.1:2]\n")),
        openfam::FAM_ERR_INVALID, "twice");
    EXPECT_FAM_ERROR(
        fampool::LoadClusterConfig(File("c.yaml", "metadata_shards: [127.0.0.1:2, nowhere]\n")),
        openfam::FAM_ERR_INVALID, "\"nowhere\" is not host:port");
    EXPECT_FAM_ERROR(fampool::LoadClusterConfig(File("c.yaml", "metadata_shards: here\n")),
                     openfam::FAM_ERR_INVALID, "must be a list");
}

TEST_F(ConfigTest, ClusterAuthenticatesOnlyWhenItsFileSaysMunge) {
    EXPECT_EQ(fampool::LoadClusterConfig(File("c.yaml", kCluster)).authentication, "none");
    ClusterConfig c = fampool::LoadClusterConfig(
        File("c.yaml", std::string(kCluster) + "authentication: munge\nmunge_socket: /x/m.sock\n"));
    EXPECT_EQ(c.authentication, "munge");
    EXPECT_EQ(c.munge_socket, "/x/m.sock");
}

TEST_F(ConfigTest, ClusterWrittenBackReadsAsWhatItWas) {
    ClusterConfig c = fampool::LoadClusterConfig(File("c.yaml", kCluster));
    c.span_size = 1 << 20;
    c.region_spanning = false;
    c.delayed_free_threads = 0;
    c.archive_dir = "/tmp/with \"quotes\"\tand a tab\nand a line";
    c.memservers[0].if_device = "lo";
    c.authentication = "munge";
    c.munge_socket = "/run/munge/munge.socket.2";
    ClusterConfig back = fampool::LoadClusterConfig(File("back.yaml", fampool::ClusterFileText(c)));
    EXPECT_EQ(back.provider, c.provider);
    EXPECT_EQ(back.metadata_address, c.metadata_address);
    EXPECT_EQ(back.archive_dir, c.archive_dir);
    EXPECT_EQ(back.span_size, c.span_size);
    EXPECT_EQ(back.region_spanning, false);
    EXPECT_EQ(back.delayed_free_threads, 0);
    EXPECT_EQ(back.authentication, "munge");
    EXPECT_EQ(back.munge_socket, c.munge_socket);
    ASSERT_EQ(back.memservers.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(back.memservers[i].rpc_address, c.memservers[i].rpc_address);
        EXPECT_EQ(back.memservers[i].fabric_port, c.memservers[i].fabric_port);
        EXPECT_EQ(back.memservers[i].heap_dir, c.memservers[i].heap_dir);
        EXPECT_EQ(back.memservers[i].shm_dir, c.memservers[i].shm_dir);
        EXPECT_EQ(back.memservers[i].if_device, c.memservers[i].if_device);
        EXPECT_EQ(back.memservers[i].memory_type, c.memservers[i].memory_type);
    }
}

// ---------------------------------------------------------------------------------------------
// OpenFAM's service files

TEST_F(ConfigTest, OpenFamServiceFilesBecomeACluster) {
    File("fam_client_interface_config.yaml",
         "memsrv_interface_type: rpc\nmetadata_interface_type: direct\n"
         "rpc_interface: 127.0.0.1:8787\nmemsrv_list:\n  - 0:127.0.0.1:8793\n"
         "metadata_list:\n  - 0:127.0.0.1:8788\n");
    File("fam_memoryserver_config.yaml",
         "provider: tcp\nlibfabric_port: 7500\ndelayed_free_threads: 0\nATL_threads: 0\n"
         "resource_release: enable\nfam_backup_path: /tmp/backup\nMemservers:\n"
         "  0:\n    memory_type: persistent\n    fam_path: /tmp/pmem\n");
    File("fam_metadata_config.yaml",
         "metadata_manager: radixtree\nmetadata_path: /tmp/meta\nenable_region_spanning: true\n"
         "region_span_size_per_memoryserver: 1073741824\ndataitem_interleave_size: 1048576\n");
    ClusterConfig c = fampool::LoadOpenFamClusterConfig(dir_.path());
    EXPECT_EQ(c.provider, "tcp");
    EXPECT_EQ(c.metadata_address, "127.0.0.1:8787");
    EXPECT_EQ(c.metadata_dir, "/tmp/meta");
    EXPECT_EQ(c.archive_dir, "/tmp/backup");
    EXPECT_EQ(c.delayed_free_threads, 0);
    EXPECT_EQ(c.span_size, 1073741824u);
    EXPECT_EQ(c.interleave_size, 1048576u);
    ASSERT_EQ(c.memservers.size(), 1u);
    EXPECT_EQ(c.memservers[0].rpc_address, "127.0.0.1:8793") << "from memsrv_list";
    EXPECT_EQ(c.memservers[0].fabric_port, "7500") << "the file's default port";
    EXPECT_EQ(c.memservers[0].memory_type, "persistent");
    EXPECT_EQ(fampool::LoadClusterConfig(dir_.path()).metadata_dir, "/tmp/meta")
        << "a directory given as the cluster file";
}

TEST_F(ConfigTest, OpenFamServiceFilesRefuseWhatFampoolDoesNotDo) {
    File("fam_memoryserver_config.yaml",
         "Memservers:\n  0: {memory_type: volatile, fam_path: /a, rpc_interface: h:1, "
         "libfabric_port: 2}\nATL_threads: 2\n");
    EXPECT_FAM_ERROR(fampool::LoadOpenFamClusterConfig(dir_.path()), openfam::FAM_ERR_INVALID,
                     "ATL_threads");
    File("fam_memoryserver_config.yaml",
         "Memservers:\n  0: {fam_path: /a, rpc_interface: h:1, libfabric_port: 2}\n");
    EXPECT_FAM_ERROR(fampool::LoadOpenFamClusterConfig(dir_.path()), openfam::FAM_ERR_INVALID,
                     "has no memory_type");
    File("fam_memoryserver_config.yaml",
         "Memservers:\n  0: {memory_type: volatile, fam_path: /a, rpc_interface: h:1, "
         "libfabric_port: 2}\n");
    File("fam_client_interface_config.yaml", "memsrv_list:\n  - 0:h:9\n");
    EXPECT_FAM_ERROR(fampool::LoadOpenFamClusterConfig(dir_.path()), openfam::FAM_ERR_INVALID,
                     "memsrv_list gives memory server 0 at h:9");
}

TEST_F(ConfigTest, DirectoryWithoutTheMemoryServerFileIsNamed) {
    EXPECT_FAM_ERROR(fampool::LoadOpenFamClusterConfig(dir_.path()), openfam::FAM_ERR_INVALID,
                     "fam_memoryserver_config.yaml");
}

// ---------------------------------------------------------------------------------------------
// Damaged files (each found by tests/fuzz/config_fuzz): refused with FAM_ERR_INVALID naming the
// file, never with yaml-cpp's own exception.

TEST_F(ConfigTest, AConfigurationFileThatIsNotAMapIsRefusedNamingIt) {
    Set("FAMPOOL_CONFIG", File("scalar.yaml", "just a line\n"));
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "scalar.yaml");
    Set("FAMPOOL_CONFIG", File("list.yaml", "- a\n- b\n"));
    EXPECT_FAM_ERROR(fampool::LoadConfig(nullptr), openfam::FAM_ERR_INVALID, "list.yaml");
}

TEST_F(ConfigTest, AValueOfTheWrongShapeDeepInAClusterFileIsRefusedNamingTheFile) {
    // A memory server id that is itself a map: yaml-cpp's "bad conversion" before.
    std::string dir = dir_.path() + "/openfam";
    std::filesystem::create_directories(dir);
    Write(dir + "/fam_client_interface_config.yaml", "rpc_interface: 127.0.0.1:7000\n");
    Write(dir + "/fam_memoryserver_config.yaml",
          "Memservers:\n  ? {a: 1}\n  : {memory_type: volatile, fam_path: /tmp/x, "
          "rpc_interface: 127.0.0.1:7001, libfabric_port: 7100}\n");
    Write(dir + "/fam_metadata_config.yaml", "metadata_path: /tmp/y\n");
    EXPECT_FAM_ERROR(fampool::LoadClusterConfig(dir), openfam::FAM_ERR_INVALID, dir.c_str());
}

// docs/configuration.md lists every key the code accepts: each top-level key of a
// configuration or cluster file, and each key of a memory server's entry, in backquotes.
TEST(ConfigDocs, ConfigurationReferenceListsEveryKeyOfTheKeyTables) {
    std::string path = std::string(FAMPOOL_TEST_SUPPORT_DIR) + "/../../docs/configuration.md";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t checked = 0;
    for (const auto *table : {&fampool::ConfigKeyTable(), &fampool::MemoryServerKeyTable()}) {
        for (const std::string &key : *table) {
            EXPECT_NE(doc.find("`" + key + "`"), std::string::npos)
                << "docs/configuration.md does not list the key " << key;
            ++checked;
        }
    }
    EXPECT_GT(checked, 70u);  // the tables are what they are, not empty
}

}  // namespace
}  // namespace fampool_test
