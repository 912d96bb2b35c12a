// MUNGE credentials (libmunge): a process asks its munged to encode a payload, and whoever
// receives the credential asks a munged with the same key to decode it, which vouches for the
// uid and gid of the process that made it and refuses a credential seen before. fampool's
// services learn who calls them this way (rpc/authentication.h); this file is the thin layer
// over libmunge, with its errors turned into messages a user can act on.
#ifndef FAMPOOL_RPC_MUNGE_H_
#define FAMPOOL_RPC_MUNGE_H_

#include <cstdint>
#include <string>

namespace fampool {

// What a decoded credential says.
struct MungeIdentity {
    uint32_t uid = 0;
    uint32_t gid = 0;
    std::string payload;
};

// A credential carrying `payload`, made by the munged listening on `socket` (empty: libmunge's
// default, /run/munge/munge.socket.2). Throws Failure(FAM_ERR_NOPERM) whose message names
// `call` and the cause (munged not running, ...).
std::string MungeEncode(const std::string &socket, const std::string &payload, const char *call);

// Decodes `credential` with the munged on `socket`. Throws Failure(FAM_ERR_NOPERM) naming `call`
// and why it was refused: made with another key, replayed, expired, from the future, or
// munged unreachable.
MungeIdentity MungeDecode(const std::string &socket, const std::string &credential,
                          const char *call);

// libmunge's default socket when `socket` is empty, else `socket`: for messages.
std::string MungeSocketName(const std::string &socket);

}  // namespace fampool

#endif  // FAMPOOL_RPC_MUNGE_H_
