#include "transport/shm/shm_transport.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/async_queue.h"
#include "common/atomic_apply.h"
#include "common/error.h"

namespace fampool {
namespace {

char *Base(Binding &item) { return static_cast<ShmBinding &>(item).base; }

void MoveElements(Binding &item, const ElementPlan &plan, char *local, uint64_t count,
                  uint64_t element_size, bool to_fam) {
    char *base = Base(item);
    for (uint64_t i = 0; i < count; ++i) {
        char *fam = base + plan.IndexOf(i) * element_size;
        char *mine = local + i * element_size;
        CopyFamBytes(to_fam ? fam : mine, to_fam ? mine : fam, element_size);
    }
}

// Non-blocking transfers up to this size are done at once in the caller, like blocking ones:
// handing an operation to the background thread costs 0.7-1.5 us (a wake-up, a queue entry
// and a closure), more than copying 64 KiB's worth of small transfers, and the caller then
// waits for the copy at fam_quiet anyway. Larger ones go to the queue and overlap the caller's
// work (fam_microbench: a 1 MiB transfer handed over costs under 2% of its copy).
constexpr uint64_t kInlineBytes = 64 * 1024;

// Blocking calls and small non-blocking ones copy in the caller's thread; larger non-blocking
// ones run in order on the channel's background queue, so they return before the copy is done.
// Non-blocking operations are unordered until a fence or quiet, so a small one may land before
// a large one posted earlier.
class ShmChannel : public Channel {
  public:
    void Read(const std::shared_ptr<Binding> &item, uint64_t offset, void *local, uint64_t nbytes,
              bool blocking) override {
        if (blocking || nbytes <= kInlineBytes) {
            CopyFamBytes(local, Base(*item) + offset, nbytes);
            return;
        }
        queue_.Post(
            [item, offset, local, nbytes] { CopyFamBytes(local, Base(*item) + offset, nbytes); });
    }

    void Write(const std::shared_ptr<Binding> &item, uint64_t offset, const void *local,
               uint64_t nbytes, bool blocking) override {
        if (blocking || nbytes <= kInlineBytes) {
            WriteFamBytes(Base(*item) + offset, local, nbytes);
            return;
        }
        queue_.Post(
            [item, offset, local, nbytes] { WriteFamBytes(Base(*item) + offset, local, nbytes); });
    }

    void Elements(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                  uint64_t count, uint64_t element_size, bool to_fam, bool blocking) override {
        if (blocking || count * element_size <= kInlineBytes) {
            return MoveElements(*item, plan, local, count, element_size, to_fam);
        }
        queue_.Post([item, plan = std::move(plan), local, count, element_size, to_fam] {
            MoveElements(*item, plan, local, count, element_size, to_fam);
        });
    }

    // The embedded model's memory side is this process: after the queue's earlier operations.
    void ApplyElements(const std::shared_ptr<Binding> &item, ElementOp op, const uint64_t *index,
                       uint64_t count, uint64_t element_size, char *data) override {
        queue_.Drain();
        char *base = Base(*item);
        for (uint64_t i = 0; i < count; ++i) {
            ApplyElement(op, element_size, base + index[i] * element_size, data + i * element_size);
        }
    }

    void Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type, const void *operand,
                const void *compare, void *result) override {
        ApplyAtomic(Base(item) + offset, op, type, operand, compare, result);
    }

    // The queue runs in order; a fence also orders it before the blocking calls that follow.
    void Fence() override { queue_.Drain(); }
    void Quiet() override { queue_.Quiet(); }
    void Drain() override { queue_.Drain(); }
    uint64_t Pending() override { return queue_.Pending(); }

  private:
    AsyncQueue queue_;
};

}  // namespace

std::shared_ptr<Binding> ShmTransport::Attach(const ItemInfo &item) {
    auto binding = std::make_shared<ShmBinding>();
    ExtentRef extent{item.region_id, item.region.attributes.memoryType == PERSISTENT};
    uint64_t id = item.region.memory_servers.empty() ? 0 : item.region.memory_servers.front();
    if (id >= memory_servers_.size()) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\" lives on memory tier {} of the embedded model, and the configuration "
             "has {} (memory_tiers lists tiers 1 and up): restore the tier to reach it",
             item.region.name, id, memory_servers_.size() - 1);
    }
    LocalMemoryServer *server = memory_servers_[id];
    binding->mapping = server->Map(extent, item.offset + item.size);
    binding->base = binding->mapping->base() + item.offset;
    binding->path = server->HeapPath(extent);
    binding->offset = item.offset;
    binding->size = item.size;
    return binding;
}

std::unique_ptr<Channel> ShmTransport::OpenChannel() { return std::make_unique<ShmChannel>(); }

void *ShmTransport::Map(Binding &item, bool writable) {
    if (writable) return Base(item);
    // Without write permission the item is mapped again, read-only, so that a store faults
    // instead of changing FAM.
    auto &shm = static_cast<ShmBinding &>(item);
    const uint64_t page = 4096;
    uint64_t start = shm.offset & ~(page - 1);
    size_t length = static_cast<size_t>(shm.offset + shm.size - start);
    int fd = open(shm.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot open heap {}: {}", shm.path, strerror(errno));
    }
    void *range = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
    close(fd);
    if (range == MAP_FAILED) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot map heap {}: {}", shm.path, strerror(errno));
    }
    void *address = static_cast<char *>(range) + (shm.offset - start);
    std::lock_guard<std::mutex> lock(read_only_mutex_);
    read_only_maps_[address] = {range, length};
    return address;
}

void ShmTransport::Unmap(void *local) {
    std::lock_guard<std::mutex> lock(read_only_mutex_);
    auto it = read_only_maps_.find(local);
    if (it == read_only_maps_.end()) return;  // a writable map is the heap mapping itself
    munmap(it->second.first, it->second.second);
    read_only_maps_.erase(it);
}

}  // namespace fampool
