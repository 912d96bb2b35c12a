// Metadata calls over the fabric (meta/client/metadata_fabric_client.h to
// meta/metadata_fabric.h) against real fampool-server processes: the service names its
// endpoint in its status, lookups and allocations made that way answer exactly as over gRPC
// (errors included), malformed messages leave the service serving, and a client whose
// metadata service restarts carries on (over gRPC at once, over the fabric again once it has
// found the new endpoint).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/cluster_config.h"
#include "meta/client/metadata_client.h"
#include "rpc/convert.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;
using fampool::Caller;
using fampool::FabricConfig;
using fampool::MetadataClient;
using Clock = std::chrono::steady_clock;

// On a cluster of one memory server of the provider GetParam().
class MetadataFabricTest : public FamTest, public ::testing::WithParamInterface<const char *> {
  protected:
    void PrepareEnvironment() override {
        SetEnv("FAMPOOL_TEST_CLUSTER", std::string("1:0:") + GetParam());
    }

    std::string MetadataAddress() {
        return fampool::LoadClusterConfig(cluster()->config_path()).metadata_address;
    }
    // A client of the test's metadata service that makes its frequent calls over the fabric.
    std::unique_ptr<MetadataClient> FabricClient() {
        auto client =
            std::make_unique<MetadataClient>(MetadataAddress(), std::chrono::milliseconds(5000));
        FabricConfig fabric;
        fabric.provider = GetParam();
        client->UseFabric(fabric);
        return client;
    }
    Caller me() const {
        return Caller{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid())};
    }
};

TEST_P(MetadataFabricTest, StatusNamesTheServiceEndpointAndCountsItsCalls) {
    auto client = FabricClient();
    fampool::rpc::ClusterStatus before = client->Status();
    EXPECT_EQ(before.metadata_fabric_provider(), GetParam());
    EXPECT_FALSE(before.metadata_fabric_address().empty());
    EXPECT_FALSE(before.metadata_fabric_name().empty());

    auto region = CreateRegion("r", 4 << 20);
    for (int i = 0; i < 5; ++i) delete fam()->fam_lookup_region("r");
    fampool::rpc::ClusterStatus after = client->Status();
    // The fixture's fam object made the five lookups (and its first calls) over the fabric.
    EXPECT_GE(after.metadata_fabric_calls(), before.metadata_fabric_calls() + 5);
}

TEST_P(MetadataFabricTest, CallsOverTheFabricAnswerAsOverGrpc) {
    auto region = CreateRegion("r", 4 << 20, 0700);
    auto over_fabric = FabricClient();
    MetadataClient over_grpc(MetadataAddress(), std::chrono::milliseconds(5000));

    fampool::RegionInfo a = over_fabric->LookupRegion("r", me());
    fampool::RegionInfo b = over_grpc.LookupRegion("r", me());
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.perm, b.perm);
    EXPECT_EQ(over_fabric->GetRegion(a.id, me()).name, "r");

    fampool::ItemInfo item = over_fabric->AllocateItem(a.id, "x", 8192, 0640, me());
    EXPECT_EQ(item.size, 8192u);
    fampool::ItemInfo found = over_grpc.LookupItem("x", "r", me());
    EXPECT_EQ(found.offset, item.offset);
    EXPECT_EQ(over_fabric->LookupItem("x", "r", me()).offset, item.offset);
    EXPECT_EQ(over_fabric->GetItem(a.id, item.offset, me()).perm, 0640u);
    EXPECT_GE(over_fabric->fabric_calls(), 5u);

    // Errors travel with their codes and messages.
    CaughtError missing = CatchFamError([&] { over_fabric->LookupRegion("nope", me()); });
    EXPECT_EQ(missing.code, FAM_ERR_NOTFOUND) << missing.message;
    EXPECT_NE(missing.message.find("nope"), std::string::npos) << missing.message;
    CaughtError taken =
        CatchFamError([&] { over_fabric->AllocateItem(a.id, "x", 64, 0600, me()); });
    EXPECT_EQ(taken.code, FAM_ERR_ALREADYEXIST) << taken.message;
    Caller stranger{me().uid + 1000, me().gid + 1000};
    CaughtError denied =
        CatchFamError([&] { over_fabric->AllocateItem(a.id, "y", 64, 0600, stranger); });
    EXPECT_EQ(denied.code, FAM_ERR_NOPERM) << denied.message;

    over_fabric->DeallocateItem(a.id, item.offset, me());
    CaughtError gone = CatchFamError([&] { over_grpc.LookupItem("x", "r", me()); });
    EXPECT_EQ(gone.code, FAM_ERR_NOTFOUND) << gone.message;
    EXPECT_FALSE(over_fabric->fabric_calls() == 0);
}

// Region creation and destruction wait on the memory servers: the service runs them on its
// worker thread and answers other callers meanwhile.
TEST_P(MetadataFabricTest, RegionsAreCreatedAndDestroyedOverTheFabric) {
    auto over_fabric = FabricClient();
    MetadataClient over_grpc(MetadataAddress(), std::chrono::milliseconds(5000));
    Fam_Region_Attributes attributes{};
    uint64_t before = over_fabric->fabric_calls();
    fampool::RegionInfo made = over_fabric->CreateRegion("made", 4 << 20, 0640, attributes, me());
    EXPECT_EQ(over_fabric->fabric_calls(), before + 1);
    fampool::RegionInfo found = over_grpc.LookupRegion("made", me());
    EXPECT_EQ(found.id, made.id);
    EXPECT_EQ(found.size, uint64_t{4} << 20);
    EXPECT_EQ(found.perm, 0640u);
    EXPECT_EQ(found.memory_servers, made.memory_servers);

    CaughtError twice =
        CatchFamError([&] { over_fabric->CreateRegion("made", 4 << 20, 0640, attributes, me()); });
    EXPECT_EQ(twice.code, FAM_ERR_ALREADYEXIST) << twice.message;
    Caller stranger{me().uid + 1000, me().gid + 1000};
    CaughtError denied = CatchFamError([&] { over_fabric->DestroyRegion(made.id, stranger); });
    EXPECT_EQ(denied.code, FAM_ERR_NOPERM) << denied.message;

    // Lookups by another caller are answered while regions come and go.
    auto looking = FabricClient();
    ASSERT_EQ(looking->LookupRegion("made", me()).id, made.id);  // connected before the cycles
    std::atomic<bool> done{false};
    std::atomic<int> lookups{0}, wrong{0};
    std::thread lookup([&] {
        while (!done) {
            try {
                if (looking->LookupRegion("made", me()).id == made.id) ++lookups;
            } catch (const Fam_Exception &) {
                ++wrong;
            }
        }
    });
    for (int i = 0; i < 20; ++i) {
        fampool::RegionInfo cycle =
            over_fabric->CreateRegion("cycle", 1 << 20, 0600, attributes, me());
        over_fabric->DestroyRegion(cycle.id, me());
    }
    done = true;
    lookup.join();
    EXPECT_GT(lookups.load(), 0);
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GT(looking->fabric_calls(), 1u);

    before = over_fabric->fabric_calls();
    over_fabric->DestroyRegion(made.id, me());
    EXPECT_EQ(over_fabric->fabric_calls(), before + 1);
    CaughtError gone = CatchFamError([&] { over_grpc.LookupRegion("made", me()); });
    EXPECT_EQ(gone.code, FAM_ERR_NOTFOUND) << gone.message;
}

// Sends raw messages to the service's endpoint, as a broken or hostile client would.
class RawEndpoint {
  public:
    RawEndpoint(const std::string &provider, const std::string &service)
        : domain_(Config(provider), fampool::FabricDomain::Role::kMessages),
          av_(domain_.OpenAddressVector()),
          endpoint_(fampool::OpenEndpoint(domain_, av_.get(), Options())),
          address_(fampool::EndpointAddress(endpoint_.endpoint.get(), provider)) {
        if (fi_av_insert(av_.get(), service.data(), 1, &service_, 0, nullptr) != 1) {
            throw std::runtime_error("fi_av_insert of the service failed");
        }
    }
    const std::string &address() const { return address_; }
    // Sends `bytes`; true once the send completed without error.
    bool Send(const std::string &bytes) {
        sent_ = bytes;
        auto deadline = Clock::now() + std::chrono::seconds(5);
        ssize_t ret;
        // The provider answers EAGAIN while it connects to the service.
        while ((ret = fi_send(endpoint_.endpoint.get(), sent_.data(), sent_.size(), nullptr,
                              service_, &send_context_)) == -FI_EAGAIN &&
               Clock::now() < deadline) {
            fi_cq_msg_entry entry;
            fi_cq_read(endpoint_.queue.get(), &entry, 0);
        }
        return ret == 0 && Wait(&send_context_);
    }
    // Waits (at most 5 s) for a message; false when none came.
    bool Receive(std::string *bytes) {
        received_.assign(64 << 10, '\0');
        if (fi_recv(endpoint_.endpoint.get(), received_.data(), received_.size(), nullptr,
                    FI_ADDR_UNSPEC, &receive_context_) != 0) {
            return false;
        }
        bool got = Wait(&receive_context_);
        if (got) *bytes = received_.substr(0, length_);
        return got;
    }

  private:
    static FabricConfig Config(const std::string &provider) {
        FabricConfig config;
        config.provider = provider;
        return config;
    }
    static fampool::EndpointOptions Options() {
        fampool::EndpointOptions options;
        options.queue_format = FI_CQ_FORMAT_MSG;
        return options;
    }
    bool Wait(void *context) {
        auto deadline = Clock::now() + std::chrono::seconds(5);
        while (Clock::now() < deadline) {
            fi_cq_msg_entry entry{};
            ssize_t n = fi_cq_read(endpoint_.queue.get(), &entry, 1);
            if (n == -FI_EAVAIL) {
                fi_cq_err_entry error{};
                fi_cq_readerr(endpoint_.queue.get(), &error, 0);
                if (error.op_context == context) return false;
            } else if (n == 1 && entry.op_context == context) {
                length_ = entry.len;
                return true;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        return false;
    }

    fampool::FabricDomain domain_;
    fampool::FidPtr<fid_av> av_;
    fampool::FabricEndpoint endpoint_;
    std::string address_;
    fi_addr_t service_ = FI_ADDR_UNSPEC;
    std::string sent_, received_;
    size_t length_ = 0;
    fi_context2 send_context_{}, receive_context_{};
};

TEST_P(MetadataFabricTest, MalformedMessagesLeaveTheServiceServing) {
    auto region = CreateRegion("r", 4 << 20);
    auto client = FabricClient();
    RawEndpoint raw(GetParam(), client->Status().metadata_fabric_address());

    // A call with no request is answered with an error, not dropped.
    fampool::rpc::FabricCall empty;
    empty.set_call_id(7);
    empty.set_reply_to(raw.address());
    ASSERT_TRUE(raw.Send(empty.SerializeAsString()));
    std::string bytes;
    ASSERT_TRUE(raw.Receive(&bytes)) << "no reply to a call without a request";
    fampool::rpc::FabricReply reply;
    ASSERT_TRUE(reply.ParseFromString(bytes));
    EXPECT_EQ(reply.call_id(), 7u);
    EXPECT_EQ(reply.code(), static_cast<int>(grpc::StatusCode::UNIMPLEMENTED));

    // Bytes that are no call; a call naming nobody to answer; one naming garbage; calls too
    // large for the service's buffers (in one piece, and in the provider's large-message
    // protocol).
    EXPECT_TRUE(raw.Send(std::string(100, '\xff')));
    fampool::rpc::FabricCall call;
    call.mutable_lookup_region()->set_name("r");
    EXPECT_TRUE(raw.Send(call.SerializeAsString()));
    call.set_reply_to(std::string(16, '\xee'));
    EXPECT_TRUE(raw.Send(call.SerializeAsString()));
    call.set_reply_to(raw.address());
    call.mutable_lookup_region()->set_name(std::string(8000, 'n'));
    EXPECT_TRUE(raw.Send(call.SerializeAsString()));
    // Over shm, a message larger than the receive buffer in the provider's large-message
    // protocol wedges the receiving endpoint (libfabric 1.17; docs/deployment.md): send one
    // that fits.
    bool shm = std::string(GetParam()) == "shm";
    call.mutable_lookup_region()->set_name(std::string(shm ? 60000 : 200000, 'n'));
    EXPECT_TRUE(raw.Send(call.SerializeAsString()));

    // The service still answers, over the fabric.
    uint64_t before = client->fabric_calls();
    EXPECT_EQ(client->LookupRegion("r", me()).name, "r");
    EXPECT_EQ(client->fabric_calls(), before + 1);
    EXPECT_TRUE(cluster()->Alive());
}

TEST_P(MetadataFabricTest, ClientCarriesOnWhenTheMetadataServiceRestarts) {
    Fam_Region_Attributes persistent = FamAttributes(PERSISTENT);
    auto region = CreateRegion("kept", 4 << 20, 0777, &persistent);
    auto client = FabricClient();
    EXPECT_EQ(client->LookupRegion("kept", me()).name, "kept");
    EXPECT_EQ(client->fabric_calls(), 1u);

    cluster()->Kill(0, SIGKILL);
    cluster()->Restart(0);
    ASSERT_NO_THROW(cluster()->WaitReady());

    // The old endpoint is gone: the call goes over gRPC (the client tried the old endpoint,
    // when the restart took under a second since its last call) or to the new endpoint (it
    // asked the service first), within bounded time.
    auto start = Clock::now();
    EXPECT_EQ(client->LookupRegion("kept", me()).name, "kept");
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 6.0);
    // A second later the client uses the new endpoint: the restarted service answers the call
    // over the fabric (its count; Status itself goes over gRPC).
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    uint64_t before = client->Status().metadata_fabric_calls();
    EXPECT_EQ(client->LookupRegion("kept", me()).name, "kept");
    EXPECT_EQ(client->Status().metadata_fabric_calls(), before + 1)
        << "the new fabric client made the call";
}

TEST_P(MetadataFabricTest, ClientThatOptsOutUsesGrpcOnly) {
    auto region = CreateRegion("r", 4 << 20);
    auto status_client = FabricClient();
    uint64_t before = status_client->Status().metadata_fabric_calls();
    SetEnv("FAMPOOL_METADATA_FABRIC", "0");
    ReinitializeFam();
    for (int i = 0; i < 5; ++i) delete fam()->fam_lookup_region("r");
    EXPECT_EQ(status_client->Status().metadata_fabric_calls(), before);
}

INSTANTIATE_TEST_SUITE_P(Providers, MetadataFabricTest, ::testing::Values("tcp", "shm"),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                             return std::string(info.param);
                         });

}  // namespace
}  // namespace fampool_test
