// The metadata service's interface: names, permissions, placement and item records. The
// embedded model calls MetadataStore in-process; the cluster model puts the same calls behind
// gRPC. Every call takes the caller's identity and checks permissions itself.
#ifndef FAMPOOL_META_CLIENT_METADATA_SERVICE_H_
#define FAMPOOL_META_CLIENT_METADATA_SERVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/fam_objects.h"

namespace fampool {

class MetadataService {
  public:
    virtual ~MetadataService() = default;

    // `intent` (docs/intent.md) chooses the servers when it is not empty.
    virtual RegionInfo CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                    const Fam_Region_Attributes &attributes,
                                    const RegionIntent &intent, const Caller &caller) = 0;
    RegionInfo CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                            const Fam_Region_Attributes &attributes, const Caller &caller) {
        return CreateRegion(name, size, perm, attributes, RegionIntent{}, caller);
    }
    virtual void DestroyRegion(uint64_t region_id, const Caller &caller) = 0;
    virtual RegionInfo ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) = 0;
    virtual RegionInfo LookupRegion(const std::string &name, const Caller &caller) = 0;
    virtual RegionInfo GetRegion(uint64_t region_id, const Caller &caller) = 0;
    virtual void ChangeRegionPermissions(uint64_t region_id, uint32_t perm,
                                         const Caller &caller) = 0;

    // `name` empty: an unnamed item.
    virtual ItemInfo AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                                  uint32_t perm, const Caller &caller) = 0;
    virtual void DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) = 0;
    virtual ItemInfo LookupItem(const std::string &item, const std::string &region,
                                const Caller &caller) = 0;
    virtual ItemInfo GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) = 0;
    virtual void ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                                       const Caller &caller) = 0;

    // Flushes commits to stable storage.
    virtual void Sync() = 0;
    // A client found these memory servers failing (redundant regions): the service checks
    // them before it returns. Nothing to do where there are no memory servers to lose.
    virtual void ReportFailure(const std::vector<uint64_t> &servers) { (void)servers; }
    // This process is done with the service (fam_finalize): a session it opened ends, so that
    // its token is refused from then on. Nothing to do without sessions.
    virtual void EndSession() {}
};

}  // namespace fampool

#endif  // FAMPOOL_META_CLIENT_METADATA_SERVICE_H_
