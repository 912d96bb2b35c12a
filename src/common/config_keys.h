// The top-level keys a fampool configuration file may hold. One file can serve clients
// ($FAMPOOL_CONFIG, fam_pe_config.yaml) and servers (the cluster file `fampool up` writes), so
// both readers accept the same set and refuse anything else by name: a misspelt key is an
// error, never a setting silently not taken.
#ifndef FAMPOOL_COMMON_CONFIG_KEYS_H_
#define FAMPOOL_COMMON_CONFIG_KEYS_H_

#include <yaml-cpp/exceptions.h>

#include <string>

#include "common/error.h"

namespace YAML {
class Node;
}

#include <set>

namespace fampool {

// Whether `key` is a top-level key of a configuration or cluster file: one fampool reads, or
// one of OpenFAM's own files that fampool accepts and does not need (docs/configuration.md).
bool IsConfigKey(const std::string &key);
// Every such key (docs/configuration.md must list each: config_test checks it).
const std::set<std::string> &ConfigKeyTable();

// Every FAMPOOL_* environment variable a fampool program or library reads
// (docs/configuration.md; tests/scripts checks the sources name no other).
const std::set<std::string> &EnvironmentVariables();
// Once per process: a line on stderr for each FAMPOOL_* variable of the environment that is
// not one of those but close to one (a misspelling, ignored otherwise), naming the closest.
void WarnMisspeltVariables();

// Throws Failure(FAM_ERR_INVALID) naming the file and the first key that is not one (and the
// closest key, when one is close), or whose value CheckOpenFamValue refuses.
void CheckConfigKeys(const std::string &path, const YAML::Node &root);

// For a key of OpenFAM's own files that tunes OpenFAM's internals (rpc_framework_type,
// resource_release, metadata_manager, the interface types and lists, ATL_*): throws
// Failure(FAM_ERR_INVALID) naming the file, key and value when the value asks for what fampool
// does not do (docs/configuration.md says which values are taken and what each means here).
// Other keys pass.
void CheckOpenFamValue(const std::string &path, const std::string &key, const YAML::Node &value);

// Runs `read` (a reader of the configuration file `path`); an error yaml-cpp throws on the way
// (a value of the wrong kind where the reader looked, a scalar where it expected a map) becomes
// Failure(FAM_ERR_INVALID) naming the file, as every other configuration error does. Before
// this, some escaped as YAML exceptions without a Fam_Error (found by tests/fuzz/config_fuzz).
template <typename Read>
auto ReadingConfigFile(const std::string &path, Read &&read) -> decltype(read()) {
    try {
        return read();
    } catch (const YAML::Exception &e) {
        Fail(openfam::FAM_ERR_INVALID, "configuration file {}: {}", path, e.what());
    }
}

}  // namespace fampool

#endif  // FAMPOOL_COMMON_CONFIG_KEYS_H_
