// The metadata service reached over gRPC: the MetadataService interface for clients of the
// memory-server model, plus the cluster-level calls of the CLI (status, item listing). With
// UseMunge, calls carry the token of a session opened with a MUNGE credential
// (rpc/authentication.h) and open a new one when the service no longer knows it. With
// UseFabric, lookups, fam_stat's reads, item allocation and region creation and destruction
// go over the fabric instead (meta/client/metadata_fabric_client.h), and fall back to gRPC
// when that way is busy or gone. Those calls are defined in metadata_fabric_client.cc, beside
// the fabric exchange; the sessions and the calls only gRPC carries in metadata_client.cc.
#ifndef FAMPOOL_META_CLIENT_METADATA_CLIENT_H_
#define FAMPOOL_META_CLIENT_METADATA_CLIENT_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/tls.h"
#include "messages/message_client.h"
#include "meta/client/metadata_service.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

class MetadataClient : public MetadataService {
  public:
    // Over TLS when `tls` is enabled (common/tls.h).
    MetadataClient(std::string address, std::chrono::milliseconds timeout,
                   const TlsSettings &tls = TlsSettings());
    ~MetadataClient() override;

    // From the next call on, makes the frequent calls over the fabric endpoint the service
    // names in its status, when it has one on config.provider.
    void UseFabric(const FabricConfig &config);
    // From the next call on, a call over gRPC that finds the service unreachable (not sent:
    // the service restarting, say under systemd) waits for it within the call's timeout
    // instead of failing at once (gRPC's wait-for-ready). A program's calls do; the CLI's,
    // which report a stopped cluster, do not.
    void WaitForService() { wait_for_service_ = true; }
    // Calls made over the fabric by the current fabric client.
    uint64_t fabric_calls();
    // From the next call on, proves who calls with MUNGE credentials from the munged on
    // `socket` (empty: libmunge's default): a session is opened at the first call the service
    // refuses for want of one, or by Authenticate.
    void UseMunge(const std::string &socket);
    // Opens a session now (UseMunge first). Throws Failure(FAM_ERR_NOPERM) naming the cause
    // when munged or the service refuses. An empty token: the service does not authenticate.
    rpc::Session Authenticate();

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

    // The servers, and the regions `caller` may look up (all of them for the cluster user).
    rpc::ClusterStatus Status(const Caller &caller = ThisProcess());
    // What the regions of `uid` and of group `gid` take of this shard (the cluster user's call:
    // another shard's, counting a quota).
    rpc::QuotaTaken QuotaUsage(uint32_t uid, uint32_t gid, const Caller &caller = ThisProcess());
    void ReportFailure(const std::vector<uint64_t> &servers) override;
    // Sends what this process did on its data path (rpc UsageReport), within `timeout`.
    void ReportUsage(rpc::UsageReport report, std::chrono::milliseconds timeout);
    // The cluster user's call (or the owner's, for the one region it names).
    rpc::RebuildReply Rebuild(const std::string &region, std::chrono::milliseconds timeout,
                              const Caller &caller = ThisProcess());
    // Ends the session opened with the service, if any: its token is refused from then on.
    void EndSession() override;
    // The memory servers, asked again while the service is unreachable or slow to answer (a
    // job's PEs connecting at once), with growing pauses, until `within` has passed; but only
    // kRefusedBound while every attempt is refused at connect (nothing listens: a cluster not
    // up), and then the error says to start one.
    rpc::ServerList Servers(std::chrono::milliseconds within);
    static constexpr std::chrono::milliseconds kRefusedBound{5000};
    std::vector<ItemInfo> ListItems(uint64_t region_id, const Caller &caller);
    const std::string &address() const { return address_; }

  private:
    // One call: a context whose deadline (`timeout`, or the client's) bounds it, then the
    // status turned into a Failure.
    template <typename Request, typename Reply>
    void Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *, const Request &,
                                                          Reply *),
              const char *name, const Request &request, Reply *reply,
              std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
    // The same over the fabric when it is in use: the request goes in the FabricCall field
    // `call_field`, the reply comes from the FabricReply field `reply_field`. An `idempotent`
    // call (a lookup) is made again over gRPC when the service went away with it in flight.
    // True when the reply holds only where an allocated item is (item_partial) or which
    // region was created (region_partial).
    template <typename Request, typename Reply>
    bool Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *, const Request &,
                                                          Reply *),
              const char *name, const Request &request, Reply *reply,
              Request *(rpc::FabricCall::*call_field)(), Reply *(rpc::FabricReply::*reply_field)(),
              bool idempotent);
    RegionInfo GetRegionOverGrpc(uint64_t region_id, const Caller &caller);
    // Puts the session token into `caller`; returns it.
    std::string Stamp(rpc::Caller *caller);
    // After a call stamped with `token` ended with `status`: true when the service did not
    // know the session, and a new one is open (unless another thread opened one already).
    bool Reauthenticated(const grpc::Status &status, const std::string &token);
    rpc::Session OpenSession();  // under session_mutex_
    // Where the service takes fabric calls now, asked over gRPC; empty when it does not
    // answer or has no endpoint. With authentication, the session the ask carried is renewed
    // when the service no longer knows it (a sealed message naming it would be dropped).
    rpc::FabricEndpoint AskFabricEndpoint();

    // A hint for a failed connection whose `error` looks like a TLS mismatch; "" otherwise.
    std::string TlsHint(const std::string &error) const;

    std::string address_;
    std::chrono::milliseconds timeout_;
    bool tls_ = false;
    std::unique_ptr<rpc::Metadata::Stub> stub_;

    std::atomic<bool> munge_{false};
    std::mutex session_mutex_;  // held while a session is opened
    std::string munge_socket_;
    std::string token_;
    bool session_open_ = false;

    MessageRoute fabric_{"metadata service"};
    SealCache seals_;  // of the session's token, for fabric calls
    bool wait_for_service_ = false;
};

}  // namespace fampool

#endif  // FAMPOOL_META_CLIENT_METADATA_CLIENT_H_
