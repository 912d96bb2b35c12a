// The memory server's side of the libfabric data path: one RDM endpoint that clients address
// with fi_read / fi_write / fi_atomic, the registrations of the heaps they may reach, and the
// thread that drives the endpoint for providers with manual progress (shm, tcp), without
// spinning a core while nobody uses it.
#ifndef FAMPOOL_MEMSERVER_FABRIC_SERVER_H_
#define FAMPOOL_MEMSERVER_FABRIC_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fabric/fabric.h"
#include "memserver/registrar.h"

namespace fampool {

class FabricServer : public Registrar {
  public:
    // How the progress thread waits for work. kBlocking polls while traffic flows, then sleeps:
    // on the completion queue's file descriptor where the provider has one that wakes on
    // traffic (tcp), else in naps that grow with idle time (shm, up to 100 us). kBusyPoll never
    // sleeps (for measuring what sleeping costs).
    enum class Progress { kBlocking, kBusyPoll };

    // Opens the endpoint at config.node:config.service (the memory server's libfabric port).
    explicit FabricServer(const FabricConfig &config, Progress progress = Progress::kBlocking);
    ~FabricServer() override;
    FabricServer(const FabricServer &) = delete;
    FabricServer &operator=(const FabricServer &) = delete;

    // The endpoint's name (fi_getname bytes): what clients insert into their address vectors.
    std::string address() const override { return address_; }
    std::string provider() const override { return domain_.provider(); }

    // A range clients may reach: they present the key and address byte o of the range (o
    // counted from `address`) as base + o. Read-only registrations allow remote reads only;
    // writable ones also remote writes and atomics.
    Registration Register(void *address, size_t length, bool writable) override;
    // Closes the registration: from now on its key fails at the client, and the provider no
    // longer touches the range.
    void Deregister(uint64_t handle) override;

    // Reads and writes (RMA and atomics) clients applied to this server's memory so far, where
    // the provider counts them (FI_RMA_EVENT: shm) and the progress thread drives it; else
    // nullopt (tcp and verbs apply them without telling the server).
    std::optional<uint64_t> remote_operations() const {
        if (!endpoint_.counter || !progress_.joinable()) return std::nullopt;
        return remote_operations_.load(std::memory_order_relaxed);
    }

  private:
    // Drives the endpoint once; true when it did work (served an operation, reaped an entry).
    bool Served();
    void DriveProgress();

    FabricDomain domain_;
    FidPtr<fid_av> av_;
    FabricEndpoint endpoint_;
    int queue_fd_ = -1;                           // the queue's wait descriptor, where it has one
    std::atomic<uint64_t> remote_operations_{0};  // operations served so far (FI_RMA_EVENT)
    std::string address_;
    Progress mode_;

    std::mutex mutex_;
    std::map<uint64_t, FidPtr<fid_mr>> registrations_;
    uint64_t next_handle_ = 1;

    std::atomic<bool> stopping_{false};
    std::thread progress_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_FABRIC_SERVER_H_
