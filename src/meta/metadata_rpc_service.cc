#include "meta/metadata_rpc_service.h"

#include <algorithm>
#include <cstdio>

#include "common/shards.h"
#include "meta/metadata_fabric.h"
#include "meta/store_internals.h"
#include "rpc/convert.h"
#include "rpc/version.h"

namespace fampool {

MetadataRpcService::MetadataRpcService(MetadataStore *store,
                                       std::vector<MemoryServerClient *> servers)
    : store_(store), servers_(std::move(servers)) {}

MetadataRpcService::~MetadataRpcService() { StopMonitor(); }

void MetadataRpcService::StopMonitor() {
    {
        std::lock_guard<std::mutex> lock(monitor_mutex_);
        stopping_ = true;
    }
    monitor_wake_.notify_all();
    if (monitor_.joinable()) monitor_.join();
    if (rebuilder_.joinable()) rebuilder_.join();
}

void MetadataRpcService::ServeAsShard(uint32_t shard, std::vector<std::string> addresses) {
    shard_ = shard;
    shards_ = addresses.size() > 1 ? std::move(addresses) : std::vector<std::string>();
}

void MetadataRpcService::RequireOwnName(const std::string &name, const char *call) const {
    if (shards_.empty()) return;
    uint32_t owner = ShardOfName(name, static_cast<uint32_t>(shards_.size()));
    if (owner == shard_) return;
    Fail(openfam::FAM_ERR_INVALID,
         "{}: region \"{}\" belongs to metadata shard {} ({}), not to this shard {} of {}: the "
         "caller's list of shards is not the cluster's",
         call, name, owner, shards_[owner], shard_, shards_.size());
}

void MetadataRpcService::RequireOwnRegion(uint64_t region_id, const char *call) const {
    uint32_t owner = ShardOfRegion(region_id);
    if (owner == shard_ || region_id == 0) return;
    Fail(openfam::FAM_ERR_INVALID,
         "{}: region id {} belongs to metadata shard {}, not to this shard {} of {}", call,
         region_id, owner, shard_, std::max<size_t>(shards_.size(), 1));
}

Caller MetadataRpcService::Identify(const rpc::Caller &caller, const char *call) {
    if (!sessions_) return FromProto(caller);
    return sessions_->Resolve(caller.token(), call);
}

grpc::Status MetadataRpcService::CreateRegion(grpc::ServerContext *,
                                              const rpc::CreateRegionRequest *request,
                                              rpc::Region *reply) {
    return Serve([&] {
        RequireOwnName(request->name(), "Metadata.CreateRegion");
        Caller caller = Identify(request->caller(), "Metadata.CreateRegion");
        auto create = [&] {
            return store_->CreateRegion(request->name(), request->size(), request->perm(),
                                        FromProto(request->attributes(), request->name()),
                                        FromProto(request->intent()), caller);
        };
        RegionInfo region;
        AdoptLives(/*all=*/false);
        try {
            region = create();
        } catch (const LifeChanged &) {
            // A server restarted and the monitor has not handled it yet: handled here, so
            // that the new region is not released with the earlier life's ones.
            AdoptLives(/*all=*/true);
            region = create();
        }
        ToProto(region, reply);
    });
}

grpc::Status MetadataRpcService::DestroyRegion(grpc::ServerContext *,
                                               const rpc::RegionRequest *request, rpc::Empty *) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.DestroyRegion");
        store_->DestroyRegion(request->region_id(),
                              Identify(request->caller(), "Metadata.DestroyRegion"));
    });
}

grpc::Status MetadataRpcService::ResizeRegion(grpc::ServerContext *,
                                              const rpc::RegionRequest *request,
                                              rpc::Region *reply) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.ResizeRegion");
        ToProto(store_->ResizeRegion(request->region_id(), request->size(),
                                     Identify(request->caller(), "Metadata.ResizeRegion")),
                reply);
    });
}

grpc::Status MetadataRpcService::LookupRegion(grpc::ServerContext *,
                                              const rpc::LookupRequest *request,
                                              rpc::Region *reply) {
    return Serve([&] {
        RequireOwnName(request->name(), "Metadata.LookupRegion");
        ToProto(store_->LookupRegion(request->name(),
                                     Identify(request->caller(), "Metadata.LookupRegion")),
                reply);
    });
}

grpc::Status MetadataRpcService::GetRegion(grpc::ServerContext *, const rpc::RegionRequest *request,
                                           rpc::Region *reply) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.GetRegion");
        ToProto(store_->GetRegion(request->region_id(),
                                  Identify(request->caller(), "Metadata.GetRegion")),
                reply);
    });
}

grpc::Status MetadataRpcService::ChangeRegionPermissions(grpc::ServerContext *,
                                                         const rpc::RegionRequest *request,
                                                         rpc::Empty *) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.ChangeRegionPermissions");
        store_->ChangeRegionPermissions(
            request->region_id(), request->perm(),
            Identify(request->caller(), "Metadata.ChangeRegionPermissions"));
    });
}

grpc::Status MetadataRpcService::AllocateItem(grpc::ServerContext *,
                                              const rpc::AllocateRequest *request,
                                              rpc::Item *reply) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.AllocateItem");
        ToProto(store_->AllocateItem(request->region_id(), request->name(), request->size(),
                                     request->perm(),
                                     Identify(request->caller(), "Metadata.AllocateItem")),
                reply);
    });
}

grpc::Status MetadataRpcService::DeallocateItem(grpc::ServerContext *,
                                                const rpc::ItemRequest *request, rpc::Empty *) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.DeallocateItem");
        store_->DeallocateItem(request->region_id(), request->offset(),
                               Identify(request->caller(), "Metadata.DeallocateItem"));
    });
}

grpc::Status MetadataRpcService::LookupItem(grpc::ServerContext *,
                                            const rpc::LookupRequest *request, rpc::Item *reply) {
    return Serve([&] {
        RequireOwnName(request->region(), "Metadata.LookupItem");
        ToProto(store_->LookupItem(request->name(), request->region(),
                                   Identify(request->caller(), "Metadata.LookupItem")),
                reply);
    });
}

grpc::Status MetadataRpcService::GetItem(grpc::ServerContext *, const rpc::ItemRequest *request,
                                         rpc::Item *reply) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.GetItem");
        ToProto(store_->GetItem(request->region_id(), request->offset(),
                                Identify(request->caller(), "Metadata.GetItem")),
                reply);
    });
}

grpc::Status MetadataRpcService::ChangeItemPermissions(grpc::ServerContext *,
                                                       const rpc::ItemRequest *request,
                                                       rpc::Empty *) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.ChangeItemPermissions");
        store_->ChangeItemPermissions(
            request->region_id(), request->offset(), request->perm(),
            Identify(request->caller(), "Metadata.ChangeItemPermissions"));
    });
}

grpc::Status MetadataRpcService::Status(grpc::ServerContext *, const rpc::StatusRequest *request,
                                        rpc::ClusterStatus *reply) {
    return Serve([&] {
        const Caller caller = Identify(request->caller(), "Metadata.Status");
        if (fabric_) {
            reply->set_metadata_fabric_provider(fabric_->provider());
            reply->set_metadata_fabric_address(fabric_->address());
            reply->set_metadata_fabric_name(fabric_->name());
            reply->set_metadata_fabric_calls(fabric_->answered());
        }
        reply->set_shard(shard_);
        reply->set_shards(static_cast<uint32_t>(std::max<size_t>(shards_.size(), 1)));
        std::vector<uint64_t> usage = store_->ServerUsage();
        std::vector<MemoryProfile> profiles = store_->Profiles();
        for (MemoryServerClient *server : servers_) {
            rpc::ServerState *state = reply->add_servers();
            state->set_id(server->id());
            state->set_address(server->address());
            state->set_extent_bytes(server->id() < usage.size() ? usage[server->id()] : 0);
            try {
                MemoryServerInfo info = server->Info();
                state->set_reachable(true);
                state->set_provider(info.provider);
                state->set_incarnation(info.incarnation);
                state->set_capacity(info.capacity);
            } catch (const Failure &) {
                state->set_reachable(false);
            }
            if (server->id() < profiles.size() && profiles[server->id()].known) {
                const MemoryProfile &profile = profiles[server->id()];
                state->set_kind(profile.kind);
                state->set_bandwidth(profile.bandwidth);
                state->set_latency_ns(profile.latency_ns);
            }
            std::lock_guard<std::mutex> lock(health_mutex_);
            state->set_lost(dead_.count(server->id()) != 0);
            state->set_spare(store_->IsSpare(server->id()));
        }
        for (const auto &usage_of : store_->ListRegions()) {
            // Only the regions the caller could look up (the cluster user's: all of them).
            if (!IsClusterUser(caller)) {
                try {
                    store::RequireAnyAccess(usage_of.region, caller);
                } catch (const Failure &) {
                    continue;
                }
            }
            rpc::RegionUsage *region = reply->add_regions();
            ToProto(usage_of.region, region->mutable_region());
            region->set_items(usage_of.items);
            region->set_free_bytes(usage_of.free_bytes);
            region->set_used_bytes(usage_of.used_bytes);
        }
    });
}

grpc::Status MetadataRpcService::QuotaUsage(grpc::ServerContext *,
                                            const rpc::QuotaUsageRequest *request,
                                            rpc::QuotaTaken *reply) {
    return Serve([&] {
        const Caller caller = Identify(request->caller(), "Metadata.QuotaUsage");
        if (!IsClusterUser(caller)) {
            Fail(openfam::FAM_ERR_NOPERM,
                 "Metadata.QuotaUsage: the cluster user's (uid {}) call, made by the other "
                 "metadata shards; not uid {}'s",
                 cluster_user_, caller.uid);
        }
        MetadataStore::QuotaTaken taken = store_->TakenBy(request->uid(), request->gid());
        reply->set_user_bytes(taken.user_bytes);
        reply->set_user_regions(taken.user_regions);
        reply->set_group_bytes(taken.group_bytes);
        reply->set_group_regions(taken.group_regions);
    });
}

grpc::Status MetadataRpcService::Servers(grpc::ServerContext *, const rpc::Empty *,
                                         rpc::ServerList *reply) {
    return Serve([&] {
        for (MemoryServerClient *server : servers_) {
            rpc::ServerState *state = reply->add_servers();
            state->set_id(server->id());
            state->set_address(server->address());
        }
        reply->set_authentication(sessions_ ? "munge" : "none");
        for (const std::string &shard : shards_) reply->add_metadata_shards(shard);
        reply->set_provider(provider_);
        reply->set_usage_report_ms(usage_report_ms_.load());
        reply->set_version(FampoolVersion());
        reply->set_unix_time_us(UnixTimeMicros());
        reply->set_open_files(OpenFilesLimit());
    });
}

grpc::Status MetadataRpcService::ReportUsage(grpc::ServerContext *, const rpc::UsageReport *request,
                                             rpc::Empty *) {
    return Serve([&] {
        Identify(request->caller(), "Metadata.ReportUsage");
        usage_.Add(*request);
    });
}

grpc::Status MetadataRpcService::ListItems(grpc::ServerContext *, const rpc::RegionRequest *request,
                                           rpc::ItemList *reply) {
    return Serve([&] {
        RequireOwnRegion(request->region_id(), "Metadata.ListItems");
        for (const ItemInfo &item : store_->ListItems(
                 request->region_id(), Identify(request->caller(), "Metadata.ListItems"))) {
            ToProto(item, reply->add_items());
        }
    });
}

grpc::Status MetadataRpcService::MetadataEndpoint(grpc::ServerContext *, const rpc::Caller *request,
                                                  rpc::FabricEndpoint *reply) {
    if (fabric_) {
        reply->set_provider(fabric_->provider());
        reply->set_address(fabric_->address());
        reply->set_incarnation(fabric_->incarnation());
        reply->set_session_known(sessions_ && sessions_->Known(request->token()));
    }
    return grpc::Status::OK;
}

grpc::Status MetadataRpcService::EndSession(grpc::ServerContext *, const rpc::Caller *request,
                                            rpc::Empty *) {
    return Serve([&] {
        if (sessions_) sessions_->End(request->token());
    });
}

grpc::Status MetadataRpcService::Authenticate(grpc::ServerContext *, const rpc::Credential *request,
                                              rpc::Session *reply) {
    return Serve([&] {
        if (!sessions_) return;  // nothing to prove: an empty token
        SessionTable::Opened opened = sessions_->Open(request->munge(), "Metadata.Authenticate");
        reply->set_token(opened.token);
        reply->set_uid(opened.caller.uid);
        reply->set_gid(opened.caller.gid);
    });
}

}  // namespace fampool
