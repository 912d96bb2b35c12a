// The archive store: a directory (reachable by every memory server) holding one file per
// backup. A backup file is a 4 KiB text header (name, size, owner, mode, time, CRC-32C) followed
// by the bytes. Files are written under a temporary name and linked into place, so a backup
// either exists whole or not at all, and two backups can never take the same name.
#ifndef FAMPOOL_MEMSERVER_ARCHIVE_H_
#define FAMPOOL_MEMSERVER_ARCHIVE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/file_access.h"
#include "common/memory_server.h"

namespace fampool {

class Archive {
  public:
    // Backup files and the directory get `access`'s mode and group (private to the server's
    // user unless a sharing group is set): a backup is read through the memory server, which
    // checks the permissions it recorded, never by opening the file.
    Archive(std::string dir, FileAccess access)
        : dir_(std::move(dir)), access_(std::move(access)) {}

    // Fills `buffer` with backup bytes [at, at + n): where Write takes the bytes from.
    using Source = std::function<void(uint64_t at, char *buffer, size_t n)>;
    // Takes backup bytes [at, at + n) from `data` (valid during the call): where Read puts
    // them.
    using Sink = std::function<void(uint64_t at, const char *data, size_t n)>;

    bool Exists(const std::string &name) const;
    // Writes `info.size` bytes, asked of `source` a chunk (a few MiB) at a time, in order;
    // fills in time and checksum.
    BackupInfo Write(const BackupInfo &info, const Source &source);
    BackupInfo Describe(const std::string &name) const;
    // Checks the checksum, then hands the bytes to `sink` a chunk at a time, in order: a
    // damaged backup reaches the sink not at all.
    void Read(const std::string &name, const Sink &sink) const;
    void Delete(const std::string &name);
    std::vector<BackupInfo> List() const;

    static void CheckName(const std::string &name);

  private:
    std::string PathOf(const std::string &name) const;
    std::string dir_;
    FileAccess access_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_ARCHIVE_H_
