// FamImpl: the memory-side operations that return wait objects: copy, backup, restore and
// delete of backups. Each runs on its own thread on the memory side; the wait call joins it and
// reports its error.
#include <ctime>
#include <future>

#include "client/fam_impl.h"
#include "memserver/archive.h"

namespace fampool {
namespace {

struct WaitObject {
    static constexpr uint64_t kMagic = 0x74696177706d6166ull;  // "fampwait"
    uint64_t magic = kMagic;
    std::future<void> done;
};

void *Launch(std::function<void()> operation) {
    auto *wait = new WaitObject();
    wait->done = std::async(std::launch::async, std::move(operation));
    return wait;
}

// The memory server holding an item's bytes and where they start in its extent.
struct Home {
    MemoryServer *server;
    ExtentRef extent;
    uint64_t offset;
};

Home HomeOf(Session &session, const ItemInfo &item) {
    const RegionInfo &region = item.region;
    if (region.interleave_size && region.memory_servers.size() > 1) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "{} is interleaved over {} memory servers; memory-side copy, backup and restore "
             "work on items of non-interleaved regions in this release",
             Describe(item), region.memory_servers.size());
    }
    uint64_t index = ServerIndexOf(item.offset);
    return Home{&session.Server(region.memory_servers.at(index)),
                ExtentRef{item.region_id, region.attributes.memoryType == PERSISTENT},
                PhysicalOf(item.offset)};
}

// The archive is one directory every memory server reaches; any server answers for it.
MemoryServer &Archivist(Session &session) { return session.Server(0); }

const char *CheckBackupName(const char *name) {
    if (!name) Fail(openfam::FAM_ERR_NULLPTR, "backup name is NULL");
    Archive::CheckName(name);
    return name;
}

std::string FormatBackup(const BackupInfo &info) {
    char when[32] = "";
    time_t seconds = static_cast<time_t>(info.time);
    struct tm utc;
    if (gmtime_r(&seconds, &utc)) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return fmt::format("name={} size={} uid={} gid={} mode={:04o} time={} item={} crc32c={:08x}\n",
                       info.name, info.size, info.uid, info.gid, info.mode, when,
                       info.item_name.empty() ? "-" : info.item_name, info.checksum);
}

}  // namespace

void FamImpl::Wait(void *wait_object) {
    if (!wait_object) Fail(openfam::FAM_ERR_NULLPTR, "wait object is NULL");
    auto *wait = static_cast<WaitObject *>(wait_object);
    if (wait->magic != WaitObject::kMagic) {
        Fail(openfam::FAM_ERR_INVALID, "not a wait object of fampool (already waited for?)");
    }
    wait->magic = 0;
    std::unique_ptr<WaitObject> owned(wait);
    owned->done.get();
}

void *FamImpl::Copy(Fam_Descriptor *src, uint64_t src_offset, Fam_Descriptor *dest,
                    uint64_t dest_offset, uint64_t nbytes) {
    Session &session = Control();
    Home from = HomeOf(session, Access(session, src, kRead, src_offset, nbytes).item);
    Home to = HomeOf(session, Access(session, dest, kWrite, dest_offset, nbytes).item);
    if (from.server != to.server) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "source and destination are on memory servers {} and {}; memory-side copy works "
             "within one server in this release",
             from.server->id(), to.server->id());
    }
    return Launch([session = session_, from, to, src_offset, dest_offset, nbytes] {
        if (nbytes) {
            from.server->Copy(from.extent, from.offset + src_offset, to.extent,
                              to.offset + dest_offset, nbytes);
        }
    });
}

void *FamImpl::Backup(Fam_Descriptor *src, const char *name, Fam_Backup_Options * /*options*/) {
    Session &session = Control();
    CheckBackupName(name);
    const ItemInfo &item = Access(session, src, kRead, 0, 0).item;
    Home home = HomeOf(session, item);
    try {
        Archivist(session).DescribeBackup(name);
        Fail(openfam::FAM_BACKUP_NOT_CREATED, "backup \"{}\" already exists", name);
    } catch (const Failure &failure) {
        if (failure.fam_error() != openfam::FAM_BACKUP_NOTFOUND) throw;
    }
    BackupInfo info;
    info.name = name;
    info.size = item.size;
    info.uid = item.uid;
    info.gid = item.gid;
    info.mode = item.perm;
    info.item_name = item.name;
    return Launch([session = session_, home, info] {
        home.server->Backup(home.extent, home.offset, info);
    });
}

void *FamImpl::Restore(const char *name, Fam_Descriptor *dest) {
    Session &session = Control();
    CheckBackupName(name);
    const ItemInfo &item = Access(session, dest, kWrite, 0, 0).item;
    Home home = HomeOf(session, item);
    BackupInfo info = Archivist(session).DescribeBackup(name);
    if (info.size > item.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "backup \"{}\" holds {} bytes but {} has only {}", name,
             info.size, Describe(item), item.size);
    }
    return Launch([session = session_, name = std::string(name), home, capacity = item.size] {
        home.server->Restore(name, home.extent, home.offset, capacity);
    });
}

void *FamImpl::Restore(const char *name, Fam_Region_Descriptor *region, const char *item,
                       mode_t perm, Fam_Descriptor **dest) {
    Session &session = Control();
    CheckBackupName(name);
    if (!dest) Fail(openfam::FAM_ERR_NULLPTR, "destination descriptor pointer is NULL");
    if (!region) Fail(openfam::FAM_ERR_NULLPTR, "region descriptor is NULL");
    BackupInfo info = Archivist(session).DescribeBackup(name);
    *dest = Allocate(item, info.size, perm, region);
    const ItemInfo &created = (*dest)->state()->item;
    Home home = HomeOf(session, created);
    // A restore that fails (a damaged backup) takes the item it allocated with it.
    return Launch([session = session_, name = std::string(name), home, created] {
        try {
            home.server->Restore(name, home.extent, home.offset, created.size);
        } catch (...) {
            session->metadata->DeallocateItem(created.region_id, created.offset, session->caller);
            throw;
        }
    });
}

void *FamImpl::DeleteBackup(const char *name) {
    Session &session = Control();
    CheckBackupName(name);
    Archivist(session).DescribeBackup(name);  // unknown names fail here, at the call
    return Launch([session = session_, name = std::string(name)] {
        Archivist(*session).DeleteBackup(name);
    });
}

char *FamImpl::ListBackup(const char *name) {
    Session &session = Control();
    std::string text;
    if (!name || std::string(name) == "*") {
        for (const BackupInfo &info : Archivist(session).ListBackups()) {
            text += FormatBackup(info);
        }
    } else {
        text = FormatBackup(Archivist(session).DescribeBackup(name));
    }
    char *copy = strdup(text.c_str());
    if (!copy) Fail(openfam::FAM_ERR_MEMORY, "out of memory");
    return copy;
}

}  // namespace fampool
