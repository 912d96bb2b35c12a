// The archive store: a directory (reachable by every memory server) holding one file per
// backup. A backup file is a 4 KiB text header (name, size, owner, mode, time, CRC-32C) followed
// by the bytes. Files are written under a temporary name and linked into place, so a backup
// either exists whole or not at all, and two backups can never take the same name.
#ifndef FAMPOOL_MEMSERVER_ARCHIVE_H_
#define FAMPOOL_MEMSERVER_ARCHIVE_H_

#include <string>
#include <vector>

#include "memserver/memory_server.h"

namespace fampool {

class Archive {
  public:
    explicit Archive(std::string dir) : dir_(std::move(dir)) {}

    bool Exists(const std::string &name) const;
    // Writes `info.size` bytes from `data`; fills in time and checksum.
    BackupInfo Write(const BackupInfo &info, const char *data);
    BackupInfo Describe(const std::string &name) const;
    // Checks the checksum, then copies the bytes to `dest` (at least info.size bytes).
    void Read(const std::string &name, char *dest) const;
    void Delete(const std::string &name);
    std::vector<BackupInfo> List() const;

    static void CheckName(const std::string &name);

  private:
    std::string PathOf(const std::string &name) const;
    std::string dir_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_ARCHIVE_H_
