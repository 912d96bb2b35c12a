#include "fuzz_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/error.h"

namespace fampool::fuzz {

uint64_t Input::Number(int bytes) {
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= uint64_t{Byte()} << (8 * i);
    return value;
}

uint64_t Input::Below(uint64_t bound) {
    uint8_t kind = Byte();
    uint64_t value = (kind & 0x80) ? Number(8) : (kind & 0x40) ? Number(3) : kind;
    return bound == ~uint64_t{0} ? value : value % (bound + 1);
}

std::string_view Input::Chunk() {
    size_t length = static_cast<size_t>(Number(2));
    size_t take = std::min(length, size_ - std::min(at_, size_));
    std::string_view chunk(reinterpret_cast<const char *>(data_) + std::min(at_, size_), take);
    at_ += take;
    return chunk;
}

std::string_view Input::Rest() {
    size_t from = std::min(at_, size_);
    at_ = size_;
    return {reinterpret_cast<const char *>(data_) + from, size_ - from};
}

void AppendChunk(std::string *out, std::string_view chunk) {
    out->push_back(static_cast<char>(chunk.size() & 0xff));
    out->push_back(static_cast<char>((chunk.size() >> 8) & 0xff));
    out->append(chunk);
}

ScratchDir::ScratchDir(const std::string &tag) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/fampool-fuzz-{}-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (!mkdtemp(pattern.data())) {
        std::perror("fuzz: mkdtemp");
        std::abort();
    }
    path_ = pattern;
}

ScratchDir::~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

void ScratchDir::Clear() const {
    std::error_code ignored;
    for (const auto &entry : std::filesystem::directory_iterator(path_, ignored)) {
        std::filesystem::remove_all(entry.path(), ignored);
    }
}

ScratchDir &ProgramScratch(const std::string &tag) {
    static ScratchDir dir(tag);
    return dir;
}

void WriteSeedsIfAsked(const std::function<std::vector<std::string>()> &seeds) {
    const char *dir = std::getenv("FAMPOOL_FUZZ_WRITE_SEEDS");
    if (!dir || !*dir) return;
    std::filesystem::create_directories(dir);
    std::vector<std::string> inputs = seeds();
    for (size_t i = 0; i < inputs.size(); ++i) {
        std::ofstream(fmt::format("{}/seed-{:03}", dir, i), std::ios::binary) << inputs[i];
    }
    std::printf("wrote %zu seeds to %s\n", inputs.size(), dir);
    std::exit(0);
}

void CallTable::Run(Input &input, const Hooks &hooks) const {
    while (!input.empty()) {
        size_t call = input.Byte() % calls_.size();
        calls_[call](input.Chunk(), hooks);
    }
}

void CallTable::CheckReply(const grpc::Status &status, const google::protobuf::Message &reply) {
    if (!status.ok()) {
        // A refusal must say why: the caller's error message is made of it.
        if (status.error_message().empty()) {
            std::fprintf(stderr, "fuzz: a handler failed (gRPC code %d) without a message\n",
                         static_cast<int>(status.error_code()));
            std::abort();
        }
        return;
    }
    std::string bytes;
    if (!reply.SerializeToString(&bytes)) {
        std::fprintf(stderr, "fuzz: a handler answered OK with a reply that does not serialize\n");
        std::abort();
    }
}

void AppendCall(std::string *out, size_t call, const google::protobuf::Message &request) {
    out->push_back(static_cast<char>(call));
    AppendChunk(out, request.SerializeAsString());
}

namespace {

std::unique_ptr<grpc::Server> ListenOnLoopback(grpc::Service *service, std::string *address) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.RegisterService(service);
    auto server = builder.BuildAndStart();
    if (!server || port == 0) {
        std::fprintf(stderr, "fuzz: cannot listen on a loopback port\n");
        std::abort();
    }
    *address = fmt::format("127.0.0.1:{}", port);
    return server;
}

}  // namespace

Cluster::Cluster() : dir_("cluster"), archive_dir_(dir_.path() + "/archive"), nodes_(kServers) {
    std::filesystem::create_directories(dir_.path() + "/shm");
    std::filesystem::create_directories(dir_.path() + "/heaps");
    FabricConfig fabric;
    fabric.provider = "tcp";
    fabric.node = "127.0.0.1";
    fabric.timeout_ms = 2000;  // a mutated request may name a peer nobody serves
    for (size_t id = 0; id < kServers; ++id) {
        Node &node = nodes_[id];
        node.heaps = std::make_unique<LocalMemoryServer>(
            id,
            HeapLocation{dir_.path() + "/shm", dir_.path() + "/heaps", fmt::format("ms{}", id),
                         FileAccess()},
            archive_dir_);
        node.fabric = std::make_unique<FabricServer>(fabric);
        node.heaps->AttachFabric(node.fabric.get());
        node.peers = std::make_unique<FabricPeers>(fabric);
        node.heaps->AttachPeers(node.peers.get());
    }
    // The servers reach one another (RAID1 mirrors) through their gRPC clients.
    auto peer = [this](uint64_t id) -> MemoryServerClient & {
        if (id >= clients_.size()) Fail(openfam::FAM_ERR_INVALID, "no memory server {}", id);
        return *clients_[id];
    };
    for (size_t id = 0; id < kServers; ++id) {
        Node &node = nodes_[id];
        node.redundancy =
            std::make_unique<RedundancyService>(node.heaps.get(), node.peers.get(), peer);
        node.service = std::make_unique<MemoryServerService>(
            node.heaps.get(), fmt::format("fuzz-{}-{}", getpid(), id), node.redundancy.get());
        node.grpc = ListenOnLoopback(node.service.get(), &node.address);
        clients_.push_back(
            std::make_unique<MemoryServerClient>(id, node.address, std::chrono::seconds(5)));
    }
    for (auto &client : clients_) client_pointers_.push_back(client.get());
    OpenMetadata();
}

void Cluster::OpenMetadata() {
    metadata_.reset();
    store_.reset();
    env_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(fmt::format("{}/meta{}", dir_.path(), stores_), ignored);
    ++stores_;
    env_ = LmdbEnv::Open(fmt::format("{}/meta{}", dir_.path(), stores_), /*sync_commits=*/false);
    MetadataStore::Prepare(*env_);
    std::vector<MemoryServer *> servers;
    PlacementOptions placement;
    placement.interleave_size = kInterleave;
    placement.grant_keys = true;
    for (Node &node : nodes_) servers.push_back(node.heaps.get());  // as in role all: no RPC hop
    store_ = std::make_unique<MetadataStore>(env_, servers, placement);
    metadata_ = std::make_unique<MetadataRpcService>(store_.get(), client_pointers_);
}

Cluster::~Cluster() {
    metadata_.reset();
    for (Node &node : nodes_) node.grpc->Shutdown();
}

void Cluster::Reset(const std::vector<ExtentRef> &extents) {
    for (const MetadataStore::RegionUsage &usage : store_->ListRegions()) {
        const RegionInfo &region = usage.region;
        try {
            store_->DestroyRegion(region.id, Caller{region.uid, region.gid});
        } catch (const Failure &failure) {
            std::fprintf(stderr,
                         "fuzz: region %s (owner %u) cannot be destroyed by its owner: %s\n",
                         region.name.c_str(), region.uid, failure.fam_error_msg());
            std::abort();
        }
    }
    std::vector<uint64_t> usage = store_->ServerUsage();
    for (size_t id = 0; id < usage.size(); ++id) {
        if (usage[id] != 0) {
            std::fprintf(stderr,
                         "fuzz: memory server %zu still has %llu bytes placed after every "
                         "region was destroyed\n",
                         id, static_cast<unsigned long long>(usage[id]));
            std::abort();
        }
    }
    std::error_code ignored;
    std::filesystem::remove_all(archive_dir_, ignored);  // backups the input made
    for (const ExtentRef &extent : extents) {
        for (Node &node : nodes_) {
            try {
                node.heaps->DestroyExtent(extent);
            } catch (const Failure &) {
                // not on this server
            }
        }
    }
    for (const char *kind : {"/shm", "/heaps"}) {
        for (const auto &entry : std::filesystem::directory_iterator(dir_.path() + kind)) {
            std::fprintf(stderr, "fuzz: heap file %s is left after its extent was destroyed\n",
                         entry.path().c_str());
            std::abort();
        }
    }
    OpenMetadata();
}

Cluster *StartCluster(const std::function<std::vector<std::string>()> &seeds) {
    WriteSeedsIfAsked(seeds);
    static Cluster *cluster = new Cluster();
    // Shut down before LeakSanitizer's check at exit (registered earlier, so it runs later):
    // gRPC servers left running hold their worker threads' state, which it reports as leaked.
    std::atexit([] { delete cluster; });
    return cluster;
}

void CollectExtents(const google::protobuf::Message &message, std::vector<ExtentRef> *extents) {
    if (const auto *extent = dynamic_cast<const rpc::Extent *>(&message)) {
        extents->push_back(ExtentRef{extent->region_id(), extent->persistent(), extent->copy()});
        return;
    }
    // Unset fields too: a handler reads an unset Extent as region 0's.
    const google::protobuf::Reflection *reflection = message.GetReflection();
    const google::protobuf::Descriptor *descriptor = message.GetDescriptor();
    for (int f = 0; f < descriptor->field_count(); ++f) {
        const google::protobuf::FieldDescriptor *field = descriptor->field(f);
        if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
        if (field->is_repeated()) {
            for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
                CollectExtents(reflection->GetRepeatedMessage(message, field, i), extents);
            }
        } else {
            CollectExtents(reflection->GetMessage(message, field), extents);
        }
    }
}

}  // namespace fampool::fuzz
