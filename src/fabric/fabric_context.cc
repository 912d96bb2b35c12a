#include "fabric/fabric_context.h"

#include <fmt/format.h>

#include "common/error.h"

namespace fampool {

FabricBinding::Place FabricBinding::Locate(uint64_t item_offset) const {
    BytePlace byte = raid5_members
                         ? PlaceOfRaid5Byte(offset, interleave, raid5_members, item_offset)
                         : PlaceOfByte(offset, interleave, servers.size(), item_offset);
    return Place{static_cast<size_t>(byte.index), byte.physical, byte.contiguous};
}

std::string FabricBinding::Describe() const {
    if (!name.empty()) return fmt::format("item \"{}\"", name);
    return fmt::format("item at offset {} of region {}", offset, region_id);
}

FabricContext::FabricContext(const FabricConfig &config, ServerLookup servers)
    : domain_(config, FabricDomain::Role::kClient), servers_(std::move(servers)) {
    av_ = domain_.OpenAddressVector();
    plain_atomics_fetch_ = std::string(domain_.provider_reported()) == "shm";
}

fi_addr_t FabricContext::Insert(const std::string &address) {
    std::lock_guard<std::mutex> lock(addresses_mutex_);
    auto it = addresses_.find(address);
    if (it != addresses_.end()) return it->second;
    fi_addr_t inserted = FI_ADDR_UNSPEC;
    int ret = fi_av_insert(av_.get(), address.data(), 1, &inserted, 0, nullptr);
    if (ret != 1) {
        // shm reaches a server through its file under /dev/shm, which only the server's user
        // may open: say so, it is the usual cause.
        bool named = domain().info()->addr_format == FI_ADDR_STR;
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_av_insert: memory server address {} not accepted: {} (provider {}){}",
             named ? "\"" + std::string(address.c_str()) + "\""
                   : "(" + std::to_string(address.size()) + " bytes)",
             fi_strerror(ret < 0 ? -ret : FI_EINVAL), provider(),
             named ? "; a server on another host, or run by another user, needs a socket "
                     "provider such as tcp"
                   : "");
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
        case FabricAtomic::kPlain:
            ret = fi_atomicvalid(endpoint, atomic.type, atomic.op, &count);
            break;
        case FabricAtomic::kFetch:
            ret = fi_fetch_atomicvalid(endpoint, atomic.type, atomic.op, &count);
            break;
        default:
            ret = fi_compare_atomicvalid(endpoint, atomic.type, atomic.op, &count);
            break;
    }
    bool supported = ret == 0 && count >= 1;
    known.store(supported ? 1 : 2, std::memory_order_relaxed);
    return supported;
}

}  // namespace fampool
