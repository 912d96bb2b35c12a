#include "memserver/memory_server_service.h"

#include <fmt/format.h>

#include "common/data_path.h"
#include "rpc/convert.h"
#include "rpc/version.h"

namespace fampool {

namespace {

// Threads that run the fabric calls reaching other servers (ServeOverFabric).
constexpr size_t kFabricWorkers = 4;

// The session token a gRPC call carries ("" without one, or without a context: a handler
// called in-process, as tests do).
std::string TokenOf(const grpc::ServerContext *context) {
    if (!context) return "";
    const auto &headers = context->client_metadata();
    auto found = headers.find(kTokenHeader);
    std::string token;
    if (found != headers.end()) token.assign(found->second.data(), found->second.size());
    return token;
}

}  // namespace

Caller MemoryServerService::Identify(const std::string &token, const rpc::Caller &stated,
                                     const char *call) {
    if (!sessions_) return FromProto(stated);
    return sessions_->Resolve(token, call);
}

void MemoryServerService::Authorize(const std::string &token, const char *call) {
    if (!sessions_) return;
    Caller caller = sessions_->Resolve(token, call);
    if (caller.uid != cluster_user_) {
        Fail(openfam::FAM_ERR_NOPERM,
             "{}: refused: memory server {} takes this call only from uid {} (the user that "
             "runs the cluster, as the metadata service does); the session is uid {}'s",
             call, server_->id(), cluster_user_, caller.uid);
    }
}

grpc::Status MemoryServerService::EndSession(grpc::ServerContext *context, const rpc::Empty *,
                                             rpc::Empty *) {
    return Serve([&] {
        if (sessions_) sessions_->End(TokenOf(context));
    });
}

grpc::Status MemoryServerService::Authenticate(grpc::ServerContext *,
                                               const rpc::Credential *request,
                                               rpc::Session *reply) {
    return Serve([&] {
        if (!sessions_) return;  // nothing to prove: an empty token
        SessionTable::Opened opened =
            sessions_->Open(request->munge(), "MemoryServer.Authenticate");
        reply->set_token(opened.token);
        reply->set_uid(opened.caller.uid);
        reply->set_gid(opened.caller.gid);
    });
}

grpc::Status MemoryServerService::Info(grpc::ServerContext *context, const rpc::Empty *,
                                       rpc::ServerInfo *reply) {
    return Serve([&] {
        reply->set_id(server_->id());
        reply->set_incarnation(incarnation_);
        reply->set_version(FampoolVersion());
        reply->set_unix_time_us(UnixTimeMicros());
        reply->set_open_files(OpenFilesLimit());
        reply->set_fabric_address(server_->fabric_address());
        reply->set_provider(server_->fabric_provider());
        reply->set_capacity(server_->capacity());
        MemoryProfile profile = server_->Profile();
        reply->set_kind(profile.kind);
        reply->set_bandwidth(profile.bandwidth);
        reply->set_latency_ns(profile.latency_ns);
        if (messages_) {
            reply->mutable_messages()->set_provider(messages_->provider());
            reply->mutable_messages()->set_address(messages_->address());
            reply->mutable_messages()->set_incarnation(messages_->incarnation());
            reply->mutable_messages()->set_calls(messages_->answered());
            // Info needs no session; one it carries is only looked at.
            reply->mutable_messages()->set_session_known(sessions_ &&
                                                         sessions_->Known(TokenOf(context)));
        }
        if (redundancy_) {
            reply->set_stripe_leases(redundancy_->stripe_leases().granted);
            reply->set_stripe_leases_lapsed(redundancy_->stripe_leases().lapsed);
        }
    });
}

void MemoryServerService::ServeOverFabric(const FabricConfig &config) {
    MessageHandler handler;
    handler.dispatch = [this](const rpc::FabricCall &call, rpc::FabricReply *reply) {
        ServeFabric(call, reply);
    };
    handler.waits = CallsOut;
    // As gRPC's threads did: one call stalled on a peer (a restarted server's stale
    // connection, seconds) must not hold up the others. Measured: with stripe calls on the
    // message thread itself, one such stall made other PEs' calls to the server time out
    // (soak_short, a PE failed with "no answer from the memory server in 10000 ms").
    handler.workers = kFabricWorkers;
    handler.yields = true;
    if (SessionTable *sessions = sessions_.get()) {
        handler.session = [sessions](const std::string &id) { return sessions->FindSealed(id); };
    }
    messages_ = std::make_unique<FabricMessageService>(
        config, std::move(handler), fmt::format("memory server {}", server_->id()));
}

grpc::Status MemoryServerService::CreateExtent(grpc::ServerContext *context,
                                               const rpc::ExtentRequest *request, rpc::Empty *) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.CreateExtent");
        if (!request->life().empty() && request->life() != incarnation_) {
            throw LifeChanged(fmt::format(
                "memory server {} restarted since the metadata service last saw it (life {}, "
                "now {}): its restart is handled before extents are made there",
                server_->id(), request->life(), incarnation_));
        }
        server_->CreateExtent(FromProto(request->extent()), request->size(), request->reserve());
    });
}

grpc::Status MemoryServerService::DestroyExtent(grpc::ServerContext *context,
                                                const rpc::ExtentRequest *request, rpc::Empty *) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.DestroyExtent");
        server_->DestroyExtent(FromProto(request->extent()));
    });
}

grpc::Status MemoryServerService::ResizeExtent(grpc::ServerContext *context,
                                               const rpc::ExtentRequest *request, rpc::Empty *) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.ResizeExtent");
        server_->ResizeExtent(FromProto(request->extent()), request->size(), request->new_size(),
                              request->reserve());
    });
}

grpc::Status MemoryServerService::Zero(grpc::ServerContext *context,
                                       const rpc::ExtentRequest *request, rpc::Empty *) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.Zero");
        server_->Zero(FromProto(request->extent()), request->offset(), request->size());
    });
}

grpc::Status MemoryServerService::ZeroExtents(grpc::ServerContext *context,
                                              const rpc::ZeroRequest *request, rpc::Empty *) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.ZeroExtents");
        std::vector<ExtentRanges> extents;
        extents.reserve(request->extents_size());
        for (const rpc::ExtentRanges &message : request->extents()) {
            ExtentRanges &each = extents.emplace_back();
            each.extent = FromProto(message.extent());
            each.ranges.reserve(message.ranges_size());
            for (const rpc::ByteRange &range : message.ranges()) {
                each.ranges.emplace_back(range.offset(), range.size());
            }
        }
        server_->ZeroExtents(extents);
    });
}

grpc::Status MemoryServerService::Copy(grpc::ServerContext *context,
                                       const rpc::CopyRequest *request, rpc::Empty *) {
    return Serve([&] {
        Identify(TokenOf(context), rpc::Caller(), "MemoryServer.Copy");
        server_->Copy(FromProto(request->src()), request->src_offset(), FromProto(request->dest()),
                      request->dest_offset(), request->size());
    });
}

grpc::Status MemoryServerService::Backup(grpc::ServerContext *context,
                                         const rpc::BackupRequest *request,
                                         rpc::BackupRecord *reply) {
    return Serve([&] {
        Identify(TokenOf(context), request->caller(), "MemoryServer.Backup");
        ToProto(server_->Backup(FromProto(request->item()), FromProto(request->info())), reply);
    });
}

grpc::Status MemoryServerService::DescribeBackup(grpc::ServerContext *context,
                                                 const rpc::BackupRecord *request,
                                                 rpc::BackupRecord *reply) {
    return Serve([&] {
        Caller caller =
            Identify(TokenOf(context), request->caller(), "MemoryServer.DescribeBackup");
        ToProto(server_->DescribeBackup(request->name(), caller), reply);
    });
}

grpc::Status MemoryServerService::Restore(grpc::ServerContext *context,
                                          const rpc::BackupRequest *request, rpc::Empty *) {
    return Serve([&] {
        Caller caller = Identify(TokenOf(context), request->caller(), "MemoryServer.Restore");
        server_->Restore(request->info().name(), FromProto(request->item()), caller);
    });
}

grpc::Status MemoryServerService::DeleteBackup(grpc::ServerContext *context,
                                               const rpc::BackupRecord *request, rpc::Empty *) {
    return Serve([&] {
        Caller caller = Identify(TokenOf(context), request->caller(), "MemoryServer.DeleteBackup");
        server_->DeleteBackup(request->name(), caller);
    });
}

grpc::Status MemoryServerService::ListBackups(grpc::ServerContext *context,
                                              const rpc::Caller *request, rpc::BackupList *reply) {
    return Serve([&] {
        Caller caller = Identify(TokenOf(context), *request, "MemoryServer.ListBackups");
        for (const BackupInfo &info : server_->ListBackups(caller)) {
            ToProto(info, reply->add_backups());
        }
    });
}

grpc::Status MemoryServerService::Atomic(grpc::ServerContext *context,
                                         const rpc::AtomicRequest *request,
                                         rpc::AtomicReply *reply) {
    return Serve([&] { ApplyAtomic(TokenOf(context), *request, reply); });
}

void MemoryServerService::ApplyAtomic(const std::string &token, const rpc::AtomicRequest &request,
                                      rpc::AtomicReply *reply) {
    Identify(token, rpc::Caller(), "MemoryServer.Atomic");
    auto type = static_cast<DataType>(request.type());
    size_t size = SizeOf(type);
    if (size == 0 || request.operand().size() != size ||
        (!request.compare().empty() && request.compare().size() != size)) {
        Fail(openfam::FAM_ERR_INVALID, "atomic request with a malformed operand");
    }
    if (request.offset() % size != 0) {
        Fail(openfam::FAM_ERR_INVALID, "atomic at unaligned offset {}", request.offset());
    }
    if (!request.op_id().empty()) return Redundant().Atomic(request, reply);
    char result[16] = {};
    server_->Atomic(FromProto(request.extent()), request.key(), request.offset(), request.op(),
                    request.type(), request.operand().data(),
                    request.compare().empty() ? nullptr : request.compare().data(), result);
    reply->set_result(result, size);
}

grpc::Status MemoryServerService::ApplyElements(grpc::ServerContext *context,
                                                const rpc::ElementsRequest *request,
                                                rpc::ElementsReply *reply) {
    return Serve([&] {
        Identify(TokenOf(context), rpc::Caller(), "MemoryServer.ApplyElements");
        auto op = static_cast<ElementOp>(request->op());
        uint64_t size = request->element_size();
        uint64_t count = static_cast<uint64_t>(request->offsets_size());
        uint64_t bytes = 0;
        bool gather = op == ElementOp::kGather;
        // A reply larger than a gRPC message may carry is refused before anything is allocated
        // (an unchecked element size would let one request exhaust the server's memory).
        constexpr uint64_t kMostBytes = 64 << 20;
        if (request->op() < 0 || request->op() > static_cast<int>(ElementOp::kGather) ||
            size == 0 || __builtin_mul_overflow(count, size, &bytes) || bytes > kMostBytes ||
            request->data().size() != (gather ? 0 : bytes)) {
            Fail(openfam::FAM_ERR_INVALID,
                 "element request with a malformed operation, element size or data");
        }
        std::vector<uint64_t> offsets(request->offsets().begin(), request->offsets().end());
        std::string *data = reply->mutable_data();
        if (gather) {
            data->resize(bytes);
        } else {
            *data = request->data();  // the operands, in a buffer this call may hand on
        }
        server_->ApplyElements(FromProto(request->extent()), request->key(), op, size, offsets,
                               data->data());
        if (!gather) data->clear();
    });
}

grpc::Status MemoryServerService::GrantKey(grpc::ServerContext *context,
                                           const rpc::ExtentRequest *request,
                                           rpc::KeyGrant *reply) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.GrantKey");
        Permissions permissions;
        if (request->has_permissions()) {
            permissions = Permissions{request->permissions().uid(), request->permissions().gid(),
                                      request->permissions().mode(), true};
        }
        KeyGrant grant = server_->GrantKey(FromProto(request->extent()), request->offset(),
                                           request->size(), request->writable(), permissions);
        reply->set_key(grant.key);
        reply->set_base(grant.base);
        reply->set_fabric_address(grant.fabric_address);
        reply->set_heap_path(grant.heap_path);
        reply->set_node(grant.node);
        reply->set_socket(grant.socket);
        reply->set_server_uid(grant.server_uid);
        reply->set_incarnation(grant.incarnation);
    });
}

grpc::Status MemoryServerService::RevokeKeys(grpc::ServerContext *context,
                                             const rpc::ExtentRequest *request, rpc::Empty *) {
    return Serve([&] {
        Authorize(TokenOf(context), "MemoryServer.RevokeKeys");
        server_->RevokeKeys(FromProto(request->extent()), request->offset());
    });
}

RedundancyService &MemoryServerService::Redundant() {
    if (!redundancy_) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "memory server {} was started without its peers, which redundant regions need "
             "(RAID1 copies, RAID5 parity)",
             server_->id());
    }
    return *redundancy_;
}

grpc::Status MemoryServerService::Mirror(grpc::ServerContext *context,
                                         const rpc::MirrorRequest *request, rpc::Empty *) {
    return Serve([&] {
        Identify(TokenOf(context), rpc::Caller(), "MemoryServer.Mirror");
        Redundant().Mirror(*request);
    });
}

grpc::Status MemoryServerService::Stripe(grpc::ServerContext *context,
                                         const rpc::StripeRequest *request,
                                         rpc::StripeReply *reply) {
    return Serve([&] {
        Identify(TokenOf(context), rpc::Caller(), "MemoryServer.Stripe");
        Redundant().Stripe(*request, reply);
    });
}

void MemoryServerService::ServeFabric(const rpc::FabricCall &call, rpc::FabricReply *reply) {
    grpc::Status status = Serve([&] {
        const std::string &token = call.token();
        switch (call.request_case()) {
            case rpc::FabricCall::kAtomic:
                ApplyAtomic(token, call.atomic(), reply->mutable_atomic());
                break;
            case rpc::FabricCall::kMirror:
                Identify(token, rpc::Caller(), "MemoryServer.Mirror");
                Redundant().Mirror(call.mirror());
                reply->mutable_empty();
                break;
            case rpc::FabricCall::kStripe:
                // Not rebuilds: they take seconds, and the endpoint's thread answers the others.
                if (call.stripe().op() == rpc::StripeRequest::REBUILD) {
                    Fail(openfam::FAM_ERR_INVALID,
                         "MemoryServer.Stripe over the fabric: rebuilds are taken over gRPC only");
                }
                Identify(token, rpc::Caller(), "MemoryServer.Stripe");
                Redundant().Stripe(call.stripe(), reply->mutable_stripe());
                break;
            default:
                Fail(openfam::FAM_ERR_INVALID,
                     "memory server {}: a call it does not take over "
                     "the fabric",
                     server_->id());
        }
    });
    if (!status.ok()) reply->clear_reply();
    reply->set_code(status.error_code());
    reply->set_message(status.error_message());
    reply->set_details(status.error_details());
}

bool MemoryServerService::CallsOut(const rpc::FabricCall &call) {
    if (call.has_stripe()) {
        // Reads and writes other servers' members; leases do not (and do not wait).
        rpc::StripeRequest::Op op = call.stripe().op();
        return op != rpc::StripeRequest::LEASE && op != rpc::StripeRequest::RELEASE;
    }
    // A mirror waits for the copy's word, which another call here may hold while it mirrors.
    if (call.has_mirror()) return true;
    return call.has_atomic() && !call.atomic().op_id().empty() && call.atomic().has_mirror() &&
           !call.atomic().mirror().fabric_address().empty();
}

grpc::Status MemoryServerService::Resync(grpc::ServerContext *context,
                                         const rpc::ResyncRequest *request, rpc::Empty *) {
    return Serve([&] {
        // It reads this server's member without a client's key: the metadata service's call.
        Authorize(TokenOf(context), "MemoryServer.Resync");
        Redundant().Resync(*request);
    });
}

grpc::Status MemoryServerService::Populate(grpc::ServerContext *context,
                                           const rpc::PopulateRequest *request, rpc::Empty *) {
    return Serve([&] {
        Identify(TokenOf(context), rpc::Caller(), "MemoryServer.Populate");
        Redundant().Populate(*request);  // with the member's key
    });
}

}  // namespace fampool
