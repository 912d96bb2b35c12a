#include "rpc/convert.h"

#include "common/region_attributes.h"

namespace fampool {

void ToProto(const Fam_Region_Attributes &in, rpc::Attributes *out) {
    out->set_redundancy(in.redundancyLevel);
    out->set_memory_type(in.memoryType);
    out->set_interleave(in.interleaveEnable);
    out->set_permission_level(in.permissionLevel);
}

Fam_Region_Attributes FromProto(const rpc::Attributes &in, const std::string &region) {
    return AttributesFromIntegers(in.redundancy(), in.memory_type(), in.interleave(),
                                  in.permission_level(), region);
}

void ToProto(const RegionInfo &in, rpc::Region *out) {
    out->set_id(in.id);
    out->set_name(in.name);
    out->set_size(in.size);
    out->set_perm(in.perm);
    out->set_uid(in.uid);
    out->set_gid(in.gid);
    ToProto(in.attributes, out->mutable_attributes());
    out->set_interleave_size(in.interleave_size);
    for (uint64_t id : in.memory_servers) out->add_memory_servers(id);
    for (uint64_t id : in.copy_servers) out->add_copy_servers(id);
    out->set_member_state(std::string(in.member_state.begin(), in.member_state.end()));
    if (!in.intent.empty()) ToProto(in.intent, out->mutable_intent());
    out->set_placement(in.placement);
}

void ToProto(const RegionIntent &in, rpc::Intent *out) {
    out->set_hints(in.hints);
    out->set_kind(in.kind);
    for (uint64_t id : in.servers) out->add_servers(id);
    out->set_failure_domain(in.failure_domain);
    out->set_host(in.host);
}

RegionIntent FromProto(const rpc::Intent &in) {
    RegionIntent out;
    out.hints = in.hints();
    out.kind = in.kind();
    out.servers.assign(in.servers().begin(), in.servers().end());
    out.failure_domain = in.failure_domain();
    out.host = in.host();
    return out;
}

RegionInfo FromProto(const rpc::Region &in) {
    RegionInfo out;
    out.id = in.id();
    out.name = in.name();
    out.size = in.size();
    out.perm = in.perm();
    out.uid = in.uid();
    out.gid = in.gid();
    out.attributes = FromProto(in.attributes(), in.name());
    out.interleave_size = in.interleave_size();
    out.memory_servers.assign(in.memory_servers().begin(), in.memory_servers().end());
    out.copy_servers.assign(in.copy_servers().begin(), in.copy_servers().end());
    out.member_state.assign(in.member_state().begin(), in.member_state().end());
    out.intent = FromProto(in.intent());
    out.placement = in.placement();
    return out;
}

void ToProto(const ServerAccess &in, rpc::ServerAccess *out) {
    out->set_server_id(in.server_id);
    out->set_fabric_address(in.fabric_address);
    out->set_key(in.key);
    out->set_base(in.base);
    out->set_heap_path(in.heap_path);
    out->set_node(in.node);
    out->set_socket(in.socket);
    out->set_server_uid(in.server_uid);
    out->set_incarnation(in.incarnation);
}

ServerAccess FromProto(const rpc::ServerAccess &in) {
    return ServerAccess{in.server_id(), in.fabric_address(), in.key(),
                        in.base(),      in.heap_path(),      in.node(),
                        in.socket(),    in.server_uid(),     in.incarnation()};
}

void ToProto(const ItemInfo &in, rpc::Item *out) {
    out->set_region_id(in.region_id);
    out->set_offset(in.offset);
    out->set_size(in.size);
    out->set_name(in.name);
    out->set_perm(in.perm);
    out->set_uid(in.uid);
    out->set_gid(in.gid);
    ToProto(in.region, out->mutable_region());
    out->set_can_read(in.can_read);
    out->set_can_write(in.can_write);
    for (const ServerAccess &a : in.access) ToProto(a, out->add_access());
    for (const ServerAccess &a : in.member_access) ToProto(a, out->add_member_access());
}

ItemInfo FromProto(const rpc::Item &in) {
    ItemInfo out;
    out.region_id = in.region_id();
    out.offset = in.offset();
    out.size = in.size();
    out.name = in.name();
    out.perm = in.perm();
    out.uid = in.uid();
    out.gid = in.gid();
    out.region = FromProto(in.region());
    out.can_read = in.can_read();
    out.can_write = in.can_write();
    for (const rpc::ServerAccess &a : in.access()) out.access.push_back(FromProto(a));
    for (const rpc::ServerAccess &a : in.member_access()) out.member_access.push_back(FromProto(a));
    return out;
}

void ToProto(const BackupInfo &in, rpc::BackupRecord *out) {
    out->set_name(in.name);
    out->set_size(in.size);
    out->set_uid(in.uid);
    out->set_gid(in.gid);
    out->set_mode(in.mode);
    out->set_time(in.time);
    out->set_checksum(in.checksum);
    out->set_item_name(in.item_name);
}

BackupInfo FromProto(const rpc::BackupRecord &in) {
    BackupInfo out;
    out.name = in.name();
    out.size = in.size();
    out.uid = in.uid();
    out.gid = in.gid();
    out.mode = in.mode();
    out.time = in.time();
    out.checksum = in.checksum();
    out.item_name = in.item_name();
    return out;
}

void ToProto(const ExtentRef &in, rpc::Extent *out) {
    out->set_region_id(in.region_id);
    out->set_persistent(in.persistent);
    out->set_copy(in.copy);
}

ExtentRef FromProto(const rpc::Extent &in) {
    return ExtentRef{in.region_id(), in.persistent(), in.copy()};
}

void ToProto(const MemberRef &in, rpc::Member *out) {
    out->set_server_id(in.server_id);
    ToProto(in.extent, out->mutable_extent());
    out->set_fabric_address(in.fabric_address);
    out->set_key(in.key);
    out->set_base(in.base);
    out->set_state(in.state);
    out->set_incarnation(in.incarnation);
}

void ToProto(const MirroredAtomicCall &in, rpc::AtomicRequest *out) {
    ToProto(in.extent, out->mutable_extent());
    out->set_key(in.key);
    out->set_offset(in.offset);
    out->set_op(static_cast<int>(in.op));
    out->set_type(static_cast<int>(in.type));
    out->set_operand(in.operand);
    out->set_compare(in.compare);
    if (in.mirror) ToProto(*in.mirror, out->mutable_mirror());
    out->set_op_id(in.op_id);
}

void ToProto(const MirrorWrite &in, rpc::MirrorRequest *out) {
    ToProto(in.extent, out->mutable_extent());
    out->set_key(in.key);
    out->set_offset(in.offset);
    out->set_value(in.value);
    out->set_op_id(in.op_id);
    out->set_result(in.result);
    for (const MirrorWrite::Remembered &each : in.remembered) {
        rpc::RememberedAtomic *to = out->add_remembered();
        to->set_op_id(each.op_id);
        to->set_result(each.result);
        to->set_value(each.value);
    }
}

void ToProto(const StripeCall &in, rpc::StripeRequest *out) {
    switch (in.op) {
        case StripeCall::Op::kRead:
            out->set_op(rpc::StripeRequest::READ);
            break;
        case StripeCall::Op::kWrite:
            out->set_op(rpc::StripeRequest::WRITE);
            break;
        case StripeCall::Op::kAtomic:
            out->set_op(rpc::StripeRequest::ATOMIC);
            break;
        case StripeCall::Op::kRebuild:
            out->set_op(rpc::StripeRequest::REBUILD);
            break;
        case StripeCall::Op::kLease:
            out->set_op(rpc::StripeRequest::LEASE);
            break;
        case StripeCall::Op::kRelease:
            out->set_op(rpc::StripeRequest::RELEASE);
            break;
    }
    out->set_interleave(in.interleave);
    for (const MemberRef &member : in.members) ToProto(member, out->add_members());
    out->set_self(in.self);
    for (const StripeCall::Piece &piece : in.pieces) {
        rpc::StripePiece *to = out->add_pieces();
        to->set_stripe(piece.stripe);
        to->set_column(piece.column);
        to->set_within(piece.within);
        to->set_length(piece.length);
    }
    out->set_data(in.data);
    out->set_atomic_op(static_cast<int>(in.atomic_op));
    out->set_type(static_cast<int>(in.type));
    out->set_operand(in.operand);
    out->set_compare(in.compare);
    out->set_lost(in.lost);
    out->set_first(in.first);
    out->set_end(in.end);
    out->set_lease_owner(in.lease_owner);
    out->set_lease_ms(in.lease_ms);
    out->set_wait_ms(in.wait_ms);
    out->set_incomplete(in.incomplete);
    out->set_target_empty(in.target_empty);
    out->set_op_id(in.op_id);
}

void ToProto(const ResyncCall &in, rpc::ResyncRequest *out) {
    ToProto(in.extent, out->mutable_extent());
    ToProto(in.target, out->mutable_target());
    out->set_begin(in.begin);
    out->set_end(in.end);
}

void ToProto(const ItemLayout &in, rpc::ItemLayout *out) {
    ToProto(in.extent, out->mutable_extent());
    out->set_offset(in.offset);
    out->set_size(in.size);
    out->set_interleave(in.interleave);
    out->set_name(in.name);
    for (const ItemLayout::Server &server : in.servers) {
        rpc::ServerAccess *access = out->add_servers();
        access->set_server_id(server.id);
        access->set_fabric_address(server.fabric_address);
        access->set_key(server.key);
        access->set_base(server.base);
        access->set_copy(server.copy);
        access->set_incarnation(server.incarnation);
    }
    out->set_raid5_members(in.raid5_members);
}

ItemLayout FromProto(const rpc::ItemLayout &in) {
    ItemLayout out;
    out.extent = FromProto(in.extent());
    out.offset = in.offset();
    out.size = in.size();
    out.interleave = in.interleave();
    out.raid5_members = in.raid5_members();
    out.name = in.name();
    for (const rpc::ServerAccess &access : in.servers()) {
        out.servers.push_back(ItemLayout::Server{access.server_id(), access.fabric_address(),
                                                 access.key(), access.base(), access.copy(),
                                                 access.incarnation()});
    }
    return out;
}

void ToProto(const Caller &in, rpc::Caller *out) {
    out->set_uid(in.uid);
    out->set_gid(in.gid);
}

Caller FromProto(const rpc::Caller &in) { return Caller{in.uid(), in.gid()}; }

void CheckStatus(const grpc::Status &status, const char *method, const std::string &target) {
    if (status.ok()) return;
    if (status.error_code() == grpc::StatusCode::ABORTED) throw LifeChanged(status.error_message());
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
        int error = openfam::FAM_ERR_UNKNOWN;
        try {
            error = std::stoi(status.error_details());
        } catch (...) {
        }
        throw Failure(static_cast<Fam_Error>(error), status.error_message());
    }
    const char *what = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                           ? "did not answer in time"
                           : "is unreachable";
    Fail(openfam::FAM_ERR_RPC, "{} at {} {} ({}: {})", method, target, what,
         static_cast<int>(status.error_code()), status.error_message());
}

std::unique_ptr<grpc::ClientContext> CallContext(std::chrono::milliseconds timeout) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + timeout);
    return context;
}

std::shared_ptr<grpc::Channel> OpenChannel(const std::string &address, const TlsSettings &tls) {
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    // A restarted server is found again within a second, not after gRPC's default backoff.
    arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    arguments.SetMaxReceiveMessageSize(64 << 20);
    if (!tls.enabled()) {
        return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
    }
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadPemFile(tls.ca, "tls_ca");
    if (!tls.certificate.empty()) {
        options.pem_cert_chain = ReadPemFile(tls.certificate, "TLS certificate");
        options.pem_private_key = ReadPemFile(tls.private_key, "TLS private key");
    }
    if (!tls.server_name.empty()) arguments.SetSslTargetNameOverride(tls.server_name);
    return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), arguments);
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsSettings &tls) {
    if (!tls.enabled()) return grpc::InsecureServerCredentials();
    if (tls.certificate.empty() || tls.private_key.empty()) {
        Fail(openfam::FAM_ERR_INVALID,
             "TLS is on (tls_ca) but the servers' tls_certificate and tls_private_key are not "
             "both set");
    }
    grpc::SslServerCredentialsOptions options(
        tls.require_client_certificates ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                        : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    options.pem_root_certs = ReadPemFile(tls.ca, "tls_ca");
    options.pem_key_cert_pairs.push_back({ReadPemFile(tls.private_key, "tls_private_key"),
                                          ReadPemFile(tls.certificate, "tls_certificate")});
    return grpc::SslServerCredentials(options);
}

}  // namespace fampool
