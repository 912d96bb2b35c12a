// fampool's intent-based placement for Python (docs/intent.md): a Fam_Region_Intent from
// Python names, and a region's Fam_Placement as a dict.
#ifndef FAMPOOL_PYTHON_INTENT_H_
#define FAMPOOL_PYTHON_INTENT_H_

#include <fam/fam.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

namespace fampool_python {

// `hints`: names of Fam_Intent_Hint values ("bandwidth", "latency", "near_pe", "capacity",
// "job", "across_jobs", "volatile", "persistent", "survive_failure"); `kind`: "dram",
// "persistent" or "far"; `servers`: at most FAM_INTENT_MAX_SERVERS ids; `failure_domain`: a
// domain name. Throws ValueError naming what is wrong.
Fam_Region_Intent IntentOf(const std::vector<std::string> &hints,
                           const std::optional<std::string> &kind,
                           const std::vector<uint64_t> &servers,
                           const std::optional<std::string> &failure_domain);

// {"hints": [...], "kind": ..., "servers": [...], "failure_domain": ..., "reason": ...}.
pybind11::dict PlacementOf(const Fam_Placement &placement);

}  // namespace fampool_python

#endif  // FAMPOOL_PYTHON_INTENT_H_
