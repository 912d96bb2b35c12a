// The embedded model's data path: memcpy and CPU atomics on heap files mapped into the process.
// Atomicity holds across processes because every process maps the same file shared.
#ifndef FAMPOOL_TRANSPORT_SHM_SHM_TRANSPORT_H_
#define FAMPOOL_TRANSPORT_SHM_SHM_TRANSPORT_H_

#include <map>
#include <mutex>
#include <string>

#include "memserver/local_memory_server.h"
#include "transport/transport.h"

namespace fampool {

// An item's bytes in this process: the heap mapping (kept alive) and the item's first byte.
struct ShmBinding : Binding {
    std::shared_ptr<HeapMapping> mapping;
    char *base = nullptr;
    std::string path;  // the heap file, for read-only maps
    uint64_t offset = 0, size = 0;
    bool valid() const override { return !mapping->revoked(); }
};

class ShmTransport : public Transport {
  public:
    // `memory_servers[i]`: the memory server with id i (a region lives on one of them).
    explicit ShmTransport(std::vector<LocalMemoryServer *> memory_servers)
        : memory_servers_(std::move(memory_servers)) {}

    const char *name() const override { return "shm-embedded"; }
    std::shared_ptr<Binding> Attach(const ItemInfo &item) override;
    std::unique_ptr<Channel> OpenChannel() override;
    void *Map(Binding &item, bool writable) override;
    void Unmap(void *local) override;

  private:
    std::vector<LocalMemoryServer *> memory_servers_;
    std::mutex read_only_mutex_;
    std::map<void *, std::pair<void *, size_t>> read_only_maps_;  // address -> mmap'd range
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_SHM_SHM_TRANSPORT_H_
