// Topology files of `fampool up --emulate` (docs/cli.md): reading and checking them, and the
// keys each memory server's topology entry adds to the cluster file.
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <string>

#include "cli.h"
#include "common/cluster_config.h"
#include "common/config.h"
#include "common/error.h"
#include "common/memory_kind.h"
#include "emulate.h"

namespace fampool::cli {
namespace {

Link ReadLink(const YAML::Node &node, const std::string &where, const std::string &path,
              Link link) {
    if (!node) return link;
    if (!node.IsMap()) Die(1, "topology file {}: {} must be a map (rate, delay)", path, where);
    for (const auto &entry : node) {
        std::string key = entry.first.as<std::string>();
        std::string value = entry.second.IsScalar() ? entry.second.Scalar() : "";
        std::string what = fmt::format("topology file {}: {}.{}", path, where, key);
        if (key == "rate") {
            link.rate_bps = ParseRate(value, what);
        } else if (key == "delay") {
            link.delay_us = ParseDelay(value, what);
        } else if (key != "memory_type" && key != "failure_domain" && key != "capacity" &&
                   key != "spare" && key != "kind") {
            Die(1, "topology file {}: {}: unknown key \"{}\" (known: rate, delay)", path, where,
                key);
        }
    }
    return link;
}

TopologyServer ReadServer(const YAML::Node &node, size_t i, const std::string &path,
                          const Link &link) {
    std::string where = fmt::format("memservers[{}]", i);
    TopologyServer server;
    server.link = ReadLink(node, where, path, link);
    for (const auto &entry : node) {
        std::string key = entry.first.as<std::string>();
        std::string value = entry.second.IsScalar() ? entry.second.Scalar() : "";
        if (key == "memory_type") {
            if (value != "volatile" && value != "persistent") {
                Die(1, "topology file {}: {}.memory_type \"{}\" is not volatile or persistent",
                    path, where, value);
            }
            server.memory_type = value;
        } else if (key == "failure_domain") {
            server.failure_domain = value;
        } else if (key == "capacity") {
            try {
                server.capacity = ParseSize("capacity", value);
            } catch (const Failure &failure) {
                Die(1, "topology file {}: {}: {} (e.g. 4GiB, 512MiB)", path, where,
                    failure.fam_error_msg());
            }
        } else if (key == "kind") {
            if (!IsMemoryKind(value)) {
                Die(1, "topology file {}: {}.kind \"{}\" is not one of {}", path, where, value,
                    MemoryKindList());
            }
            server.kind = value;
        } else if (key == "spare") {
            if (value != "true" && value != "false") {
                Die(1, "topology file {}: {}.spare must be true or false", path, where);
            }
            server.spare = value == "true";
        } else if (key != "rate" && key != "delay") {
            Die(1,
                "topology file {}: {}: unknown key \"{}\" (known: rate, delay, memory_type, "
                "failure_domain, capacity, spare, kind)",
                path, where, key);
        }
    }
    return server;
}

}  // namespace

uint64_t ParseRate(const std::string &text, const std::string &what) {
    if (text == "unlimited" || text == "0") return 0;
    size_t digits = 0;
    while (digits < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
        ++digits;
    }
    std::string unit = text.substr(digits);
    for (char &c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double scale = unit == "bit"    ? 1
                   : unit == "kbit" ? 1e3
                   : unit == "mbit" ? 1e6
                   : unit == "gbit" ? 1e9
                                    : 0;
    double number = 0;
    try {
        number = digits ? std::stod(text.substr(0, digits)) : 0;
    } catch (const std::exception &) {
        number = 0;
    }
    uint64_t rate = static_cast<uint64_t>(number * scale);
    if (scale == 0 || rate < 8000 || number * scale > 1e12) {
        Die(1,
            "{}: \"{}\" is not a link rate (a number with bit, kbit, mbit or gbit, from 8kbit "
            "to 1000gbit, e.g. 10gbit or 250mbit; or unlimited)",
            what, text);
    }
    return rate;
}

uint64_t ParseDelay(const std::string &text, const std::string &what) {
    if (text == "0") return 0;
    size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    std::string unit = text.substr(digits);
    uint64_t scale = unit == "us" ? 1 : unit == "ms" ? 1000 : 0;
    if (digits == 0 || digits > 7 || scale == 0) {
        Die(1, "{}: \"{}\" is not a delay (e.g. 50us or 2ms; 0 for none)", what, text);
    }
    return std::stoull(text.substr(0, digits)) * scale;
}

std::string RateText(uint64_t rate_bps) {
    if (rate_bps == 0) return "unlimited";
    if (rate_bps % 1000000000 == 0) return fmt::format("{}gbit", rate_bps / 1000000000);
    if (rate_bps % 1000000 == 0) return fmt::format("{}mbit", rate_bps / 1000000);
    if (rate_bps % 1000 == 0) return fmt::format("{}kbit", rate_bps / 1000);
    return fmt::format("{}bit", rate_bps);
}

Topology LoadTopology(const std::string &path) {
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::Exception &e) {
        Die(1, "cannot read topology file {}: {}", path, e.what());
    }
    if (!root.IsMap()) Die(1, "topology file {}: expected a map of keys at the top", path);
    Topology topology;
    topology.path = path;
    try {
        Link link = ReadLink(root["link"], "link", path, Link{});
        topology.metadata_link = ReadLink(root["metadata"], "metadata", path, link);
        topology.client_link = ReadLink(root["client"], "client", path, link);
        for (const auto &entry : root) {
            std::string key = entry.first.as<std::string>();
            const YAML::Node &value = entry.second;
            if (key == "mtu") {
                topology.mtu = value.as<unsigned>();
            } else if (key == "metadata_shards") {
                topology.metadata_shards = value.as<unsigned>();
            } else if (key == "clients") {
                topology.clients = value.as<unsigned>();
            } else if (key == "memservers") {
                if (value.IsScalar()) {
                    TopologyServer server;
                    server.link = link;
                    topology.memservers.assign(value.as<unsigned>(), server);
                } else if (value.IsSequence()) {
                    for (size_t i = 0; i < value.size(); ++i) {
                        topology.memservers.push_back(ReadServer(value[i], i, path, link));
                    }
                } else {
                    Die(1, "topology file {}: memservers must be a count or a list", path);
                }
            } else if (key != "link" && key != "metadata" && key != "client") {
                Die(1,
                    "topology file {}: unknown key \"{}\" (known: mtu, link, metadata, client, "
                    "metadata_shards, clients, memservers)",
                    path, key);
            }
        }
    } catch (const YAML::Exception &e) {
        Die(1, "topology file {}: a value of the wrong kind: {}", path, e.what());
    }
    if (topology.memservers.empty() || topology.memservers.size() > 99) {
        Die(1, "topology file {}: memservers must give 1 to 99 memory servers", path);
    }
    if (topology.clients < 1 || topology.clients > 200) {
        Die(1, "topology file {}: clients must be 1 to 200", path);
    }
    if (topology.metadata_shards < 1 || topology.metadata_shards > 64) {
        Die(1, "topology file {}: metadata_shards must be 1 to 64", path);
    }
    if (topology.mtu < 1280 || topology.mtu > 65535) {
        Die(1, "topology file {}: mtu {} is outside 1280 to 65535", path, topology.mtu);
    }
    return topology;
}

std::string TopologyServerKeys(const TopologyServer &server) {
    std::string text;
    if (!server.memory_type.empty()) {
        text += fmt::format("    memory_type: {}\n", server.memory_type);
    }
    if (!server.failure_domain.empty()) {
        text += fmt::format("    failure_domain: {}\n", YamlQuoted(server.failure_domain));
    }
    if (server.capacity) text += fmt::format("    capacity: {}\n", server.capacity);
    if (server.spare) text += "    spare: true\n";
    if (!server.kind.empty()) text += fmt::format("    kind: {}\n", server.kind);
    // What clients see of the server is its link: its rate, and a round trip of twice its
    // delay (the server measures its memory for what the link leaves unset).
    const Link &link = server.link;
    if (link.rate_bps) text += fmt::format("    bandwidth: {}B/s\n", link.rate_bps / 8);
    if (link.delay_us) text += fmt::format("    latency: {}us\n", 2 * link.delay_us);
    return text;
}

}  // namespace fampool::cli
