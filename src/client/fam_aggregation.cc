// FamImpl: memory-side aggregation (fam_queue_operation, fam_aggregate_flush). Element
// operations queue here, per descriptor, until the queue reaches the configured threshold or
// the program flushes it; then each run of them goes to the memory servers in one request per
// server (Channel::ApplyElements), where the server's CPU applies them after checking the
// caller's key. On the embedded model the PE's own CPU is the memory side.
#include <cstdio>
#include <exception>

#include "client/fam_impl.h"

namespace fampool {
namespace {

// FAM_QUEUE_OP values as fam/fam.h numbers them.
bool ToElementOp(int op, ElementOp *out) {
    switch (op) {
        case OP_ADD_INDEXED:
            *out = ElementOp::kAdd;
            return true;
        case OP_SCATTER:
            *out = ElementOp::kScatter;
            return true;
        case OP_GATHER:
            *out = ElementOp::kGather;
            return true;
    }
    return false;
}

unsigned AccessFor(ElementOp op) { return op == ElementOp::kGather ? kRead : kWrite; }

}  // namespace

void FamImpl::QueueOperation(int op_number, void *local, Fam_Descriptor *item, uint64_t count,
                             const uint64_t *index, uint64_t element_size) {
    Session &session = Live();
    const Config &config = session.config;
    if (!config.aggregation) {
        Fail(openfam::FAM_ERR_ATL_NOT_ENABLED,
             "memory-side aggregation is turned off (aggregation: false, or "
             "FAMPOOL_AGGREGATION=0)");
    }
    ElementOp op;
    if (!ToElementOp(op_number, &op)) {
        Fail(openfam::FAM_ERR_ATL_QUEUE_INSERT,
             "operation {} is not OP_ADD_INDEXED, OP_SCATTER or OP_GATHER", op_number);
    }
    if (element_size == 0) Fail(openfam::FAM_ERR_INVALID, "element size is 0");
    if (op == ElementOp::kAdd && element_size != 4 && element_size != 8) {
        Fail(openfam::FAM_ERR_ATL_QUEUE_INSERT,
             "OP_ADD_INDEXED adds 4- or 8-byte integers, not {}-byte elements", element_size);
    }
    DescriptorState &state = Access(session, item, AccessFor(op), 0, 0);
    const ItemInfo &info = state.item;
    if (count == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} elements", count);
    if (!index) Fail(openfam::FAM_ERR_NULLPTR, "element index array is NULL");
    uint64_t last = 0, end = 0;
    for (uint64_t i = 0; i < count; ++i) last = std::max(last, index[i]);
    if (__builtin_add_overflow(last, 1, &end) || __builtin_mul_overflow(end, element_size, &end) ||
        end > info.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE,
             "element {} of {} bytes (of {} elements) lies past end of {} (size {})", last,
             element_size, count, Describe(info), info.size);
    }
    if (op == ElementOp::kAdd && info.offset % element_size != 0) {
        Fail(openfam::FAM_ERR_ATL_QUEUE_INSERT,
             "{} does not start at a multiple of {} bytes: its elements cannot be added "
             "atomically",
             Describe(info), element_size);
    }
    // The queue holds a share per memory server of the item: the threshold and the size
    // limit apply per server (scaled by the servers the item's region spans), so that every
    // request a shipment sends carries about `aggregation_threshold` elements.
    const uint64_t servers = std::max<uint64_t>(1, info.server_count());
    const uint64_t limit = config.atl_queue_size * servers;
    Queue full;
    {
        std::lock_guard<std::mutex> lock(queues_mutex_);
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
            queue.runs.push_back(QueuedRun{op, element_size, {}, {}, {}});
        }
        QueuedRun &run = queue.runs.back();
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
        full = TakeQueue(queues_.find({info.region_id, info.offset}));
    }
    Ship(session, std::move(full));
}

void FamImpl::AggregateFlush(Fam_Descriptor *item) {
    Session &session = Live();
    if (!item) Fail(openfam::FAM_ERR_NULLPTR, "descriptor is NULL");
    Fam_Global_Descriptor global = item->get_global_descriptor();
    QueueKey key{global.regionId, global.offset};
    Queue queue;
    {
        std::lock_guard<std::mutex> lock(queues_mutex_);
        auto it = queues_.find(key);
        if (it != queues_.end()) queue = TakeQueue(it);
    }
    if (!queue.runs.empty()) Ship(session, std::move(queue));
    // What other threads took out of the queue (at their threshold) is applied before this
    // returns too: this thread's gathers may be among it.
    std::unique_lock<std::mutex> lock(queues_mutex_);
    shipped_.wait(lock, [&] { return shipping_.count(key) == 0; });
}

FamImpl::Queue FamImpl::TakeQueue(std::map<QueueKey, Queue>::iterator it) {
    ++shipping_[it->first];
    Queue queue = std::move(it->second);
    queues_.erase(it);
    return queue;
}

void FamImpl::Ship(Session &session, Queue queue) {
    // However it ends, the queue no longer counts as being shipped.
    QueueKey key{queue.item.item.region_id, queue.item.item.offset};
    struct Shipped {
        FamImpl *impl;
        QueueKey key;
        ~Shipped() {
            std::lock_guard<std::mutex> lock(impl->queues_mutex_);
            auto it = impl->shipping_.find(key);
            if (it != impl->shipping_.end() && --it->second == 0) impl->shipping_.erase(it);
            impl->shipped_.notify_all();
        }
    } shipped{this, key};
    uint64_t left = queue.elements;
    bool refreshed = false;
    for (QueuedRun &run : queue.runs) {
        uint64_t count = run.indices.size();
        try {
            if (!refreshed) RefreshQueued(session, queue.item);  // once per shipment
            refreshed = true;
            ApplyElements(session, queue.item, run.op, AccessFor(run.op), run.indices.data(), count,
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

void FamImpl::ShipAll(const char *call) {
    std::vector<Queue> queues;
    {
        std::lock_guard<std::mutex> lock(queues_mutex_);
        while (!queues_.empty()) queues.push_back(TakeQueue(queues_.begin()));
    }
    for (Queue &queue : queues) {
        try {
            Ship(*session_, std::move(queue));
        } catch (const Failure &failure) {
            std::fprintf(stderr, "fampool: %s: %s\n", call, failure.fam_error_msg());
        } catch (const std::exception &failure) {
            std::fprintf(stderr, "fampool: %s: %s\n", call, failure.what());
        }
    }
}

}  // namespace fampool
