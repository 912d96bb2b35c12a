// The vocabulary every layer speaks: who calls (Caller, and the POSIX check of its access),
// what a region and an item are (RegionInfo, ItemInfo), how a client reaches an item's bytes on
// a memory server (ServerAccess), and where a byte of an item lies among its region's memory
// servers (the striping arithmetic). Plain data and arithmetic, no behaviour.
#ifndef FAMPOOL_COMMON_FAM_OBJECTS_H_
#define FAMPOOL_COMMON_FAM_OBJECTS_H_

#include <sys/types.h>

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

enum Access : unsigned { kRead = 4, kWrite = 2 };

// POSIX owner/group/other check of `access` bits against `mode`.
inline bool Allowed(uint32_t mode, uint32_t owner, uint32_t group, const Caller &caller,
                    unsigned access) {
    unsigned bits = caller.uid == owner ? (mode >> 6) & 7 : caller.gid == group ? (mode >> 3) & 7
                                                                                 : mode & 7;
    return (bits & access) == access;
}

struct RegionInfo {
    uint64_t id = 0;
    std::string name;
    uint64_t size = 0;
    uint32_t perm = 0, uid = 0, gid = 0;
    Fam_Region_Attributes attributes{};  // resolved: no *_DEFAULT values
    uint64_t interleave_size = 0;
    std::vector<uint64_t> memory_servers;
};

// How a client reaches an item's bytes on one memory server over the fabric: the server's
// endpoint name and the registration key handed out after the permission check. The remote
// address of the byte at physical offset p of the region's extent on that server is
// `base + p` (uint64 arithmetic: base may wrap for offset-addressed providers).
struct ServerAccess {
    uint64_t server_id = 0;
    std::string fabric_address;  // fi_getname() of the memory server's endpoint
    uint64_t key = 0;
    uint64_t base = 0;
    std::string heap_path;  // the extent's heap file on the server's host
    std::string node;       // the server host's boot id (NodeIdentity)
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
inline BytePlace PlaceOfByte(uint64_t offset, uint64_t interleave, uint64_t servers,
                             uint64_t at) {
    if (interleave == 0) return {ServerIndexOf(offset), PhysicalOf(offset) + at, ~uint64_t{0}};
    uint64_t block = (offset + at) / interleave, within = (offset + at) % interleave;
    return {block % servers, (block / servers) * interleave + within, interleave - within};
}

struct ItemInfo {
    uint64_t region_id = 0;
    uint64_t offset = 0;  // within the region
    uint64_t size = 0;
    std::string name;      // empty for unnamed items
    uint32_t perm = 0, uid = 0, gid = 0;
    RegionInfo region;
    // What the caller may do, decided by the service (the embedded model's capability).
    bool can_read = false, can_write = false;
    // Fabric access, one entry per server of the region in region.memory_servers order (for a
    // non-interleaved item only the entry of its server is filled). Empty in the embedded model.
    std::vector<ServerAccess> access;

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
