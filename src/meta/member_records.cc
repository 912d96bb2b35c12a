// MemberRecords: lost members, their rebuild targets, and the states a rebuild moves them
// through; and which members a loss takes along (store::Partners).
#include "meta/member_records.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "meta/records.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

namespace {

void SetMemberServer(RegionInfo &region, size_t member, uint64_t server) {
    size_t k = region.memory_servers.size();
    (member < k ? region.memory_servers[member] : region.copy_servers[member - k]) = server;
}

}  // namespace

std::vector<size_t> store::Partners(const RegionInfo &region, size_t member) {
    size_t k = region.memory_servers.size();
    if (region.attributes.redundancyLevel == RAID1) return {member < k ? member + k : member - k};
    std::vector<size_t> others;
    for (size_t m = 0; m < MemberCount(region); ++m) {
        if (m != member) others.push_back(m);
    }
    return others;
}

bool store::WritesGoOnWithout(const RegionInfo &region, size_t member) {
    for (size_t partner : Partners(region, member)) {
        if (StateOf(region, partner) != kHealthy) return false;
    }
    return true;
}

bool store::RegionRecoverable(const RegionInfo &region) {
    for (size_t m = 0; m < MemberCount(region); ++m) {
        if (StateOf(region, m) != kHealthy && !WritesGoOnWithout(region, m)) return false;
    }
    return true;
}

std::vector<RegionInfo> MemberRecords::RedundantRegions() {
    Txn txn(*env_, /*write=*/false);
    std::vector<RegionInfo> list;
    Cursor cursor(txn, Table::kRegions);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        RegionInfo region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
        if (IsRedundant(region)) list.push_back(std::move(region));
    }
    return list;
}

std::vector<RegionInfo> MemberRecords::ServerLost(uint64_t server_id) {
    // First, before the loss is recorded, the keys of the other members of each region it held
    // a member of stop working. A server declared dead may only be stopped: when it goes on it
    // finishes what it was asked before (a RAID5 stripe write, a mirrored atomic), with the
    // clients' keys for the other members, and those writes would land on bytes that clients
    // have since written elsewhere. Revoked here, they are refused; the clients get new keys
    // with the view that says the member is lost, which they can only see after this.
    for (const RegionInfo &region : RedundantRegions()) {
        bool held = false;
        for (size_t m = 0; m < MemberCount(region); ++m) {
            held |= MemberServer(region, m) == server_id && StateOf(region, m) != kLost;
        }
        if (!held) continue;
        RevokeMemberKeys(region, [&](const PlacedExtent &each) {
            return each.server != server_id && StateOf(region, each.member) != kLost;
        });
    }
    std::vector<RegionInfo> changed;
    {
        Txn txn(*env_, /*write=*/true);
        std::vector<RegionInfo> all;
        {
            // Closed before the commit, which frees a write transaction's cursors itself.
            Cursor cursor(txn, Table::kRegions);
            for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
                RegionInfo region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
                if (IsRedundant(region)) all.push_back(std::move(region));
            }
        }
        for (RegionInfo &region : all) {
            bool touched = false;
            region.member_state.resize(MemberCount(region), kHealthy);
            // Decided on the states before this loss: a server holds at most one member of
            // each member's partners.
            const RegionInfo before = region;
            for (size_t m = 0; m < MemberCount(region); ++m) {
                if (MemberServer(region, m) != server_id || StateOf(region, m) == kLost) continue;
                region.member_state[m] =
                    StateOf(before, m) == kHealthy && !WritesGoOnWithout(before, m) ? kLostIntact
                                                                                    : kLost;
                touched = true;
            }
            if (!touched) continue;
            txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
            changed.push_back(region);
        }
        txn.Commit();
    }
    for (const RegionInfo &region : changed) {
        grants_.Forget(region.id);
        if (!RegionRecoverable(region)) {
            std::fprintf(stderr,
                         "fampool-server: region \"%s\" lost more members than its redundancy "
                         "survives (memory server %llu died)\n",
                         region.name.c_str(), static_cast<unsigned long long>(server_id));
        }
    }
    return changed;
}

void MemberRecords::FenceLostMembers(uint64_t server_id) {
    for (const RegionInfo &region : RedundantRegions()) {
        for (const PlacedExtent &each : ExtentsOf(region)) {
            if (each.server != server_id || StateOf(region, each.member) != kLost) continue;
            try {
                server_(server_id).RevokeKeys(each.extent, kAllGrants);
            } catch (const Failure &) {
                // Gone again: its keys went with it.
            }
        }
    }
}

std::optional<uint64_t> MemberRecords::RebuildTarget(const RegionInfo &region, size_t member,
                                                     const std::set<uint64_t> &alive,
                                                     bool automatic) {
    std::set<uint64_t> taken;  // servers of the members a loss could take along with this one
    for (size_t partner : Partners(region, member)) taken.insert(MemberServer(region, partner));
    // ...and those holding an extent of the same name (RAID1: another copy, or another
    // primary extent, of the region): a server holds one of each.
    std::vector<PlacedExtent> extents = ExtentsOf(region);
    for (const PlacedExtent &each : extents) {
        if (each.member != member && each.extent.copy == extents[member].extent.copy &&
            StateOf(region, each.member) != kLost) {
            taken.insert(each.server);
        }
    }
    auto usable = [&](uint64_t id) { return alive.count(id) && !taken.count(id); };
    uint64_t own = MemberServer(region, member);
    if (usable(own)) return own;  // its server is back (or was replaced)
    for (uint64_t id = 0; id < servers_; ++id) {
        if (options_.spare(id) && usable(id)) return id;
    }
    if (automatic) return std::nullopt;
    std::optional<uint64_t> any;
    for (uint64_t id : options_.Candidates(servers_, region.attributes.memoryType)) {
        if (!usable(id)) continue;
        bool apart = true;
        for (uint64_t partner : taken) {
            apart &= options_.domain(id).empty() || options_.domain(id) != options_.domain(partner);
        }
        if (apart) return id;
        if (!any) any = id;
    }
    return any;
}

uint64_t MemberRecords::ExtentSize(const RegionInfo &region) {
    return LayoutOf(region).extent_size;
}

bool MemberRecords::TakeBack(uint64_t region_id, size_t member) {
    RegionInfo region;
    {
        Txn txn(*env_, /*write=*/false);
        region = ReadRegion(txn, region_id);
    }
    if (!LostIntact(region, member)) return false;
    uint8_t state = kHealthy;
    try {
        MemberKey(region, member);
    } catch (const Failure &failure) {
        // No heap for the extent: its bytes are gone for good, it is lost as any other.
        // Otherwise the server did not answer: tried again later.
        if (failure.fam_error() != openfam::FAM_ERR_NOTFOUND) return false;
        state = kLost;
    }
    {
        Txn txn(*env_, /*write=*/true);
        RegionInfo now = ReadRegion(txn, region_id);
        if (!LostIntact(now, member) || MemberServer(now, member) != MemberServer(region, member)) {
            return false;
        }
        now.member_state[member] = state;
        txn.Put(Table::kRegions, Key(now.id), EncodeRegion(now));
        txn.Commit();
    }
    grants_.Forget(region_id);
    if (state == kLost) {
        std::fprintf(stderr,
                     "fampool-server: region \"%s\" member %zu: its memory server %llu came "
                     "back without its heap; the member's bytes are lost\n",
                     region.name.c_str(), member,
                     static_cast<unsigned long long>(MemberServer(region, member)));
    }
    return state == kHealthy;
}

RegionInfo MemberRecords::StartRebuild(uint64_t region_id, size_t member, uint64_t target) {
    RegionInfo region;
    {
        Txn txn(*env_, /*write=*/false);
        region = ReadRegion(txn, region_id);
    }
    if (member >= MemberCount(region) || StateOf(region, member) != kLost) {
        Fail(openfam::FAM_ERR_INVALID, "member {} of region \"{}\" is not lost", member,
             region.name);
    }
    // Its extent is emptied below: only with partners that hold its bytes to copy them from
    // (an intact member's extent may be the newest copy there is).
    if (!WritesGoOnWithout(region, member)) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "member {} of region \"{}\" has no healthy partner to be rebuilt from (more "
             "members lost than its redundancy survives)",
             member, region.name);
    }
    ExtentRef extent = ExtentsOf(region)[member].extent;
    try {
        server_(target).DestroyExtent(extent);  // what an earlier life of it left
    } catch (const Failure &) {
    }
    server_(target).CreateExtent(extent, ExtentSize(region), LayoutOf(region).share);
    Txn txn(*env_, /*write=*/true);
    RegionInfo now = ReadRegion(txn, region_id);
    if (StateOf(now, member) != kLost || now.size != region.size ||
        !WritesGoOnWithout(now, member)) {
        Fail(openfam::FAM_ERR_RESOURCE, "region \"{}\" changed while its rebuild started",
             region.name);
    }
    SetMemberServer(now, member, target);
    now.member_state.resize(MemberCount(now), kHealthy);
    now.member_state[member] = kRebuilding;
    txn.Put(Table::kRegions, Key(now.id), EncodeRegion(now));
    txn.Commit();
    // Then, before anything is copied to it, the partners' keys stop working: a client whose
    // view still says the member is lost writes and applies atomics at the partners alone, and
    // what it did there after the rebuild copied those bytes would never reach the member
    // (two acknowledged fetch_adds returned the same value when a rebuild took 10 ms and a
    // client's view was 30 ms old). Refused, it comes back with the view that says rebuilding.
    std::vector<size_t> partners = Partners(now, member);
    RevokeMemberKeys(now, [&](const PlacedExtent &each) {
        return std::find(partners.begin(), partners.end(), each.member) != partners.end();
    });
    return now;
}

void MemberRecords::RevokeMemberKeys(const RegionInfo &region,
                                     const std::function<bool(const PlacedExtent &)> &revoke) {
    grants_.Forget(region.id);
    for (const PlacedExtent &each : ExtentsOf(region)) {
        if (!revoke(each)) continue;
        try {
            server_(each.server).RevokeKeys(each.extent, kAllGrants);
        } catch (const Failure &) {
            // Unreachable too: its keys go with it, or its heartbeats will say.
        }
    }
    grants_.Forget(region.id);
}

bool MemberRecords::EndRebuild(uint64_t region_id, size_t member, uint64_t target, uint8_t state) {
    {
        Txn txn(*env_, /*write=*/true);
        RegionInfo region = ReadRegion(txn, region_id);
        if (StateOf(region, member) != kRebuilding || MemberServer(region, member) != target) {
            return false;  // lost again, or rebuilt elsewhere, meanwhile
        }
        region.member_state[member] = state;
        txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
        txn.Commit();
    }
    grants_.Forget(region_id);
    return true;
}

void MemberRecords::FinishRebuild(uint64_t region_id, size_t member, uint64_t target) {
    if (!EndRebuild(region_id, member, target, kHealthy)) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "member {} of region {} was lost again while it was rebuilt", member, region_id);
    }
}

void MemberRecords::AbortRebuild(uint64_t region_id, size_t member, uint64_t target) {
    EndRebuild(region_id, member, target, kLost);
}

ServerAccess MemberRecords::MemberKey(const RegionInfo &region, size_t member) {
    PlacedExtent placed = ExtentsOf(region)[member];
    // The key a rebuild reads and writes the member with: no permissions are recorded with it
    // here (a client's grant of the same range shares it and records its own).
    KeyGrant grant = server_(placed.server).GrantKey(placed.extent, 0, 0, true, Permissions{});
    return ServerAccess{placed.server, grant.fabric_address, grant.key,
                        grant.base,    grant.heap_path,      grant.node,
                        grant.socket,  grant.server_uid,     grant.incarnation};
}

}  // namespace fampool
