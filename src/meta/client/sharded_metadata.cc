#include "meta/client/sharded_metadata.h"

#include <map>

#include "common/error.h"
#include "common/shards.h"

namespace fampool {

ShardedMetadata::ShardedMetadata(const std::vector<std::string> &addresses,
                                 std::chrono::milliseconds timeout, const TlsSettings &tls)
    : timeout_(timeout), tls_(tls) {
    if (addresses.empty()) Fail(openfam::FAM_ERR_INVALID, "no metadata service address");
    Connect(addresses);
}

void ShardedMetadata::Connect(const std::vector<std::string> &addresses) {
    std::vector<std::unique_ptr<MetadataClient>> clients;
    for (size_t k = 0; k < addresses.size(); ++k) {
        // A shard known already keeps its client (and its session, its fabric endpoint).
        if (k < shards_.size() && shards_[k]->address() == addresses[k]) {
            clients.push_back(std::move(shards_[k]));
            continue;
        }
        auto client = std::make_unique<MetadataClient>(addresses[k], timeout_, tls_);
        if (munge_socket_) client->UseMunge(*munge_socket_);
        if (fabric_) client->UseFabric(*fabric_);
        if (wait_for_service_) client->WaitForService();
        clients.push_back(std::move(client));
    }
    shards_ = std::move(clients);
}

MetadataClient &ShardedMetadata::OfName(const std::string &name) {
    return *shards_[ShardOfName(name, static_cast<uint32_t>(shards_.size()))];
}

MetadataClient &ShardedMetadata::OfRegion(uint64_t region_id) {
    uint32_t shard = ShardOfRegion(region_id);
    if (shard >= shards_.size()) {
        Fail(openfam::FAM_ERR_INVALID,
             "region id {} belongs to metadata shard {}, and the metadata service of {} has {} "
             "shard{}",
             region_id, shard, shards_[0]->address(), shards_.size(),
             shards_.size() == 1 ? "" : "s");
    }
    return *shards_[shard];
}

void ShardedMetadata::UseFabric(const FabricConfig &config) {
    fabric_ = config;
    for (auto &shard : shards_) shard->UseFabric(config);
}

void ShardedMetadata::UseMunge(const std::string &socket) {
    munge_socket_ = socket;
    for (auto &shard : shards_) shard->UseMunge(socket);
}

void ShardedMetadata::WaitForService() {
    wait_for_service_ = true;
    for (auto &shard : shards_) shard->WaitForService();
}

bool ShardedMetadata::Authenticate() {
    bool authenticated = false;
    for (auto &shard : shards_) authenticated |= !shard->Authenticate().token().empty();
    return authenticated;
}

uint64_t ShardedMetadata::fabric_calls() {
    uint64_t calls = 0;
    for (auto &shard : shards_) calls += shard->fabric_calls();
    return calls;
}

rpc::ServerList ShardedMetadata::Servers(std::chrono::milliseconds within) {
    rpc::ServerList list = shards_[0]->Servers(within);
    if (list.metadata_shards_size() > 0) {
        if (list.metadata_shards(0) != shards_[0]->address()) {
            Fail(openfam::FAM_ERR_RPC,
                 "the metadata service at {} says shard 0 of the cluster is at {}: it is not "
                 "shard 0, or the cluster's addresses differ from the configuration's",
                 shards_[0]->address(), list.metadata_shards(0));
        }
        Connect({list.metadata_shards().begin(), list.metadata_shards().end()});
    } else if (shards_.size() > 1) {
        Fail(openfam::FAM_ERR_RPC,
             "the configuration lists {} metadata shards, but the metadata service at {} runs "
             "as the only one",
             shards_.size(), shards_[0]->address());
    }
    return list;
}

std::vector<rpc::ClusterStatus> ShardedMetadata::StatusOfShards(const Caller &caller) {
    std::vector<rpc::ClusterStatus> statuses;
    for (auto &shard : shards_) statuses.push_back(shard->Status(caller));
    return statuses;
}

rpc::ClusterStatus ShardedMetadata::Status(const Caller &caller) {
    return MergeStatus(StatusOfShards(caller));
}

void ShardedMetadata::EndSession() {
    for (auto &shard : shards_) shard->EndSession();
}

rpc::ClusterStatus MergeStatus(const std::vector<rpc::ClusterStatus> &statuses) {
    if (statuses.empty()) return {};
    rpc::ClusterStatus merged = statuses[0];
    std::map<uint64_t, rpc::ServerState *> by_id;
    for (rpc::ServerState &server : *merged.mutable_servers()) by_id[server.id()] = &server;
    for (size_t k = 1; k < statuses.size(); ++k) {
        for (const rpc::ServerState &server : statuses[k].servers()) {
            auto found = by_id.find(server.id());
            if (found == by_id.end()) continue;
            found->second->set_extent_bytes(found->second->extent_bytes() + server.extent_bytes());
        }
        for (const rpc::RegionUsage &region : statuses[k].regions()) {
            *merged.add_regions() = region;
        }
        merged.set_metadata_fabric_calls(merged.metadata_fabric_calls() +
                                         statuses[k].metadata_fabric_calls());
    }
    return merged;
}

std::vector<ItemInfo> ShardedMetadata::ListItems(uint64_t region_id, const Caller &caller) {
    return OfRegion(region_id).ListItems(region_id, caller);
}

rpc::RebuildReply ShardedMetadata::Rebuild(const std::string &region,
                                           std::chrono::milliseconds timeout,
                                           const Caller &caller) {
    if (!region.empty()) return OfName(region).Rebuild(region, timeout, caller);
    rpc::RebuildReply all;
    for (auto &shard : shards_) {
        rpc::RebuildReply reply = shard->Rebuild(region, timeout, caller);
        for (const rpc::RebuiltMember &member : reply.members()) *all.add_members() = member;
    }
    return all;
}

RegionInfo ShardedMetadata::CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                         const Fam_Region_Attributes &attributes,
                                         const RegionIntent &intent, const Caller &caller) {
    return OfName(name).CreateRegion(name, size, perm, attributes, intent, caller);
}

void ShardedMetadata::DestroyRegion(uint64_t region_id, const Caller &caller) {
    OfRegion(region_id).DestroyRegion(region_id, caller);
}

RegionInfo ShardedMetadata::ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) {
    return OfRegion(region_id).ResizeRegion(region_id, size, caller);
}

RegionInfo ShardedMetadata::LookupRegion(const std::string &name, const Caller &caller) {
    return OfName(name).LookupRegion(name, caller);
}

RegionInfo ShardedMetadata::GetRegion(uint64_t region_id, const Caller &caller) {
    return OfRegion(region_id).GetRegion(region_id, caller);
}

void ShardedMetadata::ChangeRegionPermissions(uint64_t region_id, uint32_t perm,
                                              const Caller &caller) {
    OfRegion(region_id).ChangeRegionPermissions(region_id, perm, caller);
}

ItemInfo ShardedMetadata::AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                                       uint32_t perm, const Caller &caller) {
    return OfRegion(region_id).AllocateItem(region_id, name, size, perm, caller);
}

void ShardedMetadata::DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    OfRegion(region_id).DeallocateItem(region_id, offset, caller);
}

ItemInfo ShardedMetadata::LookupItem(const std::string &item, const std::string &region,
                                     const Caller &caller) {
    return OfName(region).LookupItem(item, region, caller);
}

ItemInfo ShardedMetadata::GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    return OfRegion(region_id).GetItem(region_id, offset, caller);
}

void ShardedMetadata::ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                                            const Caller &caller) {
    OfRegion(region_id).ChangeItemPermissions(region_id, offset, perm, caller);
}

void ShardedMetadata::ReportFailure(const std::vector<uint64_t> &servers) {
    std::optional<Failure> last;
    size_t told = 0;
    for (auto &shard : shards_) {
        try {
            shard->ReportFailure(servers);
            ++told;
        } catch (const Failure &failure) {
            last = failure;
        }
    }
    if (told == 0 && last) throw *last;
}

}  // namespace fampool
