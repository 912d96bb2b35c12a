// MetadataStore: where a new region goes. Which servers hold its memory type, how many it
// spans, by name hash, least use or (regions with an intent) intent-based placement
// (meta/intent_placement.h), where RAID1 copies go and which redundancy levels can be kept.
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/hash.h"
#include "meta/intent_placement.h"
#include "meta/metadata_store.h"

namespace fampool {

std::vector<uint64_t> PlacementOptions::Candidates(size_t servers, Fam_Memory_Type memory) const {
    const char *kind = memory == PERSISTENT ? "persistent" : "volatile";
    std::vector<uint64_t> candidates;
    for (uint64_t id = 0; id < servers; ++id) {
        const std::string &type = id < memory_types.size() ? memory_types[id] : std::string();
        if (!spare(id) && (type.empty() || type == kind)) candidates.push_back(id);
    }
    return candidates;
}

MemoryServer &MetadataStore::Server(uint64_t id) const {
    if (id >= servers_.size()) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "memory server {} holds a region's extent, and this configuration has {} memory "
             "servers (embedded: memory_tiers lists servers 1 and up): restore it to reach the "
             "region",
             id, servers_.size());
    }
    return *servers_[id];
}

std::vector<PlacementCandidate> MetadataStore::AsCandidates(const std::vector<uint64_t> &ids,
                                                            const std::vector<uint64_t> &usage) {
    std::vector<MemoryProfile> profiles = Profiles();
    std::vector<PlacementCandidate> candidates;
    for (uint64_t id : ids) {
        PlacementCandidate candidate;
        candidate.id = id;
        candidate.profile = profiles[id];
        candidate.failure_domain = options_.domain(id);
        uint64_t capacity = profiles[id].capacity;
        if (capacity && id < usage.size()) {
            candidate.free_bytes = capacity - std::min(capacity, usage[id]);
        }
        candidates.push_back(candidate);
    }
    return candidates;
}

std::vector<uint64_t> MetadataStore::PlaceRegion(const std::string &name, uint64_t size,
                                                 bool interleaved,
                                                 const Fam_Region_Attributes &attributes,
                                                 const RegionIntent &intent, std::string *reason) {
    const char *kind = attributes.memoryType == PERSISTENT ? "persistent" : "volatile";
    std::vector<uint64_t> candidates = options_.Candidates(servers_.size(), attributes.memoryType);
    if (candidates.empty()) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\" is {}, and no memory server holds {} memory (memory_type of the "
             "cluster's memory servers)",
             name, kind, kind);
    }
    if (intent.empty()) {
        auto intent_only = [&](uint64_t id) {
            return id < options_.intent_only.size() && options_.intent_only[id];
        };
        candidates.erase(std::remove_if(candidates.begin(), candidates.end(), intent_only),
                         candidates.end());
        if (candidates.empty()) {
            Fail(openfam::FAM_ERR_RESOURCE,
                 "region \"{}\" is {}, and only memory tiers reached by intent hold {} memory: "
                 "create it with fam_create_region_intent (docs/intent.md)",
                 name, kind, kind);
        }
    }
    size_t wanted_span = 0;
    std::vector<uint64_t> usage;
    if (!intent.empty()) {
        usage = ServerUsage();
        std::vector<PlacementCandidate> choices = AsCandidates(candidates, usage);
        *reason += fmt::format("{} memory: {}", kind, fmt::join(candidates, ", "));
        IntentChoice choice = ChooseByIntent(intent, name, std::move(choices), reason);
        candidates = choice.ranked;
        wanted_span = choice.span;
    }
    size_t count = candidates.size();
    size_t span = options_.region_span ? std::min(options_.region_span, count) : count;
    uint64_t span_size = options_.span_size.value_or(interleaved ? 0 : kDefaultSpanSize);
    if (wanted_span) {
        span = std::min(wanted_span, span);
    } else if (span_size) {
        uint64_t wanted = size / span_size + (size % span_size ? 1 : 0);
        span = static_cast<size_t>(std::clamp<uint64_t>(wanted, 1, span));
    }
    // RAID5 stripes over two data servers and a parity server at least.
    if (attributes.redundancyLevel == RAID5) span = std::max<size_t>(span, 3);
    if (span > count) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\" asks for RAID5, which needs 3 memory servers holding {} memory{}, "
             "and there {} {}",
             name, kind, intent.empty() ? "" : " that its intent allows", count == 1 ? "is" : "are",
             count);
    }
    std::vector<uint64_t> order;
    if (intent.empty()) {
        for (size_t i = 0; i < count; ++i) order.push_back(candidates[(Fnv1a(name) + i) % count]);
        if (options_.policy == "least-used") {
            usage = ServerUsage();
            std::stable_sort(order.begin(), order.end(),
                             [&](uint64_t a, uint64_t b) { return usage[a] < usage[b]; });
        }
    } else {
        // Best first; servers without room for their share of the region come last.
        uint64_t share = size / span + (size % span ? 1 : 0);
        std::vector<MemoryProfile> profiles = Profiles();
        auto room = [&](uint64_t id) {
            return !profiles[id].capacity || profiles[id].capacity >= usage[id] + share;
        };
        std::stable_partition(candidates.begin(), candidates.end(), room);
        if (!room(candidates[span - 1])) {
            std::string full;
            for (uint64_t id : candidates) {
                full += fmt::format("{}{} ({} of {} bytes used)", full.empty() ? "" : ", ", id,
                                    usage[id], profiles[id].capacity);
            }
            Fail(openfam::FAM_ERR_NO_SPACE,
                 "region \"{}\" of {} bytes needs {} bytes on each of {} memory servers its "
                 "intent allows, and fewer have room: {}",
                 name, size, share, span, full);
        }
        order = candidates;
        *reason +=
            fmt::format("; placed on {}", fmt::join(order.begin(), order.begin() + span, ", "));
    }
    order.resize(span);
    std::sort(order.begin(), order.end());
    return order;
}

std::vector<uint64_t> MetadataStore::PlaceCopies(const std::vector<uint64_t> &servers,
                                                 const std::vector<uint64_t> &candidates) const {
    auto domain = [this](uint64_t id) {
        return id < options_.failure_domains.size() && !options_.failure_domains[id].empty()
                   ? options_.failure_domains[id]
                   : "server " + std::to_string(id);
    };
    // A server holds one copy extent of a region at most (the extent is named by the region).
    std::vector<uint64_t> copies;
    std::set<uint64_t> used;
    for (uint64_t server : servers) {
        // The next candidates after the server, in rotation, not holding a copy yet: those in
        // another failure domain first, then any other server.
        auto at = std::find(candidates.begin(), candidates.end(), server);
        size_t start = at == candidates.end() ? 0 : at - candidates.begin();
        std::optional<uint64_t> other_domain, other_server;
        for (size_t i = 1; i <= candidates.size(); ++i) {
            uint64_t id = candidates[(start + i) % candidates.size()];
            if (id == server || used.count(id)) continue;
            if (!other_server) other_server = id;
            if (!other_domain && domain(id) != domain(server)) other_domain = id;
        }
        if (!other_server) break;  // cornered: the rotation below
        copies.push_back(other_domain ? *other_domain : *other_server);
        used.insert(copies.back());
    }
    if (copies.size() < servers.size()) {
        // Each extent's copy on the region's next server: distinct, never its own (K >= 2;
        // one server always finds another above).
        copies.clear();
        for (size_t i = 0; i < servers.size(); ++i) {
            copies.push_back(servers[(i + 1) % servers.size()]);
        }
    }
    return copies;
}

void MetadataStore::CheckRedundancy(const std::string &name,
                                    const Fam_Region_Attributes &attributes) const {
    Fam_Redundancy_Level level = attributes.redundancyLevel;
    if (level == NONE) return;
    if (level != RAID1 && level != RAID5) {
        Fail(openfam::FAM_ERR_INVALID, "region \"{}\": unknown redundancyLevel {}", name,
             static_cast<int>(level));
    }
    // A region's redundancy is a promise that its bytes survive a memory server's loss: never
    // accepted where it cannot be kept.
    const char *what = level == RAID1 ? "RAID1" : "RAID5";
    size_t needed = level == RAID1 ? 2 : 3;
    size_t servers = options_.Candidates(servers_.size(), attributes.memoryType).size();
    if (servers < needed) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\" asks for {}, which needs {} memory servers (a copy or parity on "
             "another server), and there {} {}{}; the embedded model has one: create it with "
             "redundancyLevel NONE, or on a cluster of {} or more memory servers",
             name, what, needed, servers == 1 ? "is" : "are", servers,
             servers == servers_.size() ? "" : " holding its memory type", needed);
    }
    if (!options_.redundancy) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\" asks for {}, and the embedded model keeps no redundancy: its memory "
             "tiers are all on this node, which a failure takes as a whole; create it with "
             "redundancyLevel NONE, or on a cluster of {} or more memory servers",
             name, what, needed);
    }
    if (level == RAID5 && (attributes.interleaveEnable == DISABLE || !options_.interleave_size)) {
        Fail(openfam::FAM_ERR_INVALID,
             "region \"{}\" asks for RAID5 without interleaving: RAID5 stripes the region's bytes "
             "by the interleave size (its stripe unit); enable interleaving (interleave_size "
             "in the cluster file)",
             name);
    }
}

}  // namespace fampool
