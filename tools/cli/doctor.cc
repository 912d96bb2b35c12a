// `fampool doctor`: checks, from this node, what a run on a cluster needs, and says for each
// what is wrong and what to do. Exit status 0 only when every check passes.
#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <rdma/fabric.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli.h"
#include "common/cluster_config.h"
#include "common/config.h"
#include "common/network.h"
#include "rpc/convert.h"
#include "rpc/munge.h"
#include "rpc/version.h"

namespace fampool::cli {
namespace {

constexpr std::chrono::milliseconds kProbe{500};
// Free space below which volatile regions of any size soon fail on this node.
constexpr uint64_t kLeastShmBytes = uint64_t{256} << 20;
// What verbs needs pinned for a server's registrations and a client's buffers, at least.
constexpr uint64_t kLeastLockedBytes = uint64_t{64} << 20;
// A service that may hold fewer descriptors than this runs out with a few thousand clients'
// connections (each holds one or two per service).
constexpr uint64_t kLeastOpenFiles = 16384;
// Clocks further apart than this are named: logs and timings no longer line up, and MUNGE
// refuses credentials from a clock 5 minutes off (its default time to live).
constexpr double kMostClockOffsetS = 1.0;

struct Finding {
    bool ok;
    std::string what;  // what was checked and found
    std::string fix;   // when not ok: what to do
};

// The libfabric providers this node offers with FI_EP_RDM, RMA and atomics.
std::set<std::string> OfferedProviders() {
    std::set<std::string> names;
    fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA | FI_ATOMIC;
    fi_info *found = nullptr;
    if (fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &found) == 0) {
        for (fi_info *info = found; info; info = info->next) {
            std::string name = info->fabric_attr->prov_name;
            // "tcp;ofi_rxm": the core provider is the first name.
            names.insert(name.substr(0, name.find(';')));
        }
        fi_freeinfo(found);
    }
    fi_freeinfo(hints);
    return names;
}

std::string Joined(const std::set<std::string> &names) {
    std::string out;
    for (const std::string &name : names) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? "none" : out;
}

Finding CheckProvider(const ClusterConfig &config) {
    std::set<std::string> offered = OfferedProviders();
    if (offered.count(config.provider)) {
        return {
            true,
            fmt::format("provider {} is offered here (FI_EP_RDM, RMA, atomics)", config.provider),
            ""};
    }
    return {false,
            fmt::format("provider {} (the cluster file's) is not offered by this node's "
                        "libfabric with FI_EP_RDM, RMA and atomics; offered: {}",
                        config.provider, Joined(offered)),
            fmt::format("set `provider:` in {} to one of those (or install the provider's "
                        "library; `fi_info -l` lists what libfabric finds)",
                        config.path)};
}

Finding CheckListening(const std::string &who, const std::string &address,
                       const std::string &start) {
    if (PortRefuses(address, kProbe)) {
        return {false, fmt::format("{}: nothing listens at {}", who, address), start};
    }
    return {true, fmt::format("{} listens at {}", who, address), ""};
}

// A service's answer to the doctor: its fampool and its clock's offset from this node's (the
// reply's time against the middle of the call), or why it did not answer.
struct Answer {
    bool answered = false;
    std::string version, error;
    double offset_s = 0;
    uint64_t open_files = 0;  // its open-file limit; 0: not said (an older fampool)
};

template <typename ServiceStub, typename Request, typename Reply>
Answer Ask(const ClusterConfig &config, const std::string &address,
           grpc::Status (ServiceStub::*call)(grpc::ClientContext *, const Request &, Reply *)) {
    ServiceStub service(OpenChannel(address, ClientTls(config)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    Request request;
    Reply reply;
    int64_t before = UnixTimeMicros();
    grpc::Status status = (service.*call)(&context, request, &reply);
    int64_t after = UnixTimeMicros();
    Answer answer;
    if (!status.ok()) {
        answer.error = status.error_message();
        return answer;
    }
    answer.answered = true;
    answer.version = reply.version();
    answer.offset_s =
        reply.unix_time_us() ? (reply.unix_time_us() - (before + after) / 2) / 1e6 : 0;
    answer.open_files = reply.open_files();
    return answer;
}

// The service at `address` answers as fampool of this fampool's version, with a clock within
// kMostClockOffsetS of this node's. Appends its findings.
void CheckService(const std::string &who, const std::string &address, const Answer &answer,
                  std::vector<Finding> *findings) {
    if (!answer.answered) {
        findings->push_back(
            {false,
             fmt::format("{}: something listens at {} but does not answer as fampool ({})", who,
                         address, answer.error),
             fmt::format("another program holds the port (`ss -ltnp 'sport = :{}'` names it): "
                         "stop it, or give the service another port in the cluster file; a "
                         "fampool service that is starting answers within seconds",
                         address.substr(address.rfind(':') + 1))});
        return;
    }
    if (answer.version.empty() || answer.version != FampoolVersion()) {
        findings->push_back(
            {false,
             fmt::format("{} runs fampool {}, this node's is {}", who,
                         answer.version.empty()
                             ? std::string("an older fampool that does not name its version")
                             : answer.version,
                         FampoolVersion()),
             "install the same fampool on every node and restart the services: calls between "
             "different protocols fail in the middle of a run"});
    } else {
        findings->push_back(
            {true, fmt::format("{} runs this node's fampool, {}", who, answer.version), ""});
    }
    if (answer.open_files) {
        std::string files = answer.open_files == UINT64_MAX
                                ? fmt::format("{} may hold any number of descriptors", who)
                                : fmt::format("{} may hold {} descriptors", who, answer.open_files);
        if (answer.open_files >= kLeastOpenFiles) {
            findings->push_back({true, files, ""});
        } else {
            findings->push_back(
                {false,
                 fmt::format("{}, fewer than {}: connections beyond it are refused", files,
                             kLeastOpenFiles),
                 "raise the hard open-file limit of the service's user (LimitNOFILE= in its "
                 "systemd unit, nofile in /etc/security/limits.d/, or `ulimit -Hn` before "
                 "`fampool up`): the services raise their own soft limit to it"});
        }
    }
    std::string clock =
        fmt::format("{}'s clock is {:+.3f} s from this node's", who, answer.offset_s);
    if (std::fabs(answer.offset_s) <= kMostClockOffsetS) {
        findings->push_back({true, clock, ""});
    } else {
        findings->push_back({false, clock,
                             "synchronize the nodes' clocks (chrony or ntpd): MUNGE refuses "
                             "credentials 5 minutes off, and logs no longer line up"});
    }
}

// Whether `host` is an address of this node (it can be bound).
bool IsLocal(const std::string &host) {
    addrinfo hints{}, *found = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.c_str(), "0", &hints, &found) != 0) return false;
    bool local = false;
    for (addrinfo *a = found; a && !local; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        local = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(found);
    return local;
}

// The cluster's other ports on this node, each by whether its server runs (`up`: its gRPC
// port answers): a server that does not run must find them free (else `fampool up` fails on
// the one something holds: fabric ports, metrics endpoints); one that runs must answer on its
// metrics endpoint with fampool's metrics.
void CheckOtherPorts(const ClusterConfig &config, bool metadata_up,
                     const std::set<uint64_t> &servers_up, std::vector<Finding> *findings) {
    struct Port {
        std::string what, host;
        int port;
        bool metrics, up;
    };
    std::vector<Port> ports;
    const std::vector<std::string> shards = MetadataShards(config);
    for (size_t k = 0; k < shards.size() && config.metadata_metrics_port; ++k) {
        ports.push_back({fmt::format("metadata shard {}'s metrics endpoint", k), HostOf(shards[k]),
                         config.metadata_metrics_port + static_cast<int>(k), true, metadata_up});
    }
    for (const MemoryServerConfig &server : config.memservers) {
        std::string host = HostOf(server.rpc_address);
        bool up = servers_up.count(server.id) != 0;
        if (server.metrics_port) {
            ports.push_back({fmt::format("memory server {}'s metrics endpoint", server.id), host,
                             server.metrics_port, true, up});
        }
        std::string fabric_host = server.fabric_host.empty() ? host : server.fabric_host;
        if (!up && !server.fabric_port.empty() &&
            server.fabric_port.find_first_not_of("0123456789") == std::string::npos) {
            ports.push_back({fmt::format("memory server {}'s fabric port", server.id), fabric_host,
                             std::stoi(server.fabric_port), false, up});
        }
    }
    for (const Port &port : ports) {
        if (!IsLocal(port.host)) continue;  // another node's: its own doctor checks it
        std::string address = fmt::format("{}:{}", port.host, port.port);
        bool listens = !PortRefuses(address, kProbe);
        if (!port.up) {
            if (!listens) continue;
            findings->push_back(
                {false, fmt::format("{}: {} is held by another program", port.what, address),
                 fmt::format("`ss -ltnp 'sport = :{}'` names it: stop it, or choose other ports "
                             "(`fampool up --base-port auto`, or the cluster file)",
                             port.port)});
            continue;
        }
        if (!port.metrics) continue;
        httplib::Client client(port.host, port.port);
        client.set_connection_timeout(0, 500000);
        client.set_read_timeout(2, 0);
        httplib::Result got = client.Get("/metrics");
        if (got && got->status == 200 && got->body.find("fampool_") != std::string::npos) {
            findings->push_back({true, fmt::format("{} answers at {}", port.what, address), ""});
        } else {
            findings->push_back(
                {false,
                 fmt::format(
                     "{}: {} {}", port.what, address,
                     listens ? "answers, but not with fampool's metrics" : "does not answer"),
                 listens ? fmt::format("another program holds the port (`ss -ltnp 'sport = "
                                       ":{}'`): stop it, or set another port in {}",
                                       port.port, config.path)
                         : "the server runs without it: restart it with the cluster file "
                           "(an older fampool-server serves no metrics)"});
        }
    }
}

// What a program started here would read (its configuration's sources, by precedence:
// Fam_Options, then FAMPOOL_* variables, then the file), against the cluster checked.
void CheckProgramSettings(const ClusterConfig &cluster, std::vector<Finding> *findings) {
    Config program;
    try {
        program = LoadConfig(nullptr);
    } catch (const Fam_Exception &e) {
        findings->push_back({false,
                             fmt::format("a program started here cannot read its configuration: "
                                         "{}",
                                         e.fam_error_msg()),
                             "fix the file or variable it names (docs/configuration.md)"});
        return;
    }
    std::string overrides;
    for (const Config::Source &source : program.sources) {
        if (source.from == "default" || source.from.rfind("file key", 0) == 0) continue;
        overrides += fmt::format("{}{}={} ({})", overrides.empty() ? "" : ", ", source.setting,
                                 source.value, source.from);
    }
    std::string file =
        program.config_file.empty() ? std::string("no configuration file") : program.config_file;
    findings->push_back(
        {true,
         fmt::format("a program started here reads {}: model {}{}; set by the environment "
                     "over the file: {}",
                     file, program.model,
                     program.model == "memory_server"
                         ? ", metadata service " + program.metadata_address
                         : std::string(),
                     overrides.empty() ? "nothing" : overrides),
         ""});
    if (program.model != "memory_server") {
        findings->back().what += fmt::format(
            " (a program uses this cluster when started by `fampool run --config {}`, or with "
            "FAMPOOL_CONFIG={})",
            cluster.path, cluster.path);
        return;
    }
    if (program.metadata_address != cluster.metadata_address) {
        findings->push_back(
            {false,
             fmt::format("a program started here would call the metadata service at {}, not "
                         "this cluster's {}",
                         program.metadata_address, cluster.metadata_address),
             fmt::format("export FAMPOOL_CONFIG={} (or unset the variable that names the other "
                         "address)",
                         cluster.path)});
    }
    if (program.libfabric_provider_set && program.libfabric_provider != cluster.provider) {
        findings->push_back(
            {false,
             fmt::format("a program started here would ask for provider {}, and the cluster "
                         "serves over {}: fam_initialize refuses that",
                         program.libfabric_provider, cluster.provider),
             "unset FAMPOOL_PROVIDER (or the provider key of the program's file): a program "
             "that names none takes the cluster's"});
    }
}

Finding CheckMunge(const ClusterConfig &config) {
    std::string socket = config.munge_socket.empty() ? std::string("/run/munge/munge.socket.2")
                                                     : config.munge_socket;
    try {
        MungeEncode(socket, "fampool doctor", "munge_encode");
        return {true, fmt::format("munged answers on {}", socket), ""};
    } catch (const Fam_Exception &e) {
        return {false,
                fmt::format("authentication: munge, and munged does not make credentials on "
                            "{}: {}",
                            socket, e.fam_error_msg()),
                "start it: `fampool up` starts the run directory's own; a site's munged with "
                "`systemctl start munge` (the same key in /etc/munge/munge.key on every node)"};
    }
}

Finding CheckShm(const ClusterConfig &config) {
    std::string dir = "/dev/shm";
    for (const MemoryServerConfig &server : config.memservers) {
        if (!server.shm_dir.empty()) dir = server.shm_dir;
    }
    // The first directory above it that exists (a server makes its own below).
    std::string at = dir;
    struct statvfs fs {};
    while (statvfs(at.c_str(), &fs) != 0 && at.size() > 1) {
        at = at.substr(0, at.find_last_of('/') > 0 ? at.find_last_of('/') : 1);
    }
    uint64_t free_bytes = uint64_t{fs.f_bavail} * fs.f_frsize;
    uint64_t size = uint64_t{fs.f_blocks} * fs.f_frsize;
    std::string found =
        fmt::format("{} (volatile heaps): {} MiB free of {} MiB", at, free_bytes >> 20, size >> 20);
    if (free_bytes >= kLeastShmBytes) return {true, found, ""};
    return {false, found + fmt::format(", less than {} MiB", kLeastShmBytes >> 20),
            "give it room: `mount -o remount,size=8G /dev/shm` (a container: `--shm-size`), or "
            "set the memory servers' `shm_path` to a larger tmpfs"};
}

Finding CheckLockedMemory(const ClusterConfig &config) {
    rlimit limit{};
    getrlimit(RLIMIT_MEMLOCK, &limit);
    bool unlimited = limit.rlim_cur == RLIM_INFINITY;
    std::string found =
        unlimited ? std::string("locked-memory limit: unlimited")
                  : fmt::format("locked-memory limit: {} KiB", uint64_t{limit.rlim_cur} >> 10);
    if (config.provider != "verbs" || unlimited || limit.rlim_cur >= kLeastLockedBytes) {
        return {true, found + (config.provider == "verbs" ? "" : " (only verbs pins memory)"), ""};
    }
    return {false, found + ": verbs pins the memory it registers",
            "raise it: `ulimit -l unlimited`, LimitMEMLOCK=infinity in a systemd unit, or "
            "/etc/security/limits.d/"};
}

Finding HugePages() {
    std::ifstream meminfo("/proc/meminfo");
    std::string total = "0", size = "?";
    for (std::string line; std::getline(meminfo, line);) {
        if (line.rfind("HugePages_Total:", 0) == 0) total = line.substr(line.find_last_of(' ') + 1);
        if (line.rfind("Hugepagesize:", 0) == 0) size = line.substr(line.find(':') + 1);
    }
    size.erase(0, size.find_first_not_of(' '));
    return {true,
            fmt::format("huge pages reserved: {} of {} (fampool does not need them)", total, size),
            ""};
}

}  // namespace

int Doctor(const QueryOptions &options) {
    std::string path = ClusterFileOf(options.cluster);
    ClusterConfig config = LoadCluster("doctor", path);
    std::vector<Finding> findings;
    const char *env = std::getenv("FAMPOOL_CONFIG");
    findings.push_back({true,
                        fmt::format("cluster file {} ({})", path,
                                    !options.cluster.config.empty()    ? "named with --config"
                                    : !options.cluster.run_dir.empty() ? "of --run-dir"
                                    : env && *env                      ? "named by FAMPOOL_CONFIG"
                                                  : "of the default run directory"),
                        ""});
    findings.push_back(CheckProvider(config));
    std::string run_dir = RunDirOfClusterFile(path);
    std::string up = run_dir.empty() ? std::string("`fampool up`")
                                     : fmt::format("`fampool up --run-dir {}`", run_dir);
    findings.push_back(
        CheckListening("the metadata service", config.metadata_address,
                       fmt::format("start the cluster ({}), or the service (`systemctl start "
                                   "fampool-metadata@0`); if it runs, check the address in {}",
                                   up, path)));
    bool metadata_up = findings.back().ok;
    std::set<uint64_t> servers_up;
    if (metadata_up) {
        CheckService("the metadata service", config.metadata_address,
                     Ask(config, config.metadata_address, &rpc::Metadata::Stub::Servers),
                     &findings);
    }
    for (const MemoryServerConfig &server : config.memservers) {
        std::string who = fmt::format("memory server {}", server.id);
        findings.push_back(CheckListening(
            who, server.rpc_address,
            fmt::format("start it ({}, or `systemctl start fampool-memory@{}` on its node)", up,
                        server.id)));
        if (findings.back().ok) {
            servers_up.insert(server.id);
            CheckService(who, server.rpc_address,
                         Ask(config, server.rpc_address, &rpc::MemoryServer::Stub::Info),
                         &findings);
        }
    }
    CheckOtherPorts(config, metadata_up, servers_up, &findings);
    CheckProgramSettings(config, &findings);
    if (config.authentication == "munge") findings.push_back(CheckMunge(config));
    findings.push_back(CheckShm(config));
    findings.push_back(CheckLockedMemory(config));
    findings.push_back(HugePages());
    size_t failed = 0;
    for (const Finding &finding : findings) {
        std::printf("%-4s %s\n", finding.ok ? "ok" : "FAIL", finding.what.c_str());
        if (!finding.ok) {
            std::printf("     fix: %s\n", finding.fix.c_str());
            ++failed;
        }
    }
    std::printf("%zu of %zu checks passed\n", findings.size() - failed, findings.size());
    return failed == 0 ? 0 : 1;
}

}  // namespace fampool::cli
