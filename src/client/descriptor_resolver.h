// From a descriptor to the item behind it, checked: what every call that takes a descriptor
// does first. Resolve fetches a descriptor's item from the metadata service on first use (one
// built from a Fam_Global_Descriptor); Access adds the bounds and permission checks of the
// data path; Granted and RefreshQueued ask the metadata service again for what memory-side
// work hands the memory servers; Rebind binds a descriptor again after its keys were revoked.
// Each FamImpl (and context) has one; its mutex orders the updates of descriptor states.
#ifndef FAMPOOL_CLIENT_DESCRIPTOR_RESOLVER_H_
#define FAMPOOL_CLIENT_DESCRIPTOR_RESOLVER_H_

#include <cstdint>
#include <mutex>

#include "client/descriptor_state.h"
#include "client/session.h"
#include "fam/fam.h"

namespace fampool {

// Throws FAM_ERR_NOPERM unless `info` allows `access` (kRead, kWrite or both).
void CheckPermission(const ItemInfo &info, unsigned access);

class DescriptorResolver {
  public:
    // The item behind a descriptor, fetched from the metadata service on first use.
    DescriptorState &Resolve(Session &session, Fam_Descriptor *item);
    RegionDescriptorState &ResolveRegion(Session &session, Fam_Region_Descriptor *region);
    // Resolve, then the bounds and permission checks of the data path.
    DescriptorState &Access(Session &session, Fam_Descriptor *item, unsigned access,
                            uint64_t offset, uint64_t nbytes);
    // Access(), then the item as the metadata service describes it now, with the keys it
    // grants now (the descriptor's may have been revoked by a permission change since): what
    // memory-side operations hand the memory servers, which check those keys.
    ItemInfo Granted(Session &session, Fam_Descriptor *item, unsigned access, uint64_t offset,
                     uint64_t nbytes);
    // Binds `state` again with the keys the metadata service hands out now (for the same item
    // only) and puts what the caller may do now in `now`; false when nothing was revoked (the
    // keys of `used` are still the item's) or the descriptor was closed or deallocated.
    bool Rebind(Session &session, DescriptorState &state, const Binding *used, ItemInfo *now);
    // Brings `state` (an aggregation queue's own copy) up to date: the item's record and the
    // caller's rights as they are now, bound with the keys granted now.
    void RefreshQueued(Session &session, DescriptorState &state);
    // fam_close: this process lets go of the descriptor's data-path binding, and every later
    // use of the descriptor fails (fam_lookup gives a new one).
    void Close(DescriptorState &state);
    // After a permission change (which revoked the keys behind the descriptor): `fresh`, the
    // item as it is now, replaces the descriptor's, bound with its new keys unless the new mode
    // leaves the caller no access at all. Nothing when the descriptor was closed meanwhile.
    void Replace(Session &session, DescriptorState &state, ItemInfo fresh);
    // fam_stat: the mode and region `fresh` (the item as it is now) records become the
    // descriptor's, published beside threads that may read the record it replaces (a new
    // record only when one of them changed).
    void Restat(DescriptorState &state, const ItemInfo &fresh);

  private:
    std::mutex mutex_;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_DESCRIPTOR_RESOLVER_H_
