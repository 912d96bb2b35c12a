// A memory server reached over gRPC: the MemoryServer interface for the metadata service and
// for clients (copy, backup, restore, fallback atomics) of the memory-server model.
#ifndef FAMPOOL_RPC_MEMORY_SERVER_CLIENT_H_
#define FAMPOOL_RPC_MEMORY_SERVER_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>

#include "common/memory_server.h"
#include "rpc/fampool.grpc.pb.h"

namespace fampool {

struct MemoryServerInfo {
    uint64_t id = 0;
    std::string fabric_address;
    std::string incarnation;  // new every time the server process starts
    std::string provider;
};

class MemoryServerClient : public MemoryServer {
  public:
    MemoryServerClient(uint64_t id, std::string address, std::chrono::milliseconds timeout);

    uint64_t id() const override { return id_; }
    const std::string &address() const { return address_; }
    MemoryServerInfo Info();
    MemoryServerInfo Info(std::chrono::milliseconds timeout);  // a heartbeat's short wait

    void CreateExtent(ExtentRef extent, uint64_t size) override;
    void DestroyExtent(ExtentRef extent) override;
    void ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size) override;
    void Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) override;
    void ZeroExtents(const std::vector<ExtentRanges> &extents) override;
    void Copy(const ItemLayout &src, uint64_t src_offset, const ItemLayout &dest,
              uint64_t dest_offset, uint64_t nbytes) override;
    BackupInfo Backup(const ItemLayout &item, const BackupInfo &info) override;
    BackupInfo DescribeBackup(const std::string &name) override;
    void Restore(const std::string &name, const ItemLayout &item) override;
    void DeleteBackup(const std::string &name) override;
    std::vector<BackupInfo> ListBackups() override;
    void Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                const void *operand, const void *compare, void *result) override;
    void ApplyElements(ExtentRef extent, uint64_t key, ElementOp op, uint64_t element_size,
                       const std::vector<uint64_t> &offsets, char *data) override;
    KeyGrant GrantKey(ExtentRef extent, uint64_t offset, uint64_t size, bool writable) override;
    void RevokeKeys(ExtentRef extent, uint64_t offset) override;

    // Redundant regions (memserver/redundancy.h), as the messages say. `timeout` 0: the
    // client's; a rebuild gives more.
    rpc::AtomicReply Atomic(const rpc::AtomicRequest &request);
    void Mirror(const rpc::MirrorRequest &request);
    rpc::StripeReply Stripe(const rpc::StripeRequest &request,
                            std::chrono::milliseconds timeout = {});
    void Resync(const rpc::ResyncRequest &request, std::chrono::milliseconds timeout);

  private:
    uint64_t id_;
    std::string address_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<rpc::MemoryServer::Stub> stub_;
};

}  // namespace fampool

#endif  // FAMPOOL_RPC_MEMORY_SERVER_CLIENT_H_
