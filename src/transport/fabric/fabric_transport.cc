#include "transport/fabric/fabric_transport.h"
#include <cstring>
#include <cerrno>
#include <unistd.h>
#include <sys/mman.h>
#include <fcntl.h>

#include <fmt/format.h>

#include "common/error.h"
#include "transport/fabric/fabric_channel.h"

namespace fampool {

FabricBinding::Place FabricBinding::Locate(uint64_t item_offset) const {
    BytePlace byte = PlaceOfByte(offset, interleave, servers.size(), item_offset);
    return Place{static_cast<size_t>(byte.index), byte.physical, byte.contiguous};
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
    {
        std::lock_guard<std::mutex> lock(regions_mutex_);
        auto &flag = regions_[item.region_id];
        if (!flag) flag = std::make_shared<std::atomic<bool>>(false);
        binding->forgotten = flag;
    }

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
        server.heap_path = access->heap_path;
        server.node = access->node;
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

void *FabricTransport::Map(Binding &item, bool writable) {
    auto &fabric = static_cast<FabricBinding &>(item);
    FabricBinding::Place place = fabric.Locate(0);
    const FabricBinding::Server *server =
        fabric.servers.empty() ? nullptr : &fabric.servers[place.server];
    if (!server || place.contiguous < fabric.size) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "{} is interleaved over {} memory servers; load/store needs one contiguous range, "
             "use get/put",
             fabric.Describe(), fabric.servers.size());
    }
    if (server->node != NodeIdentity() || server->heap_path.empty()) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "memory of {} is on memory server {} on another node; load/store reaches only "
             "memory servers of this node, use get/put",
             fabric.Describe(), server->id);
    }
    // The same heap file the memory server serves: loads and stores see what RMA sees.
    const uint64_t page = 4096;
    uint64_t start = place.physical & ~(page - 1);
    size_t length = static_cast<size_t>(place.physical + fabric.size - start);
    int fd = open(server->heap_path.c_str(), writable ? O_RDWR | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        Fail(openfam::FAM_ERR_INVALIDOP, "cannot open heap {} of memory server {}: {}",
             server->heap_path, server->id, std::strerror(errno));
    }
    void *range = mmap(nullptr, length, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
                       fd, static_cast<off_t>(start));
    close(fd);
    if (range == MAP_FAILED) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot map heap {}: {}", server->heap_path,
             std::strerror(errno));
    }
    void *address = static_cast<char *>(range) + (place.physical - start);
    std::lock_guard<std::mutex> lock(maps_mutex_);
    maps_[address] = {range, length};
    return address;
}

void FabricTransport::Forget(uint64_t region_id) {
    std::lock_guard<std::mutex> lock(regions_mutex_);
    auto it = regions_.find(region_id);
    if (it == regions_.end()) return;
    it->second->store(true);
    regions_.erase(it);
}

void FabricTransport::Unmap(void *local) {
    std::lock_guard<std::mutex> lock(maps_mutex_);
    auto it = maps_.find(local);
    if (it == maps_.end()) return;
    munmap(it->second.first, it->second.second);
    maps_.erase(it);
}


}  // namespace fampool
