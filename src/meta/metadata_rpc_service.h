// The metadata service's gRPC face: each call runs on the MetadataStore with the caller's
// identity. A monitor thread asks every memory server for its incarnation: a restarted server
// has lost its volatile heaps and its registrations, and the store is told so.
#ifndef FAMPOOL_META_METADATA_RPC_SERVICE_H_
#define FAMPOOL_META_METADATA_RPC_SERVICE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "rpc/memory_server_client.h"
#include "meta/metadata_store.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

class MetadataFabricService;

class MetadataRpcService final : public rpc::Metadata::Service {
  public:
    MetadataRpcService(MetadataStore *store, std::vector<MemoryServerClient *> servers);
    ~MetadataRpcService() override;

    // Checks every server now, then every `period` on a background thread.
    void StartMonitor(std::chrono::milliseconds period);
    // The fabric endpoint that takes the frequent calls too, named to clients in Status. Set
    // before serving; it must outlive the service's last Status call.
    void AdvertiseFabric(const MetadataFabricService *fabric) { fabric_ = fabric; }

    grpc::Status CreateRegion(grpc::ServerContext *, const rpc::CreateRegionRequest *,
                              rpc::Region *) override;
    grpc::Status DestroyRegion(grpc::ServerContext *, const rpc::RegionRequest *,
                               rpc::Empty *) override;
    grpc::Status ResizeRegion(grpc::ServerContext *, const rpc::RegionRequest *,
                              rpc::Region *) override;
    grpc::Status LookupRegion(grpc::ServerContext *, const rpc::LookupRequest *,
                              rpc::Region *) override;
    grpc::Status GetRegion(grpc::ServerContext *, const rpc::RegionRequest *,
                           rpc::Region *) override;
    grpc::Status ChangeRegionPermissions(grpc::ServerContext *, const rpc::RegionRequest *,
                                         rpc::Empty *) override;
    grpc::Status AllocateItem(grpc::ServerContext *, const rpc::AllocateRequest *,
                              rpc::Item *) override;
    grpc::Status DeallocateItem(grpc::ServerContext *, const rpc::ItemRequest *,
                                rpc::Empty *) override;
    grpc::Status LookupItem(grpc::ServerContext *, const rpc::LookupRequest *,
                            rpc::Item *) override;
    grpc::Status GetItem(grpc::ServerContext *, const rpc::ItemRequest *, rpc::Item *) override;
    grpc::Status ChangeItemPermissions(grpc::ServerContext *, const rpc::ItemRequest *,
                                       rpc::Empty *) override;
    grpc::Status Status(grpc::ServerContext *, const rpc::Empty *,
                        rpc::ClusterStatus *) override;
    grpc::Status Servers(grpc::ServerContext *, const rpc::Empty *, rpc::ServerList *) override;
    grpc::Status ListItems(grpc::ServerContext *, const rpc::RegionRequest *,
                           rpc::ItemList *) override;
    grpc::Status MetadataEndpoint(grpc::ServerContext *, const rpc::Empty *,
                                  rpc::FabricEndpoint *) override;

  private:
    void CheckServers();

    MetadataStore *store_;
    std::vector<MemoryServerClient *> servers_;
    const MetadataFabricService *fabric_ = nullptr;
    std::mutex monitor_mutex_;
    std::condition_variable monitor_wake_;
    bool stopping_ = false;
    std::thread monitor_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_RPC_SERVICE_H_
