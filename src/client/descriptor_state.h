// What a Fam_Descriptor / Fam_Region_Descriptor carries inside: the metadata needed to reach the
// data with no further metadata call, and the data path's binding (for the embedded model, the
// heap mapping).
#ifndef FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_
#define FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_

#include <memory>
#include <string>

#include "fam/fam.h"
#include "meta/metadata_service.h"

namespace fampool {

using openfam::Fam_Descriptor;
using openfam::Fam_Region_Descriptor;

// What a transport needs to reach one item's bytes (a mapping, or keys and addresses).
struct Binding {
    virtual ~Binding() = default;
    // False once the item's region was destroyed (as far as this process can tell).
    virtual bool valid() const { return true; }
};

struct DescriptorState {
    Fam_Global_Descriptor global{};
    Fam_Descriptor_Status status = DESC_UNINITIALIZED;
    bool size_known = false;
    ItemInfo item;  // valid once status is DESC_INIT_DONE

    // The data path's hold on the item, from Transport::Attach. Shared with the non-blocking
    // operations in flight, so that deleting the descriptor does not pull it from under them.
    std::shared_ptr<Binding> binding;
};

struct RegionDescriptorState {
    Fam_Global_Descriptor global{};
    Fam_Descriptor_Status status = DESC_UNINITIALIZED;
    bool size_known = false;
    RegionInfo region;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_
