#include "common/cluster_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "common/config.h"
#include "common/config_keys.h"
#include "common/did_you_mean.h"
#include "common/error.h"
#include "common/memory_kind.h"
#include "common/network.h"
#include "common/openfam_config.h"
#include "common/shards.h"

namespace fampool {
namespace {

const std::set<std::string> kServerKeys = {
    "id",       "rpc_interface", "rpc_address", "libfabric_port", "fabric_host", "fam_path",
    "heap_dir", "shm_path",      "shm_dir",     "memory_type",    "if_device",   "failure_domain",
    "spare",    "capacity",      "kind",        "bandwidth",      "latency",     "metrics_port"};

[[noreturn]] void Bad(const std::string &path, const std::string &what) {
    Fail(openfam::FAM_ERR_INVALID, "configuration file {}: {}", path, what);
}

template <typename T>
T Read(const YAML::Node &node, const std::string &key, const std::string &path) {
    try {
        return node.as<T>();
    } catch (const YAML::Exception &) {
        Bad(path, "key \"" + key + "\" has a value of the wrong kind");
    }
}

}  // namespace

const std::set<std::string> &MemoryServerKeyTable() { return kServerKeys; }

MemoryServerConfig ReadMemoryServer(const YAML::Node &node, uint64_t id, const std::string &path) {
    std::string which = "memory server " + std::to_string(id);
    if (!node.IsMap()) Bad(path, which + " must be a map of keys");
    MemoryServerConfig server;
    server.id = id;
    bool shm_given = false;
    for (const auto &entry : node) {
        std::string key = entry.first.as<std::string>();
        if (!kServerKeys.count(key)) {
            Bad(path,
                which + ": unknown key \"" + key + "\"" + DidYouMean(key, kServerKeys) +
                    " (known: id, rpc_interface, "
                    "libfabric_port, fabric_host, if_device, fam_path, shm_path, memory_type, "
                    "failure_domain, spare, capacity, kind, bandwidth, latency, metrics_port)");
        }
        const YAML::Node &value = entry.second;
        if (!value.IsScalar()) Bad(path, which + ": " + key + " must be a single value");
        if (key == "id") server.id = Read<uint64_t>(value, key, path);
        if (key == "rpc_interface" || key == "rpc_address") {
            server.rpc_address = Read<std::string>(value, key, path);
        }
        if (key == "libfabric_port") server.fabric_port = Read<std::string>(value, key, path);
        if (key == "fabric_host") server.fabric_host = Read<std::string>(value, key, path);
        if (key == "if_device") server.if_device = Read<std::string>(value, key, path);
        if (key == "fam_path" || key == "heap_dir") {
            server.heap_dir = Read<std::string>(value, key, path);
        }
        if (key == "shm_path" || key == "shm_dir") {
            server.shm_dir = Read<std::string>(value, key, path);
            shm_given = true;
        }
        if (key == "memory_type") server.memory_type = Read<std::string>(value, key, path);
        if (key == "failure_domain") server.failure_domain = Read<std::string>(value, key, path);
        if (key == "spare") server.spare = Read<bool>(value, key, path);
        if (key == "capacity") {
            server.capacity = ParseSize("capacity", Read<std::string>(value, key, path));
        }
        if (key == "kind") server.kind = Read<std::string>(value, key, path);
        if (key == "metrics_port") server.metrics_port = Read<int>(value, key, path);
        if (key == "bandwidth") {
            server.bandwidth = ParseBandwidth(path + ": " + which + ": bandwidth",
                                              Read<std::string>(value, key, path));
        }
        if (key == "latency") {
            server.latency_ns = ParseLatency(path + ": " + which + ": latency",
                                             Read<std::string>(value, key, path));
        }
    }
    // A server that holds volatile regions only keeps them in fam_path, as OpenFAM's does
    // (its files put /dev/shm/... there).
    if (server.memory_type == "volatile" && !shm_given) server.shm_dir = server.heap_dir;
    return server;
}

std::vector<MemoryServerConfig> ReadMemoryServerMap(const YAML::Node &map,
                                                    const std::string &path) {
    if (!map.IsMap()) Bad(path, "\"Memservers\" must be a map from id to server");
    std::map<uint64_t, MemoryServerConfig> by_id;
    for (const auto &entry : map) {
        uint64_t id = Read<uint64_t>(entry.first, "Memservers", path);
        if (!by_id.emplace(id, ReadMemoryServer(entry.second, id, path)).second) {
            Bad(path, "memory server " + std::to_string(id) + " is listed twice");
        }
    }
    std::vector<MemoryServerConfig> servers;
    for (auto &[id, server] : by_id) servers.push_back(std::move(server));
    return servers;
}

namespace {

ClusterConfig ReadClusterFile(const std::string &path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return LoadOpenFamClusterConfig(path);
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::Exception &e) {
        Fail(openfam::FAM_ERR_INVALID, "cannot read cluster file {}: {}", path, e.what());
    }
    if (!root.IsMap()) Bad(path, "expected a map of keys at the top");
    ClusterConfig config;
    config.path = path;
    for (const auto &entry : root) {
        std::string key = entry.first.as<std::string>();
        if (!IsConfigKey(key)) {
            Bad(path, "unknown key \"" + key + "\"" + DidYouMean(key, ConfigKeyTable()));
        }
        const YAML::Node &value = entry.second;
        CheckOpenFamValue(path, key, value);
        if (key == "provider") config.provider = Read<std::string>(value, key, path);
        if (key == "metadata_address" || key == "fam_client_interface_service_address") {
            config.metadata_address = Read<std::string>(value, key, path);
        }
        if (key == "metadata_shards") {
            if (!value.IsSequence()) Bad(path, "\"metadata_shards\" must be a list of host:port");
            for (size_t k = 0; k < value.size(); ++k) {
                config.metadata_shards.push_back(Read<std::string>(value[k], key, path));
            }
            if (!root["metadata_address"] && !config.metadata_shards.empty()) {
                config.metadata_address = config.metadata_shards.front();
            }
        }
        if (key == "metadata_dir" || key == "metadata_path") {
            config.metadata_dir = Read<std::string>(value, key, path);
        }
        if (key == "archive_dir" || key == "archive_path" || key == "fam_backup_path") {
            config.archive_dir = Read<std::string>(value, key, path);
        }
        if (key == "placement") config.placement = Read<std::string>(value, key, path);
        if (key == "progress") config.progress = Read<std::string>(value, key, path);
        if (key == "region_span") config.region_span = Read<uint64_t>(value, key, path);
        if (key == "enable_region_spanning") {
            config.region_spanning = Read<bool>(value, key, path);
        }
        if (key == "region_span_size_per_memoryserver") {
            config.span_size = Read<uint64_t>(value, key, path);
        }
        if (key == "dataitem_interleave_size") {
            config.interleave_size = Read<uint64_t>(value, key, path);
        }
        if (key == "rpc_timeout_ms") config.rpc_timeout_ms = Read<int>(value, key, path);
        if (key == "fabric_timeout_ms") config.fabric_timeout_ms = Read<int>(value, key, path);
        if (key == "metadata_fabric") config.metadata_fabric = Read<bool>(value, key, path);
        if (key == "memserver_fabric") config.memserver_fabric = Read<bool>(value, key, path);
        if (key == "metadata_fabric_port") {
            config.metadata_fabric_port = Read<std::string>(value, key, path);
        }
        if (key == "metadata_metrics_port") {
            config.metadata_metrics_port = Read<int>(value, key, path);
        }
        if (key == "metrics_per_region") {
            config.metrics_per_region = Read<bool>(value, key, path);
        }
        if (key == "delayed_free_threads") {
            config.delayed_free_threads = Read<int>(value, key, path);
        }
        if (key == "authentication") config.authentication = Read<std::string>(value, key, path);
        if (key == "munge_socket") config.munge_socket = Read<std::string>(value, key, path);
        if (key == "sharing_group") config.sharing_group = Read<std::string>(value, key, path);
        if (key == "quotas") config.quotas = ReadQuotas(value, path);
        if (key == "tls_ca") config.tls_ca = Read<std::string>(value, key, path);
        if (key == "tls_certificate") config.tls_certificate = Read<std::string>(value, key, path);
        if (key == "tls_private_key") config.tls_private_key = Read<std::string>(value, key, path);
        if (key == "tls_client_certificates") {
            config.tls_client_certificates = Read<std::string>(value, key, path);
        }
        if (key == "tls_server_name") config.tls_server_name = Read<std::string>(value, key, path);
        if (key == "memservers") {
            if (!value.IsSequence()) Bad(path, "\"memservers\" must be a list");
            for (size_t i = 0; i < value.size(); ++i) {
                config.memservers.push_back(ReadMemoryServer(value[i], i, path));
            }
        }
        if (key == "Memservers") {  // OpenFAM's form: a map from id to server, in any order
            config.memservers = ReadMemoryServerMap(value, path);
        }
    }
    CheckClusterConfig(config);
    return config;
}

}  // namespace

TlsSettings ServerTls(const ClusterConfig &config) {
    TlsSettings tls;
    tls.ca = config.tls_ca;
    tls.certificate = config.tls_certificate;
    tls.private_key = config.tls_private_key;
    tls.require_client_certificates = config.tls_client_certificates == "require";
    tls.server_name = config.tls_server_name;
    return tls;
}

TlsSettings ClientTls(const ClusterConfig &config) {
    TlsSettings tls;
    tls.ca = config.tls_ca;
    tls.server_name = config.tls_server_name;
    if (const char *certificate = std::getenv("FAMPOOL_TLS_CLIENT_CERTIFICATE")) {
        tls.certificate = certificate;
    }
    if (const char *key = std::getenv("FAMPOOL_TLS_CLIENT_KEY")) tls.private_key = key;
    // The cluster user (who may read the servers' key) calls with the servers' certificate.
    if (tls.certificate.empty() && !config.tls_private_key.empty() &&
        access(config.tls_private_key.c_str(), R_OK) == 0) {
        tls.certificate = config.tls_certificate;
        tls.private_key = config.tls_private_key;
    }
    return tls;
}

std::vector<std::string> MetadataShards(const ClusterConfig &config) {
    if (config.metadata_shards.empty()) return {config.metadata_address};
    return config.metadata_shards;
}

std::string ShardStoreDir(const ClusterConfig &config, uint32_t shard) {
    if (MetadataShards(config).size() == 1) return config.metadata_dir;
    return config.metadata_dir + "/shard" + std::to_string(shard);
}

std::string ShardFabricPort(const ClusterConfig &config, uint32_t shard) {
    const std::string &port = config.metadata_fabric_port;
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
        port.size() > 5) {
        return shard == 0 ? port : std::string();
    }
    return std::to_string(std::stoul(port) + shard);
}

ClusterConfig LoadClusterConfig(const std::string &path) {
    WarnMisspeltVariables();
    return ReadingConfigFile(path, [&] { return ReadClusterFile(path); });
}

namespace {

// metadata_shards: at most kMostShards, each host:port once, shard 0 at metadata_address.
void CheckShards(const ClusterConfig &config) {
    const std::vector<std::string> &shards = config.metadata_shards;
    if (shards.empty()) return;
    if (shards.size() > kMostShards) {
        Bad(config.path, "metadata_shards lists " + std::to_string(shards.size()) +
                             " shards; at most " + std::to_string(kMostShards) + " are allowed");
    }
    for (size_t k = 0; k < shards.size(); ++k) {
        if (PortOf(shards[k]) == 0) {
            Bad(config.path, "metadata_shards entry " + std::to_string(k) + " \"" + shards[k] +
                                 "\" is not host:port");
        }
        for (size_t j = 0; j < k; ++j) {
            if (shards[j] == shards[k]) {
                Bad(config.path, "metadata_shards lists " + shards[k] + " twice (shards " +
                                     std::to_string(j) + " and " + std::to_string(k) + ")");
            }
        }
    }
    if (config.metadata_address != shards.front()) {
        Bad(config.path, "metadata_address " + config.metadata_address +
                             " is not the first of metadata_shards (" + shards.front() +
                             "): shard 0 is the metadata address");
    }
}

}  // namespace

void CheckClusterConfig(const ClusterConfig &config) {
    const std::string &path = config.path;
    if (config.progress != "blocking" && config.progress != "busy") {
        Bad(path, "progress \"" + config.progress + "\" is not blocking or busy");
    }
    if (config.placement != "hash" && config.placement != "least-used") {
        Bad(path, "placement \"" + config.placement + "\" is not hash or least-used");
    }
    if (config.tls_client_certificates != "none" && config.tls_client_certificates != "require") {
        Bad(path, "tls_client_certificates \"" + config.tls_client_certificates +
                      "\" is not none or require");
    }
    if (config.tls_ca.empty() &&
        (!config.tls_certificate.empty() || !config.tls_private_key.empty() ||
         config.tls_client_certificates != "none")) {
        Bad(path,
            "tls_certificate, tls_private_key and tls_client_certificates need tls_ca "
            "(the CA that signed the certificates): TLS is on only with it");
    }
    if (config.authentication != "none" && config.authentication != "munge") {
        Bad(path, "authentication \"" + config.authentication + "\" is not munge or none");
    }
    if (config.rpc_timeout_ms < 1 || config.fabric_timeout_ms < 1) {
        Bad(path, "rpc_timeout_ms and fabric_timeout_ms must be at least 1");
    }
    auto bad_port = [](int port) { return port < 0 || port > 65535; };
    int shard_count = static_cast<int>(std::max<size_t>(config.metadata_shards.size(), 1));
    if (bad_port(config.metadata_metrics_port) ||
        (config.metadata_metrics_port && config.metadata_metrics_port + shard_count - 1 > 65535)) {
        Bad(path, "metadata_metrics_port " + std::to_string(config.metadata_metrics_port) +
                      " is not a port for each of the " + std::to_string(shard_count) +
                      " shard(s) (shard k takes it + k; at most 65535; 0: no metrics endpoint)");
    }
    for (const MemoryServerConfig &server : config.memservers) {
        if (bad_port(server.metrics_port)) {
            Bad(path, "memory server " + std::to_string(server.id) + ": metrics_port " +
                          std::to_string(server.metrics_port) +
                          " is not a port (0 to 65535; 0: no metrics endpoint)");
        }
    }
    if (config.delayed_free_threads < 0) {
        Bad(path,
            "delayed_free_threads " + std::to_string(config.delayed_free_threads) + " is negative");
    }
    CheckShards(config);
    uint64_t i = config.interleave_size;
    if (i && ((i & (i - 1)) || i < 64)) {
        Fail(openfam::FAM_ERR_NOT_PWR_TWO,
             "cluster file {}: dataitem_interleave_size {} must be a power of two of at least 64",
             path, i);
    }
    for (size_t k = 0; k < config.memservers.size(); ++k) {
        const MemoryServerConfig &server = config.memservers[k];
        std::string which = "memory server " + std::to_string(server.id);
        if (server.id != k) {
            Bad(path, "memory server ids must be 0, 1, ... in order (found " +
                          std::to_string(server.id) + " at position " + std::to_string(k) + ")");
        }
        if (server.rpc_address.empty()) Bad(path, which + " has no rpc_interface (host:port)");
        if (server.fabric_port.empty()) Bad(path, which + " has no libfabric_port");
        if (server.heap_dir.empty()) {
            Bad(path, which + " has no fam_path (persistent heap directory)");
        }
        if (!server.memory_type.empty() && server.memory_type != "volatile" &&
            server.memory_type != "persistent") {
            Bad(path, which + ": memory_type \"" + server.memory_type +
                          "\" is not volatile or persistent");
        }
        if (!server.kind.empty() && !IsMemoryKind(server.kind)) {
            Bad(path, which + ": kind \"" + server.kind + "\" is not one of " + MemoryKindList());
        }
    }
}

std::string YamlQuoted(const std::string &text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string ClusterFileText(const ClusterConfig &c) {
    std::string text = fmt::format(
        "openfam_model: memory_server\nprovider: {}\nmetadata_address: {}\nmetadata_dir: {}\n"
        "placement: {}\nprogress: {}\nregion_span: {}\nenable_region_spanning: {}\n"
        "dataitem_interleave_size: {}\nrpc_timeout_ms: {}\nfabric_timeout_ms: {}\n"
        "metadata_fabric: {}\nmemserver_fabric: {}\ndelayed_free_threads: {}\nauthentication: {}\n",
        c.provider, YamlQuoted(c.metadata_address), YamlQuoted(c.metadata_dir), c.placement,
        c.progress, c.region_span, c.region_spanning, c.interleave_size, c.rpc_timeout_ms,
        c.fabric_timeout_ms, c.metadata_fabric, c.memserver_fabric, c.delayed_free_threads,
        c.authentication);
    if (!c.metadata_shards.empty()) {
        text += "metadata_shards:\n";
        for (const std::string &shard : c.metadata_shards) {
            text += fmt::format("  - {}\n", YamlQuoted(shard));
        }
    }
    if (!c.munge_socket.empty()) {
        text += fmt::format("munge_socket: {}\n", YamlQuoted(c.munge_socket));
    }
    if (!c.sharing_group.empty()) {
        text += fmt::format("sharing_group: {}\n", YamlQuoted(c.sharing_group));
    }
    if (!c.tls_ca.empty()) {
        text += fmt::format("tls_ca: {}\ntls_client_certificates: {}\n", YamlQuoted(c.tls_ca),
                            c.tls_client_certificates);
        if (!c.tls_certificate.empty()) {
            text += fmt::format("tls_certificate: {}\n", YamlQuoted(c.tls_certificate));
        }
        if (!c.tls_private_key.empty()) {
            text += fmt::format("tls_private_key: {}\n", YamlQuoted(c.tls_private_key));
        }
        if (!c.tls_server_name.empty()) {
            text += fmt::format("tls_server_name: {}\n", YamlQuoted(c.tls_server_name));
        }
    }
    if (!c.archive_dir.empty()) text += fmt::format("archive_dir: {}\n", YamlQuoted(c.archive_dir));
    if (c.span_size) text += fmt::format("region_span_size_per_memoryserver: {}\n", *c.span_size);
    if (!c.metadata_fabric_port.empty()) {
        text += fmt::format("metadata_fabric_port: {}\n", YamlQuoted(c.metadata_fabric_port));
    }
    if (c.metadata_metrics_port) {
        text += fmt::format("metadata_metrics_port: {}\n", c.metadata_metrics_port);
    }
    if (c.metrics_per_region) text += "metrics_per_region: true\n";
    text += "memservers:\n";
    for (const MemoryServerConfig &m : c.memservers) {
        text += fmt::format(
            "  - id: {}\n    rpc_interface: {}\n    libfabric_port: {}\n"
            "    fam_path: {}\n    shm_path: {}\n",
            m.id, YamlQuoted(m.rpc_address), YamlQuoted(m.fabric_port), YamlQuoted(m.heap_dir),
            YamlQuoted(m.shm_dir));
        if (!m.fabric_host.empty()) {
            text += fmt::format("    fabric_host: {}\n", YamlQuoted(m.fabric_host));
        }
        if (!m.if_device.empty())
            text += fmt::format("    if_device: {}\n", YamlQuoted(m.if_device));
        if (!m.memory_type.empty()) text += fmt::format("    memory_type: {}\n", m.memory_type);
        if (!m.failure_domain.empty()) {
            text += fmt::format("    failure_domain: {}\n", YamlQuoted(m.failure_domain));
        }
        if (m.spare) text += "    spare: true\n";
        if (m.capacity) text += fmt::format("    capacity: {}\n", m.capacity);
        if (!m.kind.empty()) text += fmt::format("    kind: {}\n", m.kind);
        if (m.bandwidth) text += fmt::format("    bandwidth: {}B/s\n", m.bandwidth);
        if (m.latency_ns) text += fmt::format("    latency: {}ns\n", m.latency_ns);
        if (m.metrics_port) text += fmt::format("    metrics_port: {}\n", m.metrics_port);
    }
    return text;
}

}  // namespace fampool
