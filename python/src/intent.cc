#include "intent.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace py = pybind11;

namespace fampool_python {
namespace {

const std::vector<std::pair<std::string, uint32_t>> &Hints() {
    static const std::vector<std::pair<std::string, uint32_t>> kHints = {
        {"bandwidth", FAM_HINT_BANDWIDTH},
        {"latency", FAM_HINT_LATENCY},
        {"near_pe", FAM_HINT_NEAR_PE},
        {"capacity", FAM_HINT_CAPACITY},
        {"job", FAM_HINT_JOB},
        {"across_jobs", FAM_HINT_ACROSS_JOBS},
        {"volatile", FAM_HINT_VOLATILE},
        {"persistent", FAM_HINT_PERSISTENT},
        {"survive_failure", FAM_HINT_SURVIVE_FAILURE}};
    return kHints;
}

const std::vector<std::pair<std::string, Fam_Memory_Kind>> &Kinds() {
    static const std::vector<std::pair<std::string, Fam_Memory_Kind>> kKinds = {
        {"any", FAM_KIND_ANY},
        {"dram", FAM_KIND_DRAM},
        {"persistent", FAM_KIND_PERSISTENT},
        {"far", FAM_KIND_FAR}};
    return kKinds;
}

std::string Names(const auto &table) {
    std::string names;
    for (const auto &[name, value] : table) names += (names.empty() ? "" : ", ") + name;
    return names;
}

}  // namespace

Fam_Region_Intent IntentOf(const std::vector<std::string> &hints,
                           const std::optional<std::string> &kind,
                           const std::vector<uint64_t> &servers,
                           const std::optional<std::string> &failure_domain) {
    Fam_Region_Intent intent;
    std::memset(&intent, 0, sizeof intent);
    for (const std::string &hint : hints) {
        bool known = false;
        for (const auto &[name, value] : Hints()) {
            if (name == hint) intent.hints |= value, known = true;
        }
        if (!known) {
            throw py::value_error("fampool: create_region: no hint \"" + hint +
                                  "\" (hints: " + Names(Hints()) + ")");
        }
    }
    if (kind) {
        bool known = false;
        for (const auto &[name, value] : Kinds()) {
            if (name == *kind) intent.kind = value, known = true;
        }
        if (!known) {
            throw py::value_error("fampool: create_region: no memory kind \"" + *kind +
                                  "\" (kinds: " + Names(Kinds()) + ")");
        }
    }
    if (servers.size() > FAM_INTENT_MAX_SERVERS) {
        throw py::value_error("fampool: create_region: at most " +
                              std::to_string(FAM_INTENT_MAX_SERVERS) + " servers, not " +
                              std::to_string(servers.size()));
    }
    intent.server_count = static_cast<uint32_t>(servers.size());
    for (size_t k = 0; k < servers.size(); ++k) intent.servers[k] = servers[k];
    if (failure_domain) {
        if (failure_domain->size() >= FAM_INTENT_DOMAIN_LENGTH) {
            throw py::value_error("fampool: create_region: failure domain \"" + *failure_domain +
                                  "\" is longer than " +
                                  std::to_string(FAM_INTENT_DOMAIN_LENGTH - 1) + " bytes");
        }
        std::memcpy(intent.failure_domain, failure_domain->data(), failure_domain->size());
    }
    return intent;
}

py::dict PlacementOf(const Fam_Placement &placement) {
    const Fam_Region_Intent &intent = placement.intent;
    py::list hints;
    for (const auto &[name, value] : Hints()) {
        if (intent.hints & value) hints.append(name);
    }
    std::string kind = "any";
    for (const auto &[name, value] : Kinds()) {
        if (static_cast<int>(value) == static_cast<int>(intent.kind)) kind = name;
    }
    uint32_t count = std::min<uint32_t>(intent.server_count, FAM_INTENT_MAX_SERVERS);
    py::dict out;
    out["hints"] = hints;
    out["kind"] = kind;
    out["servers"] = std::vector<uint64_t>(intent.servers, intent.servers + count);
    out["failure_domain"] = std::string(intent.failure_domain,
                                        strnlen(intent.failure_domain, FAM_INTENT_DOMAIN_LENGTH));
    out["reason"] =
        std::string(placement.reason, strnlen(placement.reason, FAM_PLACEMENT_REASON_LENGTH));
    return out;
}

}  // namespace fampool_python
