// `fampool up` and `fampool down`: a cluster of fampool-server processes on this host, kept in a
// run directory (cluster.yaml, logs/, pids/).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "cli.h"
#include "common/error.h"
#include "common/shards.h"
#include "emulate.h"
#include "meta/client/metadata_client.h"
#include "process.h"
#include "rpc/munge.h"

namespace fampool::cli {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t interrupted = 0;
void OnInterrupt(int) { interrupted = 1; }

// The name `up` and `down` give shard `shard` of `shards` (pid file, log, tables).
std::string ShardName(size_t shard, size_t shards) {
    return shards == 1 ? std::string("metadata") : fmt::format("metadata{}", shard);
}

// fampool-server beside this program, then in ../bin, then on PATH.
std::string ServerProgram() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec) {
        candidates.push_back(self.parent_path() / "fampool-server");
        candidates.push_back(self.parent_path().parent_path() / "bin" / "fampool-server");
    }
    const char *path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (!dir.empty()) candidates.push_back(fs::path(dir) / "fampool-server");
    }
    for (const fs::path &candidate : candidates) {
        if (access(candidate.c_str(), X_OK) == 0) return fs::absolute(candidate).string();
    }
    Die(1, "fampool up: cannot find fampool-server next to {}, in ../bin or on PATH",
        ec ? std::string("fampool") : self.string());
}

// The PIDs of the run directory that still run a fampool-server; stale pid files go.
std::vector<PidFile> LiveServers(const std::string &dir) {
    std::vector<PidFile> live;
    for (const PidFile &file : ReadPidFiles(dir)) {
        if (ProcessAlive(file.pid) && IsClusterProcess(file)) {
            live.push_back(file);
        } else {
            std::error_code ec;
            fs::remove(file.path, ec);
        }
    }
    return live;
}

// Every port the cluster will listen on must be free; a taken one is named with its holder.
void CheckPorts(const ClusterConfig &cluster, const std::string &dir, bool generated) {
    std::map<int, std::string> ports;  // port -> what listens there
    auto want = [&](int port, const std::string &what, const std::string &key) {
        if (port <= 0) {
            Die(1, "fampool up: {} has no port in {} ({} must be host:port or a port)", what,
                cluster.path, key);
        }
        auto [at, fresh] = ports.emplace(port, what);
        if (!fresh) {
            Die(1, "fampool up: port {} is given twice in {}: {} and {}", port, cluster.path,
                at->second, what);
        }
    };
    const std::vector<std::string> shards = MetadataShards(cluster);
    for (size_t k = 0; k < shards.size(); ++k) {
        want(PortOf(shards[k]),
             shards.size() == 1 ? std::string("the metadata service")
                                : fmt::format("metadata shard {}", k),
             shards.size() == 1 ? "metadata_address" : "metadata_shards");
    }
    for (const MemoryServerConfig &server : cluster.memservers) {
        want(PortOf(server.rpc_address), fmt::format("memory server {}", server.id),
             "rpc_interface");
        const std::string &fabric = server.fabric_port;
        bool digits =
            !fabric.empty() && fabric.find_first_not_of("0123456789") == std::string::npos;
        want(digits ? std::stoi(fabric) : 0, fmt::format("memory server {} (fabric)", server.id),
             "libfabric_port");
    }
    const std::string down_hint = fmt::format("fampool down --run-dir {}", ShellQuote(dir));
    for (const auto &[port, what] : ports) {
        int error = BindError(port);
        if (error == 0) continue;
        if (error != EADDRINUSE) {
            Die(1, "fampool up: cannot use port {} for {}: {}", port, what, std::strerror(error));
        }
        std::string holder;
        std::string advice = generated ? "stop it, or choose other ports with --base-port"
                                       : "stop it, or change the port in " + cluster.path;
        if (pid_t pid = PortHolder(port)) {
            std::vector<std::string> argv = CommandLineOf(pid);
            holder = fmt::format(" by pid {} ({})", pid, argv.empty() ? "?" : argv[0]);
            if (IsFampoolServer(pid)) {
                // Its cluster file names its run directory when `fampool up` started it.
                for (size_t i = 0; i + 1 < argv.size(); ++i) {
                    if (argv[i] == "--config" && argv[i + 1].ends_with("/cluster.yaml")) {
                        std::string other = fs::path(argv[i + 1]).parent_path().string();
                        advice = fmt::format(
                            "it is a fampool cluster: stop it with `fampool down "
                            "--run-dir {}`",
                            ShellQuote(other));
                    }
                }
            }
        } else if (!LiveServers(dir).empty()) {
            advice = fmt::format("a cluster of {} is running: stop it with `{}`", dir, down_hint);
        }
        Die(1, "fampool up: port {} ({}) is already in use{}; {}", port, what, holder, advice);
    }
}

struct Started {
    std::string name;  // memory0, metadata
    std::string address;
    std::string fabric_port;
    std::string log;
    std::string pid_file;
    pid_t pid = 0;
};

std::string FailureOf(const Started &server, const std::string &what) {
    return fmt::format("fampool up: {} (pid {}) {}; last lines of {}:\n{}", server.name, server.pid,
                       what, server.log, Tail(server.log, 20));
}

// Throws when a server has ended or the user interrupted.
void CheckStarted(const std::vector<Started> &servers) {
    if (interrupted) Die(130, "fampool up: interrupted");
    for (const Started &server : servers) {
        std::string ended = EndedChild(server.pid);
        if (!ended.empty()) throw CliError(1, FailureOf(server, "ended while starting: " + ended));
    }
}

void WaitListening(const std::vector<Started> &servers, const std::vector<Started> &waiting,
                   Clock::time_point deadline, double timeout_s) {
    for (const Started &server : waiting) {
        std::printf("fampool up: waiting for %s to listen on %s\n", server.name.c_str(),
                    server.address.c_str());
        std::fflush(stdout);
        while (!Accepts(server.address)) {
            CheckStarted(servers);
            if (Clock::now() >= deadline) {
                throw CliError(1, FailureOf(server, fmt::format("is not listening on {} after "
                                                                "{} s",
                                                                server.address, timeout_s)));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
}

// Until the munged `up` started makes credentials.
void WaitMunged(const std::vector<Started> &servers, const std::string &socket,
                Clock::time_point deadline, double timeout_s) {
    std::printf("fampool up: waiting for munged to answer on %s\n", socket.c_str());
    std::fflush(stdout);
    std::string why;
    while (!MungedAnswers(socket, &why)) {
        try {
            CheckStarted(servers);
        } catch (const CliError &e) {
            throw CliError(e.code(),
                           std::string(e.what()) +
                               "\n(munged refuses a key, socket or seed in a directory that "
                               "others may write, or below one: use a run directory whose "
                               "parents only you or root can write, a site's munged "
                               "(--munge-socket), or --authentication none)");
        }
        if (Clock::now() >= deadline) {
            throw CliError(1, FailureOf(servers.back(), fmt::format("does not answer after {} s "
                                                                    "({})",
                                                                    timeout_s, why)));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// Until the metadata service reports every memory server reachable.
rpc::ClusterStatus WaitReachable(const std::vector<Started> &servers, const Started &metadata,
                                 const ClusterConfig &cluster, Clock::time_point start,
                                 Clock::time_point deadline, double timeout_s) {
    MetadataClient client(metadata.address, std::chrono::milliseconds(2000), ClientTls(cluster));
    // Status is asked as the user munged vouches for, as every call.
    if (cluster.authentication == "munge") client.UseMunge(cluster.munge_socket);
    std::string last_state;
    auto last_print = start;
    while (true) {
        CheckStarted(servers);
        std::string state;
        std::vector<std::string> missing;
        try {
            rpc::ClusterStatus status = client.Status();
            for (const rpc::ServerState &server : status.servers()) {
                if (!server.reachable()) missing.push_back(fmt::format("memory{}", server.id()));
            }
            if (missing.empty()) return status;
            state = fmt::format("{} of {} memory servers reachable (not yet: {})",
                                status.servers_size() - missing.size(), status.servers_size(),
                                fmt::join(missing, ", "));
        } catch (const Fam_Exception &e) {
            state = fmt::format("metadata service not answering yet ({})", e.fam_error_msg());
            missing = {"metadata"};
        }
        auto now = Clock::now();
        if (now >= deadline) {
            const Started *culprit = &metadata;
            for (const Started &server : servers) {
                if (server.name == missing.front()) culprit = &server;
            }
            throw CliError(1, FailureOf(*culprit, fmt::format("is not reachable after {} s: {}",
                                                              timeout_s, state)));
        }
        if (state != last_state || now - last_print >= std::chrono::seconds(5)) {
            auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
            std::printf("fampool up: waiting (%lld s of %g): %s\n", static_cast<long long>(waited),
                        timeout_s, state.c_str());
            std::fflush(stdout);
            last_state = state;
            last_print = now;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

// Undoes a failed start: the servers it started, their pid files, their volatile heaps.
void StopStarted(const std::vector<Started> &servers, const std::string &dir) {
    if (servers.empty()) return;
    std::vector<pid_t> pids;
    for (const Started &server : servers) pids.push_back(server.pid);
    Stopped stopped = StopProcesses(pids, 5.0);
    for (const Started &server : servers) {
        std::error_code ec;
        fs::remove(server.pid_file, ec);
    }
    std::fprintf(stderr, "fampool up: stopped the %zu server(s) it had started%s\n", servers.size(),
                 stopped.remaining.empty() ? "" : " (some refused: see ps)");
    if (stopped.remaining.empty()) {
        std::error_code ec;
        fs::remove_all(ShmBase(dir), ec);
    }
}

// The topology of `up --emulate`: its --topology file, or one made from the options.
std::optional<Topology> EmulatedTopology(const UpOptions &o) {
    if (!o.emulate) return std::nullopt;
    if (!o.config.empty()) {
        Die(1,
            "fampool up: --emulate writes the cluster file for its nodes' addresses; it "
            "cannot run a cluster file given with --config");
    }
    if (o.provider != "tcp" && o.provider != "sockets") {
        Die(1,
            "fampool up: --emulate needs a provider that goes through the network: tcp or "
            "sockets (--provider {} {})",
            o.provider,
            o.provider == "shm" ? "moves bytes through shared memory, past the emulated links"
                                : "needs its own hardware");
    }
    CheckCanEmulate();
    if (!o.topology.empty()) return LoadTopology(fs::absolute(o.topology).string());
    Topology topology;
    topology.metadata_shards = o.metadata_shards;
    topology.clients = o.clients;
    Link server_link{ParseRate(o.link_rate, "fampool up: --link-rate"), 0};
    topology.client_link.rate_bps = ParseRate(o.client_link_rate, "fampool up: --client-link-rate");
    topology.metadata_link = topology.client_link;
    TopologyServer server;
    server.link = server_link;
    topology.memservers.assign(o.memservers, server);
    if (o.clients < 1 || o.clients > 200) {
        Die(1, "fampool up: --clients {} is out of range (1 to 200)", o.clients);
    }
    return topology;
}

// Each node of the emulated fabric: its namespace, address and link.
void PrintEmulation(const Emulation &emulation, const std::string &dir) {
    std::printf("\nemulated fabric (network namespaces joined by bridge br0 in %s; MTU %u):\n",
                emulation.switch_netns.c_str(), emulation.mtu);
    Table table({"NODE", "NETNS", "ADDRESS", "LINK RATE", "DELAY"});
    for (const EmulatedNode &node : emulation.nodes) {
        table.Add({node.name, node.netns, node.address, RateText(node.link.rate_bps),
                   node.link.delay_us ? fmt::format("{} us", node.link.delay_us) : "-"});
    }
    table.Print();
    std::printf(
        "the cluster is reached only inside these namespaces: run PEs on the client "
        "nodes with `fampool run --run-dir %s -n N PROGRAM`, one command with "
        "`fampool exec --run-dir %s --node client0 -- COMMAND`\n",
        ShellQuote(dir).c_str(), ShellQuote(dir).c_str());
}

}  // namespace

int Up(const UpOptions &options) {
    const std::string dir = RunDirOf(options.run_dir);
    const std::string cluster_file = dir + "/cluster.yaml";
    std::optional<Topology> topology = EmulatedTopology(options);
    // An `up` that ends without a cluster leaves no directory of its own in /dev/shm: removed
    // if this `up` made it and it is still empty (servers it started put their heaps in it).
    const bool shm_was_there = fs::exists(ShmBase(dir));
    PrepareRunDir(dir);
    struct ShmGuard {
        std::string path;
        bool remove;
        ~ShmGuard() {
            std::error_code ec;
            if (remove) fs::remove(path, ec);  // fails, harmlessly, when not empty
        }
    } shm_guard{ShmBase(dir), !shm_was_there};

    // The cluster file: the user's (checked where it is), or one written from the options
    // (checked as a draft beside its final place). Either way it ends up as DIR/cluster.yaml.
    ClusterConfig cluster;
    std::string text;
    if (!options.config.empty()) {
        std::string source = fs::absolute(options.config).string();
        cluster = LoadCluster("up", source);
        // A directory holds OpenFAM's service files: the run directory gets them as one file in
        // fampool's format.
        text = fs::is_directory(source) ? ClusterFileText(cluster) : ReadFile(source);
    } else {
        text = GeneratedClusterFile(options, dir, topology ? &*topology : nullptr);
        std::string draft = cluster_file + ".draft";
        WriteFile(draft, text);
        try {
            cluster = LoadCluster("up", draft);
        } catch (...) {
            fs::remove(draft);
            throw;
        }
        fs::remove(draft);
        if (options.tls) {
            text += AddThrowawayTls(dir, &cluster, options.tls_client_certificates == "require");
        }
    }
    if (cluster.memservers.empty()) {
        Die(1, "fampool up: {} lists no memory servers (memservers:)", cluster.path);
    }
    // On an emulated fabric the ports are the namespaces' own, all free.
    if (!topology) CheckPorts(cluster, dir, options.config.empty());
    if (std::vector<PidFile> live = LiveServers(dir); !live.empty()) {
        Die(1,
            "fampool up: a cluster of {} is already running ({} pid {}, ...); stop it with "
            "`fampool down --run-dir {}`",
            dir, live[0].name, live[0].pid, ShellQuote(dir));
    }
    std::optional<Emulation> emulation;
    // Whatever ends `up` without a running cluster takes the emulated fabric away again.
    struct EmulationGuard {
        std::optional<Emulation> &emulation;
        const std::string &dir;
        bool keep = false;
        ~EmulationGuard() {
            if (keep || !emulation) return;
            try {
                RemoveEmulation(*emulation, dir);
            } catch (const CliError &e) {
                std::fprintf(stderr, "%s\n", e.what());
            }
        }
    } guard{emulation, dir};
    if (topology) {
        emulation = CreateEmulation(*topology, dir, [](const std::string &step) {
            std::printf("fampool up: %s\n", step.c_str());
            std::fflush(stdout);
        });
    }
    std::error_code same_ec;
    if (options.config.empty() || !fs::equivalent(options.config, cluster_file, same_ec)) {
        WriteClusterFile(cluster_file, text);
    }
    const std::string server_program = ServerProgram();
    // `up` starts the munged of the run directory when the cluster file names its socket: a
    // file `up` writes does unless the user named a site's munged, and a file given with
    // --config may (the run directory's own cluster.yaml, to start the cluster again).
    const bool own_munged =
        cluster.authentication == "munge" && cluster.munge_socket == MungedFilesOf(dir).socket;

    if (emulation) EnterSwitch(*emulation, "up");  // where every node's address is reached

    interrupted = 0;
    struct sigaction action {
    }, old_int{}, old_term{};
    action.sa_handler = OnInterrupt;
    sigaction(SIGINT, &action, &old_int);
    sigaction(SIGTERM, &action, &old_term);

    std::vector<Started> servers;
    auto start = Clock::now();
    auto deadline =
        start + std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
    auto launch = [&](const std::string &name, const std::string &address,
                      const std::string &fabric_port, std::vector<std::string> role) {
        Started server{name, address, fabric_port, dir + "/logs/" + name + ".log",
                       dir + "/pids/" + name + ".pid"};
        std::vector<std::string> argv = {server_program, "--config", cluster_file};
        if (name == "munged") argv.clear();  // `role` is its whole command line
        argv.insert(argv.end(), role.begin(), role.end());
        // On an emulated fabric each server runs on its node (munged, reached by its socket
        // file, runs where `up` does).
        std::string netns;
        if (emulation && name != "munged") {
            netns = emulation->Node(name == "metadata" ? "metadata0" : name).netns;
        }
        server.pid = StartDetached(argv, server.log, netns);
        servers.push_back(server);
        WritePidFile(server.pid_file, server.pid);
        std::printf("fampool up: started %s (pid %d): %s\n", name.c_str(), server.pid,
                    fmt::format("{}", fmt::join(argv, " ")).c_str());
        std::fflush(stdout);
    };
    int code = 0;
    try {
        if (own_munged) {
            MungedFiles files = MungedFilesOf(dir);
            launch("munged", files.socket, "-", PrepareMunged(files));
            WaitMunged(servers, files.socket, deadline, options.timeout_s);
        } else if (cluster.authentication == "munge") {
            std::string why;
            if (!MungedAnswers(cluster.munge_socket, &why)) {
                Die(1, "fampool up: the cluster authenticates callers with MUNGE, but {}", why);
            }
        }
        for (const MemoryServerConfig &server : cluster.memservers) {
            launch(fmt::format("memory{}", server.id), server.rpc_address, server.fabric_port,
                   {"--role", "memory", "--id", std::to_string(server.id)});
        }
        std::vector<Started> memory(servers.begin() + (own_munged ? 1 : 0), servers.end());
        WaitListening(servers, memory, deadline, options.timeout_s);
        const std::vector<std::string> shards = MetadataShards(cluster);
        std::vector<Started> metadata;
        for (size_t k = 0; k < shards.size(); ++k) {
            launch(ShardName(k, shards.size()), shards[k], "-",
                   {"--role", "metadata", "--shard", std::to_string(k)});
            metadata.push_back(servers.back());
        }
        WaitListening(servers, metadata, deadline, options.timeout_s);
        rpc::ClusterStatus status;
        for (const Started &shard : metadata) {
            status = WaitReachable(servers, shard, cluster, start, deadline, options.timeout_s);
        }
        ReleaseBasePort();  // every port is bound now

        std::map<uint64_t, std::string> providers;
        for (const rpc::ServerState &server : status.servers()) {
            providers[server.id()] = server.provider();
        }
        double took = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf(
            "\nfampool up: cluster of %zu memory server(s) running from %s (provider %s), "
            "ready in %.1f s\n",
            cluster.memservers.size(), dir.c_str(), cluster.provider.c_str(), took);
        Table table({"SERVER", "ADDRESS", "FABRIC PORT", "PROVIDER", "PID", "LOG"});
        for (const Started &shard : metadata) {
            table.Add({shard.name, shard.address, "-", "-", std::to_string(shard.pid), shard.log});
        }
        for (const Started &server : servers) {
            if (!server.name.starts_with("memory")) continue;
            uint64_t id = std::stoull(server.name.substr(6));
            table.Add({server.name, server.address, server.fabric_port, providers[id],
                       std::to_string(server.pid), server.log});
        }
        if (own_munged) {
            table.Add({servers.front().name, servers.front().address, "-", "-",
                       std::to_string(servers.front().pid), servers.front().log});
        }
        table.Print();
        if (emulation) PrintEmulation(*emulation, dir);
        if (cluster.authentication == "munge") {
            std::printf("callers are authenticated with MUNGE (munged socket %s)\n",
                        MungeSocketName(cluster.munge_socket).c_str());
        }
        std::printf("stop it with: fampool down --run-dir %s\n", ShellQuote(dir).c_str());
        if (options.tls && options.tls_client_certificates == "require") {
            // The servers take only clients with a certificate of the run's CA: this user's.
            std::printf("export FAMPOOL_TLS_CLIENT_CERTIFICATE=%s FAMPOOL_TLS_CLIENT_KEY=%s\n",
                        ShellQuote(dir + "/tls/client.pem").c_str(),
                        ShellQuote(dir + "/tls/client.key").c_str());
        }
        std::printf("export FAMPOOL_CONFIG=%s\n", ShellQuote(cluster_file).c_str());
        guard.keep = true;
        shm_guard.remove = false;
    } catch (const CliError &e) {
        std::fprintf(stderr, "%s\n", e.what());
        StopStarted(servers, dir);
        code = e.code();
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return code;
}

}  // namespace fampool::cli
