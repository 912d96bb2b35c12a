#include "rpc/munge.h"

#include <munge.h>

#include <cstdlib>
#include <memory>

#include "common/error.h"

namespace fampool {
namespace {

struct ContextDeleter {
    void operator()(munge_ctx_t context) const { munge_ctx_destroy(context); }
};
using Context = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, ContextDeleter>;

Context OpenContext(const std::string &socket, const char *call) {
    Context context(munge_ctx_create());
    if (!context) Fail(openfam::FAM_ERR_NOPERM, "{}: cannot create a MUNGE context", call);
    if (!socket.empty() &&
        munge_ctx_set(context.get(), MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS) {
        Fail(openfam::FAM_ERR_NOPERM, "{}: MUNGE socket \"{}\" refused: {}", call, socket,
             munge_ctx_strerror(context.get()));
    }
    return context;
}

// Why libmunge said no, in words that say what to do about it.
std::string Cause(munge_err_t error, munge_ctx_t context, const std::string &socket) {
    const char *detail = munge_ctx_strerror(context);
    std::string text = detail ? detail : munge_strerror(error);
    switch (error) {
        case EMUNGE_SOCKET:
            return fmt::format(
                "cannot reach munged at {} ({}); is munged running? (munge_socket in the "
                "cluster file names its socket)",
                MungeSocketName(socket), text);
        case EMUNGE_CRED_INVALID:
        case EMUNGE_BAD_CRED:
        case EMUNGE_BAD_VERSION:
        case EMUNGE_BAD_CIPHER:
        case EMUNGE_BAD_MAC:
        case EMUNGE_BAD_ZIP:
        case EMUNGE_BAD_REALM:
            return fmt::format(
                "invalid MUNGE credential ({}): it was made by a munged with another key, or "
                "altered on the way",
                text);
        case EMUNGE_CRED_REPLAYED:
            return fmt::format("replayed MUNGE credential ({}): it was presented before", text);
        case EMUNGE_CRED_EXPIRED:
            return fmt::format(
                "expired MUNGE credential ({}): older than its time-to-live, or the clocks of "
                "the two hosts differ",
                text);
        case EMUNGE_CRED_REWOUND:
            return fmt::format(
                "MUNGE credential from the future ({}): the clocks of the two hosts differ", text);
        case EMUNGE_CRED_UNAUTHORIZED:
            return fmt::format("MUNGE credential not meant for this decoder ({})", text);
        default:
            return fmt::format("MUNGE error {} ({})", static_cast<int>(error), text);
    }
}

}  // namespace

std::string MungeSocketName(const std::string &socket) {
    if (!socket.empty()) return socket;
    Context context(munge_ctx_create());
    char *name = nullptr;
    if (context && munge_ctx_get(context.get(), MUNGE_OPT_SOCKET, &name) == EMUNGE_SUCCESS &&
        name) {
        return name;
    }
    return "libmunge's default socket";
}

std::string MungeEncode(const std::string &socket, const std::string &payload, const char *call) {
    Context context = OpenContext(socket, call);
    char *credential = nullptr;
    munge_err_t error =
        munge_encode(&credential, context.get(), payload.data(), static_cast<int>(payload.size()));
    if (error != EMUNGE_SUCCESS) {
        std::free(credential);
        Fail(openfam::FAM_ERR_NOPERM, "{}: cannot make a MUNGE credential: {}", call,
             Cause(error, context.get(), socket));
    }
    std::string text(credential);
    std::free(credential);
    return text;
}

MungeIdentity MungeDecode(const std::string &socket, const std::string &credential,
                          const char *call) {
    Context context = OpenContext(socket, call);
    void *payload = nullptr;
    int length = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    // A credential is text without NULs; anything else is not one (and must not be cut short
    // silently by the C string libmunge takes).
    if (credential.empty() || credential.find('\0') != std::string::npos) {
        Fail(openfam::FAM_ERR_NOPERM, "{}: refused: not a MUNGE credential", call);
    }
    munge_err_t error =
        munge_decode(credential.c_str(), context.get(), &payload, &length, &uid, &gid);
    MungeIdentity identity;
    if (payload && length > 0) identity.payload.assign(static_cast<char *>(payload), length);
    std::free(payload);  // also allocated for some errors (replayed, expired)
    if (error != EMUNGE_SUCCESS) {
        Fail(openfam::FAM_ERR_NOPERM, "{}: refused: {}", call, Cause(error, context.get(), socket));
    }
    identity.uid = uid;
    identity.gid = gid;
    return identity;
}

}  // namespace fampool
