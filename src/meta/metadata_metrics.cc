// MetadataRpcService::CollectMetrics (metadata_rpc_service.h): a shard's gauges, read at each
// scrape from what the service keeps anyway (the heartbeats' health, the store's records). No
// call to a memory server is made for them; the regions' figures (a read of every region's
// records) are read at most every kRegionsEvery, whatever the scrapes.
#include "common/metrics.h"
#include "meta/metadata_rpc_service.h"

namespace fampool {
namespace {

const char *RedundancyName(const RegionInfo &region) {
    if (region.attributes.redundancyLevel == RAID1) return "RAID1";
    if (region.attributes.redundancyLevel == RAID5) return "RAID5";
    return "NONE";
}

const char *MemberStateName(uint8_t state) {
    return state == kLost ? "lost" : state == kRebuilding ? "rebuilding" : "healthy";
}

// How old the regions' figures may be: a scrape loop (or many `fampool top`) must not make the
// shard read its whole store again and again.
constexpr std::chrono::seconds kRegionsEvery{5};

// The regions as last read, and when.
struct RegionsRead {
    std::vector<MetadataStore::RegionUsage> regions;
    std::vector<uint64_t> usage;  // bytes placed on each server (MetadataStore::ServerUsage)
    std::chrono::steady_clock::time_point at;
    bool done = false;
};

// The time this process started, in seconds since the Unix epoch.
double StartTime() {
    static const double started =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return started;
}

}  // namespace

metrics::Counter &MetadataRpcService::RebuiltMembers() {
    static metrics::Counter &counter = metrics::Process().Counter(
        "fampool_rebuilt_members_total", "Members of redundant regions rebuilt by this shard");
    return counter;
}

metrics::Counter &MetadataRpcService::RebuiltBytes() {
    static metrics::Counter &counter = metrics::Process().Counter(
        "fampool_rebuilt_bytes_total", "Bytes of the members of redundant regions rebuilt");
    return counter;
}

std::shared_ptr<void> MetadataRpcService::CollectMetrics(std::chrono::milliseconds usage_report,
                                                         bool per_region) {
    // Clients report to shard 0 only: every shard would otherwise count them again.
    if (shard_ == 0) usage_report_ms_ = static_cast<uint32_t>(usage_report.count());
    RebuiltMembers(), RebuiltBytes(), StartTime();  // at 0 from the start, not the first rebuild
    auto read = std::make_shared<RegionsRead>();    // scrapes run one at a time (Registry)
    return metrics::Process().AddCollector([this, per_region, read](metrics::Sink &sink) {
        const metrics::Labels shard = {{"shard", std::to_string(shard_)}};
        auto with = [&](metrics::Labels more) {
            metrics::Labels labels = shard;
            labels.insert(labels.end(), more.begin(), more.end());
            return labels;
        };
        auto now = std::chrono::steady_clock::now();
        if (!read->done || now - read->at > kRegionsEvery) {
            read->regions = store_->ListRegions();
            read->usage = store_->ServerUsage();
            read->at = now;
            read->done = true;
        }
        const std::vector<uint64_t> &usage = read->usage;
        std::vector<MemoryProfile> profiles = store_->Profiles();
        for (MemoryServerClient *server : servers_) {
            uint64_t id = server->id();
            metrics::Labels labels = with({{"server", std::to_string(id)}});
            bool dead, heard;
            double age = 0;
            int missed = 0;
            {
                std::lock_guard<std::mutex> lock(health_mutex_);
                dead = dead_.count(id) != 0;
                auto last = last_heartbeat_.find(id);
                heard = last != last_heartbeat_.end();
                if (heard) age = std::chrono::duration<double>(now - last->second).count();
                auto it = missed_.find(id);
                missed = it == missed_.end() ? 0 : it->second;
            }
            sink.Gauge("fampool_memserver_up",
                       "1 while the memory server answers this shard's heartbeats; 0 once it "
                       "is declared dead or has not answered yet",
                       labels, !dead && heard ? 1 : 0);
            if (heard) {
                sink.Gauge("fampool_memserver_heartbeat_age_seconds",
                           "Seconds since the memory server last answered a heartbeat", labels,
                           age);
            }
            sink.Gauge("fampool_memserver_heartbeats_missed",
                       "Heartbeats missed in a row (refusals weigh more than timeouts; "
                       "docs/robustness.md)",
                       labels, missed);
            sink.Gauge("fampool_memserver_placed_bytes",
                       "Bytes of extents this shard's regions placed on the memory server", labels,
                       id < usage.size() ? static_cast<double>(usage[id]) : 0);
            if (id < profiles.size() && profiles[id].known) {
                sink.Gauge("fampool_memserver_offered_bytes",
                           "Bytes of extents the memory server may hold (capacity); 0: no limit",
                           labels, static_cast<double>(profiles[id].capacity));
            }
        }
        std::map<std::pair<std::string, std::string>, uint64_t> members;   // (level, state)
        std::map<std::string, double> count, size, used, items, degraded;  // by redundancy
        for (const MetadataStore::RegionUsage &each : read->regions) {
            const RegionInfo &region = each.region;
            std::string level = RedundancyName(region);
            count[level] += 1;
            size[level] += static_cast<double>(region.size);
            used[level] += static_cast<double>(each.used_bytes);
            items[level] += static_cast<double>(each.items);
            std::map<std::string, uint64_t> unhealthy;  // state -> members
            for (size_t m = 0; m < MemberCount(region); ++m) {
                const char *state = MemberStateName(StateOf(region, m));
                ++members[{level, state}];
                if (StateOf(region, m) != kHealthy) ++unhealthy[state];
            }
            degraded[level] += unhealthy.empty() ? 0 : 1;
            if (!per_region) continue;
            metrics::Labels labels = with({{"region", region.name}, {"redundancy", level}});
            sink.Gauge("fampool_region_size_bytes", "The region's size", labels,
                       static_cast<double>(region.size));
            sink.Gauge("fampool_region_used_bytes", "Bytes the region's items hold", labels,
                       static_cast<double>(each.used_bytes));
            sink.Gauge("fampool_region_items", "Items allocated in the region", labels,
                       static_cast<double>(each.items));
            for (const auto &[state, members_in] : unhealthy) {
                sink.Gauge("fampool_region_members_degraded",
                           "Members of the region that are lost or being rebuilt, by state",
                           with({{"region", region.name}, {"state", state}}),
                           static_cast<double>(members_in));
            }
        }
        for (const char *level : {"NONE", "RAID1", "RAID5"}) {
            metrics::Labels labels = with({{"redundancy", level}});
            sink.Gauge("fampool_regions", "Regions of this shard", labels, count[level]);
            sink.Gauge("fampool_regions_size_bytes", "The regions' sizes, summed", labels,
                       size[level]);
            sink.Gauge("fampool_regions_used_bytes", "Bytes the regions' items hold, summed",
                       labels, used[level]);
            sink.Gauge("fampool_regions_items", "Items allocated in the regions", labels,
                       items[level]);
            sink.Gauge("fampool_regions_degraded",
                       "Redundant regions with a member lost or being rebuilt", labels,
                       degraded[level]);
        }
        for (const auto &[key, value] : members) {
            sink.Gauge("fampool_members", "Members of redundant regions, by redundancy and state",
                       with({{"redundancy", key.first}, {"state", key.second}}),
                       static_cast<double>(value));
        }
        sink.Gauge("fampool_metadata_start_time_seconds",
                   "When this shard's process started, in seconds since the Unix epoch", shard,
                   StartTime());
        sink.Gauge("fampool_rebuild_running", "1 while this shard rebuilds lost members", shard,
                   rebuilding_.load() ? 1 : 0);
        if (sessions_) {
            sink.Gauge("fampool_sessions", "Open sessions of authenticated callers (MUNGE)", shard,
                       static_cast<double>(sessions_->size()));
        }
        if (shard_ == 0) {
            sink.Gauge("fampool_clients",
                       "Client processes that reported their data path in the last 30 s", shard,
                       static_cast<double>(usage_.ActiveClients()));
        }
    });
}

}  // namespace fampool
