// What a Fam_Descriptor / Fam_Region_Descriptor carries inside: the metadata needed to reach the
// data with no further metadata call, and the data path's binding (for the embedded model, the
// heap mapping).
#ifndef FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_
#define FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_

#include <atomic>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "common/fam_objects.h"
#include "fam/fam.h"

namespace fampool {

using openfam::Fam_Descriptor;
using openfam::Fam_Region_Descriptor;

// What a program set through a descriptor's OpenFAM setters (set_perm, set_name, ...): the
// descriptor's own copy, which its getters return. fampool acts only on what the metadata
// service said (ItemInfo, RegionInfo), never on these.
struct ShownAttributes {
    std::optional<uint32_t> perm, uid, gid;
    std::optional<std::string> name;
    std::optional<Fam_Permission_Level> permission_level;
    std::optional<Fam_Redundancy_Level> redundancy_level;
    std::optional<Fam_Memory_Type> memory_type;
    std::optional<Fam_Interleave_Enable> interleave_enable;
    void *context = nullptr;
    // get_keys / get_base_address_list: filled from ItemInfo at each call.
    std::vector<uint64_t> keys, bases;
};

struct DescriptorState {
    Fam_Global_Descriptor global{};
    // Read without a lock by every call that takes the descriptor; set under the resolver's
    // mutex (resolution, close) or by the thread that deallocates the item.
    std::atomic<Fam_Descriptor_Status> status{DESC_UNINITIALIZED};
    bool size_known = false;
    bool closed = false;  // DESC_INVALID by fam_close (not by fam_deallocate)
    ShownAttributes shown;

    DescriptorState() = default;
    DescriptorState(const DescriptorState &other)
        : global(other.global),
          status(other.status.load()),
          size_known(other.size_known),
          closed(other.closed),
          shown(other.shown) {
        set_item(other.item());
        set_binding(other.binding());
    }
    DescriptorState &operator=(const DescriptorState &other) {
        global = other.global;
        status = other.status.load();
        size_known = other.size_known;
        closed = other.closed;
        shown = other.shown;
        set_item(other.item());
        set_binding(other.binding());
        return *this;
    }

    // The item as the metadata service last described it (valid once status is
    // DESC_INIT_DONE). Read without a lock: every data-path call checks its bounds and rights
    // against it. A record is never changed in place: set_item replaces it while no other
    // thread uses the descriptor (resolution, a queue's own copy), PublishItem while others
    // may still read the one it replaces (a refresh after fam_change_permissions, a rebind,
    // fam_stat), which is then kept until the next set_item, as bindings are. Writers hold the
    // resolver's mutex (DescriptorResolver) or own the descriptor alone.
    const ItemInfo &item() const {
        const ItemInfo *current = item_.load(std::memory_order_acquire);
        return current ? *current : kNoItem;
    }
    void set_item(ItemInfo item) {
        item_.store(nullptr, std::memory_order_release);
        items_held_.clear();
        PublishItem(std::move(item));
    }
    void PublishItem(ItemInfo item) {
        items_held_.push_back(std::move(item));
        item_.store(&items_held_.back(), std::memory_order_release);
    }

    // The data path's hold on the item, from Transport::Attach. Shared with the non-blocking
    // operations in flight, so that deleting the descriptor does not pull it from under them.
    // Read without a lock and without touching its count (the data path reads it on every
    // call): a rebind (DescriptorResolver::Rebind) publishes a new binding and keeps the ones it
    // replaces until the descriptor is bound anew, closed or deleted, so that a thread still using
    // one never sees it freed. An empty pointer when unbound.
    const std::shared_ptr<Binding> &binding() const {
        const std::shared_ptr<Binding> *current = current_.load(std::memory_order_acquire);
        return current ? *current : kUnbound;
    }
    // Binds (or, with nullptr, unbinds) the descriptor, dropping every earlier binding: only
    // while no other thread uses it (resolution, close, deallocation).
    void set_binding(std::shared_ptr<Binding> binding) {
        current_.store(nullptr, std::memory_order_release);
        held_.clear();
        if (binding) Publish(std::move(binding));
    }
    // Replaces the binding while other threads may use the old one (it is kept).
    void Rebind(std::shared_ptr<Binding> binding) { Publish(std::move(binding)); }

  private:
    void Publish(std::shared_ptr<Binding> binding) {
        held_.push_back(std::move(binding));
        current_.store(&held_.back(), std::memory_order_release);
    }
    static inline const std::shared_ptr<Binding> kUnbound;
    static inline const ItemInfo kNoItem;
    std::list<std::shared_ptr<Binding>> held_;  // the current binding last; nodes never move
    std::atomic<const std::shared_ptr<Binding> *> current_{nullptr};
    std::list<ItemInfo> items_held_;  // the current record last
    std::atomic<const ItemInfo *> item_{nullptr};
};

struct RegionDescriptorState {
    Fam_Global_Descriptor global{};
    Fam_Descriptor_Status status = DESC_UNINITIALIZED;
    bool size_known = false;
    RegionInfo region;
    ShownAttributes shown;
};

// `item "name"` or `unnamed item at offset N of region "r"`, for messages.
std::string Describe(const ItemInfo &item);

// Throws FAM_ERR_NOTFOUND unless `fresh` (fetched again) is the item `held` was: once an item
// is deallocated, another one may lie at its offset.
void RequireSameItem(const ItemInfo &fresh, const ItemInfo &held);

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_DESCRIPTOR_STATE_H_
