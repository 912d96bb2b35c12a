// LocalMemoryServer's fabric keys (memserver/local_memory_server.h): granting them with the
// permissions they carry, checking the keys callers present, handing same-node processes the
// heaps their keys reach, and revoking them.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "memserver/local_memory_server.h"

namespace fampool {

KeyGrant LocalMemoryServer::GrantKey(ExtentRef extent, uint64_t offset, uint64_t size,
                                     bool writable, const Permissions &permissions) {
    KeyGrant grant;
    if (!registrar_) return grant;
    bool again;
    {
        std::lock_guard<std::mutex> lock(grants_mutex_);
        again = revoked_.count(GrantsOf(extent)) > 0;
    }
    if (again) HoldAt("server.key-regranted");
    std::lock_guard<std::mutex> lock(grants_mutex_);
    // A whole-extent grant covers the heap as it is now: after the region grew, a mapping (and
    // a grant) of the old length would leave the new part out of reach.
    uint64_t end = size ? CheckedEnd(offset, size) : HeapLength(extent);
    auto mapping = Map(extent, end);
    uint64_t length = size ? size : mapping->length();
    // What the caller is told of a grant: its key, and where and whom to ask for the heap.
    auto told = [&](const Grant &g) {
        return KeyGrant{g.registration.key,
                        g.registration.base - offset,
                        registrar_->address(),
                        HeapPath(extent),
                        NodeIdentity(),
                        socket_,
                        static_cast<uint32_t>(geteuid()),
                        incarnation_};
    };
    auto range = grants_.equal_range(GrantsOf(extent));
    for (auto it = range.first; it != range.second; ++it) {
        Grant &g = it->second;
        // Reuse a grant of the same range on the current mapping (a grown heap gets a new one).
        // The permissions are the metadata service's latest word (a change of them revokes
        // the grants first, so they only ever agree).
        if (g.offset == offset && g.size == size && g.writable == writable &&
            g.mapping == mapping) {
            if (permissions.known) g.permissions = permissions;
            return told(g);
        }
    }
    Grant g{offset,
            size,
            writable,
            mapping,
            registrar_->Register(mapping->base() + offset, length, writable),
            permissions,
            HeapPath(extent)};
    grants_.emplace(GrantsOf(extent), g);
    return told(g);
}

std::optional<Permissions> LocalMemoryServer::RecordedPermissions(const ItemLayout &item) {
    std::lock_guard<std::mutex> lock(grants_mutex_);
    for (const ItemLayout::Server &server : item.servers) {
        if (server.id != id_) continue;
        ExtentRef extent{item.extent.region_id, item.extent.persistent, server.copy};
        auto range = grants_.equal_range(GrantsOf(extent));
        for (auto it = range.first; it != range.second; ++it) {
            const Grant &g = it->second;
            if (g.registration.key == server.key && g.permissions.known) return g.permissions;
        }
    }
    return std::nullopt;
}

int LocalMemoryServer::OpenHeapFor(const Caller &peer, uint64_t region_id, uint64_t key,
                                   bool writable) {
    std::lock_guard<std::mutex> lock(grants_mutex_);
    for (bool copy : {false, true}) {
        ExtentRef extent{region_id, false, copy};  // GrantsOf ignores `persistent`
        auto range = grants_.equal_range(GrantsOf(extent));
        for (auto it = range.first; it != range.second; ++it) {
            const Grant &g = it->second;
            if (g.registration.key != key) continue;
            if (g.size != 0) {
                Fail(openfam::FAM_ERR_INVALIDOP,
                     "memory server {}: key {:#x} grants one item of region {} (a DATAITEM-level "
                     "region): a descriptor of the heap would reach its other items too",
                     id_, key, region_id);
            }
            const Permissions &p = g.permissions;
            bool may_read = p.known && Allowed(p.mode, p.uid, p.gid, peer, kRead);
            bool may_write = may_read && g.writable && Allowed(p.mode, p.uid, p.gid, peer, kWrite);
            if (!may_read || (writable && !may_write)) {
                Fail(openfam::FAM_ERR_NOPERM,
                     "memory server {}: uid {} gid {} may not {} region {} (owner uid {}, group "
                     "gid {}, mode {:04o}{})",
                     id_, peer.uid, peer.gid, writable ? "write" : "read", region_id, p.uid, p.gid,
                     p.mode, g.writable ? "" : "; the key is read-only");
            }
            // The file whose memory the key reaches.
            int fd = open(g.heap_path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
            if (fd < 0) {
                Fail(openfam::FAM_ERR_RESOURCE, "memory server {}: cannot open heap {}: {}", id_,
                     g.heap_path, std::strerror(errno));
            }
            return fd;
        }
    }
    Fail(openfam::FAM_ERR_NOPERM,
         "memory server {}: key {:#x} grants nothing of region {} (revoked, or never granted)", id_,
         key, region_id);
}

void LocalMemoryServer::CheckKey(ExtentRef extent, uint64_t key, uint64_t offset, uint64_t length,
                                 bool write, const char *what,
                                 std::shared_ptr<HeapMapping> *mapping, uint64_t *life) {
    uint64_t end = CheckedEnd(offset, length);
    std::lock_guard<std::mutex> lock(grants_mutex_);
    if (life) {
        auto found = lives_.find(GrantsOf(extent));
        *life = found == lives_.end() ? 0 : found->second;
    }
    if (!registrar_) return;
    auto range = grants_.equal_range(GrantsOf(extent));
    for (auto it = range.first; it != range.second; ++it) {
        const Grant &g = it->second;
        if (g.registration.key != key) continue;
        uint64_t granted_end = g.offset + (g.size ? g.size : g.mapping->length());
        if (offset >= g.offset && end <= granted_end && (g.writable || !write)) {
            if (mapping) *mapping = g.mapping;
            return;
        }
    }
    Fail(openfam::FAM_ERR_NOPERM,
         "memory server {}: key {:#x} grants no {} access to bytes [{}, {}) of region {} for {} "
         "(revoked, or never granted)",
         id_, key, write ? "write" : "read", offset, end, extent.region_id, what);
}

void LocalMemoryServer::RevokeKeys(ExtentRef extent, uint64_t offset) {
    RevokeWhere(
        extent,
        [](const Grant &g, uint64_t at) {
            return at == kAllGrants || (g.size != 0 && g.offset == at);
        },
        offset);
}

void LocalMemoryServer::RevokeWhere(ExtentRef extent, bool (*match)(const Grant &, uint64_t),
                                    uint64_t arg) {
    if (!registrar_) return;
    std::lock_guard<std::mutex> lock(grants_mutex_);
    revoked_.insert(GrantsOf(extent));
    auto range = grants_.equal_range(GrantsOf(extent));
    for (auto it = range.first; it != range.second;) {
        if (match(it->second, arg)) {
            registrar_->Deregister(it->second.registration.handle);
            it = grants_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace fampool
