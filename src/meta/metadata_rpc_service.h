// The metadata service's gRPC face: each call runs on the MetadataStore with the caller's
// identity: the uid and gid the caller states, or, with authentication, those of the session
// its token names (rpc/authentication.h). A monitor thread asks every memory server for its
// incarnation: a restarted server has lost its volatile heaps and its registrations, and the
// store is told so.
#ifndef FAMPOOL_META_METADATA_RPC_SERVICE_H_
#define FAMPOOL_META_METADATA_RPC_SERVICE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "rpc/authentication.h"
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
    // Authenticates callers with MUNGE: every call is made as the uid and gid of the session
    // its token names (the stated ones are not used). Set before serving.
    void RequireAuthentication(std::unique_ptr<SessionTable> sessions) {
        sessions_ = std::move(sessions);
    }

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
    grpc::Status Authenticate(grpc::ServerContext *, const rpc::Credential *,
                              rpc::Session *) override;

  private:
    void CheckServers();
    // Who makes the call `call`: the stated uid and gid without authentication, else the
    // session's (throws Unauthenticated when the token names none).
    Caller Identify(const rpc::Caller &caller, const char *call);

    MetadataStore *store_;
    std::vector<MemoryServerClient *> servers_;
    const MetadataFabricService *fabric_ = nullptr;
    std::unique_ptr<SessionTable> sessions_;  // null: no authentication
    std::mutex monitor_mutex_;
    std::condition_variable monitor_wake_;
    bool stopping_ = false;
    std::thread monitor_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_RPC_SERVICE_H_
