// A memory server reached over gRPC: the MemoryServer interface for the metadata service and
// for clients (copy, backup, restore, fallback atomics) of the memory-server model. The
// metadata service's clients UseMunge: their extent and key calls carry the token of a session
// opened with a MUNGE credential of the metadata service's uid (rpc/authentication.h).
#ifndef FAMPOOL_RPC_MEMORY_SERVER_CLIENT_H_
#define FAMPOOL_RPC_MEMORY_SERVER_CLIENT_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/memory_server.h"
#include "common/tls.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

struct MemoryServerInfo {
    uint64_t id = 0;
    std::string fabric_address;
    std::string incarnation;  // new every time the server process starts
    std::string provider;
    uint64_t capacity = 0;  // bytes of extents it may hold; 0: no limit
    std::string kind;       // its memory (common/memory_kind.h)
    uint64_t bandwidth = 0, latency_ns = 0;
    // Where it takes redundant-region calls as fabric messages (empty address: nowhere).
    std::string messages_provider, messages_address, messages_incarnation;
    uint64_t messages_calls = 0;  // calls it answered there since it started
    // Whether the session Info carried (the caller's, with authentication) is live there.
    bool messages_session_known = false;
    // RAID5 stripe leases granted, and ended by time (memserver/stripe_gate.h), since it started.
    uint64_t stripe_leases = 0, stripe_leases_lapsed = 0;
};

class MemoryServerClient : public MemoryServer {
  public:
    // Over TLS when `tls` is enabled (common/tls.h).
    MemoryServerClient(uint64_t id, std::string address, std::chrono::milliseconds timeout,
                       const TlsSettings &tls = TlsSettings());

    uint64_t id() const override { return id_; }
    bool remote() const override { return true; }
    const std::string &address() const { return address_; }
    MemoryServerInfo Info();
    // A heartbeat's short wait. `wait_for_connection`: the call waits (within `timeout`) for a
    // connection being made, where it would otherwise fail at once while the channel backs
    // off after failed attempts (a server that was stopped, now answering again).
    MemoryServerInfo Info(std::chrono::milliseconds timeout, bool wait_for_connection = false);
    // From Info; its host is the host of its gRPC address.
    MemoryProfile Profile() override;
    // Every call (but Info) proves who makes it with credentials from the munged on `socket`
    // (empty: libmunge's default); a session is opened at the first one, and again when the
    // server no longer knows it (it restarted).
    void UseMunge(const std::string &socket);
    // Ends the session opened with the server, if any (its token stops working there).
    void EndSession() override;
    // The server's life (MemoryServerInfo::incarnation) whose restart the metadata service
    // has handled: CreateExtent names it, and a later life refuses with LifeChanged, so that no
    // region is made on a restarted server before the regions of its earlier life are released
    // (which would release the new one too).
    void KnowLife(const std::string &incarnation);
    bool KnowsLife();

    void CreateExtent(ExtentRef extent, uint64_t size, uint64_t reserve) override;
    void DestroyExtent(ExtentRef extent) override;
    void ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size,
                      uint64_t reserve) override;
    void Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) override;
    void ZeroExtents(const std::vector<ExtentRanges> &extents) override;
    void Copy(const ItemLayout &src, uint64_t src_offset, const ItemLayout &dest,
              uint64_t dest_offset, uint64_t nbytes) override;
    BackupInfo Backup(const ItemLayout &item, const BackupInfo &info) override;
    BackupInfo DescribeBackup(const std::string &name, const Caller &caller) override;
    void Restore(const std::string &name, const ItemLayout &item, const Caller &caller) override;
    void DeleteBackup(const std::string &name, const Caller &caller) override;
    std::vector<BackupInfo> ListBackups(const Caller &caller) override;
    void Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                const void *operand, const void *compare, void *result) override;
    void ApplyElements(ExtentRef extent, uint64_t key, ElementOp op, uint64_t element_size,
                       const std::vector<uint64_t> &offsets, char *data) override;
    KeyGrant GrantKey(ExtentRef extent, uint64_t offset, uint64_t size, bool writable,
                      const Permissions &permissions) override;
    KeyGrant GrantKeyWithin(ExtentRef extent, uint64_t offset, uint64_t size, bool writable,
                            const Permissions &permissions,
                            std::chrono::milliseconds bound) override;
    void RevokeKeys(ExtentRef extent, uint64_t offset) override;

    MirroredAtomicResult MirroredAtomic(const MirroredAtomicCall &call) override;
    void Mirror(const MirrorWrite &call) override;
    std::string Stripe(const StripeCall &call,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) override;
    void Resync(const ResyncCall &call, std::chrono::milliseconds timeout) override;
    void Populate(ExtentRef extent, uint64_t key,
                  const std::vector<std::pair<uint64_t, uint64_t>> &ranges) override;

  protected:
    // The token to send now (a session is opened when none is); `stale`: the token the server
    // did not know, replaced unless another thread replaced it already.
    std::string SessionToken(const std::string *stale = nullptr);
    bool munge() const { return munge_.load(); }
    std::chrono::milliseconds timeout() const { return timeout_; }

  private:
    // A call: with UseMunge, it carries the session token, and is made once more after opening
    // a new session when the server did not know the token.
    template <typename Request, typename Reply>
    void Call(grpc::Status (rpc::MemoryServer::Stub::*method)(grpc::ClientContext *,
                                                              const Request &, Reply *),
              const char *name, const Request &request, Reply *reply,
              std::chrono::milliseconds timeout);

    // Makes `attempt(context)` with a context whose deadline is `timeout`. Until the server was
    // first reached, a call that found no connection (gRPC fails it at once when the channel's
    // first connect fails: a fresh clone's test suite saw a PE's first call to a live server
    // fail so) is made again waiting for one, within what is left of `timeout`, unless the
    // server's port refuses connections (nothing listens there: no wait).
    template <typename Attempt>
    grpc::Status Reaching(std::chrono::milliseconds timeout, Attempt &&attempt);

    uint64_t id_;
    std::string address_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<rpc::MemoryServer::Stub> stub_;
    std::atomic<bool> reached_{false};  // a call was answered (or refused by the server) once
    std::atomic<bool> munge_{false};
    std::mutex session_mutex_;  // held while a session is opened
    std::string munge_socket_;
    std::string token_;
    bool session_open_ = false;
    std::mutex life_mutex_;
    std::string life_;  // KnowLife
};

}  // namespace fampool

#endif  // FAMPOOL_RPC_MEMORY_SERVER_CLIENT_H_
