#include "memserver/local_memory_server.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "transport/atomic_apply.h"

namespace fampool {

namespace {

// The end of [offset, offset + nbytes); a request whose range wraps is refused, never served:
// the memory server does not trust its callers.
uint64_t EndOf(uint64_t offset, uint64_t nbytes) {
    uint64_t end;
    if (__builtin_add_overflow(offset, nbytes, &end)) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "range of {} bytes at offset {} overflows", nbytes,
             offset);
    }
    return end;
}

}  // namespace

std::string NodeIdentity() {
    static const std::string identity = [] {
        std::ifstream in("/proc/sys/kernel/random/boot_id");
        std::string id;
        std::getline(in, id);
        return id;
    }();
    return identity;
}

LocalMemoryServer::LocalMemoryServer(uint64_t id, HeapLocation location, std::string archive_dir)
    : id_(id), location_(std::move(location)), archive_(std::move(archive_dir)) {
    for (const std::string &dir : {location_.volatile_dir, location_.persistent_dir}) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) {
            Fail(openfam::FAM_ERR_RESOURCE, "cannot create heap directory {}: {}", dir,
                 ec.message());
        }
    }
    chmod(location_.persistent_dir.c_str(), 0777);
}

std::string LocalMemoryServer::HeapPath(ExtentRef extent) const {
    return (extent.persistent ? location_.persistent_dir : location_.volatile_dir) + "/" +
           location_.prefix + ".r" + std::to_string(extent.region_id);
}

void LocalMemoryServer::CreateExtent(ExtentRef extent, uint64_t size) {
    heap::Create(HeapPath(extent), size);
}

void LocalMemoryServer::DestroyExtent(ExtentRef extent) {
    RevokeWhere(extent.region_id, [](const Grant &, uint64_t) { return true; }, 0);
    std::string path = HeapPath(extent);
    cache_.Revoke(path);
    heap::Remove(path);
}

void LocalMemoryServer::ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size) {
    if (new_size > old_size) {
        heap::Extend(HeapPath(extent), new_size);
    } else if (new_size < old_size) {
        // The file keeps its length (other processes may map it); the cut tail is released.
        Zero(extent, new_size, old_size - new_size);
    }
}

void LocalMemoryServer::Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) {
    std::string path = HeapPath(extent);
    auto mapping = cache_.Get(path, EndOf(offset, nbytes));
    heap::Zero(path, mapping.get(), offset, nbytes);
}

std::shared_ptr<HeapMapping> LocalMemoryServer::Map(ExtentRef extent, uint64_t min_length) {
    return cache_.Get(HeapPath(extent), min_length);
}

void LocalMemoryServer::Copy(ExtentRef src, uint64_t src_offset, ExtentRef dest,
                             uint64_t dest_offset, uint64_t nbytes) {
    auto from = Map(src, EndOf(src_offset, nbytes));
    auto to = Map(dest, EndOf(dest_offset, nbytes));
    std::memmove(to->base() + dest_offset, from->base() + src_offset, nbytes);
}

BackupInfo LocalMemoryServer::Backup(ExtentRef extent, uint64_t offset, const BackupInfo &info) {
    auto mapping = Map(extent, EndOf(offset, info.size));
    return archive_.Write(info, mapping->base() + offset);
}

BackupInfo LocalMemoryServer::DescribeBackup(const std::string &name) {
    return archive_.Describe(name);
}

void LocalMemoryServer::Restore(const std::string &name, ExtentRef extent, uint64_t offset,
                                uint64_t capacity) {
    BackupInfo info = archive_.Describe(name);
    if (info.size > capacity) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "backup \"{}\" holds {} bytes, item has only {}", name,
             info.size, capacity);
    }
    auto mapping = Map(extent, EndOf(offset, info.size));
    archive_.Read(name, mapping->base() + offset);
}

void LocalMemoryServer::DeleteBackup(const std::string &name) { archive_.Delete(name); }

std::vector<BackupInfo> LocalMemoryServer::ListBackups() { return archive_.List(); }

void LocalMemoryServer::Atomic(ExtentRef extent, uint64_t offset, int op, int type,
                               const void *operand, const void *compare, void *result) {
    auto data_type = static_cast<DataType>(type);
    auto mapping = Map(extent, EndOf(offset, SizeOf(data_type)));
    ApplyAtomic(mapping->base() + offset, static_cast<AtomicOp>(op), data_type, operand, compare,
                result);
}

}  // namespace fampool

namespace fampool {

KeyGrant LocalMemoryServer::GrantKey(ExtentRef extent, uint64_t offset, uint64_t size,
                                     bool writable) {
    KeyGrant grant;
    if (!registrar_) return grant;
    std::lock_guard<std::mutex> lock(grants_mutex_);
    auto mapping = Map(extent, EndOf(offset, size));
    uint64_t length = size ? size : mapping->length();
    auto range = grants_.equal_range(extent.region_id);
    for (auto it = range.first; it != range.second; ++it) {
        const Grant &g = it->second;
        // Reuse a grant of the same range on the current mapping (a grown heap gets a new one).
        if (g.offset == offset && g.size == size && g.writable == writable &&
            g.mapping == mapping) {
            return KeyGrant{g.registration.key, g.registration.base - offset,
                            registrar_->address(), HeapPath(extent), NodeIdentity()};
        }
    }
    Grant g{offset, size, writable, mapping,
            registrar_->Register(mapping->base() + offset, length, writable)};
    grants_.emplace(extent.region_id, g);
    return KeyGrant{g.registration.key, g.registration.base - offset, registrar_->address(),
                    HeapPath(extent), NodeIdentity()};
}

void LocalMemoryServer::RevokeKeys(ExtentRef extent, uint64_t offset) {
    RevokeWhere(
        extent.region_id,
        [](const Grant &g, uint64_t at) {
            return at == kAllGrants || (g.size != 0 && g.offset == at);
        },
        offset);
}

void LocalMemoryServer::RevokeWhere(uint64_t region_id, bool (*match)(const Grant &, uint64_t),
                                    uint64_t arg) {
    if (!registrar_) return;
    std::lock_guard<std::mutex> lock(grants_mutex_);
    auto range = grants_.equal_range(region_id);
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
