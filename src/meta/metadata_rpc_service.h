// The metadata service's gRPC face: each call runs on the MetadataStore with the caller's
// identity: the uid and gid the caller states, or, with authentication, those of the session
// its token names (rpc/authentication.h). A monitor thread asks every memory server for its
// incarnation (a heartbeat, every period): a restarted server has lost its volatile heaps and
// its registrations, and the store is told so; a server that misses kMissedHeartbeats in a
// row (or one a client reports and that does not answer) is dead, and its members of
// redundant regions are lost. Lost members are rebuilt (metadata_health.cc) on `Rebuild`, and
// at once when their own server comes back or a spare is alive.
#ifndef FAMPOOL_META_METADATA_RPC_SERVICE_H_
#define FAMPOOL_META_METADATA_RPC_SERVICE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "meta/client_usage.h"
#include "meta/metadata_store.h"
#include "rpc/authentication.h"
#include "rpc/fampool.grpc.pb.h"
#include "rpc/memory_server_client.h"

namespace fampool {

class FabricMessageService;

class MetadataRpcService final : public rpc::Metadata::Service {
  public:
    MetadataRpcService(MetadataStore *store, std::vector<MemoryServerClient *> servers);
    ~MetadataRpcService() override;

    // Checks every server now, then every `period` on a background thread.
    void StartMonitor(std::chrono::milliseconds period);
    // Stops the heartbeats (and waits for a rebuild in progress): at shutdown, when the
    // memory servers go too.
    void StopMonitor();
    // A server is dead after kMissedHeartbeats refused heartbeats in a row (its process is
    // gone: nothing listens on its port), or kSlowHeartbeats that timed out (it may only be
    // overloaded: a full test run on 2 cores once timed a live server out twice in a row).
    static constexpr int kMissedHeartbeats = 2;
    static constexpr int kSlowHeartbeats = 8;
    static constexpr std::chrono::milliseconds kHeartbeatTimeout{250};
    // The last heartbeat before a server would be declared dead for timeouts waits this long
    // (a live server on a loaded machine answers; a stopped or unreachable one does not).
    static constexpr std::chrono::milliseconds kConfirmTimeout{2000};
    // The fabric endpoint that takes the frequent calls too, named to clients in Status. Set
    // before serving; it must outlive the service's last Status call.
    void AdvertiseFabric(const FabricMessageService *fabric) { fabric_ = fabric; }
    // This service is shard `shard` of the metadata service, whose shards are at `addresses`
    // (common/shards.h): it takes calls only for the regions it owns, refusing others by name,
    // and names every shard to clients in Servers. Set before serving; without it, the only
    // shard.
    void ServeAsShard(uint32_t shard, std::vector<std::string> addresses);
    // The cluster's libfabric provider, told to clients in ServerList.
    void SetProvider(std::string provider) { provider_ = std::move(provider); }
    // Authenticates callers with MUNGE: every call is made as the uid and gid of the session
    // its token names (the stated ones are not used). Set before serving.
    void RequireAuthentication(std::unique_ptr<SessionTable> sessions) {
        sessions_ = std::move(sessions);
    }
    SessionTable *sessions() const { return sessions_.get(); }  // null: no authentication

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
    grpc::Status Status(grpc::ServerContext *, const rpc::StatusRequest *,
                        rpc::ClusterStatus *) override;
    grpc::Status Servers(grpc::ServerContext *, const rpc::Empty *, rpc::ServerList *) override;
    grpc::Status ListItems(grpc::ServerContext *, const rpc::RegionRequest *,
                           rpc::ItemList *) override;
    grpc::Status MetadataEndpoint(grpc::ServerContext *, const rpc::Caller *,
                                  rpc::FabricEndpoint *) override;
    grpc::Status ReportFailure(grpc::ServerContext *, const rpc::ServerReport *,
                               rpc::Empty *) override;
    grpc::Status Rebuild(grpc::ServerContext *, const rpc::RebuildRequest *,
                         rpc::RebuildReply *) override;
    grpc::Status Authenticate(grpc::ServerContext *, const rpc::Credential *,
                              rpc::Session *) override;
    grpc::Status EndSession(grpc::ServerContext *, const rpc::Caller *, rpc::Empty *) override;
    grpc::Status ReportUsage(grpc::ServerContext *, const rpc::UsageReport *,
                             rpc::Empty *) override;
    grpc::Status QuotaUsage(grpc::ServerContext *, const rpc::QuotaUsageRequest *,
                            rpc::QuotaTaken *) override;

    // Reports this shard's gauges (memory servers' health and heartbeats, capacity and use,
    // regions and their members, sessions, clients) at every scrape until the handle is
    // dropped, which must happen before the service goes (metadata_metrics.cc); and asks
    // clients to report their data path every `usage_report` (shard 0 only). `per_region`:
    // also one series per region, labelled with its name (which anyone reaching the endpoint
    // then sees); else the regions' totals only.
    std::shared_ptr<void> CollectMetrics(std::chrono::milliseconds usage_report, bool per_region);

  private:
    // fampool_rebuilt_members_total and fampool_rebuilt_bytes_total (metadata_metrics.cc).
    static metrics::Counter &RebuiltMembers();
    static metrics::Counter &RebuiltBytes();
    // The user that runs the cluster (this process's): it sees every region in Status and may
    // rebuild any.
    bool IsClusterUser(const Caller &caller) const { return caller.uid == cluster_user_; }
    void CheckServers();
    // A server answered with its life `incarnation`: a life other than the one last seen is a
    // restart, whose volatile regions are released (members of redundant ones lost). Under
    // check_mutex_.
    void NoteLife(MemoryServerClient *server, const std::string &incarnation);
    // Asks servers their life now and handles the restarts (NoteLife): every server when `all`
    // (one refused an extent for a life it no longer has, LifeChanged, and the call is made
    // again), else those whose life this service has not seen yet, before a region is made:
    // an extent made on a life never seen could not be told from a later life's (a server
    // killed before the monitor's first heartbeat reached it kept its regions past its
    // restart, seen once in a full test run).
    void AdoptLives(bool all);
    // Throw Failure(FAM_ERR_INVALID) when another shard owns the region named `name` or with
    // id `region_id`: the caller's list of shards differs from the cluster's.
    void RequireOwnName(const std::string &name, const char *call) const;
    void RequireOwnRegion(uint64_t region_id, const char *call) const;
    // Who makes the call `call`: the stated uid and gid without authentication, else the
    // session's (throws Unauthenticated when the token names none).
    Caller Identify(const rpc::Caller &caller, const char *call);
    // The server is dead: marks its members lost (once).
    void ServerDied(uint64_t id);
    // Whether one more timed-out heartbeat declares the server dead.
    bool SlowToDeath(uint64_t id);
    std::set<uint64_t> Alive();
    // Rebuilds lost members (of region `name`, or all): on their own server or a spare when
    // `automatic`, else on any suitable live server. Members whose partners are all healthy are
    // marked rebuilding first, then each is rebuilt in turn; the others are marked at their
    // turn, after them.
    void RebuildLost(const std::string &name, bool automatic, rpc::RebuildReply *reply);
    // Rebuilds a member the store marked rebuilding on `target`, at once: writers that did not
    // see the marking make their writes again once they did (transport/redundant/
    // redundant_transport.h); `result` gets its bytes and its time.
    void RebuildMember(uint64_t region_id, const Caller &caller, size_t member, uint64_t target,
                       rpc::RebuiltMember *result);
    // Starts RebuildLost(automatic) on a thread when a lost member has its own server back or
    // a spare, unless one runs.
    void MaybeRebuild();

    MetadataStore *store_;
    std::vector<MemoryServerClient *> servers_;
    uint32_t shard_ = 0;
    std::vector<std::string> shards_;  // every shard's address when there are several
    std::string provider_;
    const FabricMessageService *fabric_ = nullptr;
    std::unique_ptr<SessionTable> sessions_;  // null: no authentication
    uint32_t cluster_user_ = static_cast<uint32_t>(geteuid());
    std::mutex monitor_mutex_;
    std::condition_variable monitor_wake_;
    bool stopping_ = false;
    std::thread monitor_;
    std::mutex check_mutex_;
    std::mutex health_mutex_;
    std::map<uint64_t, int> missed_;  // heartbeats missed in a row, by server
    std::set<uint64_t> dead_;         // declared dead, not answering since
    // Answered a heartbeat of this service at least once: until then a refused heartbeat
    // counts as a missed one (a server started beside the service may not listen yet).
    std::set<uint64_t> answered_;
    // When each server last answered a heartbeat (for the metrics).
    std::map<uint64_t, std::chrono::steady_clock::time_point> last_heartbeat_;
    ClientUsage usage_;                         // what clients report of their data path
    std::atomic<uint32_t> usage_report_ms_{0};  // asked of clients in Servers; 0: no reports
    std::mutex rebuild_mutex_;                  // one rebuild at a time
    std::atomic<bool> rebuilding_{false};
    std::thread rebuilder_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_RPC_SERVICE_H_
