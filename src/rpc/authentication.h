// Who calls fampool's services, proven with MUNGE (`authentication: munge`). A caller
// authenticates once per session: it sends a credential (rpc/munge.h) whose payload names the
// service it is meant for and a random nonce; the service decodes it with its munged, which
// refuses a credential made with another key or presented before, and answers a session
// token, 128 random bits bound to the uid and gid munged vouched for. Later calls carry the
// token instead of a credential: a call costs the service a table lookup, not a round trip to
// munged, and the uid and gid a caller states are not used.
//
// The token is a bearer secret: whoever reads it on the network can call as its owner until
// the session ends. The network between callers and services must be trusted, as
// docs/deployment.md says.
#ifndef FAMPOOL_RPC_AUTHENTICATION_H_
#define FAMPOOL_RPC_AUTHENTICATION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "common/fam_objects.h"
#include "common/quotas.h"

namespace fampool {

// The gRPC header that carries a session token to a memory server (binary: "-bin").
constexpr char kTokenHeader[] = "fampool-token-bin";

// A call made without a session the service knows (no token, an unknown one, or one that
// expired): the caller may authenticate again and repeat the call, which was not run. gRPC
// carries it as status UNAUTHENTICATED; a caller that cannot authenticate sees FAM_ERR_NOPERM.
class Unauthenticated : public Failure {
  public:
    explicit Unauthenticated(const std::string &message)
        : Failure(openfam::FAM_ERR_NOPERM, message) {}
};

// What a credential for the service `audience` carries: the audience and a random nonce.
std::string CredentialPayload(const std::string &audience);
// A credential for the service `audience` ("metadata", "memory 3"), made by the munged on
// `socket` (empty: libmunge's default). Throws Failure(FAM_ERR_NOPERM) naming `call`.
std::string MakeCredential(const std::string &socket, const std::string &audience,
                           const char *call);

// "memory 3": what a credential for memory server `id` names.
std::string MemoryServerAudience(uint64_t id);
constexpr char kMetadataAudience[] = "metadata";

// What a session's fabric messages carry and are sealed with (messages/message_seal.h): `id`
// names the session in each message, `key` tags each call and reply. The token itself never
// travels on the fabric: both are keyed BLAKE2b hashes of it (libsodium), and neither
// reveals it.
struct SessionSeal {
    std::string id;   // 16 bytes
    std::string key;  // 16 bytes
    static SessionSeal Of(const std::string &token);
};

// The seal of the token asked for last, derived once per token (a caller's session changes
// only when it authenticates again). Thread-safe.
class SealCache {
  public:
    SessionSeal For(const std::string &token);

  private:
    std::mutex mutex_;
    std::string token_;
    SessionSeal seal_;
};

// The sessions a service opened: token -> the caller's uid and gid. Thread-safe; Resolve, on
// every call, takes a shared lock.
class SessionTable {
  public:
    struct Opened {
        std::string token;  // 16 random bytes
        Caller caller;
    };
    // A session as a sealed fabric message names it (FindSealed).
    struct Sealed {
        std::string token;
        std::string key;  // SessionSeal::key
    };

    // `service` names the service in messages ("metadata service 127.0.0.1:8787"). Credentials
    // must be meant for `audience`. A session unused for `idle_limit` ends (its caller
    // authenticates again when it comes back).
    SessionTable(std::string munge_socket, std::string audience, std::string service,
                 std::chrono::seconds idle_limit = std::chrono::hours(1));
    // The sessions each user may have open here (Quotas::Sessions); the user who runs the
    // service has no bound. Default: kDefaultSessionsPerUser each.
    void Bound(Quotas quotas);

    // Decodes `credential` and opens a session for its uid and gid. Throws
    // Failure(FAM_ERR_NOPERM) naming `call` and the reason it was refused, and
    // Failure(FAM_ERR_RESOURCE) when the user has all the sessions its quota allows.
    Opened Open(const std::string &credential, const char *call);
    // The caller of the session `token`. Throws Unauthenticated naming `call` when there is none.
    Caller Resolve(const std::string &token, const char *call);
    // Whether `token` names a live session (counts as a use of it).
    bool Known(const std::string &token);
    // The session whose SessionSeal::id is `id`, if it is live (counts as a use of it): what
    // a fabric message that names it is checked and answered with. No exception: a message
    // that names none is dropped, unanswered (messages/message_service.h).
    std::optional<Sealed> FindSealed(const std::string &id);
    // Ends the session `token` (its caller finalized): the token is refused from now on. An
    // unknown token is no error.
    void End(const std::string &token);
    size_t size() const;

  private:
    struct Entry {
        Caller caller;
        SessionSeal seal;
        std::atomic<int64_t> last_used{0};  // seconds of steady_clock
    };
    static int64_t Now();
    void ForgetIdle(int64_t now);  // under the exclusive lock
    void Erase(std::unordered_map<std::string, Entry>::iterator session);  // the same
    // The live entry of `token` (touched), or null; under the shared lock.
    Entry *Live(const std::string &token, int64_t now);

    std::string munge_socket_, audience_, service_;
    int64_t idle_limit_;
    mutable std::shared_mutex mutex_;
    std::unordered_map<std::string, Entry> sessions_;
    std::unordered_map<std::string, std::string> by_seal_;  // SessionSeal::id -> token
    std::unordered_map<uint32_t, uint64_t> per_user_;       // uid -> sessions open
    Quotas quotas_;
    int64_t last_sweep_ = 0;
};

}  // namespace fampool

#endif  // FAMPOOL_RPC_AUTHENTICATION_H_
