// The metadata service of a cluster as its clients and the CLI reach it: one MetadataClient
// per shard (common/shards.h), each call sent to the shard that owns its region, found from
// the region's name or id without asking anyone. With one shard it is a MetadataClient with
// one more indirection.
//
// The shards are those the configuration lists, or those shard 0 names when asked for the
// memory servers (Servers): a client configured with the metadata address alone learns them
// there, once, at fam_initialize. Servers must run before the object is shared by threads.
#ifndef FAMPOOL_META_CLIENT_SHARDED_METADATA_H_
#define FAMPOOL_META_CLIENT_SHARDED_METADATA_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/tls.h"
#include "meta/client/metadata_client.h"

namespace fampool {

class ShardedMetadata : public MetadataService {
  public:
    // `addresses`: shard 0's gRPC address first (at least that one). Connects lazily.
    ShardedMetadata(const std::vector<std::string> &addresses, std::chrono::milliseconds timeout,
                    const TlsSettings &tls = TlsSettings());

    size_t shards() const { return shards_.size(); }
    MetadataClient &shard(size_t k) { return *shards_.at(k); }
    // The shard owning the region named `name`, or with id `region_id`; throws
    // Failure(FAM_ERR_INVALID) for an id of a shard this cluster does not have.
    MetadataClient &OfName(const std::string &name);
    MetadataClient &OfRegion(uint64_t region_id);

    // As MetadataClient's, for every shard (and shards learnt later).
    void UseFabric(const FabricConfig &config);
    void UseMunge(const std::string &socket);
    void WaitForService();
    // Opens a session with every shard; true when the service authenticates its callers.
    bool Authenticate();
    uint64_t fabric_calls();

    // The memory servers, from shard 0 (see MetadataClient::Servers); the shards it names
    // replace the configured ones.
    rpc::ServerList Servers(std::chrono::milliseconds within);
    // Each shard's status, shard 0 first, with the regions `caller` may look up.
    std::vector<rpc::ClusterStatus> StatusOfShards(const Caller &caller = ThisProcess());
    // The cluster's status: every shard's regions; each memory server as shard 0 sees it, with
    // the extent bytes all shards placed there.
    rpc::ClusterStatus Status(const Caller &caller = ThisProcess());
    std::vector<ItemInfo> ListItems(uint64_t region_id, const Caller &caller);
    // Rebuilds the lost members of region `region` (its shard), or of every region (every
    // shard in turn).
    rpc::RebuildReply Rebuild(const std::string &region, std::chrono::milliseconds timeout,
                              const Caller &caller = ThisProcess());
    void EndSession() override;

    using MetadataService::CreateRegion;
    RegionInfo CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                            const Fam_Region_Attributes &attributes, const RegionIntent &intent,
                            const Caller &caller) override;
    void DestroyRegion(uint64_t region_id, const Caller &caller) override;
    RegionInfo ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) override;
    RegionInfo LookupRegion(const std::string &name, const Caller &caller) override;
    RegionInfo GetRegion(uint64_t region_id, const Caller &caller) override;
    void ChangeRegionPermissions(uint64_t region_id, uint32_t perm, const Caller &caller) override;
    ItemInfo AllocateItem(uint64_t region_id, const std::string &name, uint64_t size, uint32_t perm,
                          const Caller &caller) override;
    void DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) override;
    ItemInfo LookupItem(const std::string &item, const std::string &region,
                        const Caller &caller) override;
    ItemInfo GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) override;
    void ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                               const Caller &caller) override;
    void Sync() override {}
    // Every shard checks the servers (each keeps the members of its own regions); fails only
    // when no shard could be told.
    void ReportFailure(const std::vector<uint64_t> &servers) override;
    // To shard 0, which counts every client's data path (rpc UsageReport).
    void ReportUsage(const rpc::UsageReport &report, std::chrono::milliseconds timeout) {
        shards_.front()->ReportUsage(report, timeout);
    }

  private:
    void Connect(const std::vector<std::string> &addresses);

    std::chrono::milliseconds timeout_;
    TlsSettings tls_;
    std::vector<std::unique_ptr<MetadataClient>> shards_;
    std::optional<FabricConfig> fabric_;
    std::optional<std::string> munge_socket_;
    bool wait_for_service_ = false;
};

// `statuses` (one per shard, shard 0 first) as one cluster's status: see Status.
rpc::ClusterStatus MergeStatus(const std::vector<rpc::ClusterStatus> &statuses);

}  // namespace fampool

#endif  // FAMPOOL_META_CLIENT_SHARDED_METADATA_H_
