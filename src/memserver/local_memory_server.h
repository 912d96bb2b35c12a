// The memory server of the embedded model, and the heap side of a real memory server: heap
// files on this node, mapped into the calling process.
#ifndef FAMPOOL_MEMSERVER_LOCAL_MEMORY_SERVER_H_
#define FAMPOOL_MEMSERVER_LOCAL_MEMORY_SERVER_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/memory_server.h"
#include "memserver/archive.h"
#include "memserver/heap.h"
#include "memserver/peers.h"
#include "memserver/registrar.h"

namespace fampool {

struct HeapLocation {
    std::string volatile_dir;    // e.g. /dev/shm
    std::string persistent_dir;  // e.g. $FAMPOOL_HOME/heaps
    std::string prefix;          // distinguishes data directories sharing volatile_dir
    // Who may reach the heap files and archive besides the server's user: nobody, or a
    // sharing group. The volatile directory may be a shared one (/dev/shm), left as it is;
    // the persistent one is the server's own.
    FileAccess access;
};

// The end of [offset, offset + nbytes); a request whose range wraps is refused
// (FAM_ERR_OUTOFRANGE), never served: the memory server does not trust its callers.
uint64_t CheckedEnd(uint64_t offset, uint64_t nbytes);

class LocalMemoryServer : public MemoryServer {
  public:
    LocalMemoryServer(uint64_t id, HeapLocation location, std::string archive_dir);

    uint64_t id() const override { return id_; }
    void CreateExtent(ExtentRef extent, uint64_t size, uint64_t reserve) override;
    void DestroyExtent(ExtentRef extent) override;
    void ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size,
                      uint64_t reserve) override;
    void Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) override;
    // One call at a time: a call that returns has outlived every earlier one, so a zeroing
    // call that timed out at its caller cannot clear bytes after a retry has freed them.
    void ZeroExtents(const std::vector<ExtentRanges> &extents) override;
    void Copy(const ItemLayout &src, uint64_t src_offset, const ItemLayout &dest,
              uint64_t dest_offset, uint64_t nbytes) override;
    BackupInfo Backup(const ItemLayout &item, const BackupInfo &info) override;
    BackupInfo DescribeBackup(const std::string &name, const Caller &caller) override;
    void Restore(const std::string &name, const ItemLayout &item, const Caller &caller) override;
    void DeleteBackup(const std::string &name, const Caller &caller) override;
    std::vector<BackupInfo> ListBackups(const Caller &caller) override;
    // The uid the cluster runs as (a memory server's own): it may describe, list and delete
    // every backup. Unset (the embedded model): every caller is held to the permissions.
    void SetClusterUser(uint32_t uid) { cluster_user_ = uid; }
    void Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                const void *operand, const void *compare, void *result) override;
    void ApplyElements(ExtentRef extent, uint64_t key, ElementOp op, uint64_t element_size,
                       const std::vector<uint64_t> &offsets, char *data) override;
    KeyGrant GrantKey(ExtentRef extent, uint64_t offset, uint64_t size, bool writable,
                      const Permissions &permissions) override;
    void RevokeKeys(ExtentRef extent, uint64_t offset) override;

    // Bytes the server may hold: CreateExtent and a growing ResizeExtent whose reserve does not
    // fit beside what its heaps hold (WrittenBytes) fail with FAM_ERR_NO_SPACE; the metadata
    // service also counts what it promised (MetadataStore::ServerUsage). 0: no limit.
    void SetCapacity(uint64_t bytes) { capacity_ = bytes; }
    uint64_t capacity() const { return capacity_; }
    // Its memory for intent-based placement: kind, and bandwidth and latency where known (0:
    // measured on its heap directory at the first Profile call: the volatile one for DRAM, the
    // persistent one for other kinds).
    void SetProfile(const MemoryProfile &profile);
    MemoryProfile Profile() override;
    // Bytes its heaps hold now: their written pages (heaps are sparse; not their lengths).
    uint64_t WrittenBytes() const;
    // Its heaps (one per extent) now: how many, their written pages and their lengths.
    struct HeapUsage {
        uint64_t heaps = 0, written = 0, length = 0;
    };
    HeapUsage Usage() const;

    // The same-node socket (memserver/heap_socket.h) grants name from now on.
    void SetSocket(std::string path) { socket_ = std::move(path); }
    // This server's life (MemoryServerInfo::incarnation), named in every grant from now on: a
    // peer given the key with it knows which life its connections must reach.
    void SetIncarnation(std::string incarnation) { incarnation_ = std::move(incarnation); }
    // A descriptor of the heap of region `region_id` for a client of this node whose uid and
    // gid the kernel gave (`peer`), presenting `key`: the key must be a live whole-extent
    // grant of the region (an item-level grant would reach further through a heap descriptor
    // than it does), and the permissions recorded with it must let `peer` read (and, when
    // `writable`, write; the grant must be writable too). Read-only: opened O_RDONLY. Throws
    // Failure(FAM_ERR_NOPERM) naming why not.
    int OpenHeapFor(const Caller &peer, uint64_t region_id, uint64_t key, bool writable);

    // Gives the server a fabric endpoint: from then on GrantKey registers memory with it.
    void AttachFabric(Registrar *registrar) { registrar_ = registrar; }
    std::string fabric_address() const { return registrar_ ? registrar_->address() : ""; }
    std::string fabric_provider() const { return registrar_ ? registrar_->provider() : ""; }
    // Lets copy, backup and restore reach bytes on other memory servers (without peers, they
    // work only on bytes of this server).
    void AttachPeers(Peers *peers) { peers_ = peers; }

    // A mapping of the extent's heap covering at least [0, min_length): the data path of the
    // embedded model loads and stores through it.
    std::shared_ptr<HeapMapping> Map(ExtentRef extent, uint64_t min_length);
    std::string HeapPath(ExtentRef extent) const;
    // The extent's bytes [offset, offset + length) in this process, once `key` is found to
    // grant them (for writing too, when `write`) as the fabric would (see CheckKey); `hold`
    // keeps them mapped. `what` names the operation for the error.
    // `life`, when given: the extent's ExtentLife that the key belongs to (the bytes are that
    // life's, whatever happens to the extent since).
    char *Reach(ExtentRef extent, uint64_t key, uint64_t offset, uint64_t length, bool write,
                const char *what, std::shared_ptr<HeapMapping> *hold, uint64_t *life = nullptr);
    // The extent's heap file length: its size, grown or not.
    uint64_t HeapLength(ExtentRef extent) const;
    // How many times the extent was created or destroyed by this process: what the redundancy
    // service remembers an atomic applied to it with, so that an extent made anew (a rebuild
    // onto the same server) does not answer for the atomics of the one before.
    uint64_t ExtentLife(ExtentRef extent) const;

  private:
    class ItemBytes;
    struct Grant {
        uint64_t offset, size;
        bool writable;
        std::shared_ptr<HeapMapping> mapping;  // keeps the registered memory mapped
        Registrar::Registration registration;
        Permissions permissions;  // what the metadata service checked (OpenHeapFor)
        std::string heap_path;    // the file the registered memory maps
    };
    void RevokeWhere(ExtentRef extent, bool (*match)(const Grant &, uint64_t), uint64_t arg);
    // grants_'s key of an extent (a server may hold a region's extent and its RAID1 copy).
    static uint64_t GrantsOf(ExtentRef extent) { return extent.region_id * 2 + extent.copy; }
    // Where keys are in use (a registrar: the memory-server model), refuses with FAM_ERR_NOPERM
    // what the fabric would refuse: `key` must be a live grant of the extent that covers
    // [offset, offset + length) and, to `write`, a writable one. `what` names the operation.
    // Also gives the grant's mapping (`mapping`, when it covers the bytes) and the extent's
    // life (`life`) as they were when the key was found.
    void CheckKey(ExtentRef extent, uint64_t key, uint64_t offset, uint64_t length, bool write,
                  const char *what, std::shared_ptr<HeapMapping> *mapping = nullptr,
                  uint64_t *life = nullptr);

    uint64_t id_;
    uint64_t capacity_ = 0;
    std::map<uint64_t, uint64_t> lives_;  // by GrantsOf; under grants_mutex_
    std::mutex profile_mutex_;
    MemoryProfile profile_;      // known once measured
    std::mutex capacity_mutex_;  // a check and the extent it admits, one at a time
    // Throws FAM_ERR_NO_SPACE unless `more` bytes fit beside WrittenBytes (capacity_mutex_
    // held).
    void RequireRoom(uint64_t more, const char *call) const;
    // The permissions the metadata service recorded with the key `item` names for this server
    // (nullopt: none known, as on the embedded model).
    std::optional<Permissions> RecordedPermissions(const ItemLayout &item);
    // Throws FAM_ERR_NOPERM unless `caller` may read the backup (`remove`: delete it).
    void RequireBackupAccess(const BackupInfo &info, const Caller &caller, bool remove) const;

    HeapLocation location_;
    Archive archive_;
    std::optional<uint32_t> cluster_user_;
    HeapCache cache_;
    Registrar *registrar_ = nullptr;
    Peers *peers_ = nullptr;
    std::string socket_;
    std::string incarnation_;
    mutable std::mutex grants_mutex_;
    std::mutex zero_mutex_;
    std::multimap<uint64_t, Grant> grants_;  // GrantsOf(extent) -> its registrations
    // Extents (GrantsOf) whose keys were revoked at least once: a grant of one is a grant
    // again (the test hold server.key-regranted).
    std::set<uint64_t> revoked_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_LOCAL_MEMORY_SERVER_H_
