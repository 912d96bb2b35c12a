// The cluster file `fampool up` writes from its options (launch.cc starts the servers it names).
#include <sys/statvfs.h>

#include <filesystem>
#include <fstream>

#include "cli.h"
#include "common/config.h"
#include "common/shards.h"
#include "emulate.h"
#include "process.h"

namespace fampool::cli {
namespace fs = std::filesystem;
namespace {

// The bytes each of `servers` memory servers on this node may hold by default: the node's
// memory (MemTotal) or the file system of the volatile heaps (`shm_dir`, a tmpfs whose size
// bounds what it can hold), whichever is less, shared evenly. A server's regions and items
// count against it as docs/semantics.md ("Region capacity") says.
uint64_t AutoCapacity(const std::string &shm_dir, unsigned servers) {
    uint64_t memory = 0;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
        if (line.rfind("MemTotal:", 0) == 0) memory = std::stoull(line.substr(9)) * 1024;
    }
    struct statvfs fs {};
    if (statvfs(shm_dir.c_str(), &fs) == 0 && fs.f_blocks) {
        uint64_t size = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
        memory = memory ? std::min(memory, size) : size;
    }
    if (!memory)
        Die(1, "fampool up: cannot read this node's memory (/proc/meminfo): give --capacity");
    return memory / servers;
}

}  // namespace

// The cluster file `up` writes from its options, or, on an emulated fabric, from `topology`
// (its counts, each node's address, each memory server's keys).
std::string GeneratedClusterFile(const UpOptions &o, const std::string &dir,
                                 const Topology *topology) {
    unsigned servers = topology ? topology->memservers.size() : o.memservers;
    unsigned shards = topology ? topology->metadata_shards : o.metadata_shards;
    if (servers < 1 || servers > 99) {
        Die(1, "fampool up: --memservers {} is out of range (1 to 99)", servers);
    }
    if (shards < 1 || shards > kMostShards) {
        Die(1, "fampool up: --metadata-shards {} is out of range (1 to {})", shards, kMostShards);
    }
    // On an emulated fabric every node has an address of its own: the default ports serve.
    const int base = !o.base_port_auto ? o.base_port
                     : topology        ? UpOptions().base_port
                                       : FreeBasePort(servers, shards);
    int last_port = base + 100 + static_cast<int>(servers) - 1;
    if (o.metrics) last_port = std::max(last_port, MetricsPort(base, false, servers - 1));
    if (shards > 1) last_port = std::max(last_port, ShardPort(base, shards - 1));
    if (base < 1 || last_port > 65535) {
        Die(1,
            "fampool up: --base-port {} leaves no room for {} memory servers and {} metadata "
            "shard(s) (ports {} to {} are used; the last must be at most 65535)",
            base, servers, shards, base, last_port);
    }
    if (o.authentication == "none" && !o.munge_socket.empty()) {
        Die(1, "fampool up: --munge-socket goes with --authentication munge, not none");
    }
    uint64_t i = o.interleave;
    if (i && ((i & (i - 1)) || i < 64)) {
        Die(1, "fampool up: --interleave {} must be 0 or a power of two of at least 64", i);
    }
    // On one host every server is on 127.0.0.1 with a port of its own; on an emulated fabric
    // every node has its own address (and the shards share the base port).
    auto shard_address = [&](unsigned k) {
        return topology ? fmt::format("{}:{}", EmulatedAddress("metadata", k), base)
                        : fmt::format("127.0.0.1:{}", ShardPort(base, k));
    };
    auto server_host = [&](unsigned k) {
        return topology ? EmulatedAddress("memory", k) : std::string("127.0.0.1");
    };
    std::string text = fmt::format(
        "# fampool cluster file, written by `fampool up`. Servers: fampool-server --config <this "
        "file>;\n# clients: export FAMPOOL_CONFIG=<this file>.\n"
        "openfam_model: memory_server\nprovider: {}\nmetadata_address: {}\n"
        "metadata_dir: {}\narchive_dir: {}\ndataitem_interleave_size: {}\nplacement: {}\n"
        "region_span: {}\nprogress: {}\nauthentication: {}\n",
        o.provider, shard_address(0), YamlQuoted(dir + "/meta"), YamlQuoted(dir + "/backup"),
        o.interleave, o.placement, o.region_span, o.progress, o.authentication);
    if (shards > 1) {
        text += "metadata_shards:\n";
        for (unsigned k = 0; k < shards; ++k) text += fmt::format("  - {}\n", shard_address(k));
    }
    if (o.metrics) text += fmt::format("metadata_metrics_port: {}\n", MetricsPort(base, true, 0));
    if (o.metrics_per_region) text += "metrics_per_region: true\n";
    if (o.authentication == "munge") {
        // A site's munged, or the one `up` starts for the cluster.
        std::string socket = o.munge_socket.empty() ? MungedFilesOf(dir).socket : o.munge_socket;
        text += fmt::format("munge_socket: {}\n", YamlQuoted(socket));
    }
    uint64_t capacity = 0;
    if (o.capacity == "auto") {
        capacity = AutoCapacity(fs::path(ShmBase(dir)).parent_path().string(), servers);
    } else if (o.capacity != "none") {
        capacity = ParseSize("fampool up: --capacity", o.capacity);
        if (!capacity) Die(1, "fampool up: --capacity 0: give none for no limit");
    }
    text += "memservers:\n";
    for (unsigned i = 0; i < servers; ++i) {
        text += fmt::format(
            "  - id: {}\n    rpc_interface: {}:{}\n    libfabric_port: {}\n"
            "    fam_path: {}\n    shm_path: {}\n",
            i, server_host(i), base + 1 + i, base + 100 + i,
            YamlQuoted(dir + "/heaps" + std::to_string(i)),
            YamlQuoted(ShmBase(dir) + "/ms" + std::to_string(i)));
        if (o.metrics) text += fmt::format("    metrics_port: {}\n", MetricsPort(base, false, i));
        // A topology file's own capacity for a server wins.
        if (capacity && !(topology && topology->memservers[i].capacity)) {
            text += fmt::format("    capacity: {}\n", capacity);
        }
        if (!topology) continue;
        text += fmt::format("    fabric_host: {}\n", server_host(i));
        text += TopologyServerKeys(topology->memservers[i]);
    }
    return text;
}

}  // namespace fampool::cli
