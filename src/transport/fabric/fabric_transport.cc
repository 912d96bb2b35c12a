#include "transport/fabric/fabric_transport.h"

#include <fmt/format.h>

#include "common/error.h"
#include "transport/fabric/fabric_channel.h"

namespace fampool {

FabricBinding::Place FabricBinding::Locate(uint64_t item_offset) const {
    Place place;
    if (interleave == 0) {
        place.server = ServerIndexOf(offset);
        place.physical = PhysicalOf(offset) + item_offset;
        place.contiguous = UINT64_MAX;
        return place;
    }
    // Block b = v / I of the region's virtual space is on server b % K at (b / K) * I.
    uint64_t virtual_offset = offset + item_offset;
    uint64_t block = virtual_offset / interleave;
    uint64_t within = virtual_offset % interleave;
    uint64_t count = servers.size();
    place.server = static_cast<size_t>(block % count);
    place.physical = (block / count) * interleave + within;
    place.contiguous = interleave - within;
    return place;
}

std::string FabricBinding::Describe() const {
    if (!name.empty()) return fmt::format("item \"{}\"", name);
    return fmt::format("item at offset {} of region {}", offset, region_id);
}

FabricContext::FabricContext(const FabricConfig &config, ServerLookup servers)
    : domain_(config, FabricDomain::Role::kClient), servers_(std::move(servers)) {
    av_ = domain_.OpenAddressVector();
}

fi_addr_t FabricContext::Insert(const std::string &address) {
    std::lock_guard<std::mutex> lock(addresses_mutex_);
    auto it = addresses_.find(address);
    if (it != addresses_.end()) return it->second;
    fi_addr_t inserted = FI_ADDR_UNSPEC;
    int ret = fi_av_insert(av_.get(), address.data(), 1, &inserted, 0, nullptr);
    if (ret != 1) {
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_av_insert: memory server address ({} bytes) not accepted: {} (provider {})",
             address.size(), fi_strerror(ret < 0 ? -ret : FI_EINVAL), provider());
    }
    addresses_.emplace(address, inserted);
    return inserted;
}

bool FabricContext::Supports(fid_ep *endpoint, const FabricAtomic &atomic) {
    std::atomic<uint8_t> &known = support_[atomic.kind][atomic.op][atomic.type];
    uint8_t state = known.load(std::memory_order_relaxed);
    if (state != 0) return state == 1;
    size_t count = 0;
    int ret;
    switch (atomic.kind) {
        case FabricAtomic::kPlain: ret = fi_atomicvalid(endpoint, atomic.type, atomic.op, &count); break;
        case FabricAtomic::kFetch:
            ret = fi_fetch_atomicvalid(endpoint, atomic.type, atomic.op, &count);
            break;
        default: ret = fi_compare_atomicvalid(endpoint, atomic.type, atomic.op, &count); break;
    }
    bool supported = ret == 0 && count >= 1;
    known.store(supported ? 1 : 2, std::memory_order_relaxed);
    return supported;
}

FabricTransport::FabricTransport(const FabricConfig &config,
                                 FabricContext::ServerLookup servers_for_fallback)
    : context_(std::make_shared<FabricContext>(config, std::move(servers_for_fallback))) {}

std::shared_ptr<Binding> FabricTransport::Attach(const ItemInfo &item) {
    auto binding = std::make_shared<FabricBinding>();
    binding->region_id = item.region_id;
    binding->persistent = item.region.attributes.memoryType == PERSISTENT;
    binding->offset = item.offset;
    binding->size = item.size;
    binding->interleave = item.region.interleave_size;
    binding->name = item.name;

    std::vector<uint64_t> ids = item.region.memory_servers;
    if (ids.empty()) {
        for (const ServerAccess &access : item.access) ids.push_back(access.server_id);
    }
    binding->servers.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        FabricBinding::Server &server = binding->servers[i];
        server.id = ids[i];
        const ServerAccess *access = nullptr;
        for (const ServerAccess &candidate : item.access) {
            if (candidate.server_id == ids[i] && !candidate.fabric_address.empty()) {
                access = &candidate;
            }
        }
        if (!access && item.access.size() == ids.size() &&
            !item.access[i].fabric_address.empty()) {
            access = &item.access[i];  // listed in server order without ids
        }
        if (!access) continue;
        server.reachable = true;
        server.address = context_->Insert(access->fabric_address);
        server.key = access->key;
        server.base = access->base;
    }
    if (binding->interleave == 0 && ServerIndexOf(item.offset) >= ids.size()) {
        Fail(openfam::FAM_ERR_INVALID, "{} names server index {} but its region has {} servers",
             binding->Describe(), ServerIndexOf(item.offset), ids.size());
    }
    if (binding->interleave != 0 && ids.empty()) {
        Fail(openfam::FAM_ERR_INVALID, "{} is interleaved over no memory server",
             binding->Describe());
    }
    return binding;
}

std::unique_ptr<Channel> FabricTransport::OpenChannel() {
    return std::make_unique<FabricChannel>(context_);
}

void *FabricTransport::Map(Binding &item, bool) {
    auto &fabric = static_cast<FabricBinding &>(item);
    uint64_t server = fabric.servers.empty() ? 0 : fabric.servers[fabric.Locate(0).server].id;
    Fail(openfam::FAM_ERR_INVALIDOP,
         "memory of {} on memory server {} is not reachable by load/store from this process "
         "(openFamModel memory_server); use get/put",
         fabric.Describe(), server);
}

void FabricTransport::Unmap(void *) {}

}  // namespace fampool
