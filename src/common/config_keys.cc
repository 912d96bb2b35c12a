#include "common/config_keys.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <set>

#include "common/did_you_mean.h"
#include "common/error.h"

extern char **environ;

namespace fampool {
namespace {

const std::set<std::string> &Keys() {
    static const std::set<std::string> keys = {
        // What a client reads (common/config.cc).
        "openfam_model", "runtime", "provider", "libfabric_provider", "FamThreadModel",
        "fam_thread_model", "FamContextModel", "fam_context_model", "client_interface_type",
        "fam_client_interface_service_address", "fam_client_interface_service_port", "cis_server",
        "grpc_port", "default_region_name", "default_region_size", "fam_default_memory_type",
        "num_consumer", "if_device", "fampool_home", "fampool_shm_dir", "fampool_archive_dir",
        "archive_path", "dataitem_interleave_size", "metadata_sync", "metadata_address",
        "rpc_timeout_ms", "fabric_timeout_ms", "metadata_fabric", "memserver_fabric",
        "default_memory_type", "connect_timeout_ms", "fabric_checked_reads", "fabric_direct",
        "fabric_memory_side_elements", "aggregation", "aggregation_threshold", "memory_tiers",
        // Both read these (authentication: munge, docs/deployment.md).
        "authentication", "munge_socket", "sharing_group", "tls_ca", "tls_server_name",
        "tls_client_certificate", "tls_client_key",
        // What the servers read (common/cluster_config.cc).
        "metadata_dir", "metadata_path", "archive_dir", "placement", "region_span",
        "enable_region_spanning", "region_span_size_per_memoryserver", "progress", "memservers",
        "Memservers", "tls_certificate", "tls_private_key", "tls_client_certificates",
        "metadata_fabric_port", "metadata_metrics_port", "metrics_per_region", "metadata_shards",
        "fam_backup_path", "delayed_free_threads", "quotas",
        // OpenFAM's own files hold these; CheckOpenFamValue takes the values that describe
        // what fampool does.
        "rpc_framework_type", "resource_release", "metadata_manager", "metadata_interface_type",
        "memsrv_interface_type", "memsrv_list", "metadata_list", "ATL_threads", "ATL_queue_size",
        "ATL_data_size"};
    return keys;
}

}  // namespace

bool IsConfigKey(const std::string &key) { return Keys().count(key) > 0; }

const std::set<std::string> &EnvironmentVariables() {
    static const std::set<std::string> names = {"FAMPOOL_AGGREGATION",
                                                "FAMPOOL_AGGREGATION_THRESHOLD",
                                                "FAMPOOL_ARCHIVE_DIR",
                                                "FAMPOOL_ATL_DATA_SIZE",
                                                "FAMPOOL_ATL_QUEUE_SIZE",
                                                "FAMPOOL_AUTHENTICATION",
                                                "FAMPOOL_BUILD_DIR",
                                                "FAMPOOL_CIS_INTERFACE",
                                                "FAMPOOL_CIS_SERVER",
                                                "FAMPOOL_CONFIG",
                                                "FAMPOOL_CONNECT_TIMEOUT_MS",
                                                "FAMPOOL_CONTEXT_MODEL",
                                                "FAMPOOL_DEFAULT_MEMORY_TYPE",
                                                "FAMPOOL_DEFAULT_REGION",
                                                "FAMPOOL_DEFAULT_REGION_SIZE",
                                                "FAMPOOL_FABRIC_CHECKED_READS",
                                                "FAMPOOL_FABRIC_DIRECT",
                                                "FAMPOOL_FABRIC_MEMORY_SIDE_ELEMENTS",
                                                "FAMPOOL_FABRIC_TIMEOUT_MS",
                                                "FAMPOOL_GRPC_PORT",
                                                "FAMPOOL_HOME",
                                                "FAMPOOL_IF_DEVICE",
                                                "FAMPOOL_INTERLEAVE_SIZE",
                                                "FAMPOOL_MEMSERVER_FABRIC",
                                                "FAMPOOL_METADATA_ADDRESS",
                                                "FAMPOOL_METADATA_FABRIC",
                                                "FAMPOOL_META_SYNC",
                                                "FAMPOOL_MODEL",
                                                "FAMPOOL_MUNGE_SOCKET",
                                                "FAMPOOL_NUM_CONSUMER",
                                                "FAMPOOL_PMI2_LIBRARY",
                                                "FAMPOOL_PROVIDER",
                                                "FAMPOOL_RPC_TIMEOUT_MS",
                                                "FAMPOOL_RUNTIME",
                                                "FAMPOOL_RUN_DIR",
                                                "FAMPOOL_SHARING_GROUP",
                                                "FAMPOOL_SHM_DIR",
                                                "FAMPOOL_TEST_HOLD",
                                                "FAMPOOL_THREAD_MODEL",
                                                "FAMPOOL_TLS_CA",
                                                "FAMPOOL_TLS_CLIENT_CERTIFICATE",
                                                "FAMPOOL_TLS_CLIENT_KEY",
                                                "FAMPOOL_TLS_SERVER_NAME"};
    return names;
}

void WarnMisspeltVariables() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (char **entry = environ; entry && *entry; ++entry) {
            std::string variable = *entry;
            std::string name = variable.substr(0, variable.find('='));
            if (!name.starts_with("FAMPOOL_") || EnvironmentVariables().count(name)) continue;
            std::string closest = ClosestName(name, EnvironmentVariables());
            if (closest.empty()) continue;  // another program's (a test harness's, say)
            std::fprintf(stderr,
                         "fampool: the environment sets %s, which fampool does not read "
                         "(ignored); did you mean %s? (docs/configuration.md lists them)\n",
                         name.c_str(), closest.c_str());
        }
    });
}

const std::set<std::string> &ConfigKeyTable() { return Keys(); }

void CheckConfigKeys(const std::string &path, const YAML::Node &root) {
    if (!root || !root.IsMap()) return;
    for (const auto &entry : root) {
        std::string key = entry.first.as<std::string>();
        if (!IsConfigKey(key)) {
            Fail(openfam::FAM_ERR_INVALID,
                 "configuration file {}: unknown key \"{}\"{} (docs/configuration.md lists "
                 "the keys)",
                 path, key, DidYouMean(key, Keys()));
        }
        CheckOpenFamValue(path, key, entry.second);
    }
}

namespace {

std::string ScalarOf(const YAML::Node &value) {
    return value.IsScalar() ? value.Scalar() : std::string("(not a single value)");
}

void RequireValue(const std::string &path, const std::string &key, const YAML::Node &value,
                  std::initializer_list<const char *> taken, const char *why) {
    std::string text = ScalarOf(value);
    for (const char *ok : taken) {
        if (text == ok) return;
    }
    Fail(openfam::FAM_ERR_INVALID, "configuration file {}: {}: \"{}\" is not available: {}", path,
         key, text, why);
}

void RequireCount(const std::string &path, const std::string &key, const YAML::Node &value) {
    std::string text = ScalarOf(value);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        Fail(openfam::FAM_ERR_INVALID, "configuration file {}: {}: \"{}\" is not a number", path,
             key, text);
    }
}

}  // namespace

void CheckOpenFamValue(const std::string &path, const std::string &key, const YAML::Node &value) {
    if (key == "rpc_framework_type") {
        RequireValue(path, key, value, {"grpc"}, "fampool's control path is gRPC");
    } else if (key == "resource_release") {
        RequireValue(path, key, value, {"enable"},
                     "fampool always gives back what is freed (deallocated items are zeroed and "
                     "reused, destroyed regions' heaps deleted)");
    } else if (key == "metadata_manager") {
        RequireValue(path, key, value, {"radixtree"},
                     "OpenFAM's only metadata manager; fampool keeps metadata in LMDB in its "
                     "place");
    } else if (key == "metadata_interface_type" || key == "memsrv_interface_type") {
        RequireValue(path, key, value, {"direct", "rpc"}, "expected direct or rpc");
    } else if (key == "ATL_threads") {
        RequireValue(path, key, value, {"0"},
                     "fampool's memory servers apply queued operations (fam_queue_operation) on "
                     "their request threads, not on a pool of their own (docs/configuration.md)");
    } else if (key == "ATL_queue_size" || key == "ATL_data_size" ||
               key == "aggregation_threshold" || key == "fabric_memory_side_elements" ||
               key == "delayed_free_threads") {
        RequireCount(path, key, value);
    } else if (key == "memsrv_list" || key == "metadata_list") {
        if (!value.IsSequence()) {
            Fail(openfam::FAM_ERR_INVALID,
                 "configuration file {}: {} must be a list of \"id:host:port\"", path, key);
        }
    }
}

}  // namespace fampool
