// A fampool cluster for one test: fampool-server processes on loopback ports of their own
// (metadata service + memory server 0 in one process, the other memory servers alone), a
// cluster file under the test's data directory, stopped by PID when the test ends.
//
// FamTest starts one when FAMPOOL_TEST_CLUSTER is set to "SERVERS[:INTERLEAVE[:PROVIDER]]",
// e.g. "1", "3:4096", "3:4096:shm": the same API tests then run on the memory-server model.
// With FAMPOOL_TEST_CLUSTER_SHARED=1 too, every test of the program uses one cluster, started
// by the first test and emptied (TestCluster::Clean) after each: the way CTest runs the API
// suites on clusters, since starting servers costs more than most tests.
//
// A cluster whose keys say authentication=munge (and name no munge_socket) gets a munged of its
// own (test_munged.h), e.g. FAMPOOL_TEST_CLUSTER="1:0:tcp:authentication=munge".
#ifndef FAMPOOL_TESTS_SUPPORT_TEST_CLUSTER_H_
#define FAMPOOL_TESTS_SUPPORT_TEST_CLUSTER_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

class TestMunged;

struct TestClusterSpec {
    int servers = 1;
    uint64_t interleave = 0;
    std::string provider = "tcp";
    // More keys of the cluster file, as "key=value,key=value" (placement, region_span, ...);
    // "serverN.key=value" goes to memory server N (serverN.spare=true, serverN.failure_domain=a).
    std::string keys;
    // Shards of the metadata service (the key metadata_shards=N): shard 0 runs beside memory
    // server 0, each other shard in a process of its own.
    int shards = 1;
    // Parses FAMPOOL_TEST_CLUSTER ("servers:interleave:provider:keys", later fields optional);
    // false when it is not set.
    static bool FromEnvironment(TestClusterSpec *spec);
    // Whether FAMPOOL_TEST_CLUSTER_SHARED asks for one cluster for all the program's tests.
    static bool Shared();
};

class TestCluster {
  public:
    // Writes DIR/cluster.yaml and starts the servers; waits (bounded) until the metadata
    // service sees every memory server. Throws std::runtime_error with the logs on failure.
    TestCluster(const TestClusterSpec &spec, const std::string &dir,
                const std::string &archive_dir);
    ~TestCluster();  // SIGTERM, then SIGKILL after 5 s, by PID
    TestCluster(const TestCluster &) = delete;
    TestCluster &operator=(const TestCluster &) = delete;

    const std::string &config_path() const { return config_path_; }
    const std::vector<pid_t> &pids() const { return pids_; }
    int servers() const { return servers_; }
    // Kills one server process (index 0 holds the metadata service, or its shard 0, and
    // memory server 0; indices 1 to servers()-1 the other memory servers; then metadata shards
    // 1, 2, ...).
    void Kill(size_t index, int signal);
    // Stops one server process with SIGSTOP (alive, answering nothing) and lets it go on with
    // SIGCONT.
    void Pause(size_t index) { kill(pids_.at(index), SIGSTOP); }
    void Resume(size_t index) { kill(pids_.at(index), SIGCONT); }
    // Starts a killed server again with the same arguments.
    void Restart(size_t index);
    // Waits (at most 30 s) until the metadata service sees every memory server.
    void WaitReady();
    // Whether every server process still runs.
    bool Alive();
    // Back to an empty cluster: destroys every region (as its owner) and removes every backup
    // from the archive directory. For a cluster shared by the tests of one program.
    void Clean();
    const std::string &dir() const { return dir_; }
    // Every server's log, each under its path.
    std::string Logs() const;
    const std::string &archive_dir() const { return archive_dir_; }
    // Memory server i's gRPC address.
    const std::string &rpc_address(size_t i) const { return rpc_addresses_.at(i); }
    // The socket of the cluster's own munged; empty when it does not authenticate with one.
    std::string munge_socket() const;

  private:
    // A chosen port turned out to be taken (a server could not bind it, or another test's
    // cluster answers there): the constructor starts again on other ports.
    struct PortClash : std::runtime_error {
        using std::runtime_error::runtime_error;
    };
    void Start(const TestClusterSpec &spec, const std::string &dir, const std::string &archive_dir);
    void StopServers();
    // Destroys every region of the metadata shard at `address`, as its owner.
    void CleanShard(const std::string &address);
    std::string MetadataAddress() const;
    // Every metadata shard's address, shard 0 first.
    std::vector<std::string> ShardAddresses() const;
    pid_t Spawn(const std::vector<std::string> &args, const std::string &log);

    int servers_ = 0;
    std::string dir_, config_path_, archive_dir_;
    std::vector<std::vector<std::string>> commands_;
    std::vector<std::string> logs_;
    std::vector<pid_t> pids_;
    std::vector<std::string> rpc_addresses_;  // memory server i's gRPC address
    std::unique_ptr<TestMunged> munged_;      // authentication=munge without munge_socket
};

// A loopback port nobody listens on now (the kernel's choice for an ephemeral bind).
int FreePort();

// True when the test runs on the embedded model (no FAMPOOL_TEST_CLUSTER).
bool EmbeddedModel();

#endif  // FAMPOOL_TESTS_SUPPORT_TEST_CLUSTER_H_
