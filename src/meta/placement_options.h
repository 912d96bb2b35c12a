// How the metadata store places regions on memory servers: the options a cluster's
// configuration gives it (meta/metadata_store.h). Internal to the metadata service.
#ifndef FAMPOOL_META_PLACEMENT_OPTIONS_H_
#define FAMPOOL_META_PLACEMENT_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/memory_server.h"

namespace fampool {

// OpenFAM's default region_span_size_per_memoryserver.
constexpr uint64_t kDefaultSpanSize = uint64_t{1} << 30;

// How regions are spread over memory servers.
struct PlacementOptions {
    uint64_t interleave_size = 0;  // for regions with interleaving (ENABLE or the default)
    size_t region_span = 0;        // servers per region at most; 0: all of them
    // Bytes a region places on each server before it takes another (OpenFAM's
    // region_span_size_per_memoryserver): a region of S bytes spans ceil(S / span_size)
    // servers, at least one and at most region_span. 0: every region takes region_span.
    // Unset: a region without interleaving spans ceil(S / kDefaultSpanSize) servers, since
    // each of its items lives on one server and must fit there (a small region spread over
    // every server would refuse items half its size); an interleaved region, whose items are
    // striped over all its servers, takes region_span.
    std::optional<uint64_t> span_size;
    std::string policy = "hash";  // "hash" (by region name) or "least-used" (fewest bytes)
    // By server id: the regions each holds, "volatile", "persistent" or "" (both); empty: every
    // server holds both.
    std::vector<std::string> memory_types;
    // By server id: its failure domain (a rack, a power feed); RAID1 keeps an extent's copy in
    // another domain than the extent when the cluster has one. Empty: every server its own.
    std::vector<std::string> failure_domains;
    // By server id: spares, which get no region when it is created (only lost members).
    std::vector<bool> spares;
    // By server id: its memory's kind, speed, capacity and node as configured (intent-based
    // placement); what is unset (0, "") the server is asked for. Empty: ask every server.
    std::vector<MemoryProfile> profiles;
    // By server id: servers only regions with an intent are placed on (the embedded model's
    // extra memory tiers). Empty: none.
    std::vector<bool> intent_only;
    // Whether redundant regions can be kept: not in the embedded model, whose memory tiers are
    // all on one node (and whose data path writes one copy).
    bool redundancy = true;
    bool grant_keys = false;  // fill ItemInfo::access with fabric keys (memory-server model)
    // Zero deallocated items on a thread of the store (the metadata server, whose memory
    // servers are a round trip away) rather than inside fam_deallocate (embedded: a memset).
    bool scrub_in_background = false;

    bool spare(uint64_t id) const { return id < spares.size() && spares[id]; }
    // Server `id`'s failure domain; "" when it has none (its own).
    std::string domain(uint64_t id) const {
        return id < failure_domains.size() ? failure_domains[id] : std::string();
    }
    // Of `servers` servers, those that hold memory of this kind (spares excepted).
    std::vector<uint64_t> Candidates(size_t servers, Fam_Memory_Type memory) const;
};

}  // namespace fampool

#endif  // FAMPOOL_META_PLACEMENT_OPTIONS_H_
