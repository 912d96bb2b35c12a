// Fuzz target: the metadata service's fabric messages (meta/metadata_fabric.h). The input is
// an address format (a byte) and a sequence of received messages (chunks); each is decoded as
// the service's progress thread decodes it, run on a real metadata service (fuzz_support.h)
// when it is a call, and its reply cut to fit a message. A reply that does not fit, or that
// names another call, is a finding.
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz_support.h"
#include "meta/metadata_fabric.h"
#include "rpc/fampool.pb.h"

namespace fampool::fuzz {
namespace {

const uint32_t kFormats[] = {FI_SOCKADDR_IN, FI_SOCKADDR_IN6, FI_SOCKADDR, FI_ADDR_STR,
                             FI_FORMAT_UNSPEC};

std::string LoopbackName() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(40000);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return std::string(reinterpret_cast<const char *>(&address), sizeof address);
}

std::vector<std::string> Seeds() {
    std::vector<std::string> seeds;
    for (size_t format = 0; format < 4; ++format) {
        std::string seed(1, static_cast<char>(format));
        rpc::FabricCall call;
        call.set_reply_to(format == 3 ? std::string("fi_sockaddr_in://127.0.0.1:40000")
                                      : LoopbackName());
        uint64_t id = 0;
        auto add = [&](auto setter) {
            rpc::FabricCall each = call;
            each.set_call_id(++id);
            setter(each);
            AppendChunk(&seed, each.SerializeAsString());
        };
        add([format](rpc::FabricCall &c) {
            auto *r = c.mutable_create_region();
            r->mutable_caller()->set_uid(1000);
            r->set_name("r");
            r->set_size(1 << 20);
            r->set_perm(0600);
            r->mutable_attributes()->set_redundancy(format % 2 ? 2 : 0);
            r->mutable_attributes()->set_interleave(1);
        });
        add([](rpc::FabricCall &c) {
            auto *a = c.mutable_allocate_item();
            a->mutable_caller()->set_uid(1000);
            a->set_region_id(1);
            a->set_name("x");
            a->set_size(4096);
            a->set_perm(0600);
        });
        add([](rpc::FabricCall &c) {
            auto *l = c.mutable_lookup_item();
            l->mutable_caller()->set_uid(1000);
            l->set_name("x");
            l->set_region("r");
        });
        add([](rpc::FabricCall &c) { c.mutable_lookup_region()->set_name("r"); });
        add([](rpc::FabricCall &c) { c.mutable_get_item()->set_region_id(1); });
        add([](rpc::FabricCall &c) { c.mutable_get_region()->set_region_id(1); });
        add([](rpc::FabricCall &c) {
            c.mutable_deallocate_item()->mutable_caller()->set_uid(1000);
            c.mutable_deallocate_item()->set_region_id(1);
        });
        add([](rpc::FabricCall &c) {
            c.mutable_destroy_region()->mutable_caller()->set_uid(1000);
            c.mutable_destroy_region()->set_region_id(1);
        });
        seeds.push_back(seed);
    }
    return seeds;
}

void Check(bool holds, const char *what) {
    if (holds) return;
    std::fprintf(stderr, "fuzz: %s\n", what);
    std::abort();
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
    using namespace fampool;
    using namespace fampool::fuzz;
    Input input(data, size);
    uint32_t format = kFormats[input.Byte() % std::size(kFormats)];
    while (!input.empty()) {
        std::string_view message = input.Chunk();
        rpc::FabricCall call;
        if (!DecodeFabricCall(message.data(), message.size(), format, &call)) continue;
        rpc::FabricReply reply;
        DispatchFabricCall(world->metadata(), call, &reply);
        reply.set_call_id(call.call_id());
        FitFabricReply(call, &reply);
        Check(reply.ByteSizeLong() <= kMaxFabricMessage, "a reply does not fit in a message");
        rpc::FabricReply received;
        std::string bytes = reply.SerializeAsString();
        Check(received.ParseFromString(bytes), "a reply does not parse");
        Check(received.call_id() == call.call_id(), "a reply names another call");
        Check(received.code() == 0 || !received.message().empty(), "a refused call has no message");
    }
    world->Reset();
    return 0;
}
