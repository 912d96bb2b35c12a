#include "meta/intent_placement.h"

#include <algorithm>

#include "common/error.h"

namespace fampool {
namespace {

struct HintName {
    uint32_t bit;
    const char *name;
};
constexpr HintName kHints[] = {
    {FAM_HINT_BANDWIDTH, "bandwidth"},
    {FAM_HINT_LATENCY, "latency"},
    {FAM_HINT_NEAR_PE, "near-pe"},
    {FAM_HINT_CAPACITY, "capacity"},
    {FAM_HINT_JOB, "job"},
    {FAM_HINT_ACROSS_JOBS, "across-jobs"},
    {FAM_HINT_VOLATILE, "volatile"},
    {FAM_HINT_PERSISTENT, "persistent"},
    {FAM_HINT_SURVIVE_FAILURE, "survive-failure"},
};

uint32_t AllHints() {
    uint32_t all = 0;
    for (const HintName &hint : kHints) all |= hint.bit;
    return all;
}

std::string Ids(const std::vector<PlacementCandidate> &servers) {
    std::string text;
    for (const PlacementCandidate &server : servers) {
        text += (text.empty() ? "" : ", ") + std::to_string(server.id);
    }
    return text.empty() ? "none" : text;
}

// "0 (dram), 1 (far)": what the servers are, for a refusal.
std::string Described(const std::vector<PlacementCandidate> &servers) {
    std::string text;
    for (const PlacementCandidate &server : servers) {
        text +=
            fmt::format("{}{} ({}{})", text.empty() ? "" : ", ", server.id,
                        server.profile.kind.empty() ? "kind unknown" : server.profile.kind,
                        server.failure_domain.empty() ? "" : ", domain " + server.failure_domain);
    }
    return text.empty() ? "none" : text;
}

template <typename Keep>
void Narrow(std::vector<PlacementCandidate> *servers, Keep keep) {
    servers->erase(std::remove_if(servers->begin(), servers->end(),
                                  [&](const PlacementCandidate &s) { return !keep(s); }),
                   servers->end());
}

void Constrain(const RegionIntent &intent, const std::string &region,
               std::vector<PlacementCandidate> *servers, std::string *why) {
    const std::vector<PlacementCandidate> all = *servers;
    auto refuse = [&](const std::string &constraint) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\": constraint {} cannot be met: no memory server that holds its memory "
             "type meets it (they are: {})",
             region, constraint, Described(all));
    };
    if (!intent.kind.empty()) {
        Narrow(servers, [&](const PlacementCandidate &s) { return s.profile.kind == intent.kind; });
        if (servers->empty()) refuse("kind " + intent.kind);
        *why += fmt::format("; kind {}: {}", intent.kind, Ids(*servers));
    }
    if (!intent.servers.empty()) {
        std::string named;
        for (uint64_t id : intent.servers) named += (named.empty() ? "" : ",") + std::to_string(id);
        Narrow(servers, [&](const PlacementCandidate &s) {
            return std::count(intent.servers.begin(), intent.servers.end(), s.id) > 0;
        });
        if (servers->empty()) refuse("servers " + named);
        *why += fmt::format("; servers {}: {}", named, Ids(*servers));
    }
    if (!intent.failure_domain.empty()) {
        Narrow(servers, [&](const PlacementCandidate &s) {
            return s.failure_domain == intent.failure_domain;
        });
        if (servers->empty()) refuse("failure domain \"" + intent.failure_domain + "\"");
        *why += fmt::format("; domain {}: {}", intent.failure_domain, Ids(*servers));
    }
}

int KindRank(const std::string &kind) { return kind == "far" ? 0 : kind == "persistent" ? 1 : 2; }

}  // namespace

std::string PlainPlacement(const RegionInfo &region) {
    std::string servers;
    for (uint64_t id : region.memory_servers) {
        servers += (servers.empty() ? "" : ", ") + std::to_string(id);
    }
    return "no intent: placed by the cluster's placement policy (by name or least used) on " +
           servers;
}

std::string HintNames(uint32_t hints) {
    std::string text;
    for (const HintName &hint : kHints) {
        if (hints & hint.bit) text += (text.empty() ? "" : "+") + std::string(hint.name);
    }
    return text.empty() ? "none" : text;
}

std::string KindName(int kind, const std::string &region) {
    switch (kind) {
        case FAM_KIND_ANY:
            return "";
        case FAM_KIND_DRAM:
            return "dram";
        case FAM_KIND_PERSISTENT:
            return "persistent";
        case FAM_KIND_FAR:
            return "far";
    }
    Fail(openfam::FAM_ERR_INVALID,
         "region \"{}\": intent kind {} is not a Fam_Memory_Kind (FAM_KIND_ANY, FAM_KIND_DRAM, "
         "FAM_KIND_PERSISTENT, FAM_KIND_FAR)",
         region, kind);
}

int KindValue(const std::string &name) {
    if (name == "dram") return FAM_KIND_DRAM;
    if (name == "persistent") return FAM_KIND_PERSISTENT;
    if (name == "far") return FAM_KIND_FAR;
    return FAM_KIND_ANY;
}

void ApplyIntentAttributes(const RegionIntent &intent, const std::string &region,
                           Fam_Region_Attributes *attributes, std::string *why) {
    uint32_t hints = intent.hints;
    if (hints & ~AllHints()) {
        Fail(openfam::FAM_ERR_INVALID,
             "region \"{}\": intent hints 0x{:x} hold unknown bits 0x{:x}", region, hints,
             hints & ~AllHints());
    }
    auto exclusive = [&](uint32_t a, uint32_t b) {
        if ((hints & a) && (hints & b)) {
            Fail(openfam::FAM_ERR_INVALID,
                 "region \"{}\": intent hints {} and {} exclude each other", region, HintNames(a),
                 HintNames(b));
        }
    };
    exclusive(FAM_HINT_VOLATILE, FAM_HINT_PERSISTENT);
    exclusive(FAM_HINT_JOB, FAM_HINT_ACROSS_JOBS);
    exclusive(FAM_HINT_VOLATILE, FAM_HINT_ACROSS_JOBS);
    exclusive(FAM_HINT_JOB, FAM_HINT_PERSISTENT);
    // Persistence: asked for, needed to outlive the job's servers, or part of surviving a
    // failure (unless the caller keeps the region volatile).
    Fam_Memory_Type wanted = MEMORY_TYPE_DEFAULT;
    const char *cause = "";
    if (hints & (FAM_HINT_VOLATILE | FAM_HINT_JOB)) {
        wanted = VOLATILE;
        cause = hints & FAM_HINT_VOLATILE ? "volatile" : "job";
    } else if (hints & (FAM_HINT_PERSISTENT | FAM_HINT_ACROSS_JOBS | FAM_HINT_SURVIVE_FAILURE)) {
        wanted = PERSISTENT;
        cause = hints & FAM_HINT_PERSISTENT    ? "persistent"
                : hints & FAM_HINT_ACROSS_JOBS ? "across-jobs"
                                               : "survive-failure";
    } else if (intent.kind == "persistent" && attributes->memoryType == MEMORY_TYPE_DEFAULT) {
        // Persistent memory holds persistent regions, unless the caller says otherwise.
        wanted = PERSISTENT;
        cause = "kind persistent";
    }
    if (wanted != MEMORY_TYPE_DEFAULT) {
        if (attributes->memoryType != MEMORY_TYPE_DEFAULT && attributes->memoryType != wanted) {
            Fail(openfam::FAM_ERR_INVALID,
                 "region \"{}\": intent hint {} asks for {} memory and memoryType is {}", region,
                 cause, wanted == PERSISTENT ? "persistent" : "volatile",
                 attributes->memoryType == PERSISTENT ? "PERSISTENT" : "VOLATILE");
        }
        attributes->memoryType = wanted;
        *why +=
            fmt::format("; {}: {} memory", cause, wanted == PERSISTENT ? "persistent" : "volatile");
    }
    if (hints & FAM_HINT_SURVIVE_FAILURE) {
        Fam_Redundancy_Level level = attributes->redundancyLevel;
        if (level == NONE) {
            Fail(openfam::FAM_ERR_INVALID,
                 "region \"{}\": intent hint survive-failure needs redundancy and redundancyLevel "
                 "is NONE",
                 region);
        }
        if (level == REDUNDANCY_LEVEL_DEFAULT) attributes->redundancyLevel = RAID1;
        *why += fmt::format("; survive-failure: {}",
                            attributes->redundancyLevel == RAID5 ? "RAID5" : "RAID1");
    }
}

IntentChoice ChooseByIntent(const RegionIntent &intent, const std::string &region,
                            std::vector<PlacementCandidate> servers, std::string *why) {
    Constrain(intent, region, &servers, why);
    IntentChoice choice;
    if (intent.hints & FAM_HINT_NEAR_PE) {
        std::vector<PlacementCandidate> near = servers;
        Narrow(&near, [&](const PlacementCandidate &s) { return s.profile.host == intent.host; });
        if (near.empty()) {
            *why += fmt::format("; near-pe: no server on the PE's node {}, kept {}", intent.host,
                                Ids(servers));
        } else {
            servers = near;
            *why += fmt::format("; near-pe: {}", Ids(servers));
        }
    }
    auto latency = [](const PlacementCandidate &s) {
        return s.profile.latency_ns ? s.profile.latency_ns : ~uint64_t{0};
    };
    if (intent.hints & FAM_HINT_LATENCY) {
        std::stable_sort(servers.begin(), servers.end(),
                         [&](const auto &a, const auto &b) { return latency(a) < latency(b); });
        uint64_t best = latency(servers.front());
        if (best != ~uint64_t{0}) {
            // Within 1.25x of the lowest, or 1 us of it: measured memory latencies of alike
            // servers differ by more than 1.25x from run to run, and a fabric access costs
            // microseconds anyway.
            Narrow(&servers, [&](const PlacementCandidate &s) {
                return latency(s) != ~uint64_t{0} &&
                       (latency(s) * 4 <= best * 5 || latency(s) <= best + 1000);
            });
        }
        // Small accesses each touch one server: spread, they gain no bandwidth and keep more
        // servers' progress threads to wake. One server (the lowest latency first), unless
        // the bandwidth hint asks for a spread too.
        choice.span = 1;
        *why += fmt::format("; latency: {} (within 1.25x or 1 us of {}; one server)", Ids(servers),
                            LatencyText(best));
    }
    if (intent.hints & FAM_HINT_CAPACITY) {
        std::stable_sort(servers.begin(), servers.end(), [](const auto &a, const auto &b) {
            int ka = KindRank(a.profile.kind), kb = KindRank(b.profile.kind);
            return ka != kb ? ka < kb : a.free_bytes > b.free_bytes;
        });
        *why += fmt::format("; capacity: far tier and most free memory first: {}", Ids(servers));
    }
    if (intent.hints & FAM_HINT_BANDWIDTH) {
        // Striped over k servers, a transfer moves at k times the slowest of them: the k fastest
        // with the highest product (the larger set on a tie: more memory, same speed).
        std::stable_sort(servers.begin(), servers.end(), [](const auto &a, const auto &b) {
            return a.profile.bandwidth > b.profile.bandwidth;
        });
        size_t best_k = servers.size();
        double best = 0;
        for (size_t k = 1; k <= servers.size(); ++k) {
            double total = static_cast<double>(k) * servers[k - 1].profile.bandwidth;
            if (total >= best) best = total, best_k = k;
        }
        if (best == 0) best_k = servers.size();  // speeds unknown: all of them
        servers.resize(best_k);
        choice.span = best_k;
        *why += fmt::format("; bandwidth: {} ({} x {} striped = {})", Ids(servers), best_k,
                            BandwidthText(servers.back().profile.bandwidth),
                            BandwidthText(static_cast<uint64_t>(best)));
    }
    for (const PlacementCandidate &server : servers) choice.ranked.push_back(server.id);
    return choice;
}

}  // namespace fampool
