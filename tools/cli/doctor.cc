// `fampool doctor`: checks, from this node, what a run on a cluster needs, and says for each
// what is wrong and what to do. Exit status 0 only when every check passes.
#include <rdma/fabric.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli.h"
#include "common/cluster_config.h"
#include "common/network.h"
#include "rpc/munge.h"

namespace fampool::cli {
namespace {

constexpr std::chrono::milliseconds kProbe{500};
// Free space below which volatile regions of any size soon fail on this node.
constexpr uint64_t kLeastShmBytes = uint64_t{256} << 20;
// What verbs needs pinned for a server's registrations and a client's buffers, at least.
constexpr uint64_t kLeastLockedBytes = uint64_t{64} << 20;

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
    for (const MemoryServerConfig &server : config.memservers) {
        findings.push_back(CheckListening(
            fmt::format("memory server {}", server.id), server.rpc_address,
            fmt::format("start it ({}, or `systemctl start fampool-memory@{}` on its node)", up,
                        server.id)));
    }
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
