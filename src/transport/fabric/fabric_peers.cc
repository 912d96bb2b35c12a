#include "transport/fabric/fabric_peers.h"

#include "common/error.h"
#include "fabric/fabric_context.h"
#include "transport/fabric/fabric_channel.h"

namespace fampool {
namespace {

// Channels kept idle between operations; more operations at once open more, closed after.
constexpr size_t kIdleChannels = 4;

class FabricTransfers : public PeerTransfers {
  public:
    FabricTransfers(FabricPeers &peers, std::unique_ptr<Channel> channel, uint64_t generation,
                    std::shared_ptr<FabricBinding> item)
        : peers_(peers),
          channel_(std::move(channel)),
          generation_(generation),
          item_(std::move(item)) {}

    ~FabricTransfers() override {
        // Transfers still in flight use the caller's buffers: let them end (bounded) first.
        // A channel whose failures were not all collected is not handed to the next operation,
        // which would get them.
        try {
            channel_->Quiet();
        } catch (const Failure &) {
            return;
        }
        peers_.ReturnChannel(std::move(channel_), generation_);
    }

    void Read(uint64_t at, void *local, uint64_t nbytes) override {
        channel_->Read(item_, at, local, nbytes, /*blocking=*/false);
    }
    void Write(uint64_t at, const void *local, uint64_t nbytes) override {
        channel_->Write(item_, at, local, nbytes, /*blocking=*/false);
    }
    void Finish() override { channel_->Quiet(); }

  private:
    FabricPeers &peers_;
    std::unique_ptr<Channel> channel_;
    uint64_t generation_;
    std::shared_ptr<FabricBinding> item_;
};

}  // namespace

FabricPeers::FabricPeers(FabricConfig config) : config_(std::move(config)) {
    config_.service.clear();
}

FabricPeers::~FabricPeers() {
    idle_.clear();  // channels close before the context they use
}

void FabricPeers::NoteLives(const ItemLayout &item) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const ItemLayout::Server &server : item.servers) {
        if (server.incarnation.empty() || server.fabric_address.empty()) continue;
        std::string &seen = lives_[server.fabric_address];
        // A life not seen before: also when none was (a channel may have reached the server
        // for a request that named no life, and the server restarted since).
        if (seen != server.incarnation && (!seen.empty() || !idle_.empty())) {
            ++generation_;
            idle_.clear();
        }
        seen = server.incarnation;
    }
}

std::unique_ptr<Channel> FabricPeers::TakeChannel(uint64_t *generation) {
    std::lock_guard<std::mutex> lock(mutex_);
    *generation = generation_;
    if (!context_) {
        // Memory servers initiate only reads and writes: there are no atomics to fall back for.
        context_ = std::make_shared<FabricContext>(config_, [](uint64_t id) -> MemoryServer & {
            Fail(openfam::FAM_ERR_INVALIDOP, "memory server {} reached for an atomic by a peer",
                 id);
        });
    }
    if (idle_.empty()) return std::make_unique<FabricChannel>(context_);
    std::unique_ptr<Channel> channel = std::move(idle_.back());
    idle_.pop_back();
    return channel;
}

void FabricPeers::ReturnChannel(std::unique_ptr<Channel> channel, uint64_t generation) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == generation_ && idle_.size() < kIdleChannels) {
        idle_.push_back(std::move(channel));
    }
}

std::unique_ptr<PeerTransfers> FabricPeers::Open(const ItemLayout &item) {
    NoteLives(item);
    uint64_t generation = 0;
    std::unique_ptr<Channel> channel = TakeChannel(&generation);
    auto binding = std::make_shared<FabricBinding>();
    binding->region_id = item.extent.region_id;
    binding->persistent = item.extent.persistent;
    binding->offset = item.offset;
    binding->size = item.size;
    binding->interleave = item.interleave;
    binding->raid5_members = item.raid5_members;
    binding->name = item.name;
    for (const ItemLayout::Server &server : item.servers) {
        FabricBinding::Server &peer = binding->servers.emplace_back();
        peer.id = server.id;
        if (server.fabric_address.empty()) continue;  // no key: transfers to it fail
        peer.reachable = true;
        peer.address = context_->Insert(server.fabric_address);
        peer.key = server.key;
        peer.base = server.base;
    }
    return std::make_unique<FabricTransfers>(*this, std::move(channel), generation,
                                             std::move(binding));
}

}  // namespace fampool
