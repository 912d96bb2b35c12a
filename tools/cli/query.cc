// `fampool status`, `fampool ls` and `fampool stat`: what the metadata service knows about the
// cluster, its regions and their data items. ls and stat ask as the real uid and gid of the
// caller, so they show what that user may see.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "cli.h"
#include "common/memory_kind.h"
#include "meta/client/metadata_service.h"
#include "meta/client/sharded_metadata.h"
#include "meta/intent_placement.h"
#include "pool.h"
#include "rpc/convert.h"

namespace fampool::cli {
namespace {

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
    for (size_t m = 0; m < MemberCount(region); ++m) {
        lost |= StateOf(region, m) == kLost;
        rebuilding |= StateOf(region, m) == kRebuilding;
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
                    LostIntact(region, m)
                        ? "lost, the newest copy of its bytes (taken back as it is when its "
                          "server is back with its heap)"
                    : state == kLost ? "lost (read from the other members; `fampool rebuild`)"
                                     : "rebuilding");
    }
}

// The regions table of status and ls. `volatile_lost`: the embedded store was last prepared in
// an earlier boot, so its volatile regions' heaps are gone.
void RegionTable(const rpc::ClusterStatus &status, bool exact, bool volatile_lost) {
    Table table({"NAME", "ID", "SIZE", "USED", "ITEMS", "TYPE", "REDUNDANCY", "PERM", "UID", "GID",
                 "SERVERS"});
    for (const rpc::RegionUsage &usage : status.regions()) {
        const rpc::Region &r = usage.region();
        RegionInfo region = FromProto(r);
        uint64_t used = usage.used_bytes();
        std::string type = MemoryType(region.attributes);
        if (volatile_lost && type == "volatile") type = "volatile (lost at reboot)";
        table.Add({Shown(r.name()), std::to_string(r.id()), Bytes(r.size(), exact),
                   Bytes(used, exact), std::to_string(usage.items()), type, Redundancy(region),
                   Mode(r.perm()), std::to_string(r.uid()), std::to_string(r.gid()),
                   ServersOf(r.memory_servers())});
    }
    if (table.size() == 0) {
        std::printf("  (no regions)\n");
    } else {
        table.Print();
    }
}

// A memory server's failure domain as the cluster file says, or "-".
std::string DomainOf(const Pool &pool, uint64_t id) {
    const std::vector<MemoryServerConfig> &servers = pool.model().cluster.memservers;
    return id < servers.size() && !servers[id].failure_domain.empty() ? servers[id].failure_domain
                                                                      : "-";
}

// "3 regions of 1.0 GiB, 4.0 MiB used by 2 items".
std::string RegionTotals(const rpc::ClusterStatus &status, bool exact) {
    uint64_t size = 0, used = 0, items = 0;
    for (const rpc::RegionUsage &usage : status.regions()) {
        size += usage.region().size();
        used += usage.used_bytes();
        items += usage.items();
    }
    return fmt::format("{} regions of {}, {} used by {} items", status.regions_size(),
                       Bytes(size, exact), Bytes(used, exact), items);
}

// Status of the embedded model: where its store and heaps are, its memory servers (the default
// heaps and each memory tier of the configuration) and its regions.
int EmbeddedStatus(Pool &pool, bool exact) {
    const Config &config = pool.model().config;
    rpc::ClusterStatus status =
        pool.Ask("embedded store " + pool.store_dir(), [&] { return pool.Status(); });
    std::printf("embedded model: store %s, configuration %s\n", pool.store_dir().c_str(),
                config.config_file.empty() ? "(none: built-in defaults and FAMPOOL_* variables)"
                                           : config.config_file.c_str());
    std::printf("heaps: volatile in %s, persistent in %s/heaps; backups in %s\n",
                config.shm_dir.c_str(), config.data_dir.c_str(), config.archive_dir.c_str());
    if (!pool.store_exists()) {
        std::printf(
            "no store yet: the first program to call fam_initialize with this data "
            "directory makes it\n");
    }
    std::printf("\nmemory servers (in every program's process)\n");
    Table servers({"ID", "MEMORY", "KIND", "EXTENT BYTES", "CAPACITY", "BANDWIDTH", "LATENCY"});
    uint64_t extents = 0;
    for (const rpc::ServerState &server : status.servers()) {
        extents += server.extent_bytes();
        servers.Add({std::to_string(server.id()), server.address(), server.kind(),
                     Bytes(server.extent_bytes(), exact),
                     server.capacity() ? Bytes(server.capacity(), exact) : "-",
                     BandwidthText(server.bandwidth()), LatencyText(server.latency_ns())});
    }
    servers.Print();
    std::printf("\nregions\n");
    RegionTable(status, exact, pool.volatile_regions_lost());
    std::printf("\ntotal: %d memory servers, %s in extents; %s\n", status.servers_size(),
                Bytes(extents, exact).c_str(), RegionTotals(status, exact).c_str());
    if (pool.volatile_regions_lost()) {
        std::printf(
            "note: the machine rebooted since a program last opened the store: the "
            "volatile regions' heaps are gone, and the next program releases them\n");
    }
    return 0;
}

}  // namespace

int Status(const QueryOptions &options) {
    Pool pool("status", options.cluster);
    if (pool.embedded()) return EmbeddedStatus(pool, options.exact_bytes);
    const ClusterConfig &cluster = pool.model().cluster;
    std::vector<rpc::ClusterStatus> shards =
        pool.Ask("cluster status", [&] { return pool.client().StatusOfShards(); });
    rpc::ClusterStatus status = MergeStatus(shards);
    const bool exact = options.exact_bytes;

    std::printf("cluster %s: metadata service %s, provider %s\n", cluster.path.c_str(),
                cluster.metadata_address.c_str(), cluster.provider.c_str());
    if (shards.size() > 1) {
        std::printf("\nmetadata shards (regions partitioned by name)\n");
        Table table({"SHARD", "ADDRESS", "REGIONS", "FABRIC ENDPOINT", "FABRIC CALLS"});
        for (size_t k = 0; k < shards.size(); ++k) {
            const rpc::ClusterStatus &shard = shards[k];
            table.Add({std::to_string(k), pool.client().shard(k).address(),
                       std::to_string(shard.regions_size()),
                       shard.metadata_fabric_address().empty() ? "gRPC only"
                                                               : shard.metadata_fabric_name(),
                       std::to_string(shard.metadata_fabric_calls())});
        }
        table.Print();
    } else if (status.metadata_fabric_address().empty()) {
        std::printf("metadata calls: gRPC only\n");
    } else {
        std::printf(
            "metadata calls: lookups and allocations over the fabric at %s (%llu "
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
                     server.lost()    ? "dead"
                     : server.spare() ? "spare"
                                      : "in use",
                     server.provider().empty() ? "-" : server.provider(),
                     Bytes(server.extent_bytes(), exact),
                     server.capacity() ? Bytes(server.capacity(), exact) : "-",
                     server.kind().empty() ? "-" : server.kind(), BandwidthText(server.bandwidth()),
                     LatencyText(server.latency_ns()), DomainOf(pool, server.id())});
    }
    servers.Print();

    std::printf("\nregions\n");
    RegionTable(status, exact, false);
    int degraded = 0;
    for (const rpc::RegionUsage &usage : status.regions()) {
        RegionInfo region = FromProto(usage.region());
        if (!Degraded(region)) continue;
        if (degraded++ == 0) std::printf("\ndegraded regions\n");
        MemberLines(region);
    }
    std::printf("\ntotal: %d memory servers (%llu reachable), %s in extents; %s\n",
                status.servers_size(), static_cast<unsigned long long>(reachable),
                Bytes(extents, exact).c_str(), RegionTotals(status, exact).c_str());
    const std::string &path = cluster.path;
    const std::string dir = RunDirOfClusterFile(path);
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
    Pool pool("ls", options.cluster);
    const bool exact = options.exact_bytes;
    if (options.region.empty()) {
        rpc::ClusterStatus status = pool.Ask("regions", [&] { return pool.Status(); });
        RegionTable(status, exact, pool.volatile_regions_lost());
        return 0;
    }
    const std::string object = RegionObject(options.region);
    RegionInfo region = pool.Ask(
        object, [&] { return pool.metadata().LookupRegion(options.region, pool.caller()); });
    std::vector<ItemInfo> items = pool.Ask(object, [&] { return pool.ListItems(region.id); });
    Table table({"NAME", "OFFSET", "SIZE", "PERM", "UID", "GID"});
    for (const ItemInfo &item : items) {
        table.Add({item.name.empty() ? "(unnamed)" : Shown(item.name),
                   fmt::format("0x{:x}", item.offset), Bytes(item.size, exact), Mode(item.perm),
                   std::to_string(item.uid), std::to_string(item.gid)});
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

// The memory servers of a region with their addresses from the cluster file (embedded: the
// default heaps or a memory tier).
std::string ServerField(const Pool &pool, const std::vector<uint64_t> &ids) {
    std::vector<std::string> parts;
    for (uint64_t id : ids) parts.push_back(fmt::format("{} ({})", id, pool.ServerName(id)));
    return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

void PrintRegion(const Pool &pool, const RegionInfo &region, const rpc::ClusterStatus *status) {
    std::printf("region %s\n", Quote(region.name).c_str());
    Field("id:", std::to_string(region.id));
    Field("size:", SizeField(region.size));
    if (status) {
        for (const rpc::RegionUsage &usage : status->regions()) {
            if (usage.region().id() != region.id) continue;
            Field("used:", SizeField(usage.used_bytes()));
            Field("free:", SizeField(usage.free_bytes()));
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
    Field("memory servers:", ServerField(pool, region.memory_servers));
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
    std::string placement = region.placement.empty() ? PlainPlacement(region) : region.placement;
    if (pool.embedded() && region.placement.empty()) {
        placement =
            "no intent: the default heaps (memory server 0), where the embedded model "
            "puts every region created without one";
    }
    Field("placement:", placement);
}

void PrintItem(const Pool &pool, const ItemInfo &item) {
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
    Field("memory servers:", ServerField(pool, region.memory_servers));
    // A non-interleaved item is reached on its own server only; the other entries are empty.
    bool granted = false;
    for (const ServerAccess &access : item.access) {
        if (access.fabric_address.empty()) continue;
        granted = true;
        // The key itself is a capability (docs/security.md): it is not shown.
        Field("fabric access:",
              fmt::format("server {}: {} key granted, endpoint {}", access.server_id,
                          item.can_write ? "read-write" : "read-only", Hex(access.fabric_address)));
    }
    if (pool.embedded()) {
        Field("fabric access:", "none (embedded model: loads and stores on the mapped heap)");
    } else if (!granted) {
        Field("fabric access:", "none granted");
    }
}

}  // namespace

int Stat(const QueryOptions &options) {
    Pool pool("stat", options.cluster);
    if (options.item.empty()) {
        RegionInfo region = pool.Ask(RegionObject(options.region), [&] {
            return pool.metadata().LookupRegion(options.region, pool.caller());
        });
        rpc::ClusterStatus status = pool.Ask("cluster status", [&] { return pool.Status(); });
        PrintRegion(pool, region, &status);
        return 0;
    }
    ItemInfo item = pool.Ask(ItemObject(options.item, options.region), [&] {
        return pool.metadata().LookupItem(options.item, options.region, pool.caller());
    });
    PrintItem(pool, item);
    return 0;
}

int Rebuild(const QueryOptions &options) {
    // The embedded model keeps no redundant regions: rebuild is a cluster's command only.
    Pool pool("rebuild", options.cluster, /*cluster_only=*/true);
    std::printf(
        "rebuilding the lost members of %s on live memory servers (clients keep "
        "working meanwhile)...\n",
        options.region.empty() ? "every degraded region"
                               : ("region " + Quote(options.region)).c_str());
    std::fflush(stdout);
    // A rebuild copies a member's whole extent: no deadline shorter than an hour.
    ShardedMetadata client(MetadataShards(pool.model().cluster), std::chrono::hours(1));
    rpc::RebuildReply reply = pool.Ask(
        options.region.empty() ? std::string("rebuild") : "region " + Quote(options.region),
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
        if (member.taken_back()) {
            std::printf(
                "region %s member %u: taken back as it was on memory server %llu (no "
                "write reached the other members after it was lost)\n",
                Quote(member.region()).c_str(), member.member(),
                static_cast<unsigned long long>(member.to_server()));
            continue;
        }
        std::printf(
            "region %s member %u: rebuilt on memory server %llu (was on %llu), %s in "
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
