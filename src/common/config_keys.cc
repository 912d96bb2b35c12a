#include "common/config_keys.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "common/error.h"

namespace fampool {
namespace {

const std::set<std::string> &Keys() {
    static const std::set<std::string> keys = {
        // What a client reads (common/config.cc).
        "openfam_model", "runtime", "provider", "libfabric_provider", "FamThreadModel",
        "fam_thread_model", "FamContextModel", "fam_context_model", "client_interface_type",
        "fam_client_interface_service_address", "fam_client_interface_service_port",
        "cis_server", "grpc_port",
        "default_region_name", "default_region_size", "fam_default_memory_type", "num_consumer",
        "if_device", "fampool_home", "fampool_shm_dir", "fampool_archive_dir", "archive_path",
        "dataitem_interleave_size", "metadata_sync", "metadata_address", "rpc_timeout_ms",
        "fabric_timeout_ms", "metadata_fabric",
        // What the servers read (common/cluster_config.cc).
        "metadata_dir", "metadata_path", "archive_dir", "placement", "region_span",
        "enable_region_spanning", "region_span_size_per_memoryserver", "progress", "memservers",
        "Memservers", "metadata_fabric_port", "fam_backup_path",
        // OpenFAM's own files hold these; fampool has no use for them.
        "rpc_framework_type", "resource_release", "metadata_manager", "metadata_interface_type",
        "memsrv_interface_type", "memsrv_list", "metadata_list", "delayed_free_threads",
        "ATL_threads", "ATL_queue_size", "ATL_data_size"};
    return keys;
}

}  // namespace

bool IsConfigKey(const std::string &key) { return Keys().count(key) > 0; }

void CheckConfigKeys(const std::string &path, const YAML::Node &root) {
    if (!root || !root.IsMap()) return;
    for (const auto &entry : root) {
        std::string key = entry.first.as<std::string>();
        if (!IsConfigKey(key)) {
            Fail(openfam::FAM_ERR_INVALID,
                 "configuration file {}: unknown key \"{}\" (docs/configuration.md lists the "
                 "keys)",
                 path, key);
        }
    }
}

}  // namespace fampool
