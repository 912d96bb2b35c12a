// Memory-side aggregation's queues (fam_queue_operation, fam_aggregate_flush): element
// operations wait here, per item, until the queue reaches the configured threshold or the
// program flushes it; then each run of them goes to the memory side in one call (Channel::
// ApplyElements: one request per memory server, whose CPU applies them after checking the
// caller's key). FamImpl checks the arguments and the caller's rights before an operation is
// queued; how a shipment reaches the memory side is the Shipper it gives.
#ifndef FAMPOOL_CLIENT_AGGREGATION_QUEUES_H_
#define FAMPOOL_CLIENT_AGGREGATION_QUEUES_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "client/descriptor_state.h"
#include "common/config.h"

namespace fampool {

class AggregationQueues {
  public:
    // The item's region id and offset.
    using Key = std::pair<uint64_t, uint64_t>;
    struct Shipper {
        // Brings a queue's copy of the descriptor state up to date before it ships: the item
        // and the caller's rights as they are now, bound with the keys granted now.
        std::function<void(DescriptorState &state)> refresh;
        // Applies `count` elements of one run (DataPath::ApplyElements: Channel::ApplyElements with
        // recovery from keys replaced meanwhile); `access` is kRead for gathers, kWrite otherwise.
        std::function<void(DescriptorState &state, ElementOp op, unsigned access,
                           const uint64_t *index, uint64_t count, uint64_t element_size,
                           char *data)>
            apply;
    };

    explicit AggregationQueues(Shipper shipper) : shipper_(std::move(shipper)) {}

    // Queues `count` elements for the item of `state` (arguments checked by the caller), and
    // ships its queue when the configuration's threshold is reached. Throws
    // FAM_ERR_ATL_QUEUE_FULL without a threshold when the queue would pass its size.
    void Add(const Config &config, const DescriptorState &state, ElementOp op, void *local,
             const uint64_t *index, uint64_t count, uint64_t element_size);
    // Ships the item's queue, and waits for what other threads took out of it to ship.
    void Flush(Key key);
    // Ships every queue (fam_finalize, closing a context); failures go to stderr, after `call`.
    void ShipAll(const char *call);
    // Forgets the item's queue: it was deallocated, and nothing is left to apply to.
    void Drop(Key key);

  private:
    // Runs of operations of the same kind and element size, in the order they were queued.
    struct Run {
        ElementOp op;
        uint64_t element_size;
        std::vector<uint64_t> indices;
        std::vector<char> data;  // operands of kAdd and kScatter; results of kGather
        // kGather: where the caller wants the results, as (local, elements) per call.
        std::vector<std::pair<char *, uint64_t>> destinations;
    };
    // One item's queue. It keeps a copy of the descriptor's state (the item and its binding):
    // a program may delete the descriptor before the queue ships (at fam_finalize, say).
    struct Queue {
        DescriptorState item;
        std::vector<Run> runs;
        uint64_t elements = 0;
    };
    // Ships the runs of `queue` (taken out of queues_) in order. A run that fails drops the
    // runs after it too (the error says how many).
    void Ship(Queue queue);
    // Takes the queue at `it` out of queues_ to ship it (mutex_ held), counting it in
    // shipping_ until Ship is done with it.
    Queue Take(std::map<Key, Queue>::iterator it);

    Shipper shipper_;
    std::mutex mutex_;
    std::map<Key, Queue> queues_;
    // Queues taken out and not yet applied, by item: Flush waits for those another thread is
    // shipping.
    std::map<Key, uint64_t> shipping_;
    std::condition_variable shipped_;
};

// kRead for gathers, kWrite for the operations that change the item.
unsigned AccessFor(ElementOp op);

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_AGGREGATION_QUEUES_H_
