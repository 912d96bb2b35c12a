// Intent-based placement (seed 003, SharP UMA; docs/intent.md): a region's hints and
// constraints mapped onto the memory servers' kinds, speeds, nodes and failure domains. Pure
// functions over what the metadata store knows; the store applies their choice.
#ifndef FAMPOOL_META_INTENT_PLACEMENT_H_
#define FAMPOOL_META_INTENT_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/fam_objects.h"
#include "common/memory_kind.h"

namespace fampool {

// A server the region's memory type allows (spares excluded), as placement sees it.
struct PlacementCandidate {
    uint64_t id = 0;
    MemoryProfile profile;
    std::string failure_domain;          // "" : a domain of its own
    uint64_t free_bytes = ~uint64_t{0};  // room left under its capacity; all ones: no limit
};

// The resilience and accessibility hints, applied to `attributes` (memory type and redundancy
// level; MEMORY_TYPE_DEFAULT and REDUNDANCY_LEVEL_DEFAULT are what the caller left open).
// Throws Failure(FAM_ERR_INVALID) naming the region and the parts for unknown hint bits, hints
// that exclude each other, or hints against an explicit attribute. A kind constraint of
// persistent memory makes the memory type persistent when nothing else chose it. Appends what
// it decided to `why` ("" when the hints say nothing of it).
void ApplyIntentAttributes(const RegionIntent &intent, const std::string &region,
                           Fam_Region_Attributes *attributes, std::string *why);

struct IntentChoice {
    std::vector<uint64_t> ranked;  // the servers the intent allows, best first
    size_t span = 0;               // servers the hints ask for; 0: the placement options'
};

// The constraints (kind, servers, failure domain) narrow `candidates`; none left: throws
// Failure(FAM_ERR_RESOURCE) naming the unmet constraint and what the servers are. The usage
// hints then narrow and rank what is left: NEAR_PE (servers on intent.host's node), LATENCY
// (within 1.25x or 1 us of the lowest, lowest first; a span of one server), CAPACITY (far, then
// persistent, then DRAM; most free bytes first), BANDWIDTH (the set of fastest servers whose
// striped bandwidth, count x slowest, is the highest: its size is the span). `why` gets the
// reasoning in words.
IntentChoice ChooseByIntent(const RegionIntent &intent, const std::string &region,
                            std::vector<PlacementCandidate> candidates, std::string *why);

// What fam_stat says of a region placed without an intent.
std::string PlainPlacement(const RegionInfo &region);
// "bandwidth+persistent" for the hint bits (messages, `fampool stat`); "none" for 0.
std::string HintNames(uint32_t hints);
// Fam_Memory_Kind <-> "dram", "persistent", "far" ("" for FAM_KIND_ANY). Throws
// Failure(FAM_ERR_INVALID) for a value out of range.
std::string KindName(int kind, const std::string &region);
int KindValue(const std::string &name);

}  // namespace fampool

#endif  // FAMPOOL_META_INTENT_PLACEMENT_H_
