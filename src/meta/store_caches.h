// What the metadata store keeps in memory beside its LMDB tables: the fabric keys it has handed
// out (KeyGrants) and what each memory server said of its memory (ServerProfiles). Both are
// caches of what a memory server answers, rebuilt by asking again after a restart; neither is
// written to LMDB.
#ifndef FAMPOOL_META_STORE_CACHES_H_
#define FAMPOOL_META_STORE_CACHES_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/memory_server.h"
#include "meta/client/metadata_service.h"

namespace fampool {

// The memory server with an id (MetadataStore::Server: it fails on an id the configuration
// does not have).
using ServerLookup = std::function<MemoryServer &(uint64_t id)>;

// The fabric keys of the memory-server model, handed out after the permission check: one per
// (region, member, range, writable), asked of the member's server the first time and kept, so
// that every later lookup of an item gets the same key without a round trip.
class KeyGrants {
  public:
    explicit KeyGrants(ServerLookup server) : server_(std::move(server)) {}

    // Fills item.access (item.member_access for a redundant region: one per member) with the
    // keys its permission check allows: read-only unless item.can_write. A redundant member on
    // a server that cannot be reached, or already lost, gets none (clients use the others).
    void Hand(ItemInfo &item);
    // Drops the kept keys of a region (destroyed, resized, a member moved): the next lookup asks
    // again.
    void Forget(uint64_t region_id);
    // Revokes the keys of an item's bytes on every server of the region (deallocated, or its
    // permissions changed), and drops them.
    void Revoke(const RegionInfo &region, uint64_t offset, uint64_t size);

  private:
    ServerLookup server_;
    std::mutex mutex_;
    // (region, member, offset, size, writable) -> key; offset/size 0: the whole extent.
    std::map<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, bool>, KeyGrant> grants_;
    // Per region, how many times its keys were forgotten or revoked: a key granted across one
    // is not kept. Each revoker bumps it again after the servers revoked. Entries stay (a
    // region's id is never reused; one word per region ever looked up).
    std::map<uint64_t, uint64_t> epochs_;
};

// Each memory server's memory (kind, speed, capacity, node): the configured profile, completed
// once by the server itself (asked with a 1 s bound); a server that has not answered is asked
// again kRetry later at the earliest (known false until then).
class ServerProfiles {
  public:
    ServerProfiles(std::vector<MemoryProfile> configured, size_t servers, ServerLookup server)
        : configured_(std::move(configured)), servers_(servers), server_(std::move(server)) {}

    std::vector<MemoryProfile> Get();

  private:
    static constexpr std::chrono::seconds kRetry{5};
    std::vector<MemoryProfile> configured_;
    size_t servers_;
    ServerLookup server_;
    std::mutex mutex_;
    std::vector<MemoryProfile> profiles_;  // by server id; empty until first asked
    // When each server was last asked (it did not answer yet).
    std::vector<std::chrono::steady_clock::time_point> asked_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_STORE_CACHES_H_
