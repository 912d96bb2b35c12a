#include "memserver/local_memory_server.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace fampool {

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
    auto mapping = cache_.Get(path, offset + nbytes);
    heap::Zero(path, mapping.get(), offset, nbytes);
}

std::shared_ptr<HeapMapping> LocalMemoryServer::Map(ExtentRef extent, uint64_t min_length) {
    return cache_.Get(HeapPath(extent), min_length);
}

void LocalMemoryServer::Copy(ExtentRef src, uint64_t src_offset, ExtentRef dest,
                             uint64_t dest_offset, uint64_t nbytes) {
    auto from = Map(src, src_offset + nbytes);
    auto to = Map(dest, dest_offset + nbytes);
    std::memmove(to->base() + dest_offset, from->base() + src_offset, nbytes);
}

BackupInfo LocalMemoryServer::Backup(ExtentRef extent, uint64_t offset, const BackupInfo &info) {
    auto mapping = Map(extent, offset + info.size);
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
    auto mapping = Map(extent, offset + info.size);
    archive_.Read(name, mapping->base() + offset);
}

void LocalMemoryServer::DeleteBackup(const std::string &name) { archive_.Delete(name); }

std::vector<BackupInfo> LocalMemoryServer::ListBackups() { return archive_.List(); }

}  // namespace fampool
