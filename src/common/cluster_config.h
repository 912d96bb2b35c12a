// The cluster file: where the metadata service and the memory servers listen, where they keep
// their data, which fabric provider they use. Read by fampool-server, the fampool CLI and
// clients of the memory-server model. OpenFAM's key names are accepted beside fampool's.
#ifndef FAMPOOL_COMMON_CLUSTER_CONFIG_H_
#define FAMPOOL_COMMON_CLUSTER_CONFIG_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/quotas.h"
#include "common/tls.h"

namespace YAML {
class Node;
}

namespace fampool {

struct MemoryServerConfig {
    uint64_t id = 0;
    std::string rpc_address;  // host:port of its gRPC service
    // The address its libfabric endpoint binds; empty: the address of `if_device`, else
    // 127.0.0.1.
    std::string fabric_host;
    std::string fabric_port;  // libfabric service (port)
    // A network interface whose address the endpoint binds, or a fabric domain ("mlx5_0").
    std::string if_device;
    std::string heap_dir;              // persistent heaps
    std::string shm_dir = "/dev/shm";  // volatile heaps
    // The regions it holds: "volatile", "persistent", or "" for both (OpenFAM's memory_type).
    std::string memory_type;
    // Where it fails together with others (a rack, a power feed): RAID1 keeps an extent's copy
    // in another domain when there is one. Empty: a domain of its own.
    std::string failure_domain;
    // A spare holds no region until a redundant region loses a member: it is then rebuilt
    // there at once.
    bool spare = false;
    // Bytes of extents it may hold (the memory it offers); a region or resize beyond it fails
    // with FAM_ERR_NO_SPACE. 0: no limit.
    uint64_t capacity = 0;
    // Its memory's kind (common/memory_kind.h: dram, persistent, far); empty: the default for
    // its memory_type. Intent-based placement (docs/intent.md) reads it.
    std::string kind;
    // Bytes per second and nanoseconds per access of its memory as clients see them; 0: the
    // server measures its memory at start. The emulated fabric sets them from its links.
    uint64_t bandwidth = 0;
    uint64_t latency_ns = 0;
    // The port its Prometheus endpoint listens on, at the host of rpc_address (docs/
    // operations.md); 0: no endpoint.
    int metrics_port = 0;
};

struct ClusterConfig {
    std::string provider = "tcp";
    std::string metadata_address = "127.0.0.1:8787";
    // The metadata service as shards (metadata_shards: host:port of shard 0, 1, ...): regions
    // are partitioned by name (common/shards.h), each shard with a store of its own. Empty: one
    // shard, at metadata_address; else metadata_address is shard 0's.
    std::vector<std::string> metadata_shards;
    std::string metadata_dir;  // LMDB store of the metadata service
    std::string archive_dir;   // backups (reachable by every memory server)
    std::string placement = "hash";
    // How a memory server's fabric progress thread waits for work: "blocking" (polls while
    // traffic flows, then sleeps) or "busy" (never sleeps: lowest latency, one core per server).
    std::string progress = "blocking";
    uint64_t region_span = 0;  // memory servers per region at most; 0: all of them
    // OpenFAM's spanning keys: without spanning a region lives on one server; with a span size,
    // a region takes one server per that many bytes (at least one, at most region_span); 0:
    // every region takes region_span. Unset: see PlacementOptions::span_size.
    bool region_spanning = true;
    std::optional<uint64_t> span_size;
    uint64_t interleave_size = 0;
    int rpc_timeout_ms = 10000;
    int fabric_timeout_ms = 10000;
    // Whether the metadata service also takes lookups and allocations over the fabric (an
    // endpoint of `provider` on the metadata host), and on which port (empty: any free one;
    // clients learn it from the service).
    bool metadata_fabric = true;
    std::string metadata_fabric_port;
    // The port of the metadata service's Prometheus endpoint, at the host of its address;
    // shard k listens on this port + k. 0: no endpoint.
    int metadata_metrics_port = 0;
    // Whether the metadata service's metrics also have a series per region, labelled with its
    // name: whoever reaches the endpoint then sees every region's name and size. False: the
    // regions' totals only.
    bool metrics_per_region = false;
    // Whether each memory server also takes its redundant-region calls (RAID1 and RAID5
    // atomics, RAID1 mirror writes) over the fabric, on an endpoint of `provider` at its fabric
    // host (any free port; clients learn it from the server).
    bool memserver_fabric = true;
    // OpenFAM's delayed_free_threads: 0 zeroes a deallocated item inside fam_deallocate; more
    // leave it to the metadata service's scrubber thread (one, whatever the number).
    int delayed_free_threads = 1;
    // How the services learn who calls them: "none" (callers state their uid and gid) or
    // "munge" (callers prove them with MUNGE credentials, decoded by the munged listening on
    // `munge_socket`; empty: libmunge's default socket).
    std::string authentication = "none";
    std::string munge_socket;
    // The group (name or number) that shares the servers' files (heaps, stores, archives)
    // with the user who runs them; "": private to that user (common/file_access.h).
    std::string sharing_group;
    // What one user or group may hold (common/quotas.h); unset: no bound on bytes and regions,
    // kDefaultSessionsPerUser sessions per user at each service.
    Quotas quotas;
    // TLS on the control path (common/tls.h): the CA, the servers' certificate and key, and
    // whether servers require client certificates. tls_ca unset: no TLS.
    std::string tls_ca;
    std::string tls_certificate;
    std::string tls_private_key;
    std::string tls_client_certificates = "none";  // "none" or "require"
    std::string tls_server_name;  // what clients expect in the servers' certificate
    std::vector<MemoryServerConfig> memservers;
    std::string path;  // the file it came from
};

// How the servers of `config` serve and call each other (their certificate as both).
TlsSettings ServerTls(const ClusterConfig &config);
// How a client of `config` calls it: the CA and server name from the file, this client's own
// certificate and key from $FAMPOOL_TLS_CLIENT_CERTIFICATE and $FAMPOOL_TLS_CLIENT_KEY, else
// the servers' own when this process may read their key (the cluster user's commands).
TlsSettings ClientTls(const ClusterConfig &config);

// The address of every metadata shard, shard 0 first: metadata_shards, or metadata_address alone.
std::vector<std::string> MetadataShards(const ClusterConfig &config);
// Where shard `shard` keeps its store: metadata_dir with one shard, metadata_dir/shard<k> with
// several.
std::string ShardStoreDir(const ClusterConfig &config, uint32_t shard);
// The port shard `shard` takes metadata calls on over the fabric: metadata_fabric_port + shard
// when that is a number, else "" (any free port).
std::string ShardFabricPort(const ClusterConfig &config, uint32_t shard);

// Reads and checks a cluster file or, when `path` is a directory, OpenFAM's service files in it
// (openfam_config.h). Throws Failure(FAM_ERR_INVALID) naming the file and the key for an
// unknown key, a missing required key or a bad value.
ClusterConfig LoadClusterConfig(const std::string &path);

// One memory server of a cluster file (`memservers` entry or OpenFAM's `Memservers` value) with
// id `id`; `path` names the file in messages. Throws Failure(FAM_ERR_INVALID) for an unknown
// key or a value of the wrong kind.
MemoryServerConfig ReadMemoryServer(const YAML::Node &node, uint64_t id, const std::string &path);
// OpenFAM's `Memservers`: a map from id to server, returned in the order of the ids.
std::vector<MemoryServerConfig> ReadMemoryServerMap(const YAML::Node &map, const std::string &path);

// The keys of a memory server's entry in a cluster file (docs/configuration.md lists each).
const std::set<std::string> &MemoryServerKeyTable();

// Checks what a cluster file, however it was read, must hold: memory server ids 0, 1, ... in
// order, each with its addresses and heap directory, valid memory types, interleave size,
// placement, progress and authentication.
void CheckClusterConfig(const ClusterConfig &config);

// `text` as a YAML double-quoted scalar: quotes, backslashes and control characters escaped.
std::string YamlQuoted(const std::string &text);

// A cluster file in fampool's own format that LoadClusterConfig reads back as `config`.
std::string ClusterFileText(const ClusterConfig &config);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_CLUSTER_CONFIG_H_
