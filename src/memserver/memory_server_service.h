// The memory server's gRPC service: each call runs on the server's LocalMemoryServer (heaps,
// registrations with its fabric endpoint, copy, backup, restore, atomics). With
// authentication, the calls that manage extents and fabric keys are taken only with the token
// of a session the metadata service opened (rpc/authentication.h): a client cannot grant
// itself a key.
#ifndef FAMPOOL_MEMSERVER_MEMORY_SERVER_SERVICE_H_
#define FAMPOOL_MEMSERVER_MEMORY_SERVER_SERVICE_H_

#include <memory>
#include <string>

#include "memserver/local_memory_server.h"
#include "memserver/redundancy.h"
#include "rpc/authentication.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

class MemoryServerService final : public rpc::MemoryServer::Service {
  public:
    // `redundancy`: the server's side of redundant regions (null: it refuses their calls).
    MemoryServerService(LocalMemoryServer *server, std::string incarnation,
                        RedundancyService *redundancy = nullptr)
        : server_(server), incarnation_(std::move(incarnation)), redundancy_(redundancy) {}

    // Takes extent and key calls only from sessions `sessions` opened (its only_uid: the uid
    // that runs the cluster). Set before serving.
    void RequireAuthentication(std::unique_ptr<SessionTable> sessions) {
        sessions_ = std::move(sessions);
    }

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
    grpc::Status ListBackups(grpc::ServerContext *, const rpc::Empty *,
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

  private:
    RedundancyService &Redundant();
    // Throws Unauthenticated unless the call carries a known session's token (or no
    // authentication is required).
    void Authorize(const grpc::ServerContext &context, const char *call);

    LocalMemoryServer *server_;
    std::string incarnation_;
    RedundancyService *redundancy_;
    std::unique_ptr<SessionTable> sessions_;  // null: no authentication
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_MEMORY_SERVER_SERVICE_H_
