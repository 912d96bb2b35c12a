// FabricChannel: element operations done by the memory servers' own CPUs (fam_queue_operation's
// batches, and gathers and scatters of many scattered elements). One RMA per element costs a
// fabric round trip each; one request per memory server carries thousands of elements and the
// server applies them with loads, stores and CPU atomics on its heap.
#include <fmt/format.h>

#include <future>

#include "common/atomic_apply.h"
#include "common/error.h"
#include "transport/fabric/fabric_channel.h"
#include "transport/fabric/fabric_channel_internals.h"

namespace fampool {
namespace {

// One server's share of a batch: the physical offsets of its elements and where each element
// is in the caller's data.
struct ServerShare {
    size_t index = 0;  // in the item's servers
    std::vector<uint64_t> offsets;
    std::vector<uint64_t> positions;
};

}  // namespace

bool FabricChannel::ToMemorySide(uint64_t count) const {
    uint64_t least = domain_.config().memory_side_elements;
    return least != 0 && count >= least;
}

bool FabricChannel::Adjacent(const ElementPlan &plan, uint64_t count) {
    if (plan.strided) return plan.stride == 1 || count <= 1;
    for (uint64_t i = 1; i < count; ++i) {
        if (plan.indices[i] != plan.indices[i - 1] + 1) return false;
    }
    return true;
}

void FabricChannel::ElementsOnServers(const std::shared_ptr<Binding> &binding, ElementPlan plan,
                                      char *local, uint64_t count, uint64_t element_size,
                                      bool to_fam, bool blocking) {
    if (plan.strided) {
        plan.indices.resize(count);
        for (uint64_t i = 0; i < count; ++i) plan.indices[i] = plan.first + i * plan.stride;
    }
    ElementOp op = to_fam ? ElementOp::kScatter : ElementOp::kGather;
    if (blocking) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            BeginWait();
            Settle(Deadline(), true);
        }
        return MemorySide(static_cast<const FabricBinding &>(*binding), op, plan.indices.data(),
                          count, element_size, local);
    }
    {
        // As on the RMA path: a later gather or scatter sees this thread's earlier
        // non-fetching atomics.
        std::lock_guard<std::mutex> lock(mutex_);
        Begin(false);
        AfterAtomics(Deadline());
    }
    direct_queue_.Post(
        [this, binding, indices = std::move(plan.indices), op, local, count, element_size] {
            MemorySide(static_cast<const FabricBinding &>(*binding), op, indices.data(), count,
                       element_size, local);
        });
}

void FabricChannel::ApplyElements(const std::shared_ptr<Binding> &binding, ElementOp op,
                                  const uint64_t *index, uint64_t count, uint64_t element_size,
                                  char *data) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    direct_queue_.Drain();  // earlier copies on mapped heaps land first
    if (item.direct) {
        // This process maps the servers' heaps: its CPU is as near the bytes as theirs.
        for (uint64_t i = 0; i < count; ++i) {
            char *mine = data + i * element_size;
            if (op != ElementOp::kAdd) {  // copied piece by piece: it may span two servers
                channel::CopyDirect(item, index[i] * element_size, mine, element_size,
                                    op == ElementOp::kScatter);
                continue;
            }
            FabricBinding::Place place = item.Locate(index[i] * element_size);
            ApplyElement(op, element_size, item.servers[place.server].direct + place.physical,
                         mine);
        }
        return;
    }
    {
        // The servers apply the batch after this channel's earlier operations have landed.
        std::lock_guard<std::mutex> lock(mutex_);
        BeginWait();
        Settle(Deadline(), true);
    }
    MemorySide(item, op, index, count, element_size, data);
}

void FabricChannel::MemorySide(const FabricBinding &item, ElementOp op, const uint64_t *index,
                               uint64_t count, uint64_t element_size, char *data) {
    std::vector<ServerShare> shares(item.servers.size());
    for (size_t s = 0; s < shares.size(); ++s) shares[s].index = s;
    std::vector<uint64_t> straddling;  // positions of elements split between two servers
    for (uint64_t i = 0; i < count; ++i) {
        FabricBinding::Place place = item.Locate(index[i] * element_size);
        if (place.server >= shares.size()) {
            Fail(openfam::FAM_ERR_INVALID, "{} has no memory server index {}", item.Describe(),
                 place.server);
        }
        // Elements split between two servers, or larger than a request may carry, go by RMA.
        if (place.contiguous < element_size ||
            element_size + 8 > domain_.config().memory_side_request_bytes) {
            if (op == ElementOp::kAdd) {
                Fail(openfam::FAM_ERR_INVALID,
                     "element {} of {} is split between two memory "
                     "servers: it cannot be added atomically",
                     index[i], item.Describe());
            }
            straddling.push_back(i);
            continue;
        }
        shares[place.server].offsets.push_back(place.physical);
        shares[place.server].positions.push_back(i);
    }
    if (!straddling.empty()) {
        // The fabric moves their pieces, packed into a buffer of their own.
        ElementPlan plan;
        plan.strided = false;
        std::vector<char> packed(straddling.size() * element_size);
        for (size_t k = 0; k < straddling.size(); ++k) {
            plan.indices.push_back(index[straddling[k]]);
            if (op == ElementOp::kScatter) {
                std::memcpy(&packed[k * element_size], data + straddling[k] * element_size,
                            element_size);
            }
        }
        RmaElements(item, plan, packed.data(), straddling.size(), element_size,
                    op == ElementOp::kScatter, true);
        if (op == ElementOp::kGather) {
            for (size_t k = 0; k < straddling.size(); ++k) {
                std::memcpy(data + straddling[k] * element_size, &packed[k * element_size],
                            element_size);
            }
        }
    }
    // Requests of ATL_data_size bytes at most (4 MiB unless configured): well under the 64 MiB
    // a gRPC message may carry, and large enough that a request's fixed cost (tens of
    // microseconds) is small beside its work.
    const uint64_t per_request =
        std::max<uint64_t>(1, domain_.config().memory_side_request_bytes / (8 + element_size));
    ExtentRef extent{item.region_id, item.persistent};
    // One server's share, in requests of at most per_request elements.
    auto send = [&](const ServerShare &share) {
        const FabricBinding::Server &server = Reachable(item, share.index);
        MemoryServer &target = context_->server(server.id);
        std::vector<uint64_t> offsets;
        std::vector<char> buffer;
        for (size_t first = 0; first < share.offsets.size(); first += per_request) {
            size_t n = std::min<size_t>(per_request, share.offsets.size() - first);
            offsets.assign(share.offsets.begin() + first, share.offsets.begin() + first + n);
            buffer.resize(n * element_size);
            if (op != ElementOp::kGather) {
                for (size_t k = 0; k < n; ++k) {
                    std::memcpy(&buffer[k * element_size],
                                data + share.positions[first + k] * element_size, element_size);
                }
            }
            try {
                target.ApplyElements(extent, server.key, op, element_size, offsets, buffer.data());
            } catch (const Failure &failure) {
                // A refused key fails as the fabric fails an operation whose key it refuses,
                // so that the caller binds the item again when its keys were replaced.
                if (failure.fam_error() != openfam::FAM_ERR_NOPERM) throw;
                Fail(openfam::FAM_ERR_LIBFABRIC, "{} on memory server {} failed: {}", NameOf(op),
                     server.id, failure.fam_error_msg());
            }
            if (op == ElementOp::kGather) {
                for (size_t k = 0; k < n; ++k) {
                    std::memcpy(data + share.positions[first + k] * element_size,
                                &buffer[k * element_size], element_size);
                }
            }
        }
    };
    std::vector<const ServerShare *> busy;
    for (const ServerShare &share : shares) {
        if (!share.offsets.empty()) busy.push_back(&share);
    }
    // The servers work at once: all but the last share from threads of their own.
    std::vector<std::future<void>> others;
    for (size_t k = 0; k + 1 < busy.size(); ++k) {
        others.push_back(std::async(std::launch::async, send, std::cref(*busy[k])));
    }
    std::exception_ptr failure;
    try {
        if (!busy.empty()) send(*busy.back());
    } catch (...) {
        failure = std::current_exception();
    }
    for (auto &other : others) {
        try {
            other.get();
        } catch (...) {
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace fampool
