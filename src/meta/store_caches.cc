// KeyGrants and ServerProfiles (store_caches.h): the fabric keys the store hands out after the
// permission check and their revocation, and the memory servers' profiles.
#include "meta/store_caches.h"

#include "common/error.h"
#include "common/test_hold.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

namespace {

// How long a lookup waits for a redundant member's server to grant its key (a stopped server
// is declared dead by heartbeats within about 3 s; its clients wait for that, not the lookup).
constexpr std::chrono::milliseconds kRedundantGrantBound{1000};

// The owner, group and mode the permission check went by: what the grant records.
Permissions Governing(const ItemInfo &item) {
    const bool region_level = item.region.attributes.permissionLevel != DATAITEM;
    return region_level ? Permissions{item.region.uid, item.region.gid, item.region.perm, true}
                        : Permissions{item.uid, item.gid, item.perm, true};
}

}  // namespace

void KeyGrants::Hand(ItemInfo &item) {
    const RegionInfo &region = item.region;
    Layout layout = LayoutOf(region);
    bool per_item = region.attributes.permissionLevel == DATAITEM;
    bool redundant = IsRedundant(region);
    std::vector<PlacedExtent> extents = ExtentsOf(region);
    std::vector<ServerAccess> &access = redundant ? item.member_access : item.access;
    access.resize(extents.size());
    for (const PlacedExtent &each : extents) {
        auto [begin, end] = PhysicalRange(layout, item.offset, item.size, each.index);
        if (end <= begin) continue;  // the item has no bytes there
        if (redundant && StateOf(region, each.member) == kLost) continue;
        uint64_t offset = per_item ? begin : 0, size = per_item ? end - begin : 0;
        auto key = std::make_tuple(region.id, uint64_t{each.member}, offset, size, item.can_write);
        KeyGrant grant;
        uint64_t epoch;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto found = grants_.find(key);
            if (found != grants_.end()) grant = found->second;
            epoch = epochs_[region.id];
        }
        if (grant.fabric_address.empty()) {
            try {
                MemoryServer &server = server_(each.server);
                grant = redundant ? server.GrantKeyWithin(each.extent, offset, size, item.can_write,
                                                          Governing(item), kRedundantGrantBound)
                                  : server.GrantKey(each.extent, offset, size, item.can_write,
                                                    Governing(item));
            } catch (const Failure &) {
                // A redundant region's member on a server that just died or is stopped (not
                // yet marked lost): no key; the client waits until its server answers or is
                // declared dead (RequireMemberKeys, transport/redundant).
                if (!redundant) throw;
                continue;
            }
            HoldAt("meta.key-granted");
            // Kept only when no Forget or Revoke of the region came meanwhile: that one may
            // have revoked this key at the server after it was granted, and kept it would be
            // handed out, refused, for good.
            std::lock_guard<std::mutex> lock(mutex_);
            if (epochs_[region.id] == epoch) grants_[key] = grant;
        }
        access[each.member] = ServerAccess{each.server,  grant.fabric_address, grant.key,
                                           grant.base,   grant.heap_path,      grant.node,
                                           grant.socket, grant.server_uid,     grant.incarnation};
    }
}

void KeyGrants::Forget(uint64_t region_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto first = grants_.lower_bound(std::make_tuple(region_id, 0, 0, 0, false));
    auto last = grants_.lower_bound(std::make_tuple(region_id + 1, 0, 0, 0, false));
    grants_.erase(first, last);
    ++epochs_[region_id];
}

void KeyGrants::Revoke(const RegionInfo &region, uint64_t offset, uint64_t size) {
    Layout layout = LayoutOf(region);
    for (const PlacedExtent &each : ExtentsOf(region)) {
        auto [begin, end] = PhysicalRange(layout, offset, size, each.index);
        if (end <= begin) continue;
        uint64_t member = each.member;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            grants_.erase(std::make_tuple(region.id, member, begin, end - begin, false));
            grants_.erase(std::make_tuple(region.id, member, begin, end - begin, true));
            ++epochs_[region.id];
        }
        try {
            server_(each.server).RevokeKeys(each.extent, begin);
        } catch (const Failure &) {
            // An unreachable server has lost its registrations already.
        }
        // Again after the server's revocation: a lookup granted the key (the server reuses a
        // registered grant) between the erase above and the revocation must not keep it.
        std::lock_guard<std::mutex> lock(mutex_);
        ++epochs_[region.id];
    }
}

std::vector<MemoryProfile> ServerProfiles::Get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (profiles_.empty()) {
        profiles_ = configured_;
        profiles_.resize(servers_);
    }
    asked_.resize(servers_);
    auto now = std::chrono::steady_clock::now();
    for (uint64_t id = 0; id < servers_; ++id) {
        MemoryProfile &profile = profiles_[id];
        // A server that did not answer is asked again after a while, not at every placement.
        if (profile.known || now - asked_[id] < kRetry) continue;
        asked_[id] = now;
        // What the cluster file does not set, the server says (measured at its start).
        try {
            MemoryProfile told = server_(id).Profile();
            if (!told.known) continue;
            if (profile.kind.empty()) profile.kind = told.kind;
            if (!profile.bandwidth) profile.bandwidth = told.bandwidth;
            if (!profile.latency_ns) profile.latency_ns = told.latency_ns;
            if (!profile.capacity) profile.capacity = told.capacity;
            if (profile.host.empty()) profile.host = told.host;
            profile.known = true;
        } catch (const Failure &) {
            // Unreachable now: asked again at the next placement by intent.
        }
    }
    return profiles_;
}

}  // namespace fampool
