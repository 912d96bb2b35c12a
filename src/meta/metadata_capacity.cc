// MetadataStore: what its regions hold on each memory server, and the checks that keep a
// server within the capacity a site gave it (docs/semantics.md, "Region capacity").
//
// A region's extent on a server spans more than the region's share of that server (Layout),
// and heaps are sparse: a server holds what is written, and what can be written is what items
// are given. So each extent counts as its region's share or the bytes items hold in it,
// whichever is more: the share is promised at creation, the rest is counted as items take it.
#include <algorithm>

#include "common/error.h"
#include "meta/extent_allocator.h"
#include "meta/metadata_store.h"
#include "meta/records.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

namespace {

// Bytes items hold on data column `index` of the region: its allocator's span less its free
// bytes; an interleaved region's items are spread evenly over every column (and RAID5's
// parity member, which holds as much).
uint64_t HeldBytes(const Txn &txn, const RegionInfo &region, const Layout &layout, uint64_t index) {
    uint64_t free_bytes = 0, largest = 0;
    if (layout.interleaved()) {
        uint64_t span = layout.extent_size * layout.servers;
        ExtentAllocator::Usage(txn, AllocatorOf(region.id, kVirtualExtent), &free_bytes, &largest);
        return (span - std::min(span, free_bytes)) / layout.servers;
    }
    ExtentAllocator::Usage(txn, AllocatorOf(region.id, index), &free_bytes, &largest);
    return layout.extent_size - std::min(layout.extent_size, free_bytes);
}

}  // namespace

std::vector<uint64_t> MetadataStore::ServerUsage() {
    Txn txn(*env_, /*write=*/false);
    return ServerUsage(txn);
}

std::vector<uint64_t> MetadataStore::ServerUsage(const Txn &txn) {
    std::vector<uint64_t> usage(servers_.size(), 0);
    Cursor cursor(txn, Table::kRegions);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        RegionInfo region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
        Layout layout = LayoutOf(region);
        for (const PlacedExtent &each : ExtentsOf(region)) {
            if (each.server >= usage.size()) continue;
            usage[each.server] +=
                std::max(layout.share, HeldBytes(txn, region, layout, each.index));
        }
    }
    return usage;
}

uint64_t MetadataStore::ExtraHeld(const Txn &txn, const RegionInfo &region, const Layout &layout,
                                  uint64_t index, uint64_t nbytes) {
    uint64_t held = HeldBytes(txn, region, layout, index);
    return std::max(layout.share, held + nbytes) - std::max(layout.share, held);
}

bool MetadataStore::CapacityLimited(const RegionInfo &region) const {
    for (const PlacedExtent &each : ExtentsOf(region)) {
        if (CapacityOf(each.server)) return true;
    }
    return false;
}

uint64_t MetadataStore::CapacityOf(uint64_t server_id) const {
    return server_id < options_.profiles.size() ? options_.profiles[server_id].capacity : 0;
}

std::string MetadataStore::OverCapacity(const std::vector<uint64_t> &usage,
                                        const RegionInfo &region,
                                        const std::vector<uint64_t> &more) const {
    std::vector<uint64_t> wanted(usage.size(), 0);
    for (const PlacedExtent &each : ExtentsOf(region)) {
        if (each.server < wanted.size()) wanted[each.server] += more[each.index % more.size()];
    }
    for (uint64_t id = 0; id < wanted.size(); ++id) {
        uint64_t capacity = CapacityOf(id);
        if (!capacity || !wanted[id] || usage[id] + wanted[id] <= capacity) continue;
        return fmt::format(
            "memory server {} holds {} bytes of regions and items and its capacity is {} "
            "bytes: {} more do not fit",
            id, usage[id], capacity, wanted[id]);
    }
    return {};
}

void MetadataStore::RequireCapacity(const Txn &txn, const RegionInfo &region, const Layout &before,
                                    const Layout &after, uint64_t size, const char *action) {
    if (!CapacityLimited(region)) return;
    std::vector<uint64_t> more(after.servers, 0);
    for (uint64_t index = 0; index < after.servers; ++index) {
        // A new region holds nothing yet; a resized one keeps what its items hold.
        uint64_t held = before.extent_size ? HeldBytes(txn, region, before, index) : 0;
        uint64_t was = before.extent_size ? std::max(before.share, held) : 0;
        more[index] = std::max(after.share, held) - std::min(was, std::max(after.share, held));
    }
    std::string over = OverCapacity(ServerUsage(txn), region, more);
    if (!over.empty()) {
        Fail(openfam::FAM_ERR_NO_SPACE, "{} region \"{}\" to {} bytes: {}", action, region.name,
             size, over);
    }
}

}  // namespace fampool
