// The memory-side operations that return wait objects: copy, backup, restore and deleting
// backups. FamImpl resolves the descriptors and checks the caller's rights (fam_backup.cc);
// this class chooses the memory servers that do the work (server to server over the fabric
// where an item spans several; a redundant item's healthy members, again after a member's
// loss) and starts it on a wait object's thread; Wait joins it and reports the first error.
#ifndef FAMPOOL_CLIENT_MEMORY_SIDE_WORK_H_
#define FAMPOOL_CLIENT_MEMORY_SIDE_WORK_H_

#include <cstdint>
#include <memory>

#include "client/session.h"

namespace fampool {

class MemorySideWork {
  public:
    explicit MemorySideWork(std::shared_ptr<Session> session) : session_(std::move(session)) {}

    // Copies nbytes from `source` (granted for reading; `from`, its binding) at src_offset to
    // `target` (granted for writing) at dest_offset. Items of redundant regions are copied
    // through this process, so that copies and parity are written as a put writes them.
    void *Copy(const ItemInfo &source, std::shared_ptr<Binding> from, uint64_t src_offset,
               const ItemInfo &target, std::shared_ptr<Binding> to, uint64_t dest_offset,
               uint64_t nbytes);
    // Backs `item` (granted for reading) up under `name`, which must be free.
    void *Backup(const ItemInfo &item, const char *name);
    // Restores backup `name` into `item` (granted for writing), which must be large enough.
    void *Restore(const char *name, const ItemInfo &item);
    // The same into an item allocated for it, which a failed restore deallocates.
    void *RestoreNew(const char *name, const ItemInfo &created);
    // Throws FAM_BACKUP_NOTFOUND when there is no backup `name` the caller may read.
    BackupInfo DescribeBackup(const char *name);
    void *Delete(const char *name);
    // fam_list_backup's text: backup `name`, or every backup the caller may read for "*".
    char *List(const char *name);
    static void Wait(void *wait_object);

  private:
    std::shared_ptr<Session> session_;
};

// Throws FAM_ERR_NULLPTR or FAM_ERR_INVALID unless `name` can name a backup; returns it.
const char *CheckBackupName(const char *name);

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_MEMORY_SIDE_WORK_H_
