// fampool-server: the metadata service, a memory server, or both, as configured by a cluster
// file. Serves gRPC until SIGTERM or SIGINT, then shuts down cleanly.
//
//   fampool-server --config cluster.yaml --role metadata
//   fampool-server --config cluster.yaml --role memory --id 0
//   fampool-server --config cluster.yaml --role all --id 0
//   fampool-server --config $OPENFAM_ROOT/config --role metadata   (OpenFAM's files)
#include <grpcpp/grpcpp.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <thread>

#include "common/cluster_config.h"
#include "common/error.h"
#include "common/file_access.h"
#include "common/metrics.h"
#include "common/network.h"
#include "listeners.h"
#include "memserver/fabric_server.h"
#include "memserver/heap_guard.h"
#include "memserver/heap_socket.h"
#include "memserver/local_memory_server.h"
#include "memserver/memory_server_metrics.h"
#include "memserver/memory_server_service.h"
#include "messages/memory_server_messages.h"
#include "meta/client/metadata_client.h"
#include "meta/lmdb.h"
#include "meta/metadata_fabric.h"
#include "meta/metadata_rpc_service.h"
#include "meta/metadata_store.h"
#include "metrics_endpoint.h"
#include "rpc/authentication.h"
#include "rpc/convert.h"
#include "rpc/memory_server_client.h"
#include "rpc/munge.h"
#include "transport/fabric/fabric_peers.h"

namespace fampool {
namespace {

// Longest a shutdown may take before the process exits anyway.
constexpr std::chrono::seconds kShutdownLimit(20);
// How often clients report their data path to a metadata service that serves metrics.
constexpr std::chrono::milliseconds kUsageReport(1000);

std::string NewIncarnation() {
    std::random_device random;
    return fmt::format("{:08x}{:08x}-{}", random(), random(), getpid());
}

// Volatile heaps of an earlier run of this memory server died with it: remove them.
void RemoveVolatileHeaps(const std::string &dir, const std::string &prefix) {
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
        std::string name = entry.path().filename().string();
        if (name.rfind(prefix + ".r", 0) == 0) std::filesystem::remove(entry.path(), ec);
    }
}

// With authentication munge, the munged the cluster file names must answer before the server
// serves: a misconfigured socket stops the start with the reason, not every later call.
void CheckMunged(const ClusterConfig &cluster, const std::string &who) {
    if (cluster.authentication != "munge") return;
    MungeEncode(cluster.munge_socket, "fampool-server start-up check", who.c_str());
}

// Who shares the servers' files (heaps, stores, archives) with the user running them.
// With several shards and quotas on bytes or regions: what a user's and a group's regions take
// of the other shards, asked of each (as the cluster user) before a region is made or grown.
MetadataStore::QuotaElsewhere QuotasElsewhere(const ClusterConfig &cluster,
                                              const std::vector<std::string> &shards,
                                              uint32_t shard) {
    if (shards.size() < 2 || !cluster.quotas.BoundsRegions()) return nullptr;
    auto others = std::make_shared<std::vector<std::unique_ptr<MetadataClient>>>();
    for (uint32_t k = 0; k < shards.size(); ++k) {
        if (k == shard) continue;
        auto client = std::make_unique<MetadataClient>(
            shards[k], std::chrono::milliseconds(cluster.rpc_timeout_ms), ClientTls(cluster));
        if (cluster.authentication == "munge") client->UseMunge(cluster.munge_socket);
        others->push_back(std::move(client));
    }
    return [others](uint32_t uid, uint32_t gid) {
        MetadataStore::QuotaTaken sum;
        for (const auto &other : *others) {
            rpc::QuotaTaken usage = other->QuotaUsage(uid, gid);
            sum.user_bytes += usage.user_bytes();
            sum.user_regions += usage.user_regions();
            sum.group_bytes += usage.group_bytes();
            sum.group_regions += usage.group_regions();
        }
        return sum;
    };
}

// The sessions a service keeps, each user's bounded by the cluster's quotas.
std::unique_ptr<SessionTable> BoundedSessions(const ClusterConfig &cluster,
                                              const std::string &audience,
                                              const std::string &name) {
    auto sessions = std::make_unique<SessionTable>(cluster.munge_socket, audience, name);
    sessions->Bound(cluster.quotas);
    return sessions;
}

FileAccess ServerFiles(const ClusterConfig &cluster) {
    return FileAccess::Sharing(cluster.sharing_group, cluster.path + ": sharing_group");
}

// The pieces of a memory server: heaps, its fabric endpoint, its gRPC service.
struct MemoryRole {
    std::unique_ptr<LocalMemoryServer> heaps;
    std::unique_ptr<FabricServer> fabric;
    std::unique_ptr<FabricPeers> peers;  // reaches other memory servers for copy and backup
    // gRPC clients of the other memory servers (RAID1 copies of atomics go there), by id.
    std::shared_ptr<std::vector<std::unique_ptr<FabricMemoryServerClient>>> others;
    std::unique_ptr<RedundancyService> redundancy;
    std::unique_ptr<MemoryServerService> service;
    // Hands heap descriptors to permitted clients of this node (memserver/heap_socket.h).
    std::unique_ptr<HeapSocketServer> socket;
    std::shared_ptr<void> metrics;  // its gauges, while it serves metrics (dropped first)
};

MemoryRole StartMemoryRole(const ClusterConfig &cluster, uint64_t id) {
    if (id >= cluster.memservers.size()) {
        Fail(openfam::FAM_ERR_INVALID, "memory server id {} is not in {} ({} servers)", id,
             cluster.path, cluster.memservers.size());
    }
    const MemoryServerConfig &me = cluster.memservers[id];
    std::string prefix = fmt::format("fampool-ms{}", id);
    FileAccess access = ServerFiles(cluster);
    // Others pass through it to the server's same-node socket, not list or open its heaps.
    access.MakeDirectory(me.shm_dir, FileAccess::Dir::kShared, /*reachable=*/true);
    RemoveVolatileHeaps(me.shm_dir, prefix);
    MemoryRole role;
    role.heaps = std::make_unique<LocalMemoryServer>(
        id, HeapLocation{me.shm_dir, me.heap_dir, prefix, access}, cluster.archive_dir);
    FabricConfig fabric;
    fabric.provider = cluster.provider;
    fabric.node = me.fabric_host;
    if (fabric.node.empty() && !me.if_device.empty()) {
        // if_device: an interface whose address the endpoint binds, or else a fabric domain.
        fabric.node = InterfaceAddress(me.if_device);
        if (fabric.node.empty()) fabric.domain = me.if_device;
    }
    if (fabric.node.empty() && fabric.domain.empty()) fabric.node = "127.0.0.1";
    fabric.service = me.fabric_port;
    fabric.timeout_ms = cluster.fabric_timeout_ms;
    try {
        role.fabric = std::make_unique<FabricServer>(
            fabric, cluster.progress == "busy" ? FabricServer::Progress::kBusyPoll
                                               : FabricServer::Progress::kBlocking);
    } catch (const Failure &failure) {
        if (fabric.domain.empty()) throw;
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "memory server {}: if_device \"{}\" is neither a network interface with an address "
             "nor a fabric domain of provider {}: {}",
             id, me.if_device, cluster.provider, failure.fam_error_msg());
    }
    role.heaps->SetCapacity(me.capacity);
    // Measured now (unless the cluster file sets them), not at the first Info call: a
    // heartbeat's short wait must not pay for it.
    std::string kind = me.kind.empty() ? DefaultMemoryKind(me.memory_type) : me.kind;
    role.heaps->SetProfile(DeclaredProfile(kind, me.bandwidth, me.latency_ns));
    role.heaps->Profile();
    role.heaps->AttachFabric(role.fabric.get());
    // Clients of this node reach items with loads and stores through heap descriptors this
    // socket hands out; without it (a path too long for a socket) they stay on the fabric.
    std::string socket = fmt::format("{}/{}.sock", me.shm_dir, prefix);
    try {
        role.socket = std::make_unique<HeapSocketServer>(role.heaps.get(), socket);
        role.heaps->SetSocket(socket);
    } catch (const Failure &failure) {
        std::fprintf(stderr, "fampool-server: memory server %llu: no same-node socket: %s\n",
                     static_cast<unsigned long long>(id), failure.fam_error_msg());
    }
    role.peers = std::make_unique<FabricPeers>(fabric);
    role.heaps->AttachPeers(role.peers.get());
    // Shared with the lambda below: the role is moved out of this function.
    role.others = std::make_shared<std::vector<std::unique_ptr<FabricMemoryServerClient>>>();
    // The partners of this server's redundant work (the copies its RAID1 atomics mirror to,
    // the data units its RAID5 atomics are applied at): reached over the fabric where they
    // offer it, from an endpoint on this server's fabric host, and given at most a second (or
    // rpc_timeout_ms if shorter) to answer. This server holds a word's or a stripe's lock
    // while it waits: a partner stopped must not hold every other client's atomic there for
    // the whole rpc_timeout_ms, longer than a client waits without the members changing; the
    // client is told and makes the call again (it is applied once, by its id).
    FabricConfig messages = fabric;
    messages.service.clear();
    bool fabric_messages = cluster.memserver_fabric && cluster.tls_ca.empty();
    auto partner_timeout = std::min(std::chrono::milliseconds(cluster.rpc_timeout_ms),
                                    std::chrono::milliseconds(1000));
    for (const MemoryServerConfig &server : cluster.memservers) {
        role.others->push_back(std::make_unique<FabricMemoryServerClient>(
            server.id, server.rpc_address, partner_timeout, ServerTls(cluster)));
        if (fabric_messages) role.others->back()->UseFabric(messages);
    }
    auto peer = [others = role.others](uint64_t id) -> MemoryServerClient & {
        if (id >= others->size()) {
            Fail(openfam::FAM_ERR_INVALID, "memory server {} is not in the cluster", id);
        }
        return *(*others)[id];
    };
    role.redundancy = std::make_unique<RedundancyService>(role.heaps.get(), role.peers.get(), peer);
    std::string incarnation = NewIncarnation();
    role.heaps->SetIncarnation(incarnation);  // named in its grants, as in its Info
    role.service =
        std::make_unique<MemoryServerService>(role.heaps.get(), incarnation, role.redundancy.get());
    // The user running the cluster may see and delete every backup.
    role.heaps->SetClusterUser(static_cast<uint32_t>(geteuid()));
    if (cluster.authentication == "munge") {
        // Extents and keys are the metadata service's to manage; it runs as the user that
        // runs this server.
        std::string name = fmt::format("memory server {}", id);
        CheckMunged(cluster, name);
        role.service->RequireAuthentication(
            BoundedSessions(cluster, MemoryServerAudience(id), name),
            static_cast<uint32_t>(geteuid()));
        // RAID1 atomics this server forwards to the copy's server go as the cluster user.
        for (auto &other : *role.others) other->UseMunge(cluster.munge_socket);
    }
    // With TLS, session tokens must not travel in clear: RAID calls stay on gRPC.
    if (fabric_messages) {
        try {
            role.service->ServeOverFabric(messages);
        } catch (const Failure &failure) {
            Fail(openfam::FAM_ERR_LIBFABRIC,
                 "memory server {}: cannot open its message endpoint on {} ({}); set "
                 "memserver_fabric: false to take RAID calls over gRPC only",
                 id, messages.node.empty() ? messages.domain : messages.node,
                 failure.fam_error_msg());
        }
    }
    return role;
}

// The pieces of the metadata service.
struct MetadataRole {
    std::shared_ptr<LmdbEnv> env;
    std::vector<std::unique_ptr<MemoryServerClient>> clients;
    std::unique_ptr<MetadataStore> store;
    std::unique_ptr<MetadataRpcService> service;
    std::unique_ptr<FabricMessageService> fabric;  // lookups and allocations over the fabric
    std::shared_ptr<void> metrics;  // its gauges, while it serves metrics (dropped first)
};

// `colocated`: the memory server running in this process (role all), called directly rather
// than over gRPC: no RPC hop inside the metadata service's allocations; null when none.
// `shard`: which shard of the metadata service this process is (common/shards.h).
MetadataRole StartMetadataRole(const ClusterConfig &cluster, LocalMemoryServer *colocated,
                               uint32_t shard) {
    if (cluster.metadata_dir.empty()) {
        Fail(openfam::FAM_ERR_INVALID, "cluster file {} has no metadata_dir", cluster.path);
    }
    if (cluster.memservers.empty()) {
        Fail(openfam::FAM_ERR_MEMSERV_LIST_EMPTY, "cluster file {} lists no memory servers",
             cluster.path);
    }
    const std::vector<std::string> shards = MetadataShards(cluster);
    if (shard >= shards.size()) {
        Fail(openfam::FAM_ERR_INVALID, "metadata shard {} is not in {} ({} shard{})", shard,
             cluster.path, shards.size(), shards.size() == 1 ? "" : "s");
    }
    MetadataRole role;
    std::string store_dir = ShardStoreDir(cluster, shard);
    FileAccess access = ServerFiles(cluster);
    access.MakeDirectory(cluster.metadata_dir);
    role.env = LmdbEnv::Open(store_dir, /*sync_commits=*/false, access);
    MetadataStore::Prepare(*role.env, shard, static_cast<uint32_t>(shards.size()));
    std::vector<MemoryServer *> servers;
    std::vector<MemoryServerClient *> clients;
    for (const MemoryServerConfig &server : cluster.memservers) {
        role.clients.push_back(std::make_unique<MemoryServerClient>(
            server.id, server.rpc_address, std::chrono::milliseconds(cluster.rpc_timeout_ms),
            ServerTls(cluster)));
        if (colocated && colocated->id() == server.id) {
            servers.push_back(colocated);
        } else {
            servers.push_back(role.clients.back().get());
        }
        clients.push_back(role.clients.back().get());
    }
    PlacementOptions placement;
    placement.interleave_size = cluster.interleave_size;
    placement.region_span = cluster.region_spanning ? cluster.region_span : 1;
    placement.span_size = cluster.span_size;
    placement.policy = cluster.placement;
    for (const MemoryServerConfig &server : cluster.memservers) {
        placement.memory_types.push_back(server.memory_type);
        placement.failure_domains.push_back(server.failure_domain);
        placement.spares.push_back(server.spare);
        MemoryProfile profile;
        profile.kind = server.kind.empty() ? DefaultMemoryKind(server.memory_type) : server.kind;
        profile.bandwidth = server.bandwidth;
        profile.latency_ns = server.latency_ns;
        profile.capacity = server.capacity;
        profile.host = HostOf(server.rpc_address);
        placement.profiles.push_back(profile);
    }
    placement.grant_keys = true;
    // fam_deallocate returns before its item is zeroed (allocation never waits for zeroing),
    // unless delayed_free_threads is 0.
    placement.scrub_in_background = cluster.delayed_free_threads > 0;
    role.store = std::make_unique<MetadataStore>(role.env, servers, placement);
    role.store->SetQuotas(cluster.quotas, static_cast<uint32_t>(geteuid()),
                          QuotasElsewhere(cluster, shards, shard));
    role.service = std::make_unique<MetadataRpcService>(role.store.get(), clients);
    role.service->ServeAsShard(shard, shards);
    role.service->SetProvider(cluster.provider);
    if (cluster.authentication == "munge") {
        std::string name = "metadata service " + shards[shard];
        CheckMunged(cluster, name);
        role.service->RequireAuthentication(BoundedSessions(cluster, kMetadataAudience, name));
        for (MemoryServerClient *client : clients) client->UseMunge(cluster.munge_socket);
    }
    // With TLS, session tokens must not travel in clear: metadata calls stay on gRPC.
    if (cluster.metadata_fabric && !cluster.tls_ca.empty()) {
        std::fprintf(stderr,
                     "fampool-server: metadata calls over the fabric are off: TLS is on, and "
                     "fabric messages (with their session tokens) would travel in clear\n");
    }
    if (cluster.metadata_fabric && cluster.tls_ca.empty()) {
        FabricConfig fabric;
        fabric.provider = cluster.provider;
        fabric.node = HostOf(shards[shard]);
        fabric.service = ShardFabricPort(cluster, shard);
        fabric.timeout_ms = cluster.fabric_timeout_ms;
        try {
            role.fabric = OpenMetadataFabric(fabric, role.service.get());
        } catch (const Failure &failure) {
            Fail(openfam::FAM_ERR_LIBFABRIC,
                 "metadata service: cannot open its fabric endpoint on {}:{} ({}); set "
                 "metadata_fabric: false to serve over gRPC only",
                 fabric.node, fabric.service.empty() ? "any port" : fabric.service,
                 failure.fam_error_msg());
        }
        role.service->AdvertiseFabric(role.fabric.get());
    }
    return role;
}

// The process's metrics endpoint (docs/operations.md), when the cluster file gives the role a
// port: the metadata shard's (metadata_metrics_port + shard, at the shard's host), else the
// memory server's (its metrics_port, at the host of its rpc_address). Null: none.
std::unique_ptr<MetricsEndpoint> ServeMetrics(const ClusterConfig &cluster, const std::string &role,
                                              uint64_t id, uint32_t shard) {
    std::string host;
    int port = 0;
    const std::vector<std::string> shards = MetadataShards(cluster);
    if (role != "memory" && cluster.metadata_metrics_port && shard < shards.size()) {
        host = HostOf(shards[shard]);
        port = cluster.metadata_metrics_port + static_cast<int>(shard);
    } else if (role != "metadata" && id < cluster.memservers.size() &&
               cluster.memservers[id].metrics_port) {
        host = HostOf(cluster.memservers[id].rpc_address);
        port = cluster.memservers[id].metrics_port;
    }
    if (port == 0) return nullptr;
    metrics::Enable();
    auto endpoint = std::make_unique<MetricsEndpoint>(host, port);
    std::printf("fampool-server: metrics at http://%s/metrics\n", endpoint->address().c_str());
    return endpoint;
}

int Run(int argc, char **argv) {
    CLI::App app{"fampool-server: the metadata service and memory servers of a fampool cluster"};
    std::string config_path, role = "all";
    uint64_t id = 0;
    uint32_t shard = 0;
    app.add_option("--config", config_path,
                   "cluster file (YAML), or a directory of OpenFAM's service files "
                   "(fam_memoryserver_config.yaml, fam_metadata_config.yaml, "
                   "fam_client_interface_config.yaml: usually $OPENFAM_ROOT/config)")
        ->required();
    app.add_option("--role", role, "metadata, memory, or all (metadata and memory server --id)")
        ->check(CLI::IsMember({"metadata", "memory", "all"}));
    app.add_option("--id", id, "memory server id (its position in the cluster file)");
    app.add_option("--shard", shard,
                   "with --role metadata: which shard of the metadata service to run (its "
                   "position in metadata_shards; default 0)");
    CLI11_PARSE(app, argc, argv);

    // SIGTERM/SIGINT are taken by sigwait below, never by a thread at random.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    // A client with a writable heap descriptor may truncate the heap: its cut pages must not
    // end this server (memserver/heap_guard.h).
    GuardHeapMappings();
    ClusterConfig cluster = LoadClusterConfig(config_path);
    std::unique_ptr<MetricsEndpoint> metrics_endpoint = ServeMetrics(cluster, role, id, shard);
    MemoryRole memory;
    MetadataRole metadata;
    Listeners listeners;
    if (role == "memory" || role == "all") {
        memory = StartMemoryRole(cluster, id);
        if (metrics_endpoint) {
            memory.metrics = CollectMemoryServerMetrics(memory.heaps.get(), memory.fabric.get(),
                                                        memory.service->incarnation());
        }
        listeners.Add(cluster.memservers[id].rpc_address, memory.service.get(), ServerTls(cluster));
        std::printf("fampool-server: memory server %llu on %s (fabric %s port %s)\n",
                    static_cast<unsigned long long>(id), cluster.memservers[id].rpc_address.c_str(),
                    memory.fabric->provider().c_str(), cluster.memservers[id].fabric_port.c_str());
    }
    if (role == "metadata" || role == "all") {
        if (role == "all" && shard != 0) {
            Fail(openfam::FAM_ERR_INVALID,
                 "--role all runs metadata shard 0 beside memory server --id; run shard {} "
                 "with --role metadata",
                 shard);
        }
        metadata = StartMetadataRole(cluster, memory.heaps.get(), shard);
        if (metrics_endpoint)
            metadata.metrics =
                metadata.service->CollectMetrics(kUsageReport, cluster.metrics_per_region);
        const std::vector<std::string> shards = MetadataShards(cluster);
        listeners.Add(shards[shard], metadata.service.get(), ServerTls(cluster));
        metadata.service->StartMonitor(std::chrono::milliseconds(100));
        std::string which = shards.size() == 1
                                ? std::string("metadata service")
                                : fmt::format("metadata shard {} of {}", shard, shards.size());
        std::printf(
            "fampool-server: %s on %s (%zu memory servers; %s; %s)\n", which.c_str(),
            shards[shard].c_str(), cluster.memservers.size(),
            cluster.authentication == "munge"
                ? ("callers authenticated with MUNGE at " + MungeSocketName(cluster.munge_socket))
                      .c_str()
                : "callers not authenticated",
            metadata.fabric
                ? ("lookups and allocations over the fabric too, at " + metadata.fabric->name())
                      .c_str()
                : "gRPC only");
    }
    std::fflush(stdout);

    int signal_number = -1;
    timespec tick{1, 0};
    while (signal_number < 0) {
        signal_number = sigtimedwait(&signals, nullptr, &tick);
        if (signal_number < 0) listeners.Tend();
    }
    std::printf("fampool-server: signal %d, shutting down\n", signal_number);
    std::fflush(stdout);
    // The memory servers are being stopped too: their silence from now on is no death.
    if (metadata.service) metadata.service->StopMonitor();
    // A thread stuck inside a provider (a wedged shm endpoint, docs/deployment.md) must not
    // keep the process alive: the store is crash-safe, and it is synced first.
    std::thread([] {
        std::this_thread::sleep_for(kShutdownLimit);
        std::fprintf(stderr, "fampool-server: shutdown did not finish in %lld s; exiting\n",
                     static_cast<long long>(kShutdownLimit.count()));
        std::_Exit(1);
    }).detach();
    auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(5);
    listeners.Shutdown(deadline);
    if (metadata.store) metadata.store->Sync();
    metrics_endpoint.reset();  // no scrape reads the roles from here on
    memory.metrics.reset();
    metadata.metrics.reset();
    metadata.fabric.reset();   // stops taking fabric calls before the service goes
    metadata.service.reset();  // stops the monitor before the store goes
    if (metadata.store) metadata.store->Sync();
    return 0;
}

}  // namespace

// Every client connection takes a descriptor, and a gRPC listener (1.51) whose accept4 failed
// with EMFILE accepts nothing again until it is started anew (listeners.h): the soft limit (1,024
// by default outside systemd) goes up to the hard one, as high as the node allows without
// privileges (doctor shows it).
void RaiseDescriptorLimit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
        std::fprintf(stderr, "fampool-server: cannot raise the open-file limit to %llu: %s\n",
                     static_cast<unsigned long long>(limit.rlim_max), std::strerror(errno));
    }
}
}  // namespace fampool

int main(int argc, char **argv) {
    fampool::RaiseDescriptorLimit();
    // Buffers of 128 KiB and more (RAID5 stripes, copy and backup chunks, gRPC messages) are
    // mapped and unmapped, not kept by malloc: with glibc's adaptive threshold, a memory server
    // serving 4 clients' RAID5 puts grew by 270-950 MiB in 2 minutes without levelling off
    // (scripts/soak), and stayed within 7 MiB with this.
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    // ofi_rxm sizes its receive pools for an endpoint that receives many messages: 2048 posted
    // receives and 4096 shared buffers of 16 KiB, which held 410 MiB of anonymous memory in
    // every memory server under two clients and grew it by ~1 MiB a minute for 20 minutes as
    // the pools' pages were first touched (scripts/soak). A memory server receives no message
    // (clients reach it with RMA and gRPC) and the metadata service posts 64 receives: 256 of
    // each took memory servers to 160 MiB and the metadata service from 96 to 45 MiB, with the
    // same operation rate. A value the user set wins.
    setenv("FI_OFI_RXM_RX_SIZE", "256", 0);
    setenv("FI_OFI_RXM_MSG_RX_SIZE", "256", 0);
    try {
        return fampool::Run(argc, argv);
    } catch (const openfam::Fam_Exception &e) {
        std::fprintf(stderr, "fampool-server: %s\n", e.fam_error_msg());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fampool-server: %s\n", e.what());
        return 1;
    }
}
