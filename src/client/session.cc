#include "client/session.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "common/network.h"
#include "messages/memory_server_messages.h"
#include "meta/client/sharded_metadata.h"
#include "meta/metadata_store.h"
#include "transport/fabric/fabric_transport.h"
#include "transport/redundant/redundant_transport.h"
#include "transport/shm/shm_transport.h"

namespace fampool {

namespace {

// Who shares the embedded model's store, heaps and archive with the user running it: nobody,
// or the members of the configuration's sharing_group.
FileAccess EmbeddedAccess(const Config &config) {
    return FileAccess::Sharing(config.sharing_group, "sharing_group");
}

// The embedded model over the store session.env, whose heap files `instance` names.
void OpenEmbedded(Session &session, const std::string &instance) {
    const Config &config = session.config;
    const FileAccess access = EmbeddedAccess(config);
    PlacementOptions placement;
    placement.interleave_size = config.interleave_size;
    // Every region on one memory server: the embedded data path maps a region's one heap.
    placement.region_span = 1;
    placement.redundancy = false;
    std::vector<LocalMemoryServer *> locals;
    auto add = [&](HeapLocation location, MemoryProfile profile, const std::string &memory_type,
                   uint64_t capacity) {
        auto heaps = std::make_unique<LocalMemoryServer>(session.servers.size(), location,
                                                         config.archive_dir);
        heaps->SetCapacity(capacity);
        heaps->SetProfile(profile);
        placement.memory_types.push_back(memory_type);
        // The tiers are for regions placed by intent; the others stay on the default heaps.
        placement.intent_only.push_back(!session.servers.empty());
        profile.capacity = capacity;
        placement.profiles.push_back(profile);
        locals.push_back(heaps.get());
        session.servers.push_back(std::move(heaps));
    };
    add(HeapLocation{config.shm_dir, config.data_dir + "/heaps", instance, access},
        DeclaredProfile("dram"), "", 0);
    for (const Config::MemoryTier &tier : config.memory_tiers) {
        access.MakeDirectory(tier.dir);
        add(HeapLocation{tier.dir + "/volatile", tier.dir + "/persistent", instance, access},
            DeclaredProfile(tier.kind, tier.bandwidth, tier.latency_ns),
            tier.kind == "persistent" ? "persistent" : "", tier.capacity);
    }
    std::vector<MemoryServer *> servers(locals.begin(), locals.end());
    session.metadata = std::make_unique<MetadataStore>(session.env, servers, placement);
    session.transport = std::make_unique<ShmTransport>(locals);
}

// Where this client's fabric endpoints bind: the interface `if_device` names or, without
// it, the address this host reaches the metadata service from (the servers are on that
// network; on one host, loopback). An `if_device` with no address names the provider's
// domain instead (verbs "mlx5_0", cxi "cxi0").
void ChooseClientInterface(const Config &config, FabricConfig *fabric) {
    fabric->node.clear();
    if (!config.if_device.empty()) {
        fabric->node = InterfaceAddress(config.if_device);
        if (!fabric->node.empty()) return;
        fabric->domain = config.if_device;
        try {
            FabricDomain probe(*fabric, FabricDomain::Role::kClient);
        } catch (const Failure &failure) {
            std::string interfaces;
            for (const std::string &name : InterfaceNames()) {
                interfaces += (interfaces.empty() ? "" : ", ") + name;
            }
            Fail(openfam::FAM_ERR_LIBFABRIC,
                 "if_device \"{}\" is neither a network interface with an address (this host "
                 "has: {}) nor a fabric domain: {}",
                 config.if_device, interfaces, failure.fam_error_msg());
        }
        return;
    }
    fabric->node = SourceAddressToward(HostOf(config.metadata_address));
}

// How this client reaches the services: over TLS when the configuration names a CA.
TlsSettings ClientTlsOf(const Config &config) {
    TlsSettings tls;
    tls.ca = config.tls_ca;
    tls.server_name = config.tls_server_name;
    tls.certificate = config.tls_client_certificate;
    tls.private_key = config.tls_client_key;
    return tls;
}

// The cluster model's data path: RedundantTransport (transport/redundant) passes items of
// plain regions to a FabricTransport (transport/fabric), whose channels give each thread a
// FabricChannel (transport/fabric/fabric_channel.cc: fi_readmsg, fi_writemsg, fi_atomicmsg),
// and writes RAID1 and RAID5 items to their members through a second FabricTransport with the
// members' shorter bound, asking memory servers (MemoryServer) for stripe work and mirrored
// atomics. The embedded model's is one ShmTransport (OpenEmbedded).
std::unique_ptr<Transport> ClusterDataPath(Session &session, const FabricConfig &fabric) {
    Session *self = &session;
    auto servers = [self](uint64_t id) -> MemoryServer & { return self->Server(id); };
    RedundancyServices services;
    services.refresh = [self](uint64_t region_id, uint64_t offset) {
        return self->metadata->GetItem(region_id, offset, self->caller);
    };
    services.report = [self](const std::vector<uint64_t> &ids) {
        self->metadata->ReportFailure(ids);
    };
    services.server = servers;
    services.patience = std::chrono::milliseconds(fabric.timeout_ms);
    FabricConfig members = fabric;
    members.timeout_ms = std::min<int64_t>(fabric.timeout_ms, kMemberTimeoutMs);
    return std::make_unique<RedundantTransport>(std::make_unique<FabricTransport>(fabric, servers),
                                                std::make_unique<FabricTransport>(members, servers),
                                                std::move(services));
}

void OpenCluster(Session &session) {
    const Config &config = session.config;
    auto timeout = std::chrono::milliseconds(config.rpc_timeout_ms);
    const TlsSettings tls = ClientTlsOf(config);
    auto metadata = std::make_unique<ShardedMetadata>(
        config.metadata_shards.empty() ? std::vector<std::string>{config.metadata_address}
                                       : config.metadata_shards,
        timeout, tls);
    rpc::ServerList list = metadata->Servers(std::chrono::milliseconds(config.connect_timeout_ms));
    // From now on a call made while the service restarts waits for it (within rpc_timeout_ms).
    metadata->WaitForService();
    session.host = SourceAddressToward(HostOf(config.metadata_address));
    for (const rpc::ServerState &server : list.servers()) {
        if (server.id() != session.servers.size()) {
            Fail(openfam::FAM_ERR_RPC, "metadata service {} lists memory server {} out of order",
                 config.metadata_address, server.id());
        }
        session.servers.push_back(std::make_unique<FabricMemoryServerClient>(
            server.id(), server.address(), timeout, tls));
    }
    if (session.servers.empty()) {
        Fail(openfam::FAM_ERR_MEMSERV_LIST_EMPTY, "metadata service {} has no memory servers",
             config.metadata_address);
    }
    // The service says whether callers must prove who they are; this process then opens its
    // session now, so that a refused credential fails fam_initialize, not a later call.
    if (list.authentication() == "munge") {
        metadata->UseMunge(config.munge_socket);
        metadata->Authenticate();
        // Memory servers take copies, backups and RAID calls from sessions only; one is opened
        // with each at the first such call.
        for (auto &server : session.servers) {
            static_cast<MemoryServerClient &>(*server).UseMunge(config.munge_socket);
        }
    } else if (config.authentication == "munge") {
        Fail(openfam::FAM_ERR_INVALID,
             "this process's configuration asks for authentication: munge, but the metadata "
             "service {} does not authenticate its callers (its cluster file says "
             "authentication: none)",
             config.metadata_address);
    }
    // The provider is the cluster's: a transfer over another would only time out.
    std::string provider = config.libfabric_provider;
    if (!list.provider().empty() && list.provider() != provider) {
        if (config.libfabric_provider_set) {
            Fail(openfam::FAM_ERR_INVALID,
                 "this process's libfabric provider is \"{}\" (libfabricProvider, "
                 "FAMPOOL_PROVIDER or `provider` in {}), but the memory servers of the cluster "
                 "at {} serve over \"{}\": name that provider or none",
                 provider, config.config_file.empty() ? "no file" : config.config_file,
                 config.metadata_address, list.provider());
        }
        provider = list.provider();
        session.config.libfabric_provider = provider;  // what LIBFABRIC_PROVIDER says
    }
    FabricConfig fabric;
    fabric.provider = provider;
    fabric.timeout_ms = config.fabric_timeout_ms;
    fabric.checked_reads = config.fabric_checked_reads;
    fabric.direct = config.fabric_direct;
    fabric.direct_by_path = config.fabric_direct_by_path;
    fabric.memory_side_elements = config.fabric_memory_side_elements;
    fabric.memory_side_request_bytes = config.atl_data_size;
    ChooseClientInterface(config, &fabric);
    // With TLS the session token must not travel in clear: metadata calls stay on gRPC (a
    // service with TLS offers no fabric endpoint either).
    if (config.metadata_fabric && !tls.enabled()) metadata->UseFabric(fabric);
    // RAID atomics over the fabric where the memory servers offer it (not with TLS either).
    if (config.memserver_fabric && !tls.enabled()) {
        for (auto &server : session.servers) {
            static_cast<FabricMemoryServerClient &>(*server).UseFabric(fabric);
        }
    }
    ShardedMetadata *service = metadata.get();
    session.metadata = std::move(metadata);
    if (list.usage_report_ms() > 0) {
        auto period = std::chrono::milliseconds(list.usage_report_ms());
        session.usage = std::make_unique<UsageReporter>(
            [service, period](const rpc::UsageReport &report) {
                service->ReportUsage(report, period);
            },
            period);
    }
    session.transport = ClusterDataPath(session, fabric);
}

}  // namespace

std::shared_ptr<Session> Session::Open(const Config &config) {
    auto session = std::make_shared<Session>();
    session->config = config;
    session->caller = ThisProcess();
    session->runtime = MakeRuntime(config.runtime);
    if (config.model == "memory_server") {
        // tcp's RDM endpoints (ofi_rxm) share one receive context per process whose buffers
        // cost a client about 100 MB (measured: 177 -> 73 MB of anonymous memory after the
        // first put), although a client's RMA endpoints never receive a message and its
        // metadata endpoint talks to one service. Per-connection receive buffers measured the
        // same latency and bandwidth (fabric_bench over tcp). Servers keep the shared context:
        // they take connections from every PE. A value the user set wins; libfabric reads it
        // when first used in the process.
        setenv("FI_OFI_RXM_USE_SRX", "0", 0);
        OpenCluster(*session);
    } else {
        FileAccess access = EmbeddedAccess(config);
        access.MakeDirectory(config.data_dir);
        session->env = LmdbEnv::Open(config.data_dir + "/meta", config.meta_sync, access);
        OpenEmbedded(*session, MetadataStore::Prepare(*session->env));
    }
    return session;
}

std::shared_ptr<Session> Session::OpenInPlace(const Config &config) {
    const std::string dir = config.data_dir + "/meta";
    std::error_code ec;
    // LmdbEnv::Open would make the directory and an empty store.
    bool exists = std::filesystem::exists(dir + "/data.mdb", ec);
    if (ec) {
        Fail(openfam::FAM_ERR_NOPERM,
             "cannot reach the metadata store in {}: {} (a store is private to the user who made "
             "it unless its sharing_group names a group of this user, docs/security.md)",
             dir, ec.message());
    }
    if (!exists) {
        Fail(openfam::FAM_ERR_NOTFOUND,
             "no metadata store in {}: no program has used the embedded model with this data "
             "directory yet",
             dir);
    }
    auto session = std::make_shared<Session>();
    session->config = config;
    session->caller = ThisProcess();
    session->runtime = MakeRuntime("NONE");
    session->env = LmdbEnv::Open(dir, config.meta_sync, EmbeddedAccess(config));
    std::string instance = MetadataStore::ReadIdentity(*session->env).instance;
    if (instance.empty()) {
        Fail(openfam::FAM_ERR_NOTFOUND,
             "the metadata store in {} is being made by a program that has not finished "
             "starting",
             dir);
    }
    OpenEmbedded(*session, instance);
    return session;
}

MemoryServer &Session::Server(uint64_t id) {
    if (id >= servers.size()) {
        Fail(openfam::FAM_ERR_RPC_CLIENT_NOTFOUND, "no memory server with id {}", id);
    }
    return *servers[id];
}

Session &LiveSession(const std::shared_ptr<Session> &session) {
    if (!session) {
        Fail(openfam::FAM_ERR_INVALIDOP, "fam object is not initialized (call fam_initialize)");
    }
    if (session->finalized.load(std::memory_order_acquire)) {
        Fail(openfam::FAM_ERR_INVALIDOP, "fam object was finalized");
    }
    return *session;
}

}  // namespace fampool
