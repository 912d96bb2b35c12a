#include "memserver/local_memory_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/atomic_apply.h"
#include "common/error.h"
#include "common/test_hold.h"

namespace fampool {

namespace {

// `item "name"` or `item at offset N of region R`, for messages.
std::string Describe(const ItemLayout &item) {
    if (!item.name.empty()) return fmt::format("item \"{}\"", item.name);
    return fmt::format("item at offset {} of region {}", item.offset, item.extent.region_id);
}

// Calls visit(at, place, length) for each run of item bytes [start, start + nbytes) that lies
// contiguously on one server, in order.
template <typename Visit>
void ForEachRun(const ItemLayout &item, uint64_t start, uint64_t nbytes, Visit &&visit) {
    if (item.servers.empty()) {
        Fail(openfam::FAM_ERR_INVALID, "{} lies on no memory server", Describe(item));
    }
    // A RAID5 layout stripes over a parity and at least two data members, in units of the
    // interleave size (found by tests/fuzz/memory_server_rpc_fuzz: one member divided by zero).
    if (item.raid5_members && (item.raid5_members < 3 || item.interleave == 0)) {
        Fail(openfam::FAM_ERR_INVALID,
             "{} is laid out as RAID5 over {} members with a stripe unit of {} bytes: RAID5 "
             "needs 3 members at least and a stripe unit",
             Describe(item), item.raid5_members, item.interleave);
    }
    for (uint64_t at = start, end = start + nbytes; at < end;) {
        BytePlace place = item.Locate(at);
        if (place.index >= item.servers.size()) {
            Fail(openfam::FAM_ERR_INVALID, "{} names server index {} but its region has {} servers",
                 Describe(item), place.index, item.servers.size());
        }
        uint64_t length = std::min(end - at, place.contiguous);
        visit(at, place, length);
        at += length;
    }
}

}  // namespace

// One item's bytes as one operation of this server reaches them: those on this server through
// a mapping of its heap, those on other servers through the peers, opened at the first such
// byte.
class LocalMemoryServer::ItemBytes {
  public:
    ItemBytes(LocalMemoryServer &server, const ItemLayout &item) : server_(server), item_(item) {}

    bool Here(const BytePlace &place) const {
        return item_.servers[place.index].id == server_.id();
    }

    // Item bytes on this server, for reading or (`write`) writing them: as far as the key the
    // client was granted for them reaches.
    char *Local(const BytePlace &place, uint64_t length, bool write, const char *what) {
        uint64_t end = CheckedEnd(place.physical, length);
        ExtentRef extent = item_.extent;
        extent.copy = item_.servers[place.index].copy;
        server_.CheckKey(extent, item_.servers[place.index].key, place.physical, length, write,
                         what);
        if (mapping_.empty() || mapping_.back()->length() < end ||
            mapping_extent_.copy != extent.copy) {
            // Earlier mappings stay: transfers in flight may still read or write through them.
            mapping_.push_back(server_.Map(extent, end));
            mapping_extent_ = extent;
        }
        return mapping_.back()->base() + place.physical;
    }

    PeerTransfers &Remote() {
        if (!remote_) {
            if (!server_.peers_) {
                Fail(openfam::FAM_ERR_INVALIDOP,
                     "{} lies partly on other memory servers, and memory server {} has no "
                     "fabric to reach them",
                     Describe(item_), server_.id());
            }
            remote_ = server_.peers_->Open(item_);
        }
        return *remote_;
    }

    // Waits for the transfers to and from other servers started so far.
    void Finish() {
        if (remote_) remote_->Finish();
    }

    // Runs `work`, which starts transfers on a buffer valid only during this call, and waits
    // for them: also when `work` fails midway, before the buffer goes.
    template <typename Work>
    void OnBuffer(Work &&work) {
        try {
            work();
        } catch (...) {
            remote_.reset();
            throw;
        }
        Finish();
    }

  private:
    LocalMemoryServer &server_;
    const ItemLayout &item_;
    std::vector<std::shared_ptr<HeapMapping>> mapping_;
    ExtentRef mapping_extent_;               // the extent mapping_.back() maps
    std::unique_ptr<PeerTransfers> remote_;  // after mapping_: ends its transfers first
};

uint64_t CheckedEnd(uint64_t offset, uint64_t nbytes) {
    uint64_t end;
    if (__builtin_add_overflow(offset, nbytes, &end)) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "range of {} bytes at offset {} overflows", nbytes,
             offset);
    }
    return end;
}

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
    : id_(id), location_(std::move(location)), archive_(std::move(archive_dir), location_.access) {
    location_.access.MakeDirectory(location_.volatile_dir, FileAccess::Dir::kShared);
    // One directory for both (a server of volatile regions only): clients still pass through
    // it to the server's same-node socket.
    location_.access.MakeDirectory(location_.persistent_dir, FileAccess::Dir::kOwn,
                                   location_.persistent_dir == location_.volatile_dir);
}

std::string LocalMemoryServer::HeapPath(ExtentRef extent) const {
    return (extent.persistent ? location_.persistent_dir : location_.volatile_dir) + "/" +
           location_.prefix + ".r" + std::to_string(extent.region_id) + (extent.copy ? "c" : "");
}

uint64_t LocalMemoryServer::WrittenBytes() const { return Usage().written; }

LocalMemoryServer::HeapUsage LocalMemoryServer::Usage() const {
    std::set<std::string> dirs = {location_.volatile_dir, location_.persistent_dir};
    HeapUsage usage;
    for (const std::string &dir : dirs) {
        std::error_code ec;
        for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
            if (!entry.path().filename().string().starts_with(location_.prefix + ".r")) continue;
            struct stat status {};
            if (stat(entry.path().c_str(), &status) == 0) {
                usage.heaps += 1;
                usage.written += static_cast<uint64_t>(status.st_blocks) * 512;  // 512 B units
                usage.length += static_cast<uint64_t>(status.st_size);
            }
        }
    }
    return usage;
}

void LocalMemoryServer::SetProfile(const MemoryProfile &profile) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    profile_ = profile;
    profile_.known = false;
}

MemoryProfile LocalMemoryServer::Profile() {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    if (!profile_.known) {
        if (profile_.kind.empty()) profile_.kind = "dram";
        if (!profile_.bandwidth || !profile_.latency_ns) {
            const std::string &dir =
                profile_.kind == "dram" ? location_.volatile_dir : location_.persistent_dir;
            std::filesystem::create_directories(dir);
            MemorySpeed speed = MeasureMemory(dir);
            if (!profile_.bandwidth) profile_.bandwidth = speed.bandwidth;
            if (!profile_.latency_ns) profile_.latency_ns = speed.latency_ns;
        }
        profile_.known = true;
    }
    MemoryProfile profile = profile_;
    profile.capacity = capacity_;
    return profile;
}

void LocalMemoryServer::RequireRoom(uint64_t more, const char *call) const {
    if (capacity_ == 0) return;
    uint64_t written = WrittenBytes();
    if (written + more <= capacity_ && written + more >= written) return;
    Fail(openfam::FAM_ERR_NO_SPACE,
         "{}: memory server {} holds {} bytes in its heaps and its capacity is {} bytes: {} more "
         "do not fit",
         call, id_, written, capacity_, more);
}

void LocalMemoryServer::CreateExtent(ExtentRef extent, uint64_t size, uint64_t reserve) {
    {
        std::lock_guard<std::mutex> lock(capacity_mutex_);
        RequireRoom(reserve, "CreateExtent");
        heap::Create(HeapPath(extent), size, location_.access);
    }
    HoldAt("server.extent-created");  // answered late, as through a full link
    std::lock_guard<std::mutex> lock(grants_mutex_);
    ++lives_[GrantsOf(extent)];
}

uint64_t LocalMemoryServer::ExtentLife(ExtentRef extent) const {
    std::lock_guard<std::mutex> lock(grants_mutex_);
    auto found = lives_.find(GrantsOf(extent));
    return found == lives_.end() ? 0 : found->second;
}

void LocalMemoryServer::DestroyExtent(ExtentRef extent) {
    {
        std::lock_guard<std::mutex> lock(grants_mutex_);
        ++lives_[GrantsOf(extent)];
    }
    RevokeWhere(
        extent, [](const Grant &, uint64_t) { return true; }, 0);
    std::string path = HeapPath(extent);
    cache_.Revoke(path);
    heap::Remove(path);
}

void LocalMemoryServer::ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size,
                                     uint64_t reserve) {
    if (new_size > old_size) {
        std::lock_guard<std::mutex> lock(capacity_mutex_);
        RequireRoom(reserve, "ResizeExtent");
        heap::Extend(HeapPath(extent), new_size);
    } else if (new_size < old_size) {
        // The file keeps its length (other processes may map it); the cut tail is released.
        Zero(extent, new_size, old_size - new_size);
    }
}

void LocalMemoryServer::Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) {
    ZeroExtents({ExtentRanges{extent, {{offset, nbytes}}}});
}

void LocalMemoryServer::ZeroExtents(const std::vector<ExtentRanges> &extents) {
    std::lock_guard<std::mutex> lock(zero_mutex_);
    for (const ExtentRanges &each : extents) {
        std::string path = HeapPath(each.extent);
        for (auto [offset, nbytes] : each.ranges) {
            auto mapping = cache_.Get(path, CheckedEnd(offset, nbytes));
            heap::Zero(path, mapping.get(), offset, nbytes);
        }
    }
}

uint64_t LocalMemoryServer::HeapLength(ExtentRef extent) const {
    std::error_code error;
    uint64_t length = std::filesystem::file_size(HeapPath(extent), error);
    if (error) {
        Fail(openfam::FAM_ERR_NOTFOUND, "memory server {}: no heap for region {} ({})", id_,
             extent.region_id, error.message());
    }
    return length;
}

std::shared_ptr<HeapMapping> LocalMemoryServer::Map(ExtentRef extent, uint64_t min_length) {
    return cache_.Get(HeapPath(extent), min_length);
}

void LocalMemoryServer::Copy(const ItemLayout &src, uint64_t src_offset, const ItemLayout &dest,
                             uint64_t dest_offset, uint64_t nbytes) {
    CheckedEnd(src_offset, nbytes);
    CheckedEnd(dest_offset, nbytes);
    ItemBytes from(*this, src), to(*this, dest);
    ForEachRun(src, src_offset, nbytes, [&](uint64_t at, const BytePlace &place, uint64_t length) {
        if (!from.Here(place)) return;  // the server holding those bytes copies them
        const char *source = from.Local(place, length, false, "a copy");
        uint64_t dest_at = dest_offset + (at - src_offset);
        ForEachRun(dest, dest_at, length,
                   [&](uint64_t to_at, const BytePlace &there, uint64_t run) {
                       const char *bytes = source + (to_at - dest_at);
                       if (to.Here(there)) {
                           std::memmove(to.Local(there, run, true, "a copy"), bytes, run);
                       } else {
                           to.Remote().Write(to_at, bytes, run);
                       }
                   });
    });
    to.Finish();
}

BackupInfo LocalMemoryServer::Backup(const ItemLayout &item, const BackupInfo &asked) {
    if (asked.size > item.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "backup \"{}\" of {} bytes from {} of {} bytes",
             asked.name, asked.size, Describe(item), item.size);
    }
    // The permissions the backup keeps are the metadata service's, recorded with the key that
    // reads the item here, not what the client says they are.
    BackupInfo info = asked;
    if (std::optional<Permissions> recorded = RecordedPermissions(item)) {
        info.uid = recorded->uid;
        info.gid = recorded->gid;
        info.mode = recorded->mode;
    } else if (cluster_user_) {
        // A memory server that holds no grant of its own for the item would have to take the
        // client's word for whose the backup is: a user could then file a backup of their own
        // bytes under another user's name and mode, for that user to restore.
        Fail(openfam::FAM_ERR_NOPERM,
             "backup \"{}\" of {}: memory server {} holds no grant for the key presented (a "
             "backup is made by a server holding the item, with the key it granted)",
             asked.name, Describe(item), id_);
    }
    ItemBytes bytes(*this, item);
    return archive_.Write(info, [&](uint64_t start, char *buffer, size_t n) {
        bytes.OnBuffer([&] {
            ForEachRun(item, start, n, [&](uint64_t at, const BytePlace &place, uint64_t length) {
                char *into = buffer + (at - start);
                if (bytes.Here(place)) {
                    std::memcpy(into, bytes.Local(place, length, false, "a backup"), length);
                } else {
                    bytes.Remote().Read(at, into, length);
                }
            });
        });
    });
}
void LocalMemoryServer::RequireBackupAccess(const BackupInfo &info, const Caller &caller,
                                            bool remove) const {
    // The owner's backup is theirs whatever its mode (as a file's owner may always chmod it).
    if ((cluster_user_ && caller.uid == *cluster_user_) || caller.uid == info.uid) return;
    if (!remove && Allowed(info.mode, info.uid, info.gid, caller, kRead)) return;
    if (remove) {
        Fail(openfam::FAM_ERR_NOPERM,
             "backup \"{}\" belongs to uid {}: only its owner{} may delete it (uid {} asks)",
             info.name, info.uid, cluster_user_ ? " or the cluster user" : "", caller.uid);
    }
    Fail(openfam::FAM_ERR_NOPERM,
         "no read permission on backup \"{}\" (owner uid {}, group gid {}, mode {:04o}, kept "
         "from the item it copies) for uid {} gid {}",
         info.name, info.uid, info.gid, info.mode, caller.uid, caller.gid);
}

BackupInfo LocalMemoryServer::DescribeBackup(const std::string &name, const Caller &caller) {
    BackupInfo info = archive_.Describe(name);
    RequireBackupAccess(info, caller, false);
    return info;
}

void LocalMemoryServer::Restore(const std::string &name, const ItemLayout &item,
                                const Caller &caller) {
    BackupInfo info = archive_.Describe(name);
    RequireBackupAccess(info, caller, false);
    if (info.size > item.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "backup \"{}\" holds {} bytes, {} has only {}", name,
             info.size, Describe(item), item.size);
    }
    ItemBytes bytes(*this, item);
    archive_.Read(name, [&](uint64_t start, const char *data, size_t n) {
        bytes.OnBuffer([&] {
            ForEachRun(item, start, n, [&](uint64_t at, const BytePlace &place, uint64_t length) {
                const char *from = data + (at - start);
                if (bytes.Here(place)) {
                    std::memcpy(bytes.Local(place, length, true, "a restore"), from, length);
                } else {
                    bytes.Remote().Write(at, from, length);
                }
            });
        });
    });
}

void LocalMemoryServer::DeleteBackup(const std::string &name, const Caller &caller) {
    RequireBackupAccess(archive_.Describe(name), caller, true);
    archive_.Delete(name);
}

std::vector<BackupInfo> LocalMemoryServer::ListBackups(const Caller &caller) {
    std::vector<BackupInfo> readable;
    for (BackupInfo &info : archive_.List()) {
        bool all = (cluster_user_ && caller.uid == *cluster_user_) || caller.uid == info.uid;
        if (all || Allowed(info.mode, info.uid, info.gid, caller, kRead)) {
            readable.push_back(std::move(info));
        }
    }
    return readable;
}

char *LocalMemoryServer::Reach(ExtentRef extent, uint64_t key, uint64_t offset, uint64_t length,
                               bool write, const char *what, std::shared_ptr<HeapMapping> *hold,
                               uint64_t *life) {
    // The grant's own mapping where it covers the bytes: the extent the key was granted for,
    // even if it is destroyed and made anew meanwhile.
    CheckKey(extent, key, offset, length, write, what, hold, life);
    if (!*hold || (*hold)->length() < CheckedEnd(offset, length))
        *hold = Map(extent, CheckedEnd(offset, length));
    return (*hold)->base() + offset;
}

void LocalMemoryServer::Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                               const void *operand, const void *compare, void *result) {
    auto data_type = static_cast<DataType>(type);
    CheckKey(extent, key, offset, SizeOf(data_type), static_cast<AtomicOp>(op) != AtomicOp::kFetch,
             "an atomic");
    auto mapping = Map(extent, CheckedEnd(offset, SizeOf(data_type)));
    ApplyAtomic(mapping->base() + offset, static_cast<AtomicOp>(op), data_type, operand, compare,
                result);
}

void LocalMemoryServer::ApplyElements(ExtentRef extent, uint64_t key, ElementOp op,
                                      uint64_t element_size, const std::vector<uint64_t> &offsets,
                                      char *data) {
    if (offsets.empty()) return;
    if (element_size == 0 || (op == ElementOp::kAdd && element_size != 4 && element_size != 8)) {
        Fail(openfam::FAM_ERR_INVALID, "memory server {}: {} of {}-byte elements", id_, NameOf(op),
             element_size);
    }
    auto [low, high] = std::minmax_element(offsets.begin(), offsets.end());
    uint64_t end = CheckedEnd(*high, element_size);
    CheckKey(extent, key, *low, end - *low, op != ElementOp::kGather, NameOf(op));
    if (op == ElementOp::kAdd) {
        for (uint64_t offset : offsets) {
            if (offset % element_size != 0) {
                Fail(openfam::FAM_ERR_INVALID, "memory server {}: {} at unaligned offset {}", id_,
                     NameOf(op), offset);
            }
        }
    }
    auto mapping = Map(extent, end);
    char *base = mapping->base();
    for (size_t i = 0; i < offsets.size(); ++i) {
        ApplyElement(op, element_size, base + offsets[i], data + i * element_size);
    }
}

}  // namespace fampool
