// A memory server's gauges for its Prometheus endpoint (docs/operations.md): what it offers and
// holds, and what clients applied to it where its provider counts that. Calls it answers are
// counted where they are served (fampool_calls_total), rebuild work in redundancy.cc.
#ifndef FAMPOOL_MEMSERVER_MEMORY_SERVER_METRICS_H_
#define FAMPOOL_MEMSERVER_MEMORY_SERVER_METRICS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/metrics.h"
#include "memserver/fabric_server.h"
#include "memserver/local_memory_server.h"

namespace fampool {

// Reports memory server `heaps` (its endpoint `fabric`, its life `incarnation`) at every scrape
// until the handle is dropped; both must outlive the handle.
std::shared_ptr<void> CollectMemoryServerMetrics(const LocalMemoryServer *heaps,
                                                 const FabricServer *fabric,
                                                 std::string incarnation);

// Rebuild work on this server (memserver/redundancy.cc): what RAID1 copies and RAID5 stripe
// recomputations did so far, and what those running still have to do.
struct RebuildWorkCounts {
    metrics::Counter &copied;
    metrics::Counter &stripes;
    std::atomic<int64_t> bytes_left{0}, stripes_left{0};
};
RebuildWorkCounts &RebuildWork();

// Takes what a rebuild left undone out of a remaining count when it ends, done or failed.
struct RebuildWorkLeft {
    std::atomic<int64_t> &counted;
    int64_t &left;
    ~RebuildWorkLeft() { counted -= left; }
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_MEMORY_SERVER_METRICS_H_
