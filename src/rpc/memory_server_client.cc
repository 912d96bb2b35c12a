#include "rpc/memory_server_client.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/data_path.h"
#include "common/network.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

rpc::ExtentRequest Request(ExtentRef extent, uint64_t offset = 0, uint64_t size = 0) {
    rpc::ExtentRequest request;
    ToProto(extent, request.mutable_extent());
    request.set_offset(offset);
    request.set_size(size);
    return request;
}

// How long the check that nothing listens on a server's port waits for the kernel's answer.
constexpr std::chrono::milliseconds kPortProbe{200};

// Long operations (copy, backup, restore of large items) get a deadline that grows with the
// bytes moved, at a pessimistic 100 MB/s.
std::chrono::milliseconds ForBytes(std::chrono::milliseconds base, uint64_t bytes) {
    return base + std::chrono::milliseconds(bytes / (100 * 1000));
}

}  // namespace

MemoryServerClient::MemoryServerClient(uint64_t id, std::string address,
                                       std::chrono::milliseconds timeout, const TlsSettings &tls)
    : id_(id),
      address_(std::move(address)),
      timeout_(timeout),
      channel_(OpenChannel(address_, tls)),
      stub_(rpc::MemoryServer::NewStub(channel_)) {}

template <typename Attempt>
grpc::Status MemoryServerClient::Reaching(std::chrono::milliseconds timeout, Attempt &&attempt) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    grpc::Status status = attempt(CallContext(timeout).get());
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) {
        reached_.store(true);
        return status;
    }
    // A port that refuses has no server behind it (it died, or is not started yet): that is
    // said at once, as before; the kernel tells (common/network.h).
    if (reached_.load() || PortRefuses(address_, kPortProbe)) return status;
    auto left =
        timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (left.count() <= 0) return status;
    auto context = CallContext(left);
    context->set_wait_for_ready(true);
    grpc::Status again = attempt(context.get());
    if (again.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        channel_->GetState(false) != GRPC_CHANNEL_READY) {
        // Still no connection: the first failure says why.
        return grpc::Status(status.error_code(), status.error_message() +
                                                     " (no connection within " +
                                                     std::to_string(timeout.count()) + " ms)");
    }
    if (again.error_code() != grpc::StatusCode::UNAVAILABLE) reached_.store(true);
    return again;
}

void MemoryServerClient::UseMunge(const std::string &socket) {
    std::lock_guard<std::mutex> lock(session_mutex_);
    munge_socket_ = socket;
    munge_ = true;
}

void MemoryServerClient::EndSession() {
    std::lock_guard<std::mutex> lock(session_mutex_);
    if (!session_open_) return;
    session_open_ = false;
    rpc::Empty request, reply;
    auto context = CallContext(std::min(timeout_, std::chrono::milliseconds(1000)));
    context->AddMetadata(kTokenHeader, token_);
    // Best effort: a server that does not answer has lost its sessions, or will on restart.
    (void)stub_->EndSession(context.get(), request, &reply);
    token_.clear();
}

std::string MemoryServerClient::SessionToken(const std::string *stale) {
    std::lock_guard<std::mutex> lock(session_mutex_);
    if (stale && *stale == token_) session_open_ = false;
    if (!session_open_) {
        rpc::Credential credential;
        credential.set_munge(
            MakeCredential(munge_socket_, MemoryServerAudience(id_), "MemoryServer.Authenticate"));
        rpc::Session session;
        grpc::Status status = Reaching(timeout_, [&](grpc::ClientContext *context) {
            return stub_->Authenticate(context, credential, &session);
        });
        CheckStatus(status, "MemoryServer.Authenticate", address_);
        token_ = session.token();
        session_open_ = true;
    }
    return token_;
}

template <typename Request, typename Reply>
void MemoryServerClient::Call(grpc::Status (rpc::MemoryServer::Stub::*method)(grpc::ClientContext *,
                                                                              const Request &,
                                                                              Reply *),
                              const char *name, const Request &request, Reply *reply,
                              std::chrono::milliseconds timeout) {
    for (int attempt = 0;; ++attempt) {
        std::string token;
        if (munge_) token = SessionToken();
        grpc::Status status = Reaching(timeout, [&](grpc::ClientContext *context) {
            if (munge_) context->AddMetadata(kTokenHeader, token);
            return ((*stub_).*method)(context, request, reply);
        });
        if (munge_ && attempt == 0 && status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
            SessionToken(&token);
            continue;
        }
        CheckStatus(status, name, address_);
        return;
    }
}

MemoryServerInfo MemoryServerClient::Info() { return Info(timeout_); }

MemoryServerInfo MemoryServerClient::Info(std::chrono::milliseconds timeout,
                                          bool wait_for_connection) {
    rpc::Empty request;
    rpc::ServerInfo reply;
    auto context = CallContext(timeout);
    context->set_wait_for_ready(wait_for_connection);
    {
        // Info needs no session: one open is shown, so the reply says whether it is live.
        std::lock_guard<std::mutex> lock(session_mutex_);
        if (munge_ && session_open_) context->AddMetadata(kTokenHeader, token_);
    }
    CheckStatus(stub_->Info(context.get(), request, &reply), "MemoryServer.Info", address_);
    return MemoryServerInfo{reply.id(),
                            reply.fabric_address(),
                            reply.incarnation(),
                            reply.provider(),
                            reply.capacity(),
                            reply.kind(),
                            reply.bandwidth(),
                            reply.latency_ns(),
                            reply.messages().provider(),
                            reply.messages().address(),
                            reply.messages().incarnation(),
                            reply.messages().calls(),
                            reply.messages().session_known(),
                            reply.stripe_leases(),
                            reply.stripe_leases_lapsed()};
}

MemoryProfile MemoryServerClient::Profile() {
    // A placement waits on it: a dead server must not cost the call the whole RPC timeout.
    MemoryServerInfo info = Info(std::min(timeout_, std::chrono::milliseconds(1000)));
    return MemoryProfile{info.kind,     info.bandwidth,   info.latency_ns,
                         info.capacity, HostOf(address_), true};
}

void MemoryServerClient::KnowLife(const std::string &incarnation) {
    std::lock_guard<std::mutex> lock(life_mutex_);
    life_ = incarnation;
}

bool MemoryServerClient::KnowsLife() {
    std::lock_guard<std::mutex> lock(life_mutex_);
    return !life_.empty();
}

void MemoryServerClient::CreateExtent(ExtentRef extent, uint64_t size, uint64_t reserve) {
    rpc::ExtentRequest request = Request(extent, 0, size);
    request.set_reserve(reserve);
    {
        std::lock_guard<std::mutex> lock(life_mutex_);
        request.set_life(life_);
    }
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::CreateExtent, "MemoryServer.CreateExtent", request, &reply,
         timeout_);
}

void MemoryServerClient::DestroyExtent(ExtentRef extent) {
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::DestroyExtent, "MemoryServer.DestroyExtent", Request(extent),
         &reply, timeout_);
}

void MemoryServerClient::ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size,
                                      uint64_t reserve) {
    rpc::ExtentRequest request = Request(extent, 0, old_size);
    request.set_new_size(new_size);
    request.set_reserve(reserve);
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::ResizeExtent, "MemoryServer.ResizeExtent", request, &reply,
         timeout_);
}

void MemoryServerClient::Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) {
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::Zero, "MemoryServer.Zero", Request(extent, offset, nbytes),
         &reply, ForBytes(timeout_, nbytes));
}

void MemoryServerClient::ZeroExtents(const std::vector<ExtentRanges> &extents) {
    rpc::ZeroRequest request;
    uint64_t bytes = 0;
    for (const ExtentRanges &each : extents) {
        rpc::ExtentRanges *message = request.add_extents();
        ToProto(each.extent, message->mutable_extent());
        for (auto [offset, nbytes] : each.ranges) {
            rpc::ByteRange *range = message->add_ranges();
            range->set_offset(offset);
            range->set_size(nbytes);
            bytes += nbytes;
        }
    }
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::ZeroExtents, "MemoryServer.ZeroExtents", request, &reply,
         ForBytes(timeout_, bytes));
}

void MemoryServerClient::Copy(const ItemLayout &src, uint64_t src_offset, const ItemLayout &dest,
                              uint64_t dest_offset, uint64_t nbytes) {
    rpc::CopyRequest request;
    ToProto(src, request.mutable_src());
    request.set_src_offset(src_offset);
    ToProto(dest, request.mutable_dest());
    request.set_dest_offset(dest_offset);
    request.set_size(nbytes);
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::Copy, "MemoryServer.Copy", request, &reply,
         ForBytes(timeout_, nbytes));
}

BackupInfo MemoryServerClient::Backup(const ItemLayout &item, const BackupInfo &info) {
    rpc::BackupRequest request;
    ToProto(item, request.mutable_item());
    ToProto(info, request.mutable_info());
    rpc::BackupRecord reply;
    Call(&rpc::MemoryServer::Stub::Backup, "MemoryServer.Backup", request, &reply,
         ForBytes(timeout_, info.size));
    return FromProto(reply);
}

BackupInfo MemoryServerClient::DescribeBackup(const std::string &name, const Caller &caller) {
    rpc::BackupRecord request, reply;
    request.set_name(name);
    ToProto(caller, request.mutable_caller());
    Call(&rpc::MemoryServer::Stub::DescribeBackup, "MemoryServer.DescribeBackup", request, &reply,
         timeout_);
    return FromProto(reply);
}

void MemoryServerClient::Restore(const std::string &name, const ItemLayout &item,
                                 const Caller &caller) {
    rpc::BackupRequest request;
    ToProto(item, request.mutable_item());
    request.mutable_info()->set_name(name);
    ToProto(caller, request.mutable_caller());
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::Restore, "MemoryServer.Restore", request, &reply,
         ForBytes(timeout_, item.size));
}

void MemoryServerClient::DeleteBackup(const std::string &name, const Caller &caller) {
    rpc::BackupRecord request;
    request.set_name(name);
    ToProto(caller, request.mutable_caller());
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::DeleteBackup, "MemoryServer.DeleteBackup", request, &reply,
         timeout_);
}

std::vector<BackupInfo> MemoryServerClient::ListBackups(const Caller &caller) {
    rpc::Caller request;
    ToProto(caller, &request);
    rpc::BackupList reply;
    Call(&rpc::MemoryServer::Stub::ListBackups, "MemoryServer.ListBackups", request, &reply,
         timeout_);
    std::vector<BackupInfo> list;
    for (const auto &record : reply.backups()) list.push_back(FromProto(record));
    return list;
}

void MemoryServerClient::Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                                const void *operand, const void *compare, void *result) {
    size_t size = SizeOf(static_cast<DataType>(type));
    rpc::AtomicRequest request;
    ToProto(extent, request.mutable_extent());
    request.set_key(key);
    request.set_offset(offset);
    request.set_op(op);
    request.set_type(type);
    request.set_operand(operand, size);
    if (compare) request.set_compare(compare, size);
    rpc::AtomicReply reply;
    Call(&rpc::MemoryServer::Stub::Atomic, "MemoryServer.Atomic", request, &reply, timeout_);
    if (result && reply.result().size() == size) {
        std::memcpy(result, reply.result().data(), size);
    }
}

void MemoryServerClient::ApplyElements(ExtentRef extent, uint64_t key, ElementOp op,
                                       uint64_t element_size, const std::vector<uint64_t> &offsets,
                                       char *data) {
    rpc::ElementsRequest request;
    ToProto(extent, request.mutable_extent());
    request.set_key(key);
    request.set_op(static_cast<int>(op));
    request.set_element_size(element_size);
    request.mutable_offsets()->Add(offsets.begin(), offsets.end());
    uint64_t bytes = offsets.size() * element_size;
    if (op != ElementOp::kGather) request.set_data(data, bytes);
    rpc::ElementsReply reply;
    Call(&rpc::MemoryServer::Stub::ApplyElements, "MemoryServer.ApplyElements", request, &reply,
         ForBytes(timeout_, bytes));
    if (op == ElementOp::kGather) {
        if (reply.data().size() != bytes) {
            Fail(openfam::FAM_ERR_RPC,
                 "memory server {} ({}) answered a gather of {} bytes with {}", id_, address_,
                 bytes, reply.data().size());
        }
        std::memcpy(data, reply.data().data(), bytes);
    }
}

KeyGrant MemoryServerClient::GrantKey(ExtentRef extent, uint64_t offset, uint64_t size,
                                      bool writable, const Permissions &permissions) {
    return GrantKeyWithin(extent, offset, size, writable, permissions, timeout_);
}

KeyGrant MemoryServerClient::GrantKeyWithin(ExtentRef extent, uint64_t offset, uint64_t size,
                                            bool writable, const Permissions &permissions,
                                            std::chrono::milliseconds bound) {
    rpc::ExtentRequest request = Request(extent, offset, size);
    request.set_writable(writable);
    if (permissions.known) {
        rpc::Permissions *record = request.mutable_permissions();
        record->set_uid(permissions.uid);
        record->set_gid(permissions.gid);
        record->set_mode(permissions.mode);
    }
    rpc::KeyGrant reply;
    Call(&rpc::MemoryServer::Stub::GrantKey, "MemoryServer.GrantKey", request, &reply,
         std::min(bound, timeout_));
    return KeyGrant{reply.key(),  reply.base(),   reply.fabric_address(), reply.heap_path(),
                    reply.node(), reply.socket(), reply.server_uid(),     reply.incarnation()};
}

void MemoryServerClient::RevokeKeys(ExtentRef extent, uint64_t offset) {
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::RevokeKeys, "MemoryServer.RevokeKeys", Request(extent, offset),
         &reply, timeout_);
}

MirroredAtomicResult MemoryServerClient::MirroredAtomic(const MirroredAtomicCall &call) {
    rpc::AtomicRequest request;
    ToProto(call, &request);
    rpc::AtomicReply reply;
    Call(&rpc::MemoryServer::Stub::Atomic, "MemoryServer.Atomic", request, &reply, timeout_);
    return MirroredAtomicResult{reply.result(), reply.mirror_failed(), reply.busy(), reply.value(),
                                reply.repeat()};
}

void MemoryServerClient::Mirror(const MirrorWrite &call) {
    rpc::MirrorRequest request;
    ToProto(call, &request);
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::Mirror, "MemoryServer.Mirror", request, &reply, timeout_);
}

std::string MemoryServerClient::Stripe(const StripeCall &call, std::chrono::milliseconds timeout) {
    rpc::StripeRequest request;
    ToProto(call, &request);
    rpc::StripeReply reply;
    Call(&rpc::MemoryServer::Stub::Stripe, "MemoryServer.Stripe", request, &reply,
         timeout.count() ? timeout : ForBytes(timeout_, request.data().size()));
    return std::move(*reply.mutable_data());
}

void MemoryServerClient::Resync(const ResyncCall &call, std::chrono::milliseconds timeout) {
    rpc::ResyncRequest request;
    ToProto(call, &request);
    rpc::Empty reply;
    Call(&rpc::MemoryServer::Stub::Resync, "MemoryServer.Resync", request, &reply, timeout);
}

void MemoryServerClient::Populate(ExtentRef extent, uint64_t key,
                                  const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
    rpc::PopulateRequest request;
    ToProto(extent, request.mutable_extent());
    request.set_key(key);
    for (auto [first, last] : ranges) {
        request.add_begin(first);
        request.add_end(last);
    }
    rpc::Empty reply;
    // Only speed rides on it (the writes after it make their pages themselves): a server slow
    // to answer is not waited for long.
    constexpr std::chrono::milliseconds kPopulateWait{1000};
    Call(&rpc::MemoryServer::Stub::Populate, "MemoryServer.Populate", request, &reply,
         std::min(timeout_, kPopulateWait));
}

}  // namespace fampool
