#include "transport/fabric/fabric_transport.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "memserver/heap_socket.h"
#include "transport/fabric/fabric_channel.h"
#include "transport/thread_channels.h"

namespace fampool {

FabricTransport::FabricTransport(const FabricConfig &config,
                                 FabricContext::ServerLookup servers_for_fallback)
    : context_(std::make_shared<FabricContext>(config, std::move(servers_for_fallback))) {
    direct_ = config.direct && !config.checked_reads &&
              std::string(context_->domain().provider_reported()) == "shm";
    by_path_ = config.direct_by_path;
}

std::shared_ptr<HeapMapping> FabricTransport::HeapOf(const FabricBinding &binding,
                                                     const FabricBinding::Server &server,
                                                     uint64_t end) {
    const std::string &where = by_path_ ? server.heap_path : server.socket;
    if (where.empty()) {
        Fail(openfam::FAM_ERR_INVALIDOP, "memory server {} offers no same-node {}", server.id,
             by_path_ ? "heap path" : "socket");
    }
    std::string name =
        fmt::format("{}#{}#{}#{}", where, binding.region_id, server.key, binding.writable);
    std::lock_guard<std::mutex> lock(heaps_mutex_);
    std::shared_ptr<HeapMapping> heap = heaps_[name].lock();
    if (heap && heap->length() >= end) return heap;
    if (by_path_) {
        heap = heap::Map(server.heap_path);  // another user's heap fails: the fabric it is
    } else {
        int fd = RequestHeap(server.socket, binding.region_id, server.key, binding.writable,
                             server.server_uid);
        heap = MapHeapDescriptor(
            fd, binding.writable,
            fmt::format("heap of region {} from memory server {}", binding.region_id, server.id));
    }
    if (heap->length() < end) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "heap of region {} on memory server {} is {} bytes, "
             "{} expected",
             binding.region_id, server.id, heap->length(), end);
    }
    heaps_[name] = heap;
    return heap;
}

void FabricTransport::MapDirect(FabricBinding &binding) {
    if (binding.servers.empty()) return;
    // An item that is not interleaved lies on one server of its region (which may span more,
    // holding none of it: a region over 1 GiB without interleaving spans two): only that
    // server's heap is mapped, and every place of the item is on it. `end`: the highest heap
    // offset of the item on any server: one contiguous range when it is not interleaved; else
    // up to the end of the stripe row that holds its last byte.
    const bool one_server = binding.interleave == 0 || binding.servers.size() == 1;
    const size_t holder = one_server ? binding.Locate(0).server : 0;
    uint64_t end;
    if (one_server) {
        end = binding.Locate(0).physical + binding.size;
    } else {
        uint64_t row = binding.interleave * binding.servers.size();
        end = ((binding.offset + binding.size - 1) / row + 1) * binding.interleave;
    }
    const std::string here = NodeIdentity();
    std::vector<std::shared_ptr<void>> mapped(binding.servers.size());
    for (size_t i = 0; i < binding.servers.size(); ++i) {
        const FabricBinding::Server &server = binding.servers[i];
        if (one_server && i != holder) continue;
        if (!server.reachable || server.node != here) return;
        try {
            mapped[i] = HeapOf(binding, server, end);
        } catch (const Failure &) {
            return;  // refused (or no socket): the item stays on the fabric
        }
    }
    for (size_t i = 0; i < binding.servers.size(); ++i) {
        if (mapped[i])
            binding.servers[i].direct = static_cast<HeapMapping *>(mapped[i].get())->base();
    }
    binding.mapped = std::move(mapped);
    binding.direct = true;
}

std::shared_ptr<Binding> FabricTransport::Attach(const ItemInfo &item) {
    auto binding = std::make_shared<FabricBinding>();
    binding->region_id = item.region_id;
    binding->persistent = item.region.attributes.memoryType == PERSISTENT;
    binding->writable = item.can_write;
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
    // shm reaches only servers of this process's user: another user's process reaches the
    // heaps it may map through their descriptors, and the fabric not at all. A server the
    // provider refuses fails the item only if it is not mapped below.
    std::exception_ptr unreachable;
    for (size_t i = 0; i < ids.size(); ++i) {
        FabricBinding::Server &server = binding->servers[i];
        server.id = ids[i];
        const ServerAccess *access = nullptr;
        if (item.access.size() == ids.size() && !item.access[i].fabric_address.empty() &&
            (item.access[i].server_id == ids[i] || item.access[i].server_id == 0)) {
            access = &item.access[i];  // in server order (a server may be listed twice)
        }
        for (const ServerAccess &candidate : item.access) {
            if (!access && candidate.server_id == ids[i] && !candidate.fabric_address.empty()) {
                access = &candidate;
            }
        }
        if (!access) continue;
        server.reachable = true;
        try {
            server.address = context_->Insert(access->fabric_address);
        } catch (const Failure &) {
            if (!unreachable) unreachable = std::current_exception();
        }
        server.key = access->key;
        server.base = access->base;
        server.heap_path = access->heap_path;
        server.socket = access->socket;
        server.server_uid = access->server_uid;
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
    if (direct_) MapDirect(*binding);
    if (unreachable && !binding->direct) std::rethrow_exception(unreachable);
    return binding;
}

std::unique_ptr<Channel> FabricTransport::OpenChannel() {
    // A channel per thread: a FabricChannel holds its lock for a whole blocking round trip.
    std::shared_ptr<FabricContext> context = context_;
    return std::make_unique<ThreadChannels>([context](bool first) -> std::unique_ptr<Channel> {
        return std::make_unique<FabricChannel>(context, /*lazily=*/!first);
    });
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
    if (server->node != NodeIdentity() || (server->socket.empty() && !by_path_)) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "memory of {} is on memory server {} on another node; load/store reaches only "
             "memory servers of this node, use get/put",
             fabric.Describe(), server->id);
    }
    // The same heap the memory server serves: loads and stores see what RMA sees. Its
    // descriptor comes from the server, read-only unless `writable` (which the permission check
    // behind the key must allow).
    int fd = -1;
    if (by_path_) {
        fd = open(server->heap_path.c_str(), writable ? O_RDWR | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            Fail(openfam::FAM_ERR_INVALIDOP, "cannot open heap {} of memory server {}: {}",
                 server->heap_path, server->id, std::strerror(errno));
        }
    } else {
        fd = RequestHeap(server->socket, fabric.region_id, server->key, writable,
                         server->server_uid);
    }
    const uint64_t page = 4096;
    uint64_t start = place.physical & ~(page - 1);
    size_t length = static_cast<size_t>(place.physical + fabric.size - start);
    void *range = mmap(nullptr, length, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
                       fd, static_cast<off_t>(start));
    int map_errno = errno;
    close(fd);
    if (range == MAP_FAILED) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot map the heap of {} from memory server {}: {}",
             fabric.Describe(), server->id, std::strerror(map_errno));
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
