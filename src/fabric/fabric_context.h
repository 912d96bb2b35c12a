// What the libfabric data path of a process shares: the fabric domain and address vector its
// channels use (FabricContext), and an item as that data path sees it (FabricBinding): per
// memory server of its region, how to address it, and where the item lies in the region's
// (possibly interleaved) space. Clients (transport/fabric) and memory servers reaching their
// peers (transport/fabric/fabric_peers) both build on it.
#ifndef FAMPOOL_FABRIC_FABRIC_CONTEXT_H_
#define FAMPOOL_FABRIC_FABRIC_CONTEXT_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "common/memory_server.h"
#include "fabric/fabric.h"
#include "fabric/fabric_atomics.h"

namespace fampool {

// An item as the fabric data path sees it: per server index of its region, how to address
// the server, and where the item lies in the region's (possibly interleaved) space.
struct FabricBinding : Binding {
    struct Server {
        uint64_t id = 0;
        bool reachable = false;  // false: the descriptor carries no access to this server
        fi_addr_t address = FI_ADDR_UNSPEC;
        uint64_t key = 0;
        uint64_t base = 0;
        std::string heap_path;    // the heap file on the server's node (fabric_direct: path)
        std::string socket;       // the server's same-node socket (memserver/heap_socket.h)
        uint32_t server_uid = 0;  // who must answer on it
        std::string node;
        // The server's heap mapped in this process (byte `physical` of the item's extents on
        // it is direct[physical]), or null: see FabricBinding::direct.
        char *direct = nullptr;
    };
    // Where item byte `offset` is: the server index, the physical offset in that server's
    // extent, and how many bytes from there stay contiguous on that server.
    struct Place {
        size_t server = 0;
        uint64_t physical = 0;
        uint64_t contiguous = 0;
    };

    Place Locate(uint64_t offset) const;
    // `item "name"` or `item at offset N of region R`, for messages.
    std::string Describe() const;

    std::vector<Server> servers;  // in region.memory_servers order
    uint64_t region_id = 0;
    bool persistent = false;
    bool writable = false;  // the permission check granted writes (read-write keys)
    uint64_t offset = 0;    // the item's virtual offset in its region
    uint64_t size = 0;
    uint64_t interleave = 0;     // block size; 0: not interleaved
    uint64_t raid5_members = 0;  // RAID5 (PlaceOfRaid5Byte): servers are its members
    std::string name;
    std::shared_ptr<std::atomic<bool>> forgotten;  // set when this process destroys the region
    // Every server's heap is mapped here (FabricTransport, same-node servers over shm): the
    // channel's transfers and atomics are loads, stores and CPU atomics, done at once.
    bool direct = false;
    std::vector<std::shared_ptr<void>> mapped;  // keeps those mappings alive
    bool valid() const override { return !forgotten || !forgotten->load(); }
};

// What the transport and its channels share: one fabric domain, one address vector with the
// servers' addresses inserted once each, and what the provider's atomics table says.
class FabricContext {
  public:
    using ServerLookup = std::function<MemoryServer &(uint64_t server_id)>;

    FabricContext(const FabricConfig &config, ServerLookup servers);

    FabricDomain &domain() { return domain_; }
    fid_av *av() const { return av_.get(); }
    const std::string &provider() const { return domain_.provider(); }
    int timeout_ms() const { return domain_.config().timeout_ms; }
    MemoryServer &server(uint64_t id) { return servers_(id); }

    fi_addr_t Insert(const std::string &address);
    // Whether non-fetching atomics must go as fetching ones. shm 1.17 loses track of the
    // buffer that carries the operand of a non-fetching atomic asked to complete on delivery:
    // with several endpoints adding at once, operands came from other operations' buffers
    // (4 threads x 500 adds of 1-4 summed to garbage). Its fetching atomics, which return
    // the buffer themselves, add up exactly; they complete at the same moment.
    bool plain_atomics_fetch() const { return plain_atomics_fetch_; }
    // Whether the provider does `atomic` (asked once per operation, type and kind).
    bool Supports(fid_ep *endpoint, const FabricAtomic &atomic);

  private:
    FabricDomain domain_;
    FidPtr<fid_av> av_;
    ServerLookup servers_;
    std::mutex addresses_mutex_;
    std::map<std::string, fi_addr_t> addresses_;
    bool plain_atomics_fetch_ = false;
    // 0: not asked yet, 1: supported, 2: not supported; by [kind][op][datatype].
    std::atomic<uint8_t> support_[3][FI_ATOMIC_OP_LAST][FI_DATATYPE_LAST] = {};
};

}  // namespace fampool

#endif  // FAMPOOL_FABRIC_FABRIC_CONTEXT_H_
