#include "common/openfam_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "common/config_keys.h"
#include "common/did_you_mean.h"
#include "common/error.h"

namespace fampool {
namespace {

constexpr const char *kClientInterfaceFile = "fam_client_interface_config.yaml";
constexpr const char *kMemoryServerFile = "fam_memoryserver_config.yaml";
constexpr const char *kMetadataFile = "fam_metadata_config.yaml";

// OpenFAM's defaults where its files leave a key out.
constexpr const char *kDefaultServiceAddress = "127.0.0.1:8787";
constexpr const char *kDefaultMetadataPath = "/dev/shm/fam_metadata";

// One of OpenFAM's files: its path and top-level map, the keys it may hold checked.
struct YamlFile {
    std::string path;
    YAML::Node root;
};

[[noreturn]] void Bad(const std::string &path, const std::string &what) {
    Fail(openfam::FAM_ERR_INVALID, "OpenFAM configuration file {}: {}", path, what);
}

YamlFile Open(const std::string &dir, const char *name, const std::set<std::string> &keys,
              bool required) {
    YamlFile file{dir + "/" + name, YAML::Node()};
    std::error_code ec;
    if (!std::filesystem::exists(file.path, ec)) {
        if (required) {
            Fail(openfam::FAM_ERR_INVALID, "{} has no {} (OpenFAM's memory server file)", dir,
                 name);
        }
        return file;
    }
    try {
        file.root = YAML::LoadFile(file.path);
    } catch (const YAML::Exception &e) {
        Bad(file.path, e.what());
    }
    if (file.root.IsNull()) return file;  // every line a comment
    if (!file.root.IsMap()) Bad(file.path, "expected a map of keys at the top");
    for (const auto &entry : file.root) {
        std::string key = entry.first.as<std::string>();
        if (!keys.count(key)) Bad(file.path, "unknown key \"" + key + "\"" + DidYouMean(key, keys));
        CheckOpenFamValue(file.path, key, entry.second);
    }
    return file;
}

template <typename T>
bool Get(const YamlFile &file, const char *key, T *out) {
    if (!file.root || !file.root.IsMap() || !file.root[key]) return false;
    try {
        *out = file.root[key].as<T>();
    } catch (const YAML::Exception &) {
        Bad(file.path, std::string("key \"") + key + "\" has a value of the wrong kind");
    }
    return true;
}

// "id:host:port" entries of memsrv_list or metadata_list, by id ("host:port").
std::map<uint64_t, std::string> ServiceList(const YamlFile &file, const char *key) {
    std::map<uint64_t, std::string> list;
    if (!file.root || !file.root.IsMap() || !file.root[key]) return list;
    for (const YAML::Node &entry : file.root[key]) {
        std::string text = entry.IsScalar() ? entry.Scalar() : std::string();
        size_t first = text.find(':'), last = text.rfind(':');
        uint64_t id = 0;
        const char *end = text.data() + (first == std::string::npos ? 0 : first);
        bool number = first != std::string::npos && first > 0 &&
                      std::from_chars(text.data(), end, id).ptr == end;
        if (!number || last == first || last == first + 1 || last + 1 == text.size()) {
            Bad(file.path, std::string(key) + " entry \"" +
                               (entry.IsScalar() ? text : std::string("(a map)")) +
                               "\" is not id:host:port (write it as one string: - 0:host:8788)");
        }
        if (!list.emplace(id, text.substr(first + 1)).second) {
            Bad(file.path, std::string(key) + " names id " + std::to_string(id) + " twice");
        }
    }
    return list;
}

}  // namespace

namespace {

ClusterConfig ReadOpenFamFiles(const std::string &dir) {
    YamlFile client = Open(dir, kClientInterfaceFile,
                           {"memsrv_interface_type", "metadata_interface_type", "rpc_interface",
                            "memsrv_list", "metadata_list", "provider", "rpc_framework_type"},
                           false);
    YamlFile memory = Open(dir, kMemoryServerFile,
                           {"provider", "libfabric_port", "delayed_free_threads", "ATL_threads",
                            "ATL_queue_size", "ATL_data_size", "resource_release",
                            "fam_backup_path", "rpc_framework_type", "Memservers"},
                           true);
    YamlFile metadata = Open(dir, kMetadataFile,
                             {"metadata_manager", "metadata_path", "enable_region_spanning",
                              "region_span_size_per_memoryserver", "dataitem_interleave_size",
                              "provider", "rpc_framework_type"},
                             false);

    ClusterConfig config;
    config.path = dir;
    config.provider = "sockets";  // OpenFAM's default provider
    config.metadata_address = kDefaultServiceAddress;
    config.metadata_dir = kDefaultMetadataPath;
    std::string provider_from;  // the file that named the provider
    for (const YamlFile *file : {&client, &memory, &metadata}) {
        std::string provider;
        if (!Get(*file, "provider", &provider)) continue;
        if (!provider_from.empty() && provider != config.provider) {
            Bad(file->path, "provider \"" + provider + "\" differs from \"" + config.provider +
                                "\" of " + provider_from);
        }
        config.provider = provider;
        provider_from = file->path;
    }
    Get(client, "rpc_interface", &config.metadata_address);
    Get(memory, "fam_backup_path", &config.archive_dir);
    Get(memory, "delayed_free_threads", &config.delayed_free_threads);
    Get(metadata, "metadata_path", &config.metadata_dir);
    Get(metadata, "enable_region_spanning", &config.region_spanning);
    uint64_t span_size = 0;
    if (Get(metadata, "region_span_size_per_memoryserver", &span_size)) {
        config.span_size = span_size;
    }
    Get(metadata, "dataitem_interleave_size", &config.interleave_size);

    std::string default_port;
    Get(memory, "libfabric_port", &default_port);
    YAML::Node servers =
        memory.root && memory.root.IsMap() ? memory.root["Memservers"] : YAML::Node();
    if (!servers || !servers.IsMap() || servers.size() == 0) {
        Bad(memory.path,
            "no Memservers map (id: {memory_type, fam_path, rpc_interface, "
            "libfabric_port, if_device})");
    }
    std::map<uint64_t, MemoryServerConfig> by_id;
    for (MemoryServerConfig &server : ReadMemoryServerMap(servers, memory.path)) {
        std::string which = "memory server " + std::to_string(server.id);
        // OpenFAM's own reader requires these; fampool's cluster file does not.
        if (server.memory_type.empty()) {
            Bad(memory.path, which + " has no memory_type (volatile or persistent)");
        }
        if (server.heap_dir.empty()) Bad(memory.path, which + " has no fam_path");
        if (server.fabric_port.empty()) server.fabric_port = default_port;
        by_id.emplace(server.id, std::move(server));
    }
    // The client interface's list of memory servers names the same addresses (where it calls
    // them); it may supply one a server's entry leaves out.
    for (const auto &[id, address] : ServiceList(client, "memsrv_list")) {
        auto server = by_id.find(id);
        if (server == by_id.end()) {
            Bad(client.path, "memsrv_list names memory server " + std::to_string(id) + ", which " +
                                 memory.path + " does not have");
        }
        if (server->second.rpc_address.empty()) server->second.rpc_address = address;
        if (server->second.rpc_address != address) {
            Bad(client.path, "memsrv_list gives memory server " + std::to_string(id) + " at " +
                                 address + ", " + memory.path + " at " +
                                 server->second.rpc_address);
        }
    }
    if (ServiceList(client, "metadata_list").size() > 1) {
        Bad(client.path,
            "metadata_list names several metadata services; fampool takes OpenFAM's files "
            "with one, at rpc_interface (several are shards, listed in metadata_shards of a "
            "fampool cluster file)");
    }
    for (auto &[id, server] : by_id) config.memservers.push_back(server);
    CheckClusterConfig(config);
    return config;
}

}  // namespace

ClusterConfig LoadOpenFamClusterConfig(const std::string &dir) {
    return ReadingConfigFile(dir, [&] { return ReadOpenFamFiles(dir); });
}

}  // namespace fampool
