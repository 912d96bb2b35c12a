// The memory server's gRPC service: each call runs on the server's LocalMemoryServer (heaps,
// registrations with its fabric endpoint, copy, backup, restore, atomics). With
// authentication, every call but Info carries the token of a session (rpc/authentication.h);
// the calls that manage extents and fabric keys are taken only from sessions of the cluster
// user (the metadata service's): a client cannot grant itself a key. Backups are handled as
// the session's uid and gid may (the uid and gid the request states, without authentication).
#ifndef FAMPOOL_MEMSERVER_MEMORY_SERVER_SERVICE_H_
#define FAMPOOL_MEMSERVER_MEMORY_SERVER_SERVICE_H_

#include <memory>
#include <string>

#include "fabric/fabric.h"
#include "memserver/local_memory_server.h"
#include "memserver/redundancy.h"
#include "messages/message_service.h"
#include "rpc/authentication.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

class MemoryServerService final : public rpc::MemoryServer::Service {
  public:
    // `redundancy`: the server's side of redundant regions (null: it refuses their calls).
    MemoryServerService(LocalMemoryServer *server, std::string incarnation,
                        RedundancyService *redundancy = nullptr)
        : server_(server), incarnation_(std::move(incarnation)), redundancy_(redundancy) {}

    // Takes calls only from sessions `sessions` opened, and extent, key and resync calls only
    // from sessions of `cluster_user` (the uid that runs the cluster). Set before serving.
    void RequireAuthentication(std::unique_ptr<SessionTable> sessions, uint32_t cluster_user) {
        sessions_ = std::move(sessions);
        cluster_user_ = cluster_user;
    }
    SessionTable *sessions() const { return sessions_.get(); }  // null: no authentication

    // Also takes the redundant-region calls (atomics, mirror writes, stripe atomics, reads and
    // writes) as fabric messages, on an endpoint at config.node (a port of the provider's choosing)
    // that Info names. Calls that reach other servers (mirrored atomics, stripe calls) run on
    // the endpoint's workers.
    void ServeOverFabric(const FabricConfig &config);
    // A call that came as a fabric message, run as its gRPC twin runs (the session token in
    // the message), into `reply` (its outcome as a gRPC status would carry it).
    void ServeFabric(const rpc::FabricCall &call, rpc::FabricReply *reply);
    // Whether a fabric call calls another server (a mirrored atomic with its copy, any stripe
    // call with the other members).
    static bool CallsOut(const rpc::FabricCall &call);
    uint64_t fabric_calls() const { return messages_ ? messages_->answered() : 0; }
    // This run of the server (differs at every start): what Info tells the metadata service.
    const std::string &incarnation() const { return incarnation_; }

    grpc::Status Authenticate(grpc::ServerContext *, const rpc::Credential *,
                              rpc::Session *) override;
    grpc::Status Info(grpc::ServerContext *, const rpc::Empty *, rpc::ServerInfo *) override;
    grpc::Status CreateExtent(grpc::ServerContext *, const rpc::ExtentRequest *,
                              rpc::Empty *) override;
    grpc::Status DestroyExtent(grpc::ServerContext *, const rpc::ExtentRequest *,
                               rpc::Empty *) override;
    grpc::Status ResizeExtent(grpc::ServerContext *, const rpc::ExtentRequest *,
                              rpc::Empty *) override;
    grpc::Status Zero(grpc::ServerContext *, const rpc::ExtentRequest *, rpc::Empty *) override;
    grpc::Status ZeroExtents(grpc::ServerContext *, const rpc::ZeroRequest *,
                             rpc::Empty *) override;
    grpc::Status Copy(grpc::ServerContext *, const rpc::CopyRequest *, rpc::Empty *) override;
    grpc::Status Backup(grpc::ServerContext *, const rpc::BackupRequest *,
                        rpc::BackupRecord *) override;
    grpc::Status DescribeBackup(grpc::ServerContext *, const rpc::BackupRecord *,
                                rpc::BackupRecord *) override;
    grpc::Status Restore(grpc::ServerContext *, const rpc::BackupRequest *, rpc::Empty *) override;
    grpc::Status DeleteBackup(grpc::ServerContext *, const rpc::BackupRecord *,
                              rpc::Empty *) override;
    grpc::Status ListBackups(grpc::ServerContext *, const rpc::Caller *,
                             rpc::BackupList *) override;
    grpc::Status Atomic(grpc::ServerContext *, const rpc::AtomicRequest *,
                        rpc::AtomicReply *) override;
    grpc::Status ApplyElements(grpc::ServerContext *, const rpc::ElementsRequest *,
                               rpc::ElementsReply *) override;
    grpc::Status GrantKey(grpc::ServerContext *, const rpc::ExtentRequest *,
                          rpc::KeyGrant *) override;
    grpc::Status RevokeKeys(grpc::ServerContext *, const rpc::ExtentRequest *,
                            rpc::Empty *) override;
    grpc::Status Mirror(grpc::ServerContext *, const rpc::MirrorRequest *, rpc::Empty *) override;
    grpc::Status Stripe(grpc::ServerContext *, const rpc::StripeRequest *,
                        rpc::StripeReply *) override;
    grpc::Status Resync(grpc::ServerContext *, const rpc::ResyncRequest *, rpc::Empty *) override;
    grpc::Status Populate(grpc::ServerContext *, const rpc::PopulateRequest *,
                          rpc::Empty *) override;
    grpc::Status EndSession(grpc::ServerContext *, const rpc::Empty *, rpc::Empty *) override;

  private:
    RedundancyService &Redundant();
    void ApplyAtomic(const std::string &token, const rpc::AtomicRequest &request,
                     rpc::AtomicReply *reply);
    // The caller of a call with session `token`: its session's uid and gid with authentication
    // (Unauthenticated when the token is not known), else `stated`.
    Caller Identify(const std::string &token, const rpc::Caller &stated, const char *call);
    // With authentication, throws unless the call comes from a session of the cluster user.
    void Authorize(const std::string &token, const char *call);

    LocalMemoryServer *server_;
    std::string incarnation_;
    RedundancyService *redundancy_;
    std::unique_ptr<SessionTable> sessions_;  // null: no authentication
    uint32_t cluster_user_ = 0;
    std::unique_ptr<FabricMessageService> messages_;  // last: it calls into the members above
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_MEMORY_SERVER_SERVICE_H_
