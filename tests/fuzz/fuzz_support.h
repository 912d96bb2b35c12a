// What the fuzz targets (tests/fuzz/*_fuzz.cc, scripts/fuzz) share: a reader of the fuzzer's
// bytes, scratch directories, the calls of a gRPC service made in-process from serialized
// requests, and an in-process cluster to make them on.
//
// The cluster is real, not a mock: three LocalMemoryServers with their fabric endpoints (tcp
// over loopback), their gRPC services listening on loopback ports, and a metadata service on
// a real LMDB store whose health checks and rebuilds reach the memory servers over gRPC.
// scripts/fuzz runs every target in a network namespace of its own, so that addresses a
// mutated request names cannot lead off the machine.
#ifndef FAMPOOL_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define FAMPOOL_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memserver/fabric_server.h"
#include "memserver/local_memory_server.h"
#include "memserver/memory_server_service.h"
#include "memserver/redundancy.h"
#include "meta/lmdb.h"
#include "meta/metadata_rpc_service.h"
#include "meta/metadata_store.h"
#include "rpc/memory_server_client.h"
#include "transport/fabric/fabric_peers.h"

namespace fampool::fuzz {

// The fuzzer's bytes, taken from the front. Past the end every read returns zeros / empty.
class Input {
  public:
    Input(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool empty() const { return at_ >= size_; }
    uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }
    uint64_t Number(int bytes);  // little-endian, `bytes` of them (1-8)
    // A value in [0, bound]: small numbers often, any number sometimes.
    uint64_t Below(uint64_t bound);
    // A chunk: a 2-byte length, then that many bytes (fewer at the end).
    std::string_view Chunk();
    // The rest of the input.
    std::string_view Rest();

  private:
    const uint8_t *data_;
    size_t size_;
    size_t at_ = 0;
};

// Appends a chunk as Input::Chunk reads it.
void AppendChunk(std::string *out, std::string_view chunk);

// A directory under $TMPDIR removed (with everything in it) when the object goes.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string &tag);
    ~ScratchDir();
    const std::string &path() const { return path_; }
    // Empties the directory, keeping it.
    void Clear() const;

  private:
    std::string path_;
};

// The program's own scratch directory, made on the first call and removed at exit.
ScratchDir &ProgramScratch(const std::string &tag);

// Seeds: when FAMPOOL_FUZZ_WRITE_SEEDS names a directory, a target's LLVMFuzzerInitialize
// writes its seed inputs there (one file each) and the program exits (scripts/fuzz --seed).
void WriteSeedsIfAsked(const std::function<std::vector<std::string>()> &seeds);

// The calls of a gRPC service, each taking a serialized request: the way gRPC would call the
// handler, in-process. A request that does not parse is not called (gRPC refuses it before the
// handler). A handler that lets an exception out, or that answers OK with a reply that cannot
// be serialized, is a finding: the program aborts.
class CallTable {
  public:
    // What a target may do around each call: change the request before it (give it the
    // keys and addresses only a running cluster knows), and read a successful reply.
    struct Hooks {
        std::function<void(google::protobuf::Message &request)> before;
        std::function<void(const google::protobuf::Message &reply)> after;
    };
    using Call = std::function<void(std::string_view request, const Hooks &hooks)>;
    template <class Service, class Request, class Reply>
    void Add(Service *service,
             grpc::Status (Service::*method)(grpc::ServerContext *, const Request *, Reply *)) {
        calls_.push_back([service, method](std::string_view bytes, const Hooks &hooks) {
            Request request;
            if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
            if (hooks.before) hooks.before(request);
            grpc::ServerContext context;
            Reply reply;
            grpc::Status status = (service->*method)(&context, &request, &reply);
            CheckReply(status, reply);
            if (status.ok() && hooks.after) hooks.after(reply);
        });
    }
    // A service's calls as fabric messages: a FabricCall in, its FabricReply out (ServeFabric),
    // judged as a gRPC call's status and reply are.
    template <class Service>
    void AddFabric(Service *service) {
        calls_.push_back([service](std::string_view bytes, const Hooks &hooks) {
            rpc::FabricCall call;
            if (!call.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
            if (hooks.before) hooks.before(call);
            rpc::FabricReply reply;
            service->ServeFabric(call, &reply);
            grpc::Status status(static_cast<grpc::StatusCode>(reply.code()), reply.message(),
                                reply.details());
            CheckReply(status, reply);
            if (status.ok() && hooks.after) hooks.after(reply);
        });
    }
    size_t size() const { return calls_.size(); }
    // Runs the input as a sequence of calls: a byte that picks the call, then its request as
    // a chunk.
    void Run(Input &input, const Hooks &hooks = {}) const;

  private:
    static void CheckReply(const grpc::Status &status, const google::protobuf::Message &reply);
    std::vector<Call> calls_;
};

// Every Extent (rpc) inside `message`, at any depth: the extents a memory-server call names.
void CollectExtents(const google::protobuf::Message &message, std::vector<ExtentRef> *extents);

// Serializes a call of a CallTable: what seeds are made of.
void AppendCall(std::string *out, size_t call, const google::protobuf::Message &request);

// The in-process cluster the RPC targets call.
class Cluster {
  public:
    static constexpr size_t kServers = 3;
    static constexpr uint64_t kInterleave = 4096;
    Cluster();
    ~Cluster();

    MetadataRpcService &metadata() { return *metadata_; }
    MetadataStore &store() { return *store_; }
    MemoryServerService &memory(size_t id) { return *nodes_[id].service; }
    LocalMemoryServer &heaps(size_t id) { return *nodes_[id].heaps; }
    std::string fabric_address(size_t id) const { return nodes_[id].fabric->address(); }
    const std::string &archive_dir() const { return archive_dir_; }
    // Destroys every region (as its owner) and every extent `extents` names, checks that
    // nothing is left (no bytes placed, no heap file), and opens a new metadata store: each
    // input starts on an empty cluster whose region ids start at 1 again.
    void Reset(const std::vector<ExtentRef> &extents = {});

  private:
    void OpenMetadata();
    struct Node {
        std::unique_ptr<LocalMemoryServer> heaps;
        std::unique_ptr<FabricServer> fabric;
        std::unique_ptr<FabricPeers> peers;
        std::unique_ptr<RedundancyService> redundancy;
        std::unique_ptr<MemoryServerService> service;
        std::unique_ptr<grpc::Server> grpc;
        std::string address;
    };
    ScratchDir dir_;
    std::string archive_dir_;
    std::vector<Node> nodes_;
    std::vector<std::unique_ptr<MemoryServerClient>> clients_;
    std::vector<MemoryServerClient *> client_pointers_;
    size_t stores_ = 0;  // metadata stores opened so far
    std::shared_ptr<LmdbEnv> env_;
    std::unique_ptr<MetadataStore> store_;
    std::unique_ptr<MetadataRpcService> metadata_;
};

// What the LLVMFuzzerInitialize of each target that calls a cluster does: writes the target's
// seeds when asked (and exits), else starts the cluster, which lives as long as the program.
Cluster *StartCluster(const std::function<std::vector<std::string>()> &seeds);

}  // namespace fampool::fuzz

#endif  // FAMPOOL_TESTS_FUZZ_FUZZ_SUPPORT_H_
