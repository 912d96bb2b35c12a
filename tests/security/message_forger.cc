// message_forger: a hostile user's messages to another user's fabric-message endpoints, for
// the multi-user suite (test_multiuser.py), which runs it as the attacking user:
//
//   message_forger replies VICTIM_UID REGION ITEM SECONDS
//
// For SECONDS it looks for the listening TCP ports of VICTIM_UID's processes in /proc/net/tcp
// (which any user may read), every 100 ms, and sends each port it found, over tcp;ofi_rxm as
// fampool's own endpoints do:
//   forged replies: a FabricReply for every call id from 1 to 120 and for 8 random ones, each
//     naming this user's own item ITEM of REGION, as a lookup's or an allocation's reply
//     would; half unsealed, half ending in a made-up tag;
//   relayed calls: this user's own lookups of ITEM, sealed with this user's session, sent to
//     the metadata service's endpoint with reply_to naming the victim's port.
// Prints "<what> 0 <count>" for victim-endpoints, forged and relayed (the messages the provider
// took).
//
//   message_forger flood SECONDS [RATE [PERIOD_MS]]
//
// For SECONDS, calls to the metadata service's and every memory server's endpoint, RATE a
// second in all (0 or none: as fast as the provider takes them), none with a session:
// unsealed lookups, and lookups naming a session nobody opened with a made-up tag, each with
// a reply_to that never accepts (port 1). With PERIOD_MS, only in the first half of each
// period (from the steady clock's time printed as start_ns): the other half is quiet. Prints
// "flood 0 <count>" and "start_ns 0 <ns>".
//
// Configured like any client: FAMPOOL_CONFIG names the (MUNGE) cluster's file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cluster_config.h"
#include "common/config.h"
#include "messages/fabric_messages.h"
#include "messages/message_seal.h"
#include "meta/client/metadata_client.h"
#include "rpc/authentication.h"
#include "rpc/convert.h"
#include "rpc/memory_server_client.h"

namespace {

using namespace fampool;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTimeout(10000);
constexpr size_t kSlots = 256;
constexpr size_t kSlotBytes = 2048;

// The IPv4 addresses of the TCP ports `uid`'s processes listen on.
std::vector<std::string> ListeningPorts(uint32_t uid) {
    std::vector<std::string> found;
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the heading
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits;
        uint32_t owner = 0;
        fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> owner;
        if (state != "0A" || owner != uid) continue;  // 0A: LISTEN
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr =
            static_cast<uint32_t>(std::stoul(local.substr(0, 8), nullptr, 16));
        address.sin_port = htons(static_cast<uint16_t>(std::stoul(local.substr(9), nullptr, 16)));
        found.emplace_back(reinterpret_cast<const char *>(&address), sizeof address);
    }
    return found;
}

class Sender {
    static FabricConfig ConfigOf(const std::string &provider) {
        FabricConfig config;
        config.provider = provider;
        return config;
    }

  public:
    explicit Sender(const std::string &provider)
        : config_(ConfigOf(provider)),
          domain_(config_, FabricDomain::Role::kMessages),
          av_(domain_.OpenAddressVector()),
          endpoint_(OpenEndpoint(domain_, av_.get(), MessageEndpointOptions(domain_))),
          slots_(domain_, endpoint_.endpoint.get(), kSlots, kSlotBytes),
          contexts_(kSlots) {
        for (size_t i = 0; i < kSlots; ++i) free_.push_back(i);
    }
    ~Sender() { endpoint_.Close(); }

    // The address vector entry of `address`, inserted the first time.
    fi_addr_t Peer(const std::string &address) {
        auto known = peers_.find(address);
        if (known != peers_.end()) return known->second;
        fi_addr_t peer = FI_ADDR_UNSPEC;
        if (fi_av_insert(av_.get(), address.data(), 1, &peer, 0, nullptr) != 1) {
            peer = FI_ADDR_UNSPEC;
        }
        peers_.emplace(address, peer);
        return peer;
    }
    // Offers `bytes` to `peer`; whether the provider took them.
    bool Send(fi_addr_t peer, const std::string &bytes) {
        Progress();
        if (peer == FI_ADDR_UNSPEC || free_.empty() || bytes.size() > kSlotBytes) return false;
        size_t slot = free_.back();
        std::memcpy(slots_.slot(slot), bytes.data(), bytes.size());
        if (fi_send(endpoint_.endpoint.get(), slots_.slot(slot), bytes.size(), slots_.descriptor(),
                    peer, &contexts_[slot]) != 0) {
            return false;
        }
        free_.pop_back();
        return true;
    }
    void Progress() {
        fi_cq_msg_entry entries[16];
        for (;;) {
            ssize_t n = fi_cq_read(endpoint_.queue.get(), entries, 16);
            if (n == -FI_EAVAIL) {
                fi_cq_err_entry error{};
                if (fi_cq_readerr(endpoint_.queue.get(), &error, 0) > 0) Free(error.op_context);
                continue;
            }
            if (n <= 0) return;
            for (ssize_t i = 0; i < n; ++i) Free(entries[i].op_context);
        }
    }

  private:
    void Free(void *context) {
        auto *at = static_cast<fi_context2 *>(context);
        if (at >= contexts_.data() && at < contexts_.data() + contexts_.size()) {
            free_.push_back(static_cast<size_t>(at - contexts_.data()));
        }
    }

    FabricConfig config_;
    FabricDomain domain_;
    FidPtr<fid_av> av_;
    FabricEndpoint endpoint_;
    MessageSlots slots_;
    std::vector<fi_context2> contexts_;
    std::vector<size_t> free_;
    std::map<std::string, fi_addr_t> peers_;
};

ClusterConfig Cluster() {
    const char *path = std::getenv("FAMPOOL_CONFIG");
    if (!path) throw std::runtime_error("FAMPOOL_CONFIG is not set");
    return LoadClusterConfig(path);
}

// The bytes of a sockaddr_in for 127.0.0.1:`port`.
std::string Loopback(uint16_t port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    return std::string(reinterpret_cast<const char *>(&address), sizeof address);
}

int Flood(int seconds, double rate, int period_ms) {
    ClusterConfig cluster = Cluster();
    std::vector<std::string> endpoints;
    {
        auto stub =
            rpc::Metadata::NewStub(OpenChannel(cluster.metadata_address, ClientTls(cluster)));
        auto context = CallContext(kTimeout);
        rpc::FabricEndpoint service;
        CheckStatus(stub->MetadataEndpoint(context.get(), rpc::Caller(), &service),
                    "Metadata.MetadataEndpoint", cluster.metadata_address);
        if (!service.address().empty()) endpoints.push_back(service.address());
    }
    for (const MemoryServerConfig &server : cluster.memservers) {
        MemoryServerClient client(server.id, server.rpc_address, kTimeout, ClientTls(cluster));
        MemoryServerInfo info = client.Info();
        if (!info.messages_address.empty()) endpoints.push_back(info.messages_address);
    }
    Sender sender(cluster.provider.empty() ? "tcp" : cluster.provider);
    std::vector<fi_addr_t> peers;
    for (const std::string &endpoint : endpoints) peers.push_back(sender.Peer(endpoint));
    std::mt19937_64 random(std::random_device{}());
    uint64_t sent = 0;
    auto start = Clock::now();
    auto until = start + std::chrono::seconds(seconds);
    const std::chrono::milliseconds period(period_ms), half(period_ms / 2);
    Clock::duration quiet{};  // the quiet halves so far: the pace counts the loud ones only
    while (Clock::now() < until) {
        if (period_ms > 0 && (Clock::now() - start) % period >= half) {
            auto next = start + ((Clock::now() - start) / period + 1) * period;
            std::this_thread::sleep_until(next);
            quiet += period - half;
            continue;
        }
        if (rate > 0) {
            // Paced: the messages sent so far are due by now.
            auto due = start + quiet +
                       std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(sent / rate));
            if (due > Clock::now()) std::this_thread::sleep_until(due);
        }
        for (fi_addr_t peer : peers) {
            rpc::FabricCall call;
            call.set_call_id(random());
            call.set_reply_to(Loopback(1));
            rpc::LookupRequest *lookup = call.mutable_lookup_region();
            lookup->set_name("anything");
            std::string bytes = call.SerializeAsString();
            sent += sender.Send(peer, bytes) ? 1 : 0;
            call.set_session(std::string(16, static_cast<char>(random())));
            bytes = call.SerializeAsString() + std::string(kSealBytes, 'x');
            sent += sender.Send(peer, bytes) ? 1 : 0;
        }
        sender.Progress();
    }
    std::printf("endpoints 0 %zu\nflood 0 %lu\nstart_ns 0 %lld\n", endpoints.size(),
                static_cast<unsigned long>(sent),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch())
                        .count()));
    return 0;
}

int Forge(uint32_t victim, const std::string &region, const std::string &item, int seconds) {
    ClusterConfig cluster = Cluster();
    MetadataClient metadata(cluster.metadata_address, kTimeout, ClientTls(cluster));
    if (cluster.authentication == "munge") metadata.UseMunge(cluster.munge_socket);
    Caller me{getuid(), getgid()};
    // This user's own item, as a reply that names it carries it.
    rpc::Item own;
    ToProto(metadata.LookupItem(item, region, me), &own);
    rpc::Session session = metadata.Authenticate();
    SessionSeal seal = SessionSeal::Of(session.token());
    rpc::Caller asking;
    asking.set_token(session.token());
    rpc::FabricEndpoint service;
    {
        auto stub =
            rpc::Metadata::NewStub(OpenChannel(cluster.metadata_address, ClientTls(cluster)));
        auto context = CallContext(kTimeout);
        CheckStatus(stub->MetadataEndpoint(context.get(), asking, &service),
                    "Metadata.MetadataEndpoint", cluster.metadata_address);
    }
    Sender sender(cluster.provider.empty() ? "tcp" : cluster.provider);
    fi_addr_t service_peer =
        service.address().empty() ? FI_ADDR_UNSPEC : sender.Peer(service.address());

    std::mt19937_64 random(std::random_device{}());
    std::map<std::string, bool> victims;
    uint64_t forged = 0, relayed = 0;
    auto until = Clock::now() + std::chrono::seconds(seconds);
    auto next_scan = Clock::now();
    while (Clock::now() < until) {
        if (Clock::now() >= next_scan) {
            for (const std::string &address : ListeningPorts(victim)) victims[address] = true;
            next_scan = Clock::now() + std::chrono::milliseconds(100);
        }
        for (const auto &[address, unused] : victims) {
            fi_addr_t peer = sender.Peer(address);
            std::vector<uint64_t> ids;
            for (uint64_t id = 1; id <= 120; ++id) ids.push_back(id);
            for (int i = 0; i < 8; ++i) ids.push_back(random());
            for (uint64_t id : ids) {
                rpc::FabricReply reply;
                reply.set_call_id(id);
                *reply.mutable_item() = own;
                std::string bytes = reply.SerializeAsString();
                if (id % 2 == 0) bytes += std::string(kSealBytes, static_cast<char>(id));
                forged += sender.Send(peer, bytes) ? 1 : 0;
            }
            rpc::FabricCall call;
            call.set_call_id(random());
            call.set_reply_to(address);
            call.set_session(seal.id);
            rpc::LookupRequest *lookup = call.mutable_lookup_item();
            lookup->set_name(item);
            lookup->set_region(region);
            lookup->mutable_caller()->set_uid(me.uid);
            lookup->mutable_caller()->set_gid(me.gid);
            std::string bytes = call.SerializeAsString();
            bytes.resize(bytes.size() + kSealBytes);
            SealMessage(seal.key, bytes.data(), bytes.size() - kSealBytes);
            relayed += sender.Send(service_peer, bytes) ? 1 : 0;
        }
        sender.Progress();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::printf("victim-endpoints 0 %zu\nforged 0 %lu\nrelayed 0 %lu\n", victims.size(),
                static_cast<unsigned long>(forged), static_cast<unsigned long>(relayed));
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.size() == 5 && args[0] == "replies") {
            return Forge(static_cast<uint32_t>(std::stoul(args[1])), args[2], args[3],
                         std::stoi(args[4]));
        }
        if (args.size() >= 2 && args.size() <= 4 && args[0] == "flood") {
            return Flood(std::stoi(args[1]), args.size() >= 3 ? std::stod(args[2]) : 0,
                         args.size() == 4 ? std::stoi(args[3]) : 0);
        }
        std::fprintf(stderr,
                     "usage: message_forger replies VICTIM_UID REGION ITEM SECONDS | flood "
                     "SECONDS [RATE [PERIOD_MS]]\n");
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "message_forger: %s\n", e.what());
        return 1;
    }
}
