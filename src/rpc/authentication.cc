#include "rpc/authentication.h"

#include <sodium.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "common/metrics.h"
#include "rpc/munge.h"

namespace fampool {
namespace {

// The payload of a credential: this prefix, the audience, a newline and a nonce (hex). The
// audience keeps a credential sniffed on its way to one service from opening a session at
// another whose munged has not seen it; the nonce makes every credential's payload unique.
constexpr char kPayloadPrefix[] = "fampool-auth 1\n";

std::string RandomBytes(size_t count, const char *call) {
    std::string bytes(count, '\0');
    size_t filled = 0;
    while (filled < count) {
        ssize_t got = getrandom(bytes.data() + filled, count - filled, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            Fail(openfam::FAM_ERR_NOPERM, "{}: cannot read random bytes: {}", call,
                 std::strerror(errno));
        }
        filled += static_cast<size_t>(got);
    }
    return bytes;
}

std::string Hex(const std::string &bytes) {
    std::string text;
    for (unsigned char c : bytes) text += fmt::format("{:02x}", c);
    return text;
}

}  // namespace

SessionSeal SessionSeal::Of(const std::string &token) {
    // BLAKE2b keyed with the token (16 bytes, the least it takes as a key) over a label that
    // says what the output is for: the id and the key are unrelated to each other.
    auto derive = [&](const char *label, size_t bytes) {
        std::string out(bytes, '\0');
        crypto_generichash(reinterpret_cast<unsigned char *>(out.data()), bytes,
                           reinterpret_cast<const unsigned char *>(label), std::strlen(label),
                           reinterpret_cast<const unsigned char *>(token.data()), token.size());
        return out;
    };
    return SessionSeal{derive("fampool session id", 16), derive("fampool message key", 16)};
}

SessionSeal SealCache::For(const std::string &token) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (token != token_ || seal_.id.empty()) {
        seal_ = SessionSeal::Of(token);
        token_ = token;
    }
    return seal_;
}

std::string MemoryServerAudience(uint64_t id) { return fmt::format("memory {}", id); }

std::string CredentialPayload(const std::string &audience) {
    return kPayloadPrefix + audience + "\n" + Hex(RandomBytes(16, "CredentialPayload"));
}

std::string MakeCredential(const std::string &socket, const std::string &audience,
                           const char *call) {
    return MungeEncode(socket, CredentialPayload(audience), call);
}

namespace {

// fampool_authentication_failures_total{reason}: credentials refused (undecodable, expired,
// replayed, or meant for another service), calls whose session token is unknown, and sessions
// refused because their user has all its quota allows. Made when
// the first SessionTable is, so that no count takes the registry's lock under the table's.
metrics::Counter &Refusals(const char *reason) {
    static const char *const kReasons[] = {"credential", "session", "quota"};
    static metrics::Counter *counters[3] = {};
    static std::once_flag made;
    std::call_once(made, [] {
        for (int i = 0; i < 3; ++i) {
            counters[i] = &metrics::Process().Counter(
                "fampool_authentication_failures_total",
                "Callers refused by authentication, by reason", {{"reason", kReasons[i]}});
        }
    });
    for (int i = 0; i < 3; ++i) {
        if (std::strcmp(reason, kReasons[i]) == 0) return *counters[i];
    }
    return *counters[1];
}
void CountRefusal(const char *reason) { Refusals(reason).Add(); }

}  // namespace

SessionTable::SessionTable(std::string munge_socket, std::string audience, std::string service,
                           std::chrono::seconds idle_limit)
    : munge_socket_(std::move(munge_socket)),
      audience_(std::move(audience)),
      service_(std::move(service)),
      idle_limit_(idle_limit.count()) {
    Refusals("session");
}

int64_t SessionTable::Now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

SessionTable::Opened SessionTable::Open(const std::string &credential, const char *call) {
    MungeIdentity identity;
    try {
        identity = MungeDecode(munge_socket_, credential, call);
    } catch (const Failure &) {
        CountRefusal("credential");
        throw;
    }
    std::string expected = kPayloadPrefix + audience_ + "\n";
    if (identity.payload.compare(0, expected.size(), expected) != 0) {
        std::string named = identity.payload.rfind(kPayloadPrefix, 0) == 0
                                ? identity.payload.substr(sizeof kPayloadPrefix - 1)
                                : std::string("not fampool's");
        named = named.substr(0, named.find('\n'));
        CountRefusal("credential");
        Fail(openfam::FAM_ERR_NOPERM,
             "{}: refused: the MUNGE credential of uid {} is meant for \"{}\", not for the {}",
             call, identity.uid, named, service_);
    }
    Opened opened{RandomBytes(16, call), Caller{identity.uid, identity.gid}};
    int64_t now = Now();
    std::unique_lock<std::shared_mutex> lock(mutex_);
    ForgetIdle(now);
    uint64_t &open = per_user_[identity.uid];
    uint64_t most = quotas_.Sessions(identity.uid);
    if (open >= most && identity.uid != geteuid()) {
        CountRefusal("quota");
        Fail(openfam::FAM_ERR_RESOURCE,
             "{}: refused: {} has {} sessions open with the {}, as many as its quota allows "
             "(quotas: sessions; a session ends at fam_finalize, or after {} s unused)",
             call, QuotaOwner(false, identity.uid), open, service_, idle_limit_);
    }
    ++open;
    Entry &entry = sessions_[opened.token];
    entry.caller = opened.caller;
    entry.seal = SessionSeal::Of(opened.token);
    by_seal_[entry.seal.id] = opened.token;
    entry.last_used.store(now, std::memory_order_relaxed);
    return opened;
}

Caller SessionTable::Resolve(const std::string &token, const char *call) {
    if (token.empty()) {
        CountRefusal("session");
        throw Unauthenticated(fmt::format(
            "{}: the {} authenticates callers with MUNGE (authentication: munge) and this call "
            "carries no session token",
            call, service_));
    }
    std::shared_lock<std::shared_mutex> lock(mutex_);
    Entry *entry = Live(token, Now());
    if (!entry) {
        CountRefusal("session");
        throw Unauthenticated(fmt::format(
            "{}: the {} does not know this caller's session (it ended after {} s unused, or "
            "the service restarted)",
            call, service_, idle_limit_));
    }
    return entry->caller;
}

SessionTable::Entry *SessionTable::Live(const std::string &token, int64_t now) {
    auto found = sessions_.find(token);
    // An idle session has ended even before a sweep removes it.
    if (found == sessions_.end() ||
        now - found->second.last_used.load(std::memory_order_relaxed) > idle_limit_) {
        return nullptr;
    }
    found->second.last_used.store(now, std::memory_order_relaxed);
    return &found->second;
}

bool SessionTable::Known(const std::string &token) {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return Live(token, Now()) != nullptr;
}

std::optional<SessionTable::Sealed> SessionTable::FindSealed(const std::string &id) {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto named = by_seal_.find(id);
    Entry *entry = named == by_seal_.end() ? nullptr : Live(named->second, Now());
    if (!entry) {
        CountRefusal("session");
        return std::nullopt;
    }
    return Sealed{named->second, entry->seal.key};
}

void SessionTable::End(const std::string &token) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto found = sessions_.find(token);
    if (found != sessions_.end()) Erase(found);
}

void SessionTable::Bound(Quotas quotas) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    quotas_ = std::move(quotas);
}

void SessionTable::Erase(std::unordered_map<std::string, Entry>::iterator session) {
    by_seal_.erase(session->second.seal.id);
    auto user = per_user_.find(session->second.caller.uid);
    if (user != per_user_.end() && --user->second == 0) per_user_.erase(user);
    sessions_.erase(session);
}

size_t SessionTable::size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return sessions_.size();
}

void SessionTable::ForgetIdle(int64_t now) {
    // At most once a minute: a sweep reads every session.
    if (now - last_sweep_ < 60) return;
    last_sweep_ = now;
    for (auto session = sessions_.begin(); session != sessions_.end();) {
        auto next = std::next(session);
        if (now - session->second.last_used.load(std::memory_order_relaxed) > idle_limit_) {
            Erase(session);
        }
        session = next;
    }
}

}  // namespace fampool
