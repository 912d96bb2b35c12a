// Fuzz target: every gRPC handler of the metadata service, fed mutated requests in sequences
// (create a region, allocate in it, look it up, change permissions, destroy...), in-process on
// a real store and real memory servers (fuzz_support.h). After each input every region is
// destroyed by its owner and no byte may be left placed on any server.
#include "fuzz_support.h"
#include "rpc/fampool.pb.h"

namespace fampool::fuzz {
namespace {

using Service = MetadataRpcService;

// The calls, in the order their selector byte picks them (seeds depend on it).
enum CallIndex : size_t {
    kCreateRegion,
    kDestroyRegion,
    kResizeRegion,
    kLookupRegion,
    kGetRegion,
    kChangeRegionPermissions,
    kAllocateItem,
    kDeallocateItem,
    kLookupItem,
    kGetItem,
    kChangeItemPermissions,
    kStatus,
    kServers,
    kListItems,
    kMetadataEndpoint,
    kReportFailure,
    kRebuild,
    kAuthenticate,
    kReportUsage,
};

CallTable Calls(Service *service) {
    CallTable table;
    table.Add(service, &Service::CreateRegion);
    table.Add(service, &Service::DestroyRegion);
    table.Add(service, &Service::ResizeRegion);
    table.Add(service, &Service::LookupRegion);
    table.Add(service, &Service::GetRegion);
    table.Add(service, &Service::ChangeRegionPermissions);
    table.Add(service, &Service::AllocateItem);
    table.Add(service, &Service::DeallocateItem);
    table.Add(service, &Service::LookupItem);
    table.Add(service, &Service::GetItem);
    table.Add(service, &Service::ChangeItemPermissions);
    table.Add(service, &Service::Status);
    table.Add(service, &Service::Servers);
    table.Add(service, &Service::ListItems);
    table.Add(service, &Service::MetadataEndpoint);
    table.Add(service, &Service::ReportFailure);
    table.Add(service, &Service::Rebuild);
    table.Add(service, &Service::Authenticate);
    table.Add(service, &Service::ReportUsage);
    return table;
}

rpc::CreateRegionRequest CreateRegion(const std::string &name, uint64_t size, int redundancy,
                                      int interleave, int memory_type) {
    rpc::CreateRegionRequest request;
    request.mutable_caller()->set_uid(1000);
    request.mutable_caller()->set_gid(1000);
    request.set_name(name);
    request.set_size(size);
    request.set_perm(0640);
    request.mutable_attributes()->set_redundancy(redundancy);
    request.mutable_attributes()->set_interleave(interleave);
    request.mutable_attributes()->set_memory_type(memory_type);
    return request;
}

template <class Request>
Request As(uint32_t uid, uint64_t region_id) {
    Request request;
    request.mutable_caller()->set_uid(uid);
    request.mutable_caller()->set_gid(uid);
    request.set_region_id(region_id);
    return request;
}

// Sequences a program makes: each region kind (plain, interleaved, RAID1, RAID5, persistent),
// its items, lookups, other users, resize, permissions, destruction.
std::vector<std::string> Seeds() {
    std::vector<std::string> seeds;
    const int kinds[][3] = {{0, 0, 0}, {1, 1, 0}, {2, 0, 0}, {3, 1, 0}, {1, 2, 2}, {2, 1, 2}};
    for (const auto &kind : kinds) {
        std::string seed;
        AppendCall(&seed, kCreateRegion, CreateRegion("r", 1 << 20, kind[0], kind[1], kind[2]));
        auto allocate = As<rpc::AllocateRequest>(1000, 1);
        allocate.set_name("x");
        allocate.set_size(8192);
        allocate.set_perm(0600);
        AppendCall(&seed, kAllocateItem, allocate);
        allocate.set_name("");
        allocate.set_size(100);
        AppendCall(&seed, kAllocateItem, allocate);
        rpc::LookupRequest lookup;
        lookup.mutable_caller()->set_uid(1000);
        lookup.set_name("x");
        lookup.set_region("r");
        AppendCall(&seed, kLookupItem, lookup);
        lookup.set_name("r");
        AppendCall(&seed, kLookupRegion, lookup);
        auto item = As<rpc::ItemRequest>(1001, 1);
        AppendCall(&seed, kGetItem, item);
        item.mutable_caller()->set_uid(1000);
        item.set_perm(0666);
        AppendCall(&seed, kChangeItemPermissions, item);
        AppendCall(&seed, kDeallocateItem, item);
        auto region = As<rpc::RegionRequest>(1000, 1);
        region.set_size(4 << 20);
        AppendCall(&seed, kResizeRegion, region);
        AppendCall(&seed, kListItems, region);
        region.set_perm(0600);
        AppendCall(&seed, kChangeRegionPermissions, region);
        AppendCall(&seed, kStatus, rpc::StatusRequest());
        AppendCall(&seed, kDestroyRegion, region);
        seeds.push_back(seed);
    }
    std::string other;
    AppendCall(&other, kServers, rpc::Empty());
    AppendCall(&other, kMetadataEndpoint, rpc::Empty());
    rpc::ServerReport report;
    report.add_servers(1);
    report.add_servers(99);
    AppendCall(&other, kReportFailure, report);
    rpc::RebuildRequest rebuild;
    rebuild.set_region("r");
    AppendCall(&other, kRebuild, rebuild);
    rpc::Credential credential;
    credential.set_munge("MUNGE:not-a-credential:");
    AppendCall(&other, kAuthenticate, credential);
    seeds.push_back(other);
    return seeds;
}

Cluster *world = nullptr;

}  // namespace
}  // namespace fampool::fuzz

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    using namespace fampool::fuzz;
    world = StartCluster(Seeds);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace fampool::fuzz;
    Input input(data, size);
    CallTable table = Calls(&world->metadata());  // the service is new after each Reset
    table.Run(input);
    world->Reset();
    return 0;
}
