// CollectMemoryServerMetrics (memory_server_metrics.h).
#include "memserver/memory_server_metrics.h"

#include <chrono>

#include "common/metrics.h"

namespace fampool {

std::shared_ptr<void> CollectMemoryServerMetrics(const LocalMemoryServer *heaps,
                                                 const FabricServer *fabric,
                                                 std::string incarnation) {
    RebuildWork();  // its counters at 0 from the start, not from the first rebuild
    const double started =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return metrics::Process().AddCollector([=](metrics::Sink &sink) {
        metrics::Labels server = {{"server", std::to_string(heaps->id())}};
        metrics::Labels info = server;
        info.emplace_back("provider", fabric->provider());
        info.emplace_back("incarnation", incarnation);
        sink.Gauge("fampool_memserver_info",
                   "1, labelled with the memory server's provider and its life (changes at "
                   "every restart)",
                   info, 1);
        sink.Gauge("fampool_memserver_start_time_seconds",
                   "When the memory server started, in seconds since the Unix epoch (a restart "
                   "changes it)",
                   server, started);
        sink.Gauge("fampool_memserver_capacity_bytes",
                   "Bytes of extents the memory server may hold (its capacity key); 0: no limit",
                   server, static_cast<double>(heaps->capacity()));
        LocalMemoryServer::HeapUsage usage = heaps->Usage();
        sink.Gauge("fampool_memserver_heaps", "Heaps (one per extent of a region) it holds", server,
                   static_cast<double>(usage.heaps));
        sink.Gauge("fampool_memserver_used_bytes",
                   "Bytes its heaps hold in memory or on disk (written pages)", server,
                   static_cast<double>(usage.written));
        sink.Gauge("fampool_memserver_heap_length_bytes",
                   "Bytes of its heaps' lengths (what their regions reserve; heaps are sparse)",
                   server, static_cast<double>(usage.length));
        if (std::optional<uint64_t> operations = fabric->remote_operations()) {
            sink.Counter("fampool_memserver_remote_operations_total",
                         "Reads, writes and atomics clients applied to its memory by RMA (where "
                         "the provider counts them: shm)",
                         server, static_cast<double>(*operations));
        }
    });
}

RebuildWorkCounts &RebuildWork() {
    // Counted until the process ends: never destroyed.
    static RebuildWorkCounts *work = [] {
        auto *made = new RebuildWorkCounts{
            metrics::Process().Counter(
                "fampool_memserver_rebuild_copied_bytes_total",
                "Bytes of RAID1 members this server copied to a member being rebuilt"),
            metrics::Process().Counter("fampool_memserver_rebuild_stripes_total",
                                       "RAID5 stripes whose lost unit this server computed again")};
        static std::shared_ptr<void> collector =
            metrics::Process().AddCollector([made](metrics::Sink &sink) {
                sink.Gauge("fampool_memserver_rebuild_remaining_bytes",
                           "Bytes the RAID1 copies running on this server have still to copy", {},
                           static_cast<double>(made->bytes_left.load()));
                sink.Gauge(
                    "fampool_memserver_rebuild_remaining_stripes",
                    "RAID5 stripes the rebuilds running on this server have still to compute", {},
                    static_cast<double>(made->stripes_left.load()));
            });
        return made;
    }();
    return *work;
}

}  // namespace fampool
