#include "messages/message_seal.h"

#include <sodium.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace fampool {
namespace {

// libsodium picks its fastest BLAKE2b for the processor in sodium_init (safe to call from any
// thread, any number of times).
void InitSodiumOnce() {
    static const bool ready = sodium_init() >= 0;
    if (!ready) Fail(openfam::FAM_ERR_LIBFABRIC, "libsodium failed to initialize (sodium_init)");
}

static_assert(crypto_shorthash_siphashx24_BYTES == kSealBytes);

void SealTag(const std::string &key, const char *data, size_t body, unsigned char *tag) {
    InitSodiumOnce();
    if (key.size() != crypto_shorthash_siphashx24_KEYBYTES) {
        Fail(openfam::FAM_ERR_INVALID, "a message seal's key is {} bytes, not {}", key.size(),
             crypto_shorthash_siphashx24_KEYBYTES);
    }
    crypto_shorthash_siphashx24(tag, reinterpret_cast<const unsigned char *>(data), body,
                                reinterpret_cast<const unsigned char *>(key.data()));
}

}  // namespace

void SealMessage(const std::string &key, char *data, size_t body) {
    SealTag(key, data, body, reinterpret_cast<unsigned char *>(data + body));
}

bool SealHolds(const std::string &key, const char *data, size_t length) {
    if (length < kSealBytes) return false;
    unsigned char tag[kSealBytes];
    SealTag(key, data, length - kSealBytes, tag);
    return sodium_memcmp(tag, data + length - kSealBytes, kSealBytes) == 0;
}

std::string ReplyProof(const std::string &secret, const std::string &session,
                       const std::string &reply_to) {
    // The session id is 16 bytes: the two parts cannot be shifted into one another.
    std::string both = session + reply_to;
    std::string proof(kSealBytes, '\0');
    SealTag(secret, both.data(), both.size(), reinterpret_cast<unsigned char *>(proof.data()));
    return proof;
}

std::string RandomSecret() {
    std::string secret;
    for (int i = 0; i < 2; ++i) {
        uint64_t part = RandomCallId();
        secret.append(reinterpret_cast<const char *>(&part), sizeof part);
    }
    return secret;
}

uint64_t RandomCallId() {
    thread_local std::array<uint64_t, 256> ids;
    thread_local size_t next = ids.size();
    for (;;) {
        if (next == ids.size()) {
            auto *bytes = reinterpret_cast<char *>(ids.data());
            size_t filled = 0, wanted = sizeof ids;
            while (filled < wanted) {
                ssize_t got = getrandom(bytes + filled, wanted - filled, 0);
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) {
                    Fail(openfam::FAM_ERR_LIBFABRIC, "cannot read random bytes for a call id: {}",
                         std::strerror(errno));
                }
                filled += static_cast<size_t>(got);
            }
            next = 0;
        }
        uint64_t id = ids[next++];
        if (id != 0) return id;
    }
}

}  // namespace fampool
