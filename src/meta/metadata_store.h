// The metadata service's logic over LMDB: regions, items, names, permissions and (through
// ExtentAllocator) the free space of every extent. The embedded model calls it in-process, with
// several processes of the node sharing one store; the metadata server will call it behind gRPC.
//
// Tables (keys are big-endian so that byte order is numeric order):
//   meta           "instance" | "next_region" | "boot_id"  -> value
//   regions        region id                                -> region record
//   region_names   region name                              -> region id
//   items          region id, offset                        -> item record
//   item_names     region id, item name                     -> offset
//   free_by_*      see ExtentAllocator
#ifndef FAMPOOL_META_METADATA_STORE_H_
#define FAMPOOL_META_METADATA_STORE_H_

#include <memory>
#include <string>

#include "memserver/memory_server.h"
#include "meta/lmdb.h"
#include "meta/metadata_service.h"

namespace fampool {

class MetadataStore : public MetadataService {
  public:
    // Opens the store's tables and, the first time, writes its identity. Drops the volatile
    // regions of an earlier boot (their heaps are gone). Returns the store's instance id, which
    // names its heap files. Safe when many processes open a fresh store at once.
    static std::string Prepare(LmdbEnv &env);

    MetadataStore(std::shared_ptr<LmdbEnv> env, MemoryServer *memory_server,
                  uint64_t interleave_size);

    RegionInfo CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                            const Fam_Region_Attributes &attributes, const Caller &caller) override;
    void DestroyRegion(uint64_t region_id, const Caller &caller) override;
    RegionInfo ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) override;
    RegionInfo LookupRegion(const std::string &name, const Caller &caller) override;
    RegionInfo GetRegion(uint64_t region_id, const Caller &caller) override;
    void ChangeRegionPermissions(uint64_t region_id, uint32_t perm, const Caller &caller) override;

    ItemInfo AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                          uint32_t perm, const Caller &caller) override;
    void DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) override;
    ItemInfo LookupItem(const std::string &item, const std::string &region,
                        const Caller &caller) override;
    ItemInfo GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) override;
    void ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                               const Caller &caller) override;
    void Sync() override;

  private:
    std::shared_ptr<LmdbEnv> env_;
    MemoryServer *memory_server_;
    uint64_t interleave_size_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_STORE_H_
