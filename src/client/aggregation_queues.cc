#include "client/aggregation_queues.h"

#include <cstdio>
#include <cstring>
#include <exception>

#include "common/error.h"

namespace fampool {

unsigned AccessFor(ElementOp op) { return op == ElementOp::kGather ? kRead : kWrite; }

void AggregationQueues::Add(const Config &config, const DescriptorState &state, ElementOp op,
                            void *local, const uint64_t *index, uint64_t count,
                            uint64_t element_size) {
    const ItemInfo &info = state.item();
    // The queue holds a share per memory server of the item: the threshold and the size
    // limit apply per server (scaled by the servers the item's region spans), so that every
    // request a shipment sends carries about `aggregation_threshold` elements.
    const uint64_t servers = std::max<uint64_t>(1, info.server_count());
    const uint64_t limit = config.atl_queue_size * servers;
    Queue full;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Queue &queue = queues_[{info.region_id, info.offset}];
        // The descriptor's state, and its latest binding should it be bound again.
        if (queue.runs.empty() || queue.item.binding() != state.binding()) queue.item = state;
        if (config.aggregation_threshold == 0 && queue.elements + count > limit) {
            Fail(openfam::FAM_ERR_ATL_QUEUE_FULL,
                 "the queue of {} holds {} elements and takes {} at most (ATL_queue_size {} "
                 "per memory server); call fam_aggregate_flush, or set aggregation_threshold to "
                 "ship it automatically",
                 Describe(info), queue.elements, limit, config.atl_queue_size);
        }
        if (queue.runs.empty() || queue.runs.back().op != op ||
            queue.runs.back().element_size != element_size) {
            queue.runs.push_back(Run{op, element_size, {}, {}, {}});
        }
        Run &run = queue.runs.back();
        run.indices.insert(run.indices.end(), index, index + count);
        const char *bytes = static_cast<const char *>(local);
        if (op == ElementOp::kGather) {
            run.destinations.emplace_back(static_cast<char *>(local), count);
            run.data.resize(run.data.size() + count * element_size);
        } else {
            run.data.insert(run.data.end(), bytes, bytes + count * element_size);
        }
        queue.elements += count;
        uint64_t threshold =
            std::min(config.aggregation_threshold, config.atl_queue_size) * servers;
        if (config.aggregation_threshold == 0 || queue.elements < threshold) return;
        full = Take(queues_.find({info.region_id, info.offset}));
    }
    Ship(std::move(full));
}

void AggregationQueues::Flush(Key key) {
    Queue queue;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = queues_.find(key);
        if (it != queues_.end()) queue = Take(it);
    }
    if (!queue.runs.empty()) Ship(std::move(queue));
    // What other threads took out of the queue (at their threshold) is applied before this
    // returns too: this thread's gathers may be among it.
    std::unique_lock<std::mutex> lock(mutex_);
    shipped_.wait(lock, [&] { return shipping_.count(key) == 0; });
}

void AggregationQueues::Drop(Key key) {
    std::lock_guard<std::mutex> lock(mutex_);
    queues_.erase(key);
}

AggregationQueues::Queue AggregationQueues::Take(std::map<Key, Queue>::iterator it) {
    ++shipping_[it->first];
    Queue queue = std::move(it->second);
    queues_.erase(it);
    return queue;
}

void AggregationQueues::Ship(Queue queue) {
    // However it ends, the queue no longer counts as being shipped.
    struct Shipped {
        AggregationQueues *queues;
        Key key;
        ~Shipped() {
            std::lock_guard<std::mutex> lock(queues->mutex_);
            auto it = queues->shipping_.find(key);
            if (it != queues->shipping_.end() && --it->second == 0) queues->shipping_.erase(it);
            queues->shipped_.notify_all();
        }
    } shipped{this, {queue.item.item().region_id, queue.item.item().offset}};
    uint64_t left = queue.elements;
    bool refreshed = false;
    for (Run &run : queue.runs) {
        uint64_t count = run.indices.size();
        try {
            if (!refreshed) shipper_.refresh(queue.item);  // once per shipment
            refreshed = true;
            shipper_.apply(queue.item, run.op, AccessFor(run.op), run.indices.data(), count,
                           run.element_size, run.data.data());
        } catch (const Failure &failure) {
            auto error = static_cast<openfam::Fam_Error>(failure.fam_error());
            // The descriptor's own problems keep their error; the memory side failing to
            // apply the batch is FAM_ERR_ATL.
            bool item_problem =
                error == openfam::FAM_ERR_NOPERM || error == openfam::FAM_ERR_NOTFOUND ||
                error == openfam::FAM_ERR_INVALID || error == openfam::FAM_ERR_OUTOFRANGE;
            Fail(item_problem ? error : openfam::FAM_ERR_ATL,
                 "{} queued elements were not applied, or (the first {} of them, {}) only in "
                 "part; the queue is now empty: {}",
                 left, count, NameOf(run.op), failure.fam_error_msg());
        }
        left -= count;
        if (run.op == ElementOp::kGather) {
            const char *from = run.data.data();
            for (auto [destination, elements] : run.destinations) {
                std::memcpy(destination, from, elements * run.element_size);
                from += elements * run.element_size;
            }
        }
    }
}

void AggregationQueues::ShipAll(const char *call) {
    std::vector<Queue> queues;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        while (!queues_.empty()) queues.push_back(Take(queues_.begin()));
    }
    for (Queue &queue : queues) {
        try {
            Ship(std::move(queue));
        } catch (const Failure &failure) {
            std::fprintf(stderr, "fampool: %s: %s\n", call, failure.fam_error_msg());
        } catch (const std::exception &failure) {
            std::fprintf(stderr, "fampool: %s: %s\n", call, failure.what());
        }
    }
}

}  // namespace fampool
