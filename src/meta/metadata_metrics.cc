// MetadataRpcService::CollectMetrics (metadata_rpc_service.h): a shard's gauges, read at each
// scrape from what the service keeps anyway (the heartbeats' health, the store's records). No
// call to a memory server is made for them: a scrape costs the store's reads only.
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

}  // namespace

std::shared_ptr<void> MetadataRpcService::CollectMetrics(std::chrono::milliseconds usage_report) {
    // Clients report to shard 0 only: every shard would otherwise count them again.
    if (shard_ == 0) usage_report_ms_ = static_cast<uint32_t>(usage_report.count());
    return metrics::Process().AddCollector([this](metrics::Sink &sink) {
        const metrics::Labels shard = {{"shard", std::to_string(shard_)}};
        auto with = [&](metrics::Labels more) {
            metrics::Labels labels = shard;
            labels.insert(labels.end(), more.begin(), more.end());
            return labels;
        };
        std::vector<uint64_t> usage = store_->ServerUsage();
        std::vector<MemoryProfile> profiles = store_->Profiles();
        auto now = std::chrono::steady_clock::now();
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
        std::map<std::pair<std::string, std::string>, uint64_t> members;  // (level, state)
        for (const MetadataStore::RegionUsage &each : store_->ListRegions()) {
            const RegionInfo &region = each.region;
            metrics::Labels labels =
                with({{"region", region.name}, {"redundancy", RedundancyName(region)}});
            sink.Gauge("fampool_region_size_bytes", "The region's size", labels,
                       static_cast<double>(region.size));
            sink.Gauge("fampool_region_used_bytes", "Bytes the region's items hold", labels,
                       static_cast<double>(each.used_bytes));
            sink.Gauge("fampool_region_items", "Items allocated in the region", labels,
                       static_cast<double>(each.items));
            std::map<std::string, uint64_t> unhealthy;  // state -> members
            for (size_t m = 0; m < MemberCount(region); ++m) {
                const char *state = MemberStateName(StateOf(region, m));
                ++members[{RedundancyName(region), state}];
                if (StateOf(region, m) != kHealthy) ++unhealthy[state];
            }
            for (const auto &[state, count] : unhealthy) {
                sink.Gauge("fampool_region_members_degraded",
                           "Members of the region that are lost or being rebuilt, by state",
                           with({{"region", region.name}, {"state", state}}),
                           static_cast<double>(count));
            }
        }
        for (const auto &[key, count] : members) {
            sink.Gauge("fampool_members", "Members of redundant regions, by redundancy and state",
                       with({{"redundancy", key.first}, {"state", key.second}}),
                       static_cast<double>(count));
        }
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
