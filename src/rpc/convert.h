// Between fampool's structs and the control-path messages, and between Failure and gRPC status:
// a failed call travels as FAILED_PRECONDITION with the Fam_Error number in the details, a call
// without a known session (Unauthenticated) as UNAUTHENTICATED; a transport failure (server
// gone, deadline passed) becomes FAM_ERR_RPC at the caller.
#ifndef FAMPOOL_RPC_CONVERT_H_
#define FAMPOOL_RPC_CONVERT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "common/error.h"
#include "common/fam_objects.h"
#include "common/memory_server.h"
#include "common/tls.h"
#include "rpc/authentication.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

void ToProto(const RegionInfo &in, rpc::Region *out);
RegionInfo FromProto(const rpc::Region &in);
void ToProto(const RegionIntent &in, rpc::Intent *out);
RegionIntent FromProto(const rpc::Intent &in);
void ToProto(const ServerAccess &in, rpc::ServerAccess *out);
ServerAccess FromProto(const rpc::ServerAccess &in);
void ToProto(const ItemInfo &in, rpc::Item *out);
ItemInfo FromProto(const rpc::Item &in);
void ToProto(const BackupInfo &in, rpc::BackupRecord *out);
BackupInfo FromProto(const rpc::BackupRecord &in);
void ToProto(const ExtentRef &in, rpc::Extent *out);
ExtentRef FromProto(const rpc::Extent &in);
void ToProto(const ItemLayout &in, rpc::ItemLayout *out);
// The calls of redundant regions (common/memory_server.h); the memory server reads the
// messages as they are (memserver/redundancy.h).
void ToProto(const MemberRef &in, rpc::Member *out);
void ToProto(const MirroredAtomicCall &in, rpc::AtomicRequest *out);
void ToProto(const MirrorWrite &in, rpc::MirrorRequest *out);
void ToProto(const StripeCall &in, rpc::StripeRequest *out);
void ToProto(const ResyncCall &in, rpc::ResyncRequest *out);
ItemLayout FromProto(const rpc::ItemLayout &in);
void ToProto(const Caller &in, rpc::Caller *out);
Caller FromProto(const rpc::Caller &in);
void ToProto(const Fam_Region_Attributes &in, rpc::Attributes *out);
// FAM_ERR_INVALID (naming `region`) for a value outside its enumeration.
Fam_Region_Attributes FromProto(const rpc::Attributes &in, const std::string &region);

// Server side: runs body, turning any error into the status the client decodes.
template <typename Body>
grpc::Status Serve(Body &&body) {
    try {
        body();
        return grpc::Status::OK;
    } catch (const Unauthenticated &e) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, e.fam_error_msg(),
                            std::to_string(e.fam_error()));
    } catch (const LifeChanged &e) {
        return grpc::Status(grpc::StatusCode::ABORTED, e.fam_error_msg(),
                            std::to_string(e.fam_error()));
    } catch (const Fam_Exception &e) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, e.fam_error_msg(),
                            std::to_string(e.fam_error()));
    } catch (const std::exception &e) {
        return grpc::Status(grpc::StatusCode::INTERNAL, e.what(),
                            std::to_string(openfam::FAM_ERR_UNKNOWN));
    }
}

// Client side: throws the Failure a status stands for (UNAUTHENTICATED: FAM_ERR_NOPERM;
// ABORTED: LifeChanged).
// `target` names the server for messages.
void CheckStatus(const grpc::Status &status, const char *method, const std::string &target);

// A client context whose deadline bounds the call (no hang when a server is gone).
std::unique_ptr<grpc::ClientContext> CallContext(std::chrono::milliseconds timeout);

// A channel to `address` (host:port) with fampool's settings (no proxy, fail fast when down),
// over TLS when `tls` is enabled (the server's certificate checked against tls.ca; this end's
// certificate sent when given). Throws Failure(FAM_ERR_INVALID) for an unreadable file.
std::shared_ptr<grpc::Channel> OpenChannel(const std::string &address,
                                           const TlsSettings &tls = TlsSettings());

// What a server listens with: TLS when `tls` is enabled (its certificate and key required;
// client certificates required and checked against tls.ca when it says so), else plaintext.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsSettings &tls);

}  // namespace fampool

#endif  // FAMPOOL_RPC_CONVERT_H_
