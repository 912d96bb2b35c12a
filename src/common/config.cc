#include "common/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>

#include "common/config_keys.h"
#include "common/did_you_mean.h"
#include "common/error.h"
#include "common/memory_kind.h"

namespace fampool {
namespace {

const char *Env(const char *name) {
    const char *value = std::getenv(name);
    return (value && *value) ? value : nullptr;
}

// The sources of the settings read while ReadConfig runs on this thread (Config::sources).
thread_local std::vector<Config::Source> *recording = nullptr;

// Sets `field` from the YAML key (first of `keys` present), then the environment variable, then
// the option, so that the last one present wins.
void Layer(std::string &field, const YAML::Node &yaml, std::initializer_list<const char *> keys,
           const char *env, const char *option) {
    std::string from = "default";
    if (yaml && yaml.IsMap()) {
        for (const char *key : keys) {
            if (yaml[key] && yaml[key].IsScalar()) {
                field = yaml[key].as<std::string>();
                from = std::string("file key ") + key;
                break;
            }
        }
    }
    if (env && Env(env)) field = Env(env), from = env;
    if (option) field = option, from = "Fam_Options";
    if (recording) recording->push_back({*keys.begin(), field, from});
}

void RequireOneOf(const char *what, const std::string &value,
                  std::initializer_list<const char *> allowed) {
    std::string list;
    for (const char *a : allowed) {
        if (value == a) return;
        list += list.empty() ? "" : ", ";
        list += a;
    }
    Fail(openfam::FAM_ERR_INVALID, "option {} has value \"{}\"; expected one of {}", what, value,
         list);
}

// A yes/no setting from the YAML key `key` or the environment variable `env`.
bool LayerSwitch(const YAML::Node &yaml, const char *key, const char *env, bool fallback) {
    std::string value = fallback ? "true" : "false";
    Layer(value, yaml, {key}, env, nullptr);
    RequireOneOf(key, value, {"true", "false", "yes", "no", "1", "0"});
    return value == "true" || value == "yes" || value == "1";
}

// A count (a number, with k/M/G suffixes allowed) from the YAML key `key` or the environment
// variable `env`.
uint64_t LayerCount(const YAML::Node &yaml, const char *key, const char *env, uint64_t fallback) {
    std::string value = std::to_string(fallback);
    Layer(value, yaml, {key}, env, nullptr);
    return ParseSize(key, value);
}

// A timeout in milliseconds: at least 1, at most what an int holds (24 days).
int ParseMillis(const char *what, const std::string &text) {
    uint64_t value = ParseSize(what, text);
    if (value < 1 || value > static_cast<uint64_t>(INT32_MAX)) {
        Fail(openfam::FAM_ERR_INVALID, "{} \"{}\" is out of range (1 to {} milliseconds)", what,
             text, INT32_MAX);
    }
    return static_cast<int>(value);
}

std::string DefaultDataDir() {
    if (const char *home = Env("FAMPOOL_HOME")) return home;
    if (const char *xdg = Env("XDG_DATA_HOME")) return std::string(xdg) + "/fampool";
    if (const char *home = Env("HOME")) return std::string(home) + "/.local/share/fampool";
    return "/tmp/fampool-" + std::to_string(getuid());
}

std::vector<Config::MemoryTier> ReadMemoryTiers(const YAML::Node &list, const std::string &path) {
    auto bad = [&](const std::string &what) {
        Fail(openfam::FAM_ERR_INVALID, "configuration file {}: memory_tiers: {}", path, what);
    };
    if (!list.IsSequence()) bad("must be a list of {kind, dir, capacity, bandwidth, latency}");
    std::vector<Config::MemoryTier> tiers;
    for (const YAML::Node &node : list) {
        std::string which =
            fmt::format("tier {} (memory server {})", tiers.size() + 1, tiers.size() + 1);
        if (!node.IsMap()) bad(which + " must be a map");
        Config::MemoryTier tier;
        for (const auto &entry : node) {
            std::string key = entry.first.as<std::string>();
            if (!entry.second.IsScalar()) bad(which + ": " + key + " must be a single value");
            std::string value = entry.second.as<std::string>();
            std::string what = fmt::format("{}: memory_tiers: {}: {}", path, which, key);
            if (key == "kind") {
                tier.kind = value;
            } else if (key == "dir") {
                tier.dir = value;
            } else if (key == "capacity") {
                tier.capacity = ParseSize(what.c_str(), value);
            } else if (key == "bandwidth") {
                tier.bandwidth = ParseBandwidth(what, value);
            } else if (key == "latency") {
                tier.latency_ns = ParseLatency(what, value);
            } else {
                bad(which + ": unknown key \"" + key + "\"" +
                    DidYouMean(key, {"kind", "dir", "capacity", "bandwidth", "latency"}) +
                    " (known: kind, dir, capacity, bandwidth, latency)");
            }
        }
        if (!IsMemoryKind(tier.kind)) {
            bad(which + ": kind \"" + tier.kind + "\" is not one of " + MemoryKindList());
        }
        if (tier.dir.empty()) bad(which + " has no dir (where its heaps live)");
        tiers.push_back(tier);
    }
    return tiers;
}

YAML::Node ReadConfigFile(std::string &path) {
    if (const char *explicit_path = Env("FAMPOOL_CONFIG")) {
        path = explicit_path;
    } else if (const char *root = Env("OPENFAM_ROOT")) {
        path = std::string(root) + "/config/fam_pe_config.yaml";
        if (!std::filesystem::exists(path)) {
            path.clear();
            return YAML::Node();
        }
    } else {
        return YAML::Node();
    }
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::Exception &e) {
        Fail(openfam::FAM_ERR_INVALID, "cannot read configuration file {}: {}", path, e.what());
    }
    if (root && !root.IsNull() && !root.IsMap()) {
        // A scalar or a list: reading keys of it would throw YAML's own exception.
        Fail(openfam::FAM_ERR_INVALID, "configuration file {} is not a map of keys to values",
             path);
    }
    CheckConfigKeys(path, root);
    return root;
}

}  // namespace

namespace {

Config ReadConfig(const Fam_Options *options) {
    Fam_Options none{};
    const Fam_Options &o = options ? *options : none;
    Config c;
    recording = &c.sources;
    struct StopRecording {
        ~StopRecording() { recording = nullptr; }
    } stop;
    YAML::Node yaml = ReadConfigFile(c.config_file);

    // A configuration that names a cluster makes the memory-server model the default.
    if (yaml && yaml.IsMap() &&
        (yaml["metadata_address"] || yaml["memservers"] || yaml["Memservers"])) {
        c.model = "memory_server";
        c.libfabric_provider = "tcp";
    }
    // The launcher's own runtime: PMIx (mpirun, srun --mpi=pmix), else PMI2 (srun --mpi=pmi2
    // hands each process PMI_FD; Hydra may give PMI_PORT), else none.
    bool under_pmix = Env("PMIX_RANK") || Env("PMIX_NAMESPACE");
    bool under_pmi2 = Env("PMI_FD") || Env("PMI_PORT");
    c.runtime = under_pmix ? "PMIX" : under_pmi2 ? "PMI2" : "NONE";

    Layer(c.default_region_name, yaml, {"default_region_name"}, "FAMPOOL_DEFAULT_REGION",
          o.defaultRegionName);
    Layer(c.cis_server, yaml, {"fam_client_interface_service_address", "cis_server"},
          "FAMPOOL_CIS_SERVER", o.cisServer);
    Layer(c.grpc_port, yaml, {"grpc_port", "fam_client_interface_service_port"},
          "FAMPOOL_GRPC_PORT", o.grpcPort);
    Layer(c.libfabric_provider, yaml, {"provider", "libfabric_provider"}, "FAMPOOL_PROVIDER",
          o.libfabricProvider);
    c.libfabric_provider_set =
        o.libfabricProvider || Env("FAMPOOL_PROVIDER") ||
        (yaml && yaml.IsMap() && (yaml["provider"] || yaml["libfabric_provider"]));
    Layer(c.thread_model, yaml, {"FamThreadModel", "fam_thread_model"}, "FAMPOOL_THREAD_MODEL",
          o.famThreadModel);
    Layer(c.cis_interface_type, yaml, {"client_interface_type"}, "FAMPOOL_CIS_INTERFACE",
          o.cisInterfaceType);
    Layer(c.model, yaml, {"openfam_model"}, "FAMPOOL_MODEL", o.openFamModel);
    Layer(c.context_model, yaml, {"FamContextModel", "fam_context_model"}, "FAMPOOL_CONTEXT_MODEL",
          o.famContextModel);
    Layer(c.num_consumer, yaml, {"num_consumer"}, "FAMPOOL_NUM_CONSUMER", o.numConsumer);
    Layer(c.runtime, yaml, {"runtime"}, "FAMPOOL_RUNTIME", o.runtime);
    Layer(c.default_memory_type, yaml, {"fam_default_memory_type", "default_memory_type"},
          "FAMPOOL_DEFAULT_MEMORY_TYPE", o.fam_default_memory_type);
    // OpenFAM writes an empty default_memory_type for its default.
    if (c.default_memory_type.empty()) c.default_memory_type = "volatile";
    Layer(c.if_device, yaml, {"if_device"}, "FAMPOOL_IF_DEVICE", o.if_device);
    c.local_buf_addr = o.local_buf_addr;
    c.local_buf_size = o.local_buf_size;

    c.data_dir = DefaultDataDir();
    if (!Env("FAMPOOL_HOME") && yaml && yaml["fampool_home"]) {
        c.data_dir = yaml["fampool_home"].as<std::string>();
    }
    c.shm_dir = "/dev/shm";
    Layer(c.shm_dir, yaml, {"fampool_shm_dir"}, "FAMPOOL_SHM_DIR", nullptr);
    c.archive_dir = c.data_dir + "/backup";
    Layer(c.archive_dir, yaml, {"fampool_archive_dir", "archive_path"}, "FAMPOOL_ARCHIVE_DIR",
          nullptr);

    std::string interleave = "0";
    Layer(interleave, yaml, {"dataitem_interleave_size"}, "FAMPOOL_INTERLEAVE_SIZE", nullptr);
    c.interleave_size = ParseSize("dataitem_interleave_size", interleave);
    if (c.interleave_size & (c.interleave_size - 1)) {
        Fail(openfam::FAM_ERR_NOT_PWR_TWO,
             "interleave size {} (dataitem_interleave_size) is not a power of two",
             c.interleave_size);
    }
    std::string region_size = "1GiB";
    Layer(region_size, yaml, {"default_region_size"}, "FAMPOOL_DEFAULT_REGION_SIZE", nullptr);
    c.default_region_size = ParseSize("default_region_size", region_size);
    std::string sync = "0";
    Layer(sync, yaml, {"metadata_sync"}, "FAMPOOL_META_SYNC", nullptr);
    c.meta_sync = (sync == "1" || sync == "true" || sync == "yes");

    c.metadata_address = c.cis_server.find(':') == std::string::npos
                             ? c.cis_server + ":" + c.grpc_port
                             : c.cis_server;
    // Where the metadata service is, by the same precedence as every option: cisServer /
    // grpcPort in Fam_Options, then FAMPOOL_METADATA_ADDRESS, FAMPOOL_CIS_SERVER and
    // FAMPOOL_GRPC_PORT, then the file's metadata_address (or metadata_shards) over its
    // fam_client_interface_service_address.
    const bool named_by_caller = o.cisServer || o.grpcPort;
    const bool named_by_env = Env("FAMPOOL_CIS_SERVER") || Env("FAMPOOL_GRPC_PORT");
    const YAML::Node file_address = named_by_caller || named_by_env ? YAML::Node() : yaml;
    if (file_address && file_address.IsMap() && file_address["metadata_shards"]) {
        const YAML::Node shards = file_address["metadata_shards"];
        if (!shards.IsSequence()) {
            Fail(openfam::FAM_ERR_INVALID, "metadata_shards must be a list of host:port");
        }
        for (const YAML::Node &shard : shards) {
            c.metadata_shards.push_back(shard.as<std::string>());
        }
        if (!file_address["metadata_address"] && !c.metadata_shards.empty()) {
            c.metadata_address = c.metadata_shards.front();
        }
    }
    if (!named_by_caller) {
        Layer(c.metadata_address, file_address, {"metadata_address"}, "FAMPOOL_METADATA_ADDRESS",
              nullptr);
    }
    // A metadata address set apart from the file's shards names another service: its shards
    // are learnt from it.
    if (!c.metadata_shards.empty() && c.metadata_shards.front() != c.metadata_address) {
        c.metadata_shards.clear();
    }
    if (yaml && yaml.IsMap() && yaml["memory_tiers"]) {
        c.memory_tiers = ReadMemoryTiers(yaml["memory_tiers"], c.config_file);
    }
    std::string timeout = std::to_string(c.rpc_timeout_ms);
    Layer(timeout, yaml, {"rpc_timeout_ms"}, "FAMPOOL_RPC_TIMEOUT_MS", nullptr);
    c.rpc_timeout_ms = ParseMillis("rpc_timeout_ms", timeout);
    timeout = std::to_string(c.connect_timeout_ms);
    Layer(timeout, yaml, {"connect_timeout_ms"}, "FAMPOOL_CONNECT_TIMEOUT_MS", nullptr);
    c.connect_timeout_ms = ParseMillis("connect_timeout_ms", timeout);
    timeout = std::to_string(c.fabric_timeout_ms);
    Layer(timeout, yaml, {"fabric_timeout_ms"}, "FAMPOOL_FABRIC_TIMEOUT_MS", nullptr);
    c.fabric_timeout_ms = ParseMillis("fabric_timeout_ms", timeout);

    Layer(c.authentication, yaml, {"authentication"}, "FAMPOOL_AUTHENTICATION", nullptr);
    RequireOneOf("authentication", c.authentication, {"none", "munge"});
    Layer(c.munge_socket, yaml, {"munge_socket"}, "FAMPOOL_MUNGE_SOCKET", nullptr);
    Layer(c.sharing_group, yaml, {"sharing_group"}, "FAMPOOL_SHARING_GROUP", nullptr);
    Layer(c.tls_ca, yaml, {"tls_ca"}, "FAMPOOL_TLS_CA", nullptr);
    Layer(c.tls_server_name, yaml, {"tls_server_name"}, "FAMPOOL_TLS_SERVER_NAME", nullptr);
    Layer(c.tls_client_certificate, yaml, {"tls_client_certificate"},
          "FAMPOOL_TLS_CLIENT_CERTIFICATE", nullptr);
    Layer(c.tls_client_key, yaml, {"tls_client_key"}, "FAMPOOL_TLS_CLIENT_KEY", nullptr);
    // The cluster user's programs (which may read the servers' key) call with the servers'
    // certificate, as ClientTls does for its commands.
    if (c.tls_client_certificate.empty() && yaml && yaml.IsMap() && yaml["tls_private_key"] &&
        yaml["tls_certificate"]) {
        std::string key = yaml["tls_private_key"].as<std::string>();
        if (access(key.c_str(), R_OK) == 0) {
            c.tls_client_certificate = yaml["tls_certificate"].as<std::string>();
            c.tls_client_key = key;
        }
    }
    if (c.tls_client_certificate.empty() != c.tls_client_key.empty()) {
        Fail(openfam::FAM_ERR_INVALID,
             "tls_client_certificate and tls_client_key (FAMPOOL_TLS_CLIENT_CERTIFICATE, "
             "FAMPOOL_TLS_CLIENT_KEY) go together: set both or neither");
    }
    c.metadata_fabric = LayerSwitch(yaml, "metadata_fabric", "FAMPOOL_METADATA_FABRIC", true);
    c.memserver_fabric = LayerSwitch(yaml, "memserver_fabric", "FAMPOOL_MEMSERVER_FABRIC", true);
    c.fabric_checked_reads =
        LayerSwitch(yaml, "fabric_checked_reads", "FAMPOOL_FABRIC_CHECKED_READS", false);
    // true: heaps' descriptors from the servers; path: the files opened by name; false: RMA.
    std::string direct = "true";
    Layer(direct, yaml, {"fabric_direct"}, "FAMPOOL_FABRIC_DIRECT", nullptr);
    RequireOneOf("fabric_direct", direct, {"true", "false", "yes", "no", "1", "0", "path"});
    c.fabric_direct = direct != "false" && direct != "no" && direct != "0";
    c.fabric_direct_by_path = direct == "path";
    c.fabric_memory_side_elements =
        LayerCount(yaml, "fabric_memory_side_elements", "FAMPOOL_FABRIC_MEMORY_SIDE_ELEMENTS",
                   c.fabric_memory_side_elements);
    c.aggregation = LayerSwitch(yaml, "aggregation", "FAMPOOL_AGGREGATION", true);
    c.aggregation_threshold = LayerCount(yaml, "aggregation_threshold",
                                         "FAMPOOL_AGGREGATION_THRESHOLD", c.aggregation_threshold);
    c.atl_queue_size =
        LayerCount(yaml, "ATL_queue_size", "FAMPOOL_ATL_QUEUE_SIZE", c.atl_queue_size);
    c.atl_data_size = LayerCount(yaml, "ATL_data_size", "FAMPOOL_ATL_DATA_SIZE", c.atl_data_size);
    if (c.atl_data_size < 4096) {
        Fail(openfam::FAM_ERR_INVALID, "ATL_data_size {} is below 4096 bytes", c.atl_data_size);
    }
    if (c.atl_data_size > (32u << 20)) {
        Fail(openfam::FAM_ERR_INVALID,
             "ATL_data_size {} is above 32 MiB (a request must fit in a 64 MiB gRPC message)",
             c.atl_data_size);
    }
    // Counted per memory server and multiplied by the servers of an item: kept far from
    // overflow.
    constexpr uint64_t kMostElements = uint64_t{1} << 32;
    if (c.aggregation_threshold > kMostElements || c.atl_queue_size > kMostElements) {
        Fail(openfam::FAM_ERR_INVALID,
             "aggregation_threshold {} or ATL_queue_size {} is above 2^32 elements",
             c.aggregation_threshold, c.atl_queue_size);
    }
    if (c.atl_queue_size == 0) {
        Fail(openfam::FAM_ERR_INVALID, "ATL_queue_size is 0: a queue must hold an element");
    }

    RequireOneOf("openFamModel", c.model, {"shared_memory", "memory_server"});
    RequireOneOf("runtime", c.runtime, {"NONE", "PMIX", "PMI2"});
    // OpenFAM's own fam_pe_config.yaml says "single" (or "multiple").
    if (c.thread_model == "single") c.thread_model = "FAM_THREAD_SERIALIZE";
    if (c.thread_model == "multiple") c.thread_model = "FAM_THREAD_MULTIPLE";
    RequireOneOf("famThreadModel", c.thread_model,
                 {"FAM_THREAD_SERIALIZE", "FAM_THREAD_MULTIPLE", "single", "multiple"});
    RequireOneOf("famContextModel", c.context_model, {"FAM_CONTEXT_DEFAULT", "FAM_CONTEXT_REGION"});
    RequireOneOf("cisInterfaceType", c.cis_interface_type, {"rpc", "direct"});
    RequireOneOf("fam_default_memory_type", c.default_memory_type, {"volatile", "persistent"});
    if (c.default_region_name.empty()) {
        Fail(openfam::FAM_ERR_INVALID, "option defaultRegionName is empty");
    }
    return c;
}

}  // namespace

Config LoadConfig(const Fam_Options *options) {
    WarnMisspeltVariables();
    std::string path = "(the configuration)";
    if (const char *explicit_path = Env("FAMPOOL_CONFIG")) {
        path = explicit_path;
    } else if (const char *root = Env("OPENFAM_ROOT")) {
        path = std::string(root) + "/config/fam_pe_config.yaml";
    }
    return ReadingConfigFile(path, [&] { return ReadConfig(options); });
}

uint64_t ParseSize(const char *what, const std::string &text) {
    char *end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text.c_str(), &end, 0);
    if (errno != 0 || end == text.c_str()) {
        Fail(openfam::FAM_ERR_INVALID, "{} \"{}\" is not a number", what, text);
    }
    std::string suffix(end);
    if (suffix == "k" || suffix == "K" || suffix == "KiB")
        value <<= 10;
    else if (suffix == "m" || suffix == "M" || suffix == "MiB")
        value <<= 20;
    else if (suffix == "g" || suffix == "G" || suffix == "GiB")
        value <<= 30;
    else if (suffix == "t" || suffix == "T" || suffix == "TiB")
        value <<= 40;
    else if (!suffix.empty())
        Fail(openfam::FAM_ERR_INVALID, "{} \"{}\" has an unknown unit", what, text);
    return value;
}

}  // namespace fampool
