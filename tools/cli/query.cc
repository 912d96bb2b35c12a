// `fampool status`, `fampool ls` and `fampool stat`: what the metadata service knows about the
// cluster, its regions and their data items. ls and stat ask as the real uid and gid of the
// caller, so they show what that user may see.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "cli.h"
#include "emulate.h"
#include "common/error.h"
#include "common/memory_kind.h"
#include "meta/intent_placement.h"
#include "meta/sharded_metadata.h"
#include "rpc/convert.h"

namespace fampool::cli {
namespace {

// The cluster a query talks to.
struct Session {
    std::string command;
    ClusterConfig cluster;
    std::unique_ptr<ShardedMetadata> client;
    Caller caller{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid())};

    Session(const std::string &name, const ClusterChoice &choice) : command(name) {
        cluster = LoadCluster(command, ClusterFileOf(choice));
        // An emulated fabric's servers are reached from its switch namespace.
        if (std::optional<Emulation> emulation = EmulationOf(cluster.path)) {
            EnterSwitch(*emulation, command);
        }
        // Status asks every memory server in turn, each bounded by rpc_timeout_ms: hung
        // memory servers must not make the metadata service look unreachable.
        auto timeout = std::chrono::milliseconds(cluster.rpc_timeout_ms) *
                       static_cast<int64_t>(cluster.memservers.size() + 1);
        client = std::make_unique<ShardedMetadata>(MetadataShards(cluster), timeout);
        // ls and stat are made as the user munged vouches for; status needs no session.
        if (cluster.authentication == "munge") client->UseMunge(cluster.munge_socket);
    }

    // Runs one call; an unreachable service ends the command with kExitUnreachable, any other
    // error with 1, its message behind the object asked about (unless it names it already).
    template <typename Body>
    auto Ask(const std::string &object, Body &&body) -> decltype(body()) {
        try {
            return body();
        } catch (const Fam_Exception &e) {
            if (e.fam_error() == openfam::FAM_ERR_RPC) {
                std::string start = fmt::format("fampool up --config {}", ShellQuote(cluster.path));
                if (cluster.path.ends_with("/cluster.yaml")) {
                    start =
                        fmt::format("fampool up --run-dir {}",
                                    ShellQuote(cluster.path.substr(0, cluster.path.size() - 13)));
                }
                Die(kExitUnreachable,
                    "fampool {}: the metadata service of {} does not answer: {}. Is the cluster "
                    "up? (start it with `{}`)",
                    command, cluster.path, e.fam_error_msg(), start);
            }
            std::string message = e.fam_error_msg();
            size_t quote = object.find('"');
            if (quote != std::string::npos &&
                message.find(object.substr(quote)) != std::string::npos) {
                Die(1, "fampool {}: {}", command, message);
            }
            Die(1, "fampool {}: {}: {}", command, object, message);
        }
    }
};

std::string MemoryType(const Fam_Region_Attributes &a) {
    return a.memoryType == PERSISTENT ? "persistent"
           : a.memoryType == VOLATILE ? "volatile"
                                      : "default";
}

std::string Interleave(const Fam_Region_Attributes &a) {
    return a.interleaveEnable == ENABLE    ? "enabled"
           : a.interleaveEnable == DISABLE ? "disabled"
                                           : "default";
}

std::string Redundancy(const Fam_Region_Attributes &a) {
    switch (a.redundancyLevel) {
        case NONE:
            return "none";
        case RAID1:
            return "raid1";
        case RAID5:
            return "raid5";
        default:
            return "default";
    }
}

std::string PermissionLevel(const Fam_Region_Attributes &a) {
    return a.permissionLevel == DATAITEM ? "data item"
           : a.permissionLevel == REGION ? "region"
                                         : "default";
}

std::string Mode(uint32_t perm) { return fmt::format("{:04o}", perm); }

std::string Servers(const std::vector<uint64_t> &ids) {
    return fmt::format("{}", fmt::join(ids, ","));
}
template <typename Ids>
std::string ServersOf(const Ids &ids) {
    return Servers(std::vector<uint64_t>(ids.begin(), ids.end()));
}

std::string Quote(const std::string &name) { return "\"" + name + "\""; }

std::string Hex(const std::string &bytes) {
    std::string out;
    for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
    return out;
}

// "NONE", "RAID1", "RAID5", with the health of a redundant region: "RAID1 degraded" while a
// member is lost, "RAID1 rebuilding" while one is being rebuilt.
std::string Redundancy(const RegionInfo &region) {
    const char *level = region.attributes.redundancyLevel == RAID1   ? "RAID1"
                        : region.attributes.redundancyLevel == RAID5 ? "RAID5"
                                                                      : "NONE";
    bool lost = false, rebuilding = false;
    for (uint8_t state : region.member_state) {
        lost |= state == kLost;
        rebuilding |= state == kRebuilding;
    }
    return std::string(level) + (lost ? " degraded" : rebuilding ? " rebuilding" : "");
}

// Each member of a redundant region not healthy, one line each.
void MemberLines(const RegionInfo &region) {
    for (size_t m = 0; m < MemberCount(region); ++m) {
        uint8_t state = StateOf(region, m);
        if (state == kHealthy) continue;
        std::printf("  region %s member %zu (%s) on memory server %llu: %s\n",
                    Quote(region.name).c_str(), m,
                    region.attributes.redundancyLevel == RAID5
                        ? "stripe column"
                        : (m < region.memory_servers.size() ? "extent" : "copy"),
                    static_cast<unsigned long long>(MemberServer(region, m)),
                    state == kLost ? "lost (read from the other members; `fampool rebuild`)"
                                   : "rebuilding");
    }
}

void RegionTable(const rpc::ClusterStatus &status, bool exact) {
    Table table({"NAME", "ID", "SIZE", "USED", "ITEMS", "TYPE", "REDUNDANCY", "PERM", "UID",
                 "GID", "SERVERS"});
    for (const rpc::RegionUsage &usage : status.regions()) {
        const rpc::Region &r = usage.region();
        RegionInfo region = FromProto(r);
        uint64_t used = r.size() >= usage.free_bytes() ? r.size() - usage.free_bytes() : 0;
        table.Add({r.name(), std::to_string(r.id()), Bytes(r.size(), exact), Bytes(used, exact),
                   std::to_string(usage.items()), MemoryType(region.attributes),
                   Redundancy(region), Mode(r.perm()),
                   std::to_string(r.uid()), std::to_string(r.gid()),
                   ServersOf(r.memory_servers())});
    }
    if (table.size() == 0) {
        std::printf("  (no regions)\n");
    } else {
        table.Print();
    }
}

// A memory server's failure domain as the cluster file says, or "-".
std::string DomainOf(const Session &session, uint64_t id) {
    const std::vector<MemoryServerConfig> &servers = session.cluster.memservers;
    return id < servers.size() && !servers[id].failure_domain.empty() ? servers[id].failure_domain
                                                                      : "-";
}

}  // namespace

int Status(const QueryOptions &options) {
    Session session("status", options.cluster);
    std::vector<rpc::ClusterStatus> shards =
        session.Ask("cluster status", [&] { return session.client->StatusOfShards(); });
    rpc::ClusterStatus status = MergeStatus(shards);
    const bool exact = options.exact_bytes;

    std::printf("cluster %s: metadata service %s, provider %s\n",
                session.cluster.path.c_str(), session.cluster.metadata_address.c_str(),
                session.cluster.provider.c_str());
    if (shards.size() > 1) {
        std::printf("\nmetadata shards (regions partitioned by name)\n");
        Table table({"SHARD", "ADDRESS", "REGIONS", "FABRIC ENDPOINT", "FABRIC CALLS"});
        for (size_t k = 0; k < shards.size(); ++k) {
            const rpc::ClusterStatus &shard = shards[k];
            table.Add({std::to_string(k), session.client->shard(k).address(),
                       std::to_string(shard.regions_size()),
                       shard.metadata_fabric_address().empty() ? "gRPC only"
                                                               : shard.metadata_fabric_name(),
                       std::to_string(shard.metadata_fabric_calls())});
        }
        table.Print();
    } else if (status.metadata_fabric_address().empty()) {
        std::printf("metadata calls: gRPC only\n");
    } else {
        std::printf("metadata calls: lookups and allocations over the fabric at %s (%llu "
                    "answered), the rest over gRPC\n",
                    status.metadata_fabric_name().c_str(),
                    static_cast<unsigned long long>(status.metadata_fabric_calls()));
    }
    std::printf("\nmemory servers\n");
    Table servers({"ID", "ADDRESS", "REACHABLE", "STATE", "PROVIDER", "EXTENT BYTES", "CAPACITY",
                   "KIND", "BANDWIDTH", "LATENCY", "DOMAIN"});
    uint64_t reachable = 0, extents = 0;
    for (const rpc::ServerState &server : status.servers()) {
        reachable += server.reachable();
        extents += server.extent_bytes();
        servers.Add({std::to_string(server.id()), server.address(),
                     server.reachable() ? "yes" : "NO",
                     server.lost() ? "dead" : server.spare() ? "spare" : "in use",
                     server.provider().empty() ? "-" : server.provider(),
                     Bytes(server.extent_bytes(), exact),
                     server.capacity() ? Bytes(server.capacity(), exact) : "-",
                     server.kind().empty() ? "-" : server.kind(), BandwidthText(server.bandwidth()),
                     LatencyText(server.latency_ns()), DomainOf(session, server.id())});
    }
    servers.Print();

    std::printf("\nregions\n");
    RegionTable(status, exact);
    int degraded = 0;
    for (const rpc::RegionUsage &usage : status.regions()) {
        RegionInfo region = FromProto(usage.region());
        if (!Degraded(region)) continue;
        if (degraded++ == 0) std::printf("\ndegraded regions\n");
        MemberLines(region);
    }
    uint64_t size = 0, used = 0, items = 0;
    for (const rpc::RegionUsage &usage : status.regions()) {
        size += usage.region().size();
        used += usage.region().size() >= usage.free_bytes()
                    ? usage.region().size() - usage.free_bytes()
                    : 0;
        items += usage.items();
    }
    std::printf(
        "\ntotal: %d memory servers (%llu reachable), %s in extents; %d regions of %s, "
        "%s used by %llu items\n",
        status.servers_size(), static_cast<unsigned long long>(reachable),
        Bytes(extents, exact).c_str(), status.regions_size(), Bytes(size, exact).c_str(),
        Bytes(used, exact).c_str(), static_cast<unsigned long long>(items));
    const std::string &path = session.cluster.path;
    const std::string dir = path.ends_with("/cluster.yaml") ? path.substr(0, path.size() - 13) : "";
    for (const rpc::ServerState &server : status.servers()) {
        if (server.reachable()) continue;
        std::string log = fmt::format("{}/logs/memory{}.log", dir, server.id());
        std::printf("warning: memory server %llu (%s) is unreachable%s\n",
                    static_cast<unsigned long long>(server.id()), server.address().c_str(),
                    !dir.empty() && std::filesystem::exists(log)
                        ? fmt::format("; its log {} may tell why", log).c_str()
                        : "");
    }
    return 0;
}

int List(const QueryOptions &options) {
    Session session("ls", options.cluster);
    const bool exact = options.exact_bytes;
    if (options.region.empty()) {
        rpc::ClusterStatus status =
            session.Ask("regions", [&] { return session.client->Status(); });
        RegionTable(status, exact);
        return 0;
    }
    const std::string object = "region " + Quote(options.region);
    RegionInfo region = session.Ask(
        object, [&] { return session.client->LookupRegion(options.region, session.caller); });
    std::vector<ItemInfo> items =
        session.Ask(object, [&] { return session.client->ListItems(region.id, session.caller); });
    Table table({"NAME", "OFFSET", "SIZE", "PERM", "UID", "GID"});
    for (const ItemInfo &item : items) {
        table.Add({item.name.empty() ? "(unnamed)" : item.name, fmt::format("0x{:x}", item.offset),
                   Bytes(item.size, exact), Mode(item.perm), std::to_string(item.uid),
                   std::to_string(item.gid)});
    }
    if (table.size() == 0) {
        std::printf("  (region %s holds no data items)\n", Quote(region.name).c_str());
    } else {
        table.Print();
    }
    return 0;
}

namespace {

void Field(const char *name, const std::string &value) {
    std::printf("  %-18s %s\n", name, value.c_str());
}

std::string SizeField(uint64_t bytes) {
    return bytes < 1024 ? fmt::format("{} bytes", bytes)
                        : fmt::format("{} bytes ({})", bytes, Bytes(bytes));
}

// The memory servers of a region with their addresses from the cluster file.
std::string ServerField(const ClusterConfig &cluster, const std::vector<uint64_t> &ids) {
    std::vector<std::string> parts;
    for (uint64_t id : ids) {
        std::string address =
            id < cluster.memservers.size() ? cluster.memservers[id].rpc_address : "?";
        parts.push_back(fmt::format("{} ({})", id, address));
    }
    return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

void PrintRegion(const Session &session, const RegionInfo &region,
                 const rpc::ClusterStatus *status) {
    std::printf("region %s\n", Quote(region.name).c_str());
    Field("id:", std::to_string(region.id));
    Field("size:", SizeField(region.size));
    if (status) {
        for (const rpc::RegionUsage &usage : status->regions()) {
            if (usage.region().id() != region.id) continue;
            uint64_t free = usage.free_bytes();
            Field("used:", SizeField(region.size >= free ? region.size - free : 0));
            Field("free:", SizeField(free));
            Field("data items:", std::to_string(usage.items()));
        }
    }
    Field("permissions:", Mode(region.perm));
    Field("owner:", fmt::format("uid {}, gid {}", region.uid, region.gid));
    Field("memory type:", MemoryType(region.attributes));
    Field("interleave:", Interleave(region.attributes));
    Field("interleave size:",
          region.interleave_size ? SizeField(region.interleave_size) : "0 (not interleaved)");
    Field("redundancy:", Redundancy(region.attributes));
    Field("permission level:", PermissionLevel(region.attributes));
    Field("memory servers:", ServerField(session.cluster, region.memory_servers));
    if (!region.intent.empty()) {
        const RegionIntent &intent = region.intent;
        std::string constraints;
        if (!intent.kind.empty()) constraints += "kind " + intent.kind;
        if (!intent.servers.empty()) {
            constraints += fmt::format("{}servers {}", constraints.empty() ? "" : ", ",
                                       fmt::join(intent.servers, ","));
        }
        if (!intent.failure_domain.empty()) {
            constraints += (constraints.empty() ? "" : ", ") + ("domain " + intent.failure_domain);
        }
        Field("intent:", fmt::format("hints {}; constraints {}", HintNames(intent.hints),
                                     constraints.empty() ? "none" : constraints));
    }
    Field("placement:", region.placement.empty() ? PlainPlacement(region) : region.placement);
}

void PrintItem(const Session &session, const ItemInfo &item) {
    const RegionInfo &region = item.region;
    std::printf("data item %s in region %s\n",
                Quote(item.name.empty() ? "(unnamed)" : item.name).c_str(),
                Quote(region.name).c_str());
    Field("region id:", std::to_string(item.region_id));
    bool interleaved = region.interleave_size && region.memory_servers.size() > 1;
    if (interleaved) {
        Field("offset:",
              fmt::format("0x{:x} (virtual offset in the interleaved region)", item.offset));
    } else {
        uint64_t index = ServerIndexOf(item.offset);
        std::string server = index < region.memory_servers.size()
                                 ? std::to_string(region.memory_servers[index])
                                 : "?";
        Field("offset:", fmt::format("0x{:x} (memory server {}, offset {} in its extent)",
                                     item.offset, server, PhysicalOf(item.offset)));
    }
    Field("size:", SizeField(item.size));
    Field("permissions:", Mode(item.perm));
    Field("owner:", fmt::format("uid {}, gid {}", item.uid, item.gid));
    Field("you may read:", item.can_read ? "yes" : "no");
    Field("you may write:", item.can_write ? "yes" : "no");
    Field("permission level:", PermissionLevel(region.attributes));
    Field("memory type:", MemoryType(region.attributes));
    Field("interleave size:",
          region.interleave_size ? SizeField(region.interleave_size) : "0 (not interleaved)");
    Field("memory servers:", ServerField(session.cluster, region.memory_servers));
    // A non-interleaved item is reached on its own server only; the other entries are empty.
    bool granted = false;
    for (const ServerAccess &access : item.access) {
        if (access.fabric_address.empty()) continue;
        granted = true;
        Field("fabric access:",
              fmt::format("server {}: key 0x{:x}, base 0x{:x}, endpoint {}", access.server_id,
                          access.key, access.base, Hex(access.fabric_address)));
    }
    if (!granted) Field("fabric access:", "none granted");
}

}  // namespace

int Stat(const QueryOptions &options) {
    Session session("stat", options.cluster);
    if (options.item.empty()) {
        RegionInfo region = session.Ask("region " + Quote(options.region), [&] {
            return session.client->LookupRegion(options.region, session.caller);
        });
        rpc::ClusterStatus status =
            session.Ask("cluster status", [&] { return session.client->Status(); });
        PrintRegion(session, region, &status);
        return 0;
    }
    ItemInfo item = session.Ask(
        fmt::format("data item {} in region {}", Quote(options.item), Quote(options.region)),
        [&] { return session.client->LookupItem(options.item, options.region, session.caller); });
    PrintItem(session, item);
    return 0;
}

int Rebuild(const QueryOptions &options) {
    Session session("rebuild", options.cluster);
    std::printf("rebuilding the lost members of %s on live memory servers (clients keep "
                "working meanwhile)...\n",
                options.region.empty() ? "every degraded region"
                                       : ("region " + Quote(options.region)).c_str());
    std::fflush(stdout);
    // A rebuild copies a member's whole extent: no deadline shorter than an hour.
    ShardedMetadata client(MetadataShards(session.cluster), std::chrono::hours(1));
    rpc::RebuildReply reply =
        session.Ask(options.region.empty() ? std::string("rebuild")
                                           : "region " + Quote(options.region),
                    [&] { return client.Rebuild(options.region, std::chrono::hours(1)); });
    int failed = 0;
    for (const rpc::RebuiltMember &member : reply.members()) {
        if (!member.error().empty()) {
            ++failed;
            std::printf("region %s member %u (was on memory server %llu): NOT rebuilt: %s\n",
                        Quote(member.region()).c_str(), member.member(),
                        static_cast<unsigned long long>(member.from_server()),
                        member.error().c_str());
            continue;
        }
        std::printf("region %s member %u: rebuilt on memory server %llu (was on %llu), %s in "
                    "%.2f s (%.0f MB/s)\n",
                    Quote(member.region()).c_str(), member.member(),
                    static_cast<unsigned long long>(member.to_server()),
                    static_cast<unsigned long long>(member.from_server()),
                    Bytes(member.bytes(), options.exact_bytes).c_str(), member.seconds(),
                    member.seconds() > 0 ? member.bytes() / member.seconds() / 1e6 : 0.0);
    }
    if (reply.members_size() == 0) std::printf("no member to rebuild: every region is healthy\n");
    return failed ? 1 : 0;
}

}  // namespace fampool::cli
