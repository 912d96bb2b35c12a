// The memory server of the embedded model, and the heap side of a real memory server: heap
// files on this node, mapped into the calling process.
#ifndef FAMPOOL_MEMSERVER_LOCAL_MEMORY_SERVER_H_
#define FAMPOOL_MEMSERVER_LOCAL_MEMORY_SERVER_H_

#include <memory>
#include <string>

#include "memserver/archive.h"
#include "memserver/heap.h"
#include "memserver/memory_server.h"

namespace fampool {

struct HeapLocation {
    std::string volatile_dir;    // e.g. /dev/shm
    std::string persistent_dir;  // e.g. $FAMPOOL_HOME/heaps
    std::string prefix;          // distinguishes data directories sharing volatile_dir
};

class LocalMemoryServer : public MemoryServer {
  public:
    LocalMemoryServer(uint64_t id, HeapLocation location, std::string archive_dir);

    uint64_t id() const override { return id_; }
    void CreateExtent(ExtentRef extent, uint64_t size) override;
    void DestroyExtent(ExtentRef extent) override;
    void ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size) override;
    void Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) override;
    void Copy(ExtentRef src, uint64_t src_offset, ExtentRef dest, uint64_t dest_offset,
              uint64_t nbytes) override;
    BackupInfo Backup(ExtentRef extent, uint64_t offset, const BackupInfo &info) override;
    BackupInfo DescribeBackup(const std::string &name) override;
    void Restore(const std::string &name, ExtentRef extent, uint64_t offset,
                 uint64_t capacity) override;
    void DeleteBackup(const std::string &name) override;
    std::vector<BackupInfo> ListBackups() override;

    // A mapping of the extent's heap covering at least [0, min_length): the data path of the
    // embedded model loads and stores through it.
    std::shared_ptr<HeapMapping> Map(ExtentRef extent, uint64_t min_length);
    std::string HeapPath(ExtentRef extent) const;

  private:
    uint64_t id_;
    HeapLocation location_;
    Archive archive_;
    HeapCache cache_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_LOCAL_MEMORY_SERVER_H_
