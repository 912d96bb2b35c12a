// Fuzz target: every gRPC handler of the memory server (extents, zeroing, copy, backup and
// restore, atomics, element operations, keys, and the RAID1/RAID5 calls Mirror, Stripe, Resync
// and Populate), and the calls it takes as fabric messages (ServeFabric: atomics, mirror writes,
// stripe atomics), on three in-process memory servers with real fabric endpoints
// (fuzz_support.h).
//
// A request names keys and fabric addresses only a running server knows; the harness lends
// them: a `key` field of 1-16 becomes the key of that grant made earlier in the input, and a
// `fabric_address` "@N" becomes memory server N's address. Every other value goes as mutated.
// After each input every extent any request named is destroyed, and no heap file may be left.
#include "fuzz_support.h"
#include "rpc/fampool.pb.h"

namespace fampool::fuzz {
namespace {

using Service = MemoryServerService;

enum CallIndex : size_t {
    kAuthenticate,
    kInfo,
    kCreateExtent,
    kDestroyExtent,
    kResizeExtent,
    kZero,
    kZeroExtents,
    kCopy,
    kBackup,
    kDescribeBackup,
    kRestore,
    kDeleteBackup,
    kListBackups,
    kAtomic,
    kApplyElements,
    kGrantKey,
    kRevokeKeys,
    kMirror,
    kStripe,
    kResync,
    kPopulate,
    kFabric,
    kCallsPerServer,
};

// Server s's calls are kCallsPerServer * s + CallIndex.
CallTable Calls(Cluster &cluster) {
    CallTable table;
    for (size_t id = 0; id < Cluster::kServers; ++id) {
        Service *service = &cluster.memory(id);
        table.Add(service, &Service::Authenticate);
        table.Add(service, &Service::Info);
        table.Add(service, &Service::CreateExtent);
        table.Add(service, &Service::DestroyExtent);
        table.Add(service, &Service::ResizeExtent);
        table.Add(service, &Service::Zero);
        table.Add(service, &Service::ZeroExtents);
        table.Add(service, &Service::Copy);
        table.Add(service, &Service::Backup);
        table.Add(service, &Service::DescribeBackup);
        table.Add(service, &Service::Restore);
        table.Add(service, &Service::DeleteBackup);
        table.Add(service, &Service::ListBackups);
        table.Add(service, &Service::Atomic);
        table.Add(service, &Service::ApplyElements);
        table.Add(service, &Service::GrantKey);
        table.Add(service, &Service::RevokeKeys);
        table.Add(service, &Service::Mirror);
        table.Add(service, &Service::Stripe);
        table.Add(service, &Service::Resync);
        table.Add(service, &Service::Populate);
        table.AddFabric(service);
    }
    return table;
}

using google::protobuf::FieldDescriptor;

// Lends keys and addresses (see the top of the file), at any depth of the request.
void Lend(google::protobuf::Message &message, const std::vector<uint64_t> &keys, Cluster &cluster) {
    const google::protobuf::Reflection *reflection = message.GetReflection();
    std::vector<const FieldDescriptor *> fields;
    reflection->ListFields(message, &fields);
    for (const FieldDescriptor *field : fields) {
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
            if (field->is_repeated()) {
                for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
                    Lend(*reflection->MutableRepeatedMessage(&message, field, i), keys, cluster);
                }
            } else {
                Lend(*reflection->MutableMessage(&message, field), keys, cluster);
            }
        } else if (field->name() == "key" && field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
            uint64_t key = reflection->GetUInt64(message, field);
            if (key >= 1 && key <= keys.size())
                reflection->SetUInt64(&message, field, keys[key - 1]);
        } else if (field->name() == "fabric_address" && !field->is_repeated()) {
            std::string value = reflection->GetString(message, field);
            if (value.size() == 2 && value[0] == '@' && value[1] >= '0' &&
                value[1] < '0' + static_cast<int>(Cluster::kServers)) {
                reflection->SetString(&message, field, cluster.fabric_address(value[1] - '0'));
            }
        }
    }
}

rpc::ExtentRequest Extent(uint64_t region, uint64_t size, bool copy = false) {
    rpc::ExtentRequest request;
    request.mutable_extent()->set_region_id(region);
    request.mutable_extent()->set_copy(copy);
    request.set_size(size);
    return request;
}

void AddMember(rpc::StripeRequest *request, uint64_t server, uint64_t key) {
    rpc::Member *member = request->add_members();
    member->set_server_id(server);
    member->mutable_extent()->set_region_id(1);
    member->set_fabric_address("@" + std::to_string(server));
    member->set_key(key);
}

// Extent life, keys, zeroing, atomics and element operations, backup and restore, copy
// between servers, RAID1 mirrors and resync, RAID5 stripes.
std::vector<std::string> Seeds() {
    std::vector<std::string> seeds;
    auto on = [](size_t server, CallIndex call) { return kCallsPerServer * server + call; };
    std::string basic;
    AppendCall(&basic, on(0, kCreateExtent), Extent(1, 1 << 20));
    auto grant = Extent(1, 0);
    grant.set_offset(0);
    grant.set_size(65536);
    grant.set_writable(true);
    AppendCall(&basic, on(0, kGrantKey), grant);
    rpc::AtomicRequest atomic;
    atomic.mutable_extent()->set_region_id(1);
    atomic.set_offset(64);
    atomic.set_op(1);
    atomic.set_type(3);
    atomic.set_operand(std::string(8, '\x01'));
    atomic.set_key(1);
    AppendCall(&basic, on(0, kAtomic), atomic);
    rpc::ElementsRequest elements;
    elements.mutable_extent()->set_region_id(1);
    elements.set_key(1);
    elements.set_element_size(8);
    elements.add_offsets(0);
    elements.add_offsets(4096);
    elements.set_data(std::string(16, 'a'));
    AppendCall(&basic, on(0, kApplyElements), elements);
    auto zero = Extent(1, 4096);
    zero.set_offset(8192);
    AppendCall(&basic, on(0, kZero), zero);
    auto resize = Extent(1, 1 << 20);
    resize.set_new_size(2 << 20);
    AppendCall(&basic, on(0, kResizeExtent), resize);
    rpc::BackupRequest backup;
    backup.mutable_item()->mutable_extent()->set_region_id(1);
    backup.mutable_item()->set_size(4096);
    backup.mutable_item()->add_servers()->set_server_id(0);
    backup.mutable_info()->set_name("b");
    backup.mutable_info()->set_size(4096);
    AppendCall(&basic, on(0, kBackup), backup);
    AppendCall(&basic, on(0, kDescribeBackup), backup.info());
    AppendCall(&basic, on(0, kRestore), backup);
    AppendCall(&basic, on(0, kListBackups), rpc::Caller());
    AppendCall(&basic, on(0, kDeleteBackup), backup.info());
    AppendCall(&basic, on(0, kRevokeKeys), Extent(1, 0));
    AppendCall(&basic, on(0, kDestroyExtent), Extent(1, 0));
    seeds.push_back(basic);

    // RAID1: the extent on server 0, its copy on server 1; mirror and resync.
    std::string mirror;
    AppendCall(&mirror, on(0, kCreateExtent), Extent(1, 1 << 20));
    AppendCall(&mirror, on(1, kCreateExtent), Extent(1, 1 << 20, true));
    auto whole = Extent(1, 0);
    whole.set_writable(true);
    AppendCall(&mirror, on(0, kGrantKey), whole);
    whole.mutable_extent()->set_copy(true);
    AppendCall(&mirror, on(1, kGrantKey), whole);
    rpc::MirrorRequest copy_word;
    copy_word.mutable_extent()->set_region_id(1);
    copy_word.mutable_extent()->set_copy(true);
    copy_word.set_key(2);
    copy_word.set_offset(128);
    copy_word.set_value(std::string(8, '\x07'));
    copy_word.set_op_id("op-1");
    AppendCall(&mirror, on(1, kMirror), copy_word);
    atomic.set_key(1);
    atomic.mutable_mirror()->set_server_id(1);
    atomic.mutable_mirror()->mutable_extent()->set_region_id(1);
    atomic.mutable_mirror()->mutable_extent()->set_copy(true);
    atomic.mutable_mirror()->set_fabric_address("@1");
    atomic.mutable_mirror()->set_key(2);
    atomic.set_op_id("op-2");
    AppendCall(&mirror, on(0, kAtomic), atomic);
    rpc::FabricCall message;
    *message.mutable_atomic() = atomic;
    message.mutable_atomic()->set_op_id("op-3");
    AppendCall(&mirror, on(0, kFabric), message);
    copy_word.set_op_id("op-4");
    *message.mutable_mirror() = copy_word;
    AppendCall(&mirror, on(1, kFabric), message);
    rpc::ResyncRequest resync;
    resync.mutable_extent()->set_region_id(1);
    resync.mutable_target()->set_server_id(1);
    resync.mutable_target()->mutable_extent()->set_region_id(1);
    resync.mutable_target()->mutable_extent()->set_copy(true);
    resync.mutable_target()->set_fabric_address("@1");
    resync.mutable_target()->set_key(2);
    resync.set_begin(0);
    resync.set_end(1 << 20);
    AppendCall(&mirror, on(0, kResync), resync);
    rpc::CopyRequest copy;
    for (rpc::ItemLayout *layout : {copy.mutable_src(), copy.mutable_dest()}) {
        layout->mutable_extent()->set_region_id(1);
        layout->set_size(65536);
        rpc::ServerAccess *access = layout->add_servers();
        access->set_server_id(0);
        access->set_fabric_address("@0");
        access->set_key(1);
    }
    copy.set_dest_offset(4096);
    copy.set_size(4096);
    AppendCall(&mirror, on(0, kCopy), copy);
    seeds.push_back(mirror);

    // RAID5 over the three servers: extents, whole-extent keys, a write, a read, an atomic,
    // a rebuild of member 2.
    std::string stripe;
    for (size_t server = 0; server < Cluster::kServers; ++server) {
        AppendCall(&stripe, on(server, kCreateExtent), Extent(1, 1 << 20));
        whole.mutable_extent()->set_copy(false);
        AppendCall(&stripe, on(server, kGrantKey), whole);
    }
    rpc::StripeRequest request;
    request.set_op(rpc::StripeRequest::WRITE);
    request.set_interleave(Cluster::kInterleave);
    for (uint64_t server = 0; server < Cluster::kServers; ++server) {
        AddMember(&request, server, server + 1);
    }
    request.set_self(0);
    rpc::StripePiece *piece = request.add_pieces();
    piece->set_stripe(0);
    piece->set_column(0);
    piece->set_within(16);
    piece->set_length(64);
    request.set_data(std::string(64, 'z'));
    AppendCall(&stripe, on(0, kStripe), request);
    request.set_op(rpc::StripeRequest::READ);
    request.clear_data();
    AppendCall(&stripe, on(0, kStripe), request);
    request.set_op(rpc::StripeRequest::ATOMIC);
    piece->set_length(8);
    request.set_atomic_op(1);
    request.set_type(3);
    request.set_operand(std::string(8, '\x02'));
    AppendCall(&stripe, on(0, kStripe), request);
    rpc::FabricCall stripe_atomic;
    *stripe_atomic.mutable_stripe() = request;
    AppendCall(&stripe, on(0, kFabric), stripe_atomic);
    request.set_op(rpc::StripeRequest::REBUILD);
    request.clear_pieces();
    AppendCall(&stripe, on(0, kStripe), request);
    rpc::ZeroRequest zeroes;
    rpc::ExtentRanges *ranges = zeroes.add_extents();
    ranges->mutable_extent()->set_region_id(1);
    rpc::ByteRange *range = ranges->add_ranges();
    range->set_offset(0);
    range->set_size(1 << 16);
    AppendCall(&stripe, on(2, kZeroExtents), zeroes);
    AppendCall(&stripe, on(1, kInfo), rpc::Empty());
    seeds.push_back(stripe);
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
    static CallTable table = Calls(*world);
    Input input(data, size);
    std::vector<uint64_t> keys;
    std::vector<fampool::ExtentRef> extents;
    CallTable::Hooks hooks;
    hooks.before = [&](google::protobuf::Message &request) {
        Lend(request, keys, *world);
        CollectExtents(request, &extents);
    };
    hooks.after = [&](const google::protobuf::Message &reply) {
        if (const auto *grant = dynamic_cast<const fampool::rpc::KeyGrant *>(&reply)) {
            keys.push_back(grant->key());
        }
    };
    table.Run(input, hooks);
    world->Reset(extents);
    return 0;
}
