// What a Fam_Descriptor / Fam_Region_Descriptor carries inside: the metadata needed to reach the
// data with no further metadata call, and the data path's binding (for the embedded model, the
// heap mapping).
#ifndef FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_
#define FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_

#include <atomic>
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

    DescriptorState() = default;
    DescriptorState(const DescriptorState &other)
        : global(other.global), status(other.status), size_known(other.size_known),
          item(other.item), binding_(other.binding()) {}
    DescriptorState &operator=(const DescriptorState &other) {
        global = other.global;
        status = other.status;
        size_known = other.size_known;
        item = other.item;
        set_binding(other.binding());
        return *this;
    }

    // The data path's hold on the item, from Transport::Attach. Shared with the non-blocking
    // operations in flight, so that deleting the descriptor does not pull it from under them;
    // read and replaced atomically, because FamImpl::Rebind may replace it while other threads
    // use the descriptor.
    std::shared_ptr<Binding> binding() const { return binding_.load(); }
    void set_binding(std::shared_ptr<Binding> binding) { binding_.store(std::move(binding)); }

  private:
    std::atomic<std::shared_ptr<Binding>> binding_;
};

struct RegionDescriptorState {
    Fam_Global_Descriptor global{};
    Fam_Descriptor_Status status = DESC_UNINITIALIZED;
    bool size_known = false;
    RegionInfo region;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_
