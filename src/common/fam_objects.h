// The vocabulary every layer speaks: who calls (Caller, and the POSIX check of its access),
// what a region and an item are (RegionInfo, ItemInfo), how a client reaches an item's bytes on
// a memory server (ServerAccess), and where a byte of an item lies among its region's memory
// servers (the striping arithmetic). Plain data and arithmetic, no behaviour.
#ifndef FAMPOOL_COMMON_FAM_OBJECTS_H_
#define FAMPOOL_COMMON_FAM_OBJECTS_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fam/fam.h"

namespace fampool {

constexpr size_t kMaxNameLength = 255;

struct Caller {
    uint32_t uid = 0;
    uint32_t gid = 0;
};

// This process's real uid and gid: who a program calls as.
inline Caller ThisProcess() {
    return Caller{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid())};
}

enum Access : unsigned { kRead = 4, kWrite = 2 };

// POSIX owner/group/other check of `access` bits against `mode`.
inline bool Allowed(uint32_t mode, uint32_t owner, uint32_t group, const Caller &caller,
                    unsigned access) {
    unsigned bits = caller.uid == owner   ? (mode >> 6) & 7
                    : caller.gid == group ? (mode >> 3) & 7
                                          : mode & 7;
    return (bits & access) == access;
}

// What a region's creator intends for its data (fam/fam.h's Fam_Region_Intent; docs/intent.md),
// as the metadata service records it.
struct RegionIntent {
    uint32_t hints = 0;             // Fam_Intent_Hint bits
    std::string kind;               // constraint: "dram", "persistent", "far"; "": any
    std::vector<uint64_t> servers;  // constraint: only these server ids; empty: any
    std::string failure_domain;     // constraint: only servers of this domain; "": any
    std::string host;               // the creating PE's host (FAM_HINT_NEAR_PE); "": local
    bool empty() const {
        return hints == 0 && kind.empty() && servers.empty() && failure_domain.empty();
    }
};

struct RegionInfo {
    uint64_t id = 0;
    std::string name;
    uint64_t size = 0;
    uint32_t perm = 0, uid = 0, gid = 0;
    Fam_Region_Attributes attributes{};  // resolved: no *_DEFAULT values
    uint64_t interleave_size = 0;
    std::vector<uint64_t> memory_servers;
    // Redundant regions (see Members below). RAID1: the server holding the copy of each
    // server's extent, in memory_servers order. Unused otherwise.
    std::vector<uint64_t> copy_servers;
    // Per member: kHealthy, kLost (its server died; its bytes are read from the others),
    // kRebuilding (a live server is getting them back; it takes writes, not reads) or
    // kLostIntact (the metadata service's own record; lost as kLost to everyone else).
    std::vector<uint8_t> member_state;
    // Regions created with an intent: the intent, and why their servers were chosen.
    RegionIntent intent;
    std::string placement;
};

// The members of a redundant region: the extents that together hold its bytes and their
// redundancy, each on its own server.
//   RAID1: 2K members for K servers: member s (< K) is the extent on memory_servers[s], member
//   K + s its copy on copy_servers[s]; both hold the same bytes at the same physical offsets.
//   RAID5: N members, one per server of memory_servers (N >= 3); the region's bytes are
//   striped over K = N - 1 data columns by the interleave size I, and each stripe (K units of
//   I bytes at the same physical offsets of every member) has one parity unit, the XOR of its
//   data units, on a member that rotates from stripe to stripe (Raid5Place).
// Other regions have no members (MemberCount 0).
// kLostIntact: a member lost when no other member could take writes in its place (RAID1: its
// copy was not healthy; RAID5: another member was not), so no write reached the region's bytes
// it holds after it was lost: the newest there is. If its server comes back with the extent,
// the metadata service takes it back as it is (MemberRecords::TakeBack) instead of rebuilding
// it from partners that are staler than it. StateOf reports it as kLost.
enum MemberState : uint8_t { kHealthy = 0, kLost = 1, kRebuilding = 2, kLostIntact = 3 };

inline bool IsRedundant(const RegionInfo &region) {
    return region.attributes.redundancyLevel == RAID1 || region.attributes.redundancyLevel == RAID5;
}
inline size_t MemberCount(const RegionInfo &region) {
    if (region.attributes.redundancyLevel == RAID1) return 2 * region.memory_servers.size();
    if (region.attributes.redundancyLevel == RAID5) return region.memory_servers.size();
    return 0;
}
inline uint64_t MemberServer(const RegionInfo &region, size_t member) {
    size_t k = region.memory_servers.size();
    return member < k ? region.memory_servers[member] : region.copy_servers[member - k];
}
inline uint8_t StateOf(const RegionInfo &region, size_t member) {
    if (member >= region.member_state.size()) return kHealthy;
    uint8_t state = region.member_state[member];
    return state == kLostIntact ? uint8_t{kLost} : state;
}
inline bool LostIntact(const RegionInfo &region, size_t member) {
    return member < region.member_state.size() && region.member_state[member] == kLostIntact;
}
// Columns the region's bytes are laid out over (the K of PlaceOfByte): its servers, but one
// fewer for RAID5, whose last column's worth of every stripe is parity.
inline uint64_t DataColumns(const RegionInfo &region) {
    uint64_t servers = region.memory_servers.size();
    return region.attributes.redundancyLevel == RAID5 ? servers - 1 : servers;
}
inline bool Degraded(const RegionInfo &region) {
    for (uint8_t state : region.member_state) {
        if (state != kHealthy) return true;
    }
    return false;
}

// RAID5: where stripe `stripe`'s parity unit lies (a member index), and the member of its
// data unit `column` (0 <= column < N - 1).
inline uint64_t Raid5ParityMember(uint64_t stripe, uint64_t members) { return stripe % members; }
inline uint64_t Raid5DataMember(uint64_t stripe, uint64_t column, uint64_t members) {
    return (Raid5ParityMember(stripe, members) + 1 + column) % members;
}

// How a client reaches an item's bytes on one memory server over the fabric: the server's
// endpoint name and the registration key handed out after the permission check. The remote
// address of the byte at physical offset p of the region's extent on that server is
// `base + p` (uint64 arithmetic: base may wrap for offset-addressed providers).
struct ServerAccess {
    uint64_t server_id = 0;
    std::string fabric_address;  // fi_getname() of the memory server's endpoint
    uint64_t key = 0;
    uint64_t base = 0;
    std::string heap_path;    // the extent's heap file on the server's host
    std::string node;         // the server host's boot id (NodeIdentity)
    std::string socket;       // the server's same-node socket (KeyGrant::socket)
    uint32_t server_uid = 0;  // who must answer there (KeyGrant::server_uid)
    std::string incarnation;  // the life that granted the key (KeyGrant::incarnation)
};

// An item's virtual offset in its region. Non-interleaved regions: the item lives on server
// index ServerIndexOf(offset) at physical offset PhysicalOf(offset) of that server's extent.
// Interleaved regions: byte v of the region's virtual space lies in block b = v / I on server
// index b % K at physical offset (b / K) * I + v % I (I: interleave size, K: server count).
constexpr int kServerIndexShift = 48;
inline uint64_t ServerIndexOf(uint64_t offset) { return offset >> kServerIndexShift; }
inline uint64_t PhysicalOf(uint64_t offset) {
    return offset & ((uint64_t{1} << kServerIndexShift) - 1);
}

// Where byte `at` of an item at virtual offset `offset` lies, by the formulas above: the server
// index, the physical offset in that server's extent, and how many bytes from there on stay
// contiguous on that server. `interleave` 0: not interleaved; `servers`: K.
struct BytePlace {
    uint64_t index = 0;
    uint64_t physical = 0;
    uint64_t contiguous = 0;
};
inline BytePlace PlaceOfByte(uint64_t offset, uint64_t interleave, uint64_t servers, uint64_t at) {
    if (interleave == 0) return {ServerIndexOf(offset), PhysicalOf(offset) + at, ~uint64_t{0}};
    uint64_t block = (offset + at) / interleave, within = (offset + at) % interleave;
    return {block % servers, (block / servers) * interleave + within, interleave - within};
}

// PlaceOfByte for a RAID5 region of `members` members and stripe unit `unit`: the member
// (index) holding the data byte, its physical offset there, and the bytes left in its unit.
inline BytePlace PlaceOfRaid5Byte(uint64_t offset, uint64_t unit, uint64_t members, uint64_t at) {
    uint64_t v = offset + at, block = v / unit, within = v % unit, columns = members - 1;
    uint64_t stripe = block / columns;
    return {Raid5DataMember(stripe, block % columns, members), stripe * unit + within,
            unit - within};
}

struct ItemInfo {
    uint64_t region_id = 0;
    uint64_t offset = 0;  // within the region
    uint64_t size = 0;
    std::string name;  // empty for unnamed items
    uint32_t perm = 0, uid = 0, gid = 0;
    RegionInfo region;
    // What the caller may do, decided by the service (the embedded model's capability).
    bool can_read = false, can_write = false;
    // Fabric access, one entry per server of the region in region.memory_servers order (for a
    // non-interleaved item only the entry of its server is filled). Empty in the embedded model.
    std::vector<ServerAccess> access;
    // Redundant regions: fabric access to each member (see Members), in member order; entries
    // of lost members have no fabric address. `access` is then empty.
    std::vector<ServerAccess> member_access;

    // The memory servers holding the item's bytes, as positions in region.memory_servers:
    // [first_server(), first_server() + server_count()). Every one of them for an item striped
    // over its region's servers; else the one it lives on.
    bool striped() const { return region.interleave_size != 0 && region.memory_servers.size() > 1; }
    size_t first_server() const { return striped() ? 0 : ServerIndexOf(offset); }
    size_t server_count() const {
        if (striped()) return region.memory_servers.size();
        return first_server() < region.memory_servers.size() ? 1 : 0;
    }
};

}  // namespace fampool

#endif  // FAMPOOL_COMMON_FAM_OBJECTS_H_
