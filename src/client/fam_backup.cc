// FamImpl: the memory-side operations that return wait objects (copy, backup, restore, deleting
// backups): the object's state, the descriptors and the caller's rights are checked here, at
// the call; MemorySideWork (memory_side_work.h) does the rest.
#include "client/fam_impl.h"
#include "client/memory_side_work.h"

namespace fampool {

void FamImpl::Wait(void *wait_object) { MemorySideWork::Wait(wait_object); }

void *FamImpl::Copy(Fam_Descriptor *src, uint64_t src_offset, Fam_Descriptor *dest,
                    uint64_t dest_offset, uint64_t nbytes) {
    Session &session = Control();
    ItemInfo source = descriptors_.Granted(session, src, kRead, src_offset, nbytes);
    ItemInfo target = descriptors_.Granted(session, dest, kWrite, dest_offset, nbytes);
    return MemorySideWork(session_).Copy(
        source, descriptors_.Resolve(session, src).binding(), src_offset, target,
        descriptors_.Resolve(session, dest).binding(), dest_offset, nbytes);
}

void *FamImpl::Backup(Fam_Descriptor *src, const char *name, Fam_Backup_Options * /*options*/) {
    Session &session = Control();
    CheckBackupName(name);
    return MemorySideWork(session_).Backup(descriptors_.Granted(session, src, kRead, 0, 0), name);
}

void *FamImpl::Restore(const char *name, Fam_Descriptor *dest) {
    Session &session = Control();
    CheckBackupName(name);
    return MemorySideWork(session_).Restore(name,
                                            descriptors_.Granted(session, dest, kWrite, 0, 0));
}

void *FamImpl::Restore(const char *name, Fam_Region_Descriptor *region, const char *item,
                       mode_t perm, Fam_Descriptor **dest) {
    Control();
    CheckBackupName(name);
    if (!dest) Fail(openfam::FAM_ERR_NULLPTR, "destination descriptor pointer is NULL");
    if (!region) Fail(openfam::FAM_ERR_NULLPTR, "region descriptor is NULL");
    MemorySideWork work(session_);
    BackupInfo info = work.DescribeBackup(name);
    *dest = Allocate(item, info.size, perm, region);
    return work.RestoreNew(name, (*dest)->state()->item());
}

void *FamImpl::DeleteBackup(const char *name) {
    Control();
    CheckBackupName(name);
    return MemorySideWork(session_).Delete(name);
}

char *FamImpl::ListBackup(const char *name) {
    Control();
    if (!name) {
        Fail(openfam::FAM_ERR_INVALID, "backup name is NULL (\"*\" lists every backup)");
    }
    return MemorySideWork(session_).List(name);
}

}  // namespace fampool
