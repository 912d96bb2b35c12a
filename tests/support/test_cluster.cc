#include "test_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/cluster_config.h"
#include "meta/client/metadata_client.h"
#include "rpc/convert.h"
#include "test_munged.h"

namespace {

// A socket bound to a free loopback port; *port receives the port. The port is drawn at random
// below the kernel's ephemeral range (32768 and up here): between this socket's close and the
// server's bind, a port of that range can be taken by any outgoing connection of a test running
// alongside (a CI run once gave a test's metadata address to another cluster's memory server).
int BindFreePort(int *port) {
    static std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> pick(20000, 32000);
    for (int attempt = 0;; ++attempt) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = attempt < 100 ? htons(static_cast<uint16_t>(pick(random))) : 0;
        if (bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0) {
            socklen_t length = sizeof address;
            getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
            *port = ntohs(address.sin_port);
            return fd;
        }
        close(fd);
    }
}

}  // namespace

int FreePort() {
    int port = 0;
    close(BindFreePort(&port));
    return port;
}

namespace {

// `count` distinct loopback ports nobody listens on now: all are held until every one is
// chosen, so that none is handed out twice (FreePort called repeatedly may repeat itself).
std::vector<int> FreePorts(int count) {
    std::vector<int> fds, ports;
    for (int i = 0; i < count; ++i) {
        int port = 0;
        fds.push_back(BindFreePort(&port));
        ports.push_back(port);
    }
    for (int fd : fds) close(fd);
    return ports;
}

std::string ServerBinary() {
    if (const char *path = std::getenv("FAMPOOL_TEST_SERVER")) return path;
    return FAMPOOL_TEST_SERVER_BINARY;
}

std::string ReadFile(const std::string &path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

bool TestClusterSpec::FromEnvironment(TestClusterSpec *spec) {
    const char *text = std::getenv("FAMPOOL_TEST_CLUSTER");
    if (!text || !*text) return false;
    std::stringstream in(text);
    std::string field;
    if (std::getline(in, field, ':')) spec->servers = std::stoi(field);
    if (std::getline(in, field, ':')) spec->interleave = std::stoull(field);
    if (std::getline(in, field, ':')) spec->provider = field;
    if (std::getline(in, field, ':')) spec->keys = field;
    // metadata_shards=N is the spec's, not a key of the file (where it is a list).
    std::stringstream keys(spec->keys);
    std::string kept;
    for (std::string pair; std::getline(keys, pair, ',');) {
        if (pair.rfind("metadata_shards=", 0) == 0) {
            spec->shards = std::stoi(pair.substr(16));
        } else {
            kept += (kept.empty() ? "" : ",") + pair;
        }
    }
    spec->keys = kept;
    return true;
}

bool TestClusterSpec::Shared() {
    const char *text = std::getenv("FAMPOOL_TEST_CLUSTER_SHARED");
    return text && std::string(text) == "1";
}

bool EmbeddedModel() {
    TestClusterSpec spec;
    return !TestClusterSpec::FromEnvironment(&spec);
}

TestCluster::TestCluster(const TestClusterSpec &spec, const std::string &dir,
                         const std::string &archive_dir)
    : dir_(dir), config_path_(dir + "/cluster.yaml"), archive_dir_(archive_dir) {
    // Ports are free when chosen, but a test running alongside may take one before our servers
    // bind it (or have chosen the same): then a server exits, or, worse, the cluster found at
    // our addresses is the other test's. Start again on other ports, a few times.
    constexpr int kAttempts = 3;
    for (int attempt = 1;; ++attempt) {
        try {
            Start(spec, dir, archive_dir);
            return;
        } catch (const PortClash &clash) {
            StopServers();
            if (attempt == kAttempts) throw std::runtime_error(clash.what());
        }
    }
}

void TestCluster::Start(const TestClusterSpec &spec, const std::string &dir,
                        const std::string &archive_dir) {
    commands_.clear();
    logs_.clear();
    pids_.clear();
    rpc_addresses_.clear();
    std::vector<int> ports = FreePorts(spec.shards + 2 * spec.servers);
    size_t next_port = 0;
    std::vector<std::string> shards;
    for (int k = 0; k < spec.shards; ++k) {
        shards.push_back("127.0.0.1:" + std::to_string(ports[next_port++]));
    }
    std::ofstream config(config_path_);
    config << "openfam_model: memory_server\n"
           << "provider: " << spec.provider << "\n"
           << "metadata_address: " << shards[0] << "\n"
           << "metadata_dir: " << dir << "/cluster-meta\n"
           << "archive_dir: " << archive_dir << "\n"
           << "dataitem_interleave_size: " << spec.interleave << "\n"
           << "rpc_timeout_ms: 10000\n"
           << "fabric_timeout_ms: 5000\n";
    if (spec.shards > 1) {
        config << "metadata_shards:\n";
        for (const std::string &shard : shards) config << "  - " << shard << "\n";
    }
    if (spec.keys.find("authentication=munge") != std::string::npos &&
        spec.keys.find("munge_socket=") == std::string::npos) {
        if (!munged_) munged_ = std::make_unique<TestMunged>();
        config << "munge_socket: " << munged_->socket() << "\n";
    }
    // "serverN.key=value" goes to memory server N's entry, other keys to the top level.
    std::map<int, std::string> server_keys;
    std::stringstream keys(spec.keys);
    for (std::string pair; std::getline(keys, pair, ',');) {
        size_t equals = pair.find('=');
        if (equals == std::string::npos) continue;
        std::string key = pair.substr(0, equals), value = pair.substr(equals + 1);
        size_t dot = key.find('.');
        if (key.rfind("server", 0) == 0 && dot != std::string::npos) {
            server_keys[std::stoi(key.substr(6, dot - 6))] +=
                "    " + key.substr(dot + 1) + ": " + value + "\n";
            continue;
        }
        config << key << ": " << value << "\n";
    }
    config << "memservers:\n";
    for (int i = 0; i < spec.servers; ++i) {
        int rpc_port = ports[next_port++];
        int fabric_port = ports[next_port++];
        rpc_addresses_.push_back("127.0.0.1:" + std::to_string(rpc_port));
        config << "  - id: " << i << "\n"
               << "    rpc_interface: " << rpc_addresses_.back() << "\n"
               << "    libfabric_port: \"" << fabric_port << "\"\n"
               << "    fam_path: " << dir << "/heaps" << i << "\n"
               << "    shm_path: " << dir << "/shm" << i << "\n"
               << server_keys[i];
    }
    config.close();
    for (int i = spec.servers - 1; i >= 0; --i) {
        std::vector<std::string> args = {
            ServerBinary(), "--config",       config_path_, "--role", i == 0 ? "all" : "memory",
            "--id",         std::to_string(i)};
        commands_.insert(commands_.begin(), args);
        logs_.insert(logs_.begin(), dir + "/server" + std::to_string(i) + ".log");
    }
    for (int k = 1; k < spec.shards; ++k) {
        commands_.push_back({ServerBinary(), "--config", config_path_, "--role", "metadata",
                             "--shard", std::to_string(k)});
        logs_.push_back(dir + "/shard" + std::to_string(k) + ".log");
    }
    // Memory servers before the metadata service, which finds them at its start.
    for (size_t i = spec.servers; i-- > 0;)
        pids_.insert(pids_.begin(), Spawn(commands_[i], logs_[i]));
    for (size_t i = spec.servers; i < commands_.size(); ++i)
        pids_.push_back(Spawn(commands_[i], logs_[i]));
    servers_ = spec.servers;
    WaitReady();
}

TestCluster::~TestCluster() { StopServers(); }

std::string TestCluster::munge_socket() const { return munged_ ? munged_->socket() : ""; }

void TestCluster::StopServers() {
    for (pid_t pid : pids_) {
        if (pid > 0) kill(pid, SIGTERM);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (pid_t &pid : pids_) {
        while (pid > 0) {
            if (waitpid(pid, nullptr, WNOHANG) == pid) break;
            if (std::chrono::steady_clock::now() > deadline) {
                kill(pid, SIGKILL);
                waitpid(pid, nullptr, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        pid = 0;
    }
}

pid_t TestCluster::Spawn(const std::vector<std::string> &args, const std::string &log) {
    pid_t pid = fork();
    if (pid == 0) {
        // A test that dies (or is killed by ctest) takes its servers with it, even one stuck
        // in a provider and deaf to SIGTERM.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(out, 1);
        dup2(out, 2);
        int in = open("/dev/null", O_RDONLY);
        dup2(in, 0);
        std::vector<char *> argv;
        for (const std::string &arg : args) argv.push_back(const_cast<char *>(arg.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

std::vector<std::string> TestCluster::ShardAddresses() const {
    return fampool::MetadataShards(fampool::LoadClusterConfig(config_path_));
}

std::string TestCluster::MetadataAddress() const {
    std::ifstream config(config_path_);
    std::string line;
    while (std::getline(config, line)) {
        if (line.rfind("metadata_address: ", 0) == 0) return line.substr(18);
    }
    return "";
}

void TestCluster::WaitReady() {
    const int servers = servers_;
    std::vector<std::string> shards = ShardAddresses();
    size_t ready_shards = 0;  // shards that see every memory server, in order
    // Throws when one of our servers has exited: PortClash when it could not bind its port.
    auto check_exits = [&] {
        for (size_t i = 0; i < pids_.size(); ++i) {
            int status;
            if (pids_[i] <= 0 || waitpid(pids_[i], &status, WNOHANG) != pids_[i]) continue;
            pids_[i] = 0;
            std::string log = ReadFile(logs_[i]);
            std::string why =
                "fampool-server " + std::to_string(i) + " exited during start-up:\n" + log;
            if (log.find("cannot listen") != std::string::npos ||
                log.find("in use") != std::string::npos) {
                throw PortClash(why);
            }
            throw std::runtime_error(why);
        }
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string last_error;
    while (std::chrono::steady_clock::now() < deadline) {
        check_exits();
        try {
            // A new channel each time: a refused first attempt must not leave us in backoff.
            const std::string &address = shards[ready_shards];
            fampool::MetadataClient client(address, std::chrono::milliseconds(1000));
            if (munged_) client.UseMunge(munged_->socket());  // status needs a session too
            fampool::rpc::ClusterStatus status = client.Status();
            int reachable = 0;
            for (const auto &server : status.servers()) reachable += server.reachable();
            if (reachable == servers) {
                // Ours, not a cluster another test started on a port we also chose.
                bool ours = status.servers_size() == static_cast<int>(rpc_addresses_.size());
                for (int i = 0; ours && i < status.servers_size(); ++i) {
                    ours = status.servers(i).address() == rpc_addresses_[i];
                }
                if (!ours) throw PortClash("another test's cluster answers at " + address);
                check_exits();
                if (++ready_shards == shards.size()) return;
                continue;
            }
            last_error = std::to_string(reachable) + " of " + std::to_string(servers) +
                         " memory servers reachable";
        } catch (const openfam::Fam_Exception &e) {
            last_error = e.fam_error_msg();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("test cluster not ready after 30 s (" + last_error + ")\n" + Logs());
}

std::string TestCluster::Logs() const {
    std::string logs;
    for (const std::string &log : logs_) logs += log + ":\n" + ReadFile(log);
    return logs;
}

bool TestCluster::Alive() {
    for (pid_t &pid : pids_) {
        if (pid <= 0) return false;
        if (waitpid(pid, nullptr, WNOHANG) == pid) {
            pid = 0;
            return false;
        }
    }
    return true;
}

void TestCluster::Clean() {
    for (const std::string &shard : ShardAddresses()) CleanShard(shard);
    std::error_code ignored;
    for (const auto &entry : std::filesystem::directory_iterator(archive_dir_, ignored)) {
        std::filesystem::remove_all(entry.path(), ignored);
    }
}

void TestCluster::CleanShard(const std::string &address) {
    fampool::MetadataClient client(address, std::chrono::milliseconds(10000));
    // As the cluster user (this process), who sees every region.
    if (munged_) client.UseMunge(munged_->socket());
    fampool::rpc::ClusterStatus status = client.Status();
    if (!munged_) {
        for (const auto &usage : status.regions()) {
            const auto &region = usage.region();
            client.DestroyRegion(region.id(), fampool::Caller{region.uid(), region.gid()});
        }
    } else {
        // Each region as its owner, whom munged vouches for (the munge program run as that
        // user makes the credential).
        auto stub = fampool::rpc::Metadata::NewStub(fampool::OpenChannel(address));
        for (const auto &usage : status.regions()) {
            const auto &region = usage.region();
            fampool::rpc::Credential credential;
            credential.set_munge(CredentialOf(region.uid(), region.gid(), munged_->socket(),
                                              fampool::kMetadataAudience));
            fampool::rpc::Session session;
            auto context = fampool::CallContext(std::chrono::milliseconds(10000));
            fampool::CheckStatus(stub->Authenticate(context.get(), credential, &session),
                                 "Metadata.Authenticate", address);
            fampool::rpc::RegionRequest request;
            request.mutable_caller()->set_token(session.token());
            request.set_region_id(region.id());
            fampool::rpc::Empty reply;
            context = fampool::CallContext(std::chrono::milliseconds(10000));
            fampool::CheckStatus(stub->DestroyRegion(context.get(), request, &reply),
                                 "Metadata.DestroyRegion", address);
        }
    }
}

void TestCluster::Kill(size_t index, int signal) {
    if (pids_.at(index) <= 0) return;
    kill(pids_[index], signal);
    waitpid(pids_[index], nullptr, 0);
    pids_[index] = 0;
}

void TestCluster::Restart(size_t index) {
    if (pids_.at(index) > 0) return;
    pids_[index] = Spawn(commands_[index], logs_[index]);
}
