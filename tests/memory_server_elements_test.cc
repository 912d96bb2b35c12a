// memory_server_elements_test.cc: the memory server's side of memory-side operations
// (MemoryServer.ApplyElements): the caller's key decides what a request may touch, and a
// malformed or oversized request is refused before the server allocates or touches anything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/error.h"
#include "fabric/fabric.h"
#include "memserver/fabric_server.h"
#include "memserver/local_memory_server.h"
#include "memserver/memory_server_service.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::ElementOp;
using fampool::ExtentRef;

// A memory server with its heaps in temporary directories and a tcp endpoint that grants keys,
// as fampool-server sets one up, and its gRPC service called in-process.
class MemoryServerElementsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // A port of its own: tests run in parallel.
        for (int attempt = 0; !fabric_; ++attempt) {
            fampool::FabricConfig config;
            config.provider = "tcp";
            config.service = std::to_string(21000 + (getpid() * 7 + attempt * 131) % 8000);
            try {
                fabric_ = std::make_unique<fampool::FabricServer>(config);
            } catch (const fampool::Failure &) {
                if (attempt == 8) throw;
            }
        }
        server_ = std::make_unique<fampool::LocalMemoryServer>(
            7,
            fampool::HeapLocation{volatile_.path(), persistent_.path(), "t", fampool::FileAccess()},
            archive_.path());
        server_->AttachFabric(fabric_.get());
        server_->CreateExtent(extent_, 1 << 20, 1 << 20);
        service_ = std::make_unique<fampool::MemoryServerService>(server_.get(), "test");
    }

    // Applies `op` through the gRPC handler; returns the Fam_Error it reports (0: success).
    int Apply(uint64_t key, ElementOp op, uint64_t element_size,
              const std::vector<uint64_t> &offsets, const std::string &data,
              std::string *gathered = nullptr) {
        fampool::rpc::ElementsRequest request;
        request.mutable_extent()->set_region_id(extent_.region_id);
        request.set_key(key);
        request.set_op(static_cast<int>(op));
        request.set_element_size(element_size);
        for (uint64_t offset : offsets) request.add_offsets(offset);
        request.set_data(data);
        fampool::rpc::ElementsReply reply;
        grpc::Status status = service_->ApplyElements(nullptr, &request, &reply);
        if (gathered) *gathered = reply.data();
        return status.ok() ? 0 : std::stoi(status.error_details());
    }

    static std::string Words(std::vector<uint64_t> values) {
        return std::string(reinterpret_cast<const char *>(values.data()), values.size() * 8);
    }

    TempDir volatile_, persistent_, archive_;
    ExtentRef extent_{41, false};
    std::unique_ptr<fampool::FabricServer> fabric_;
    std::unique_ptr<fampool::LocalMemoryServer> server_;
    std::unique_ptr<fampool::MemoryServerService> service_;
};

TEST_F(MemoryServerElementsTest, AddsWithAWritableKeyAndGathersThemBack) {
    fampool::KeyGrant grant = server_->GrantKey(extent_, 0, 4096, true, fampool::Permissions{});
    EXPECT_EQ(0, Apply(grant.key, ElementOp::kAdd, 8, {0, 8, 0}, Words({5, 6, 7})));
    std::string back;
    EXPECT_EQ(0, Apply(grant.key, ElementOp::kGather, 8, {0, 8}, "", &back));
    EXPECT_EQ(back, Words({12, 6}));
}

TEST_F(MemoryServerElementsTest, ReadOnlyKeyGathersButCannotAddOrScatter) {
    fampool::KeyGrant grant = server_->GrantKey(extent_, 0, 4096, false, fampool::Permissions{});
    std::string back;
    EXPECT_EQ(0, Apply(grant.key, ElementOp::kGather, 8, {0}, "", &back));
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, Apply(grant.key, ElementOp::kAdd, 8, {0}, Words({1})));
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, Apply(grant.key, ElementOp::kScatter, 8, {0}, Words({1})));
}

TEST_F(MemoryServerElementsTest, ElementsOutsideTheGrantAreRefusedAndNothingIsApplied) {
    fampool::KeyGrant grant = server_->GrantKey(extent_, 4096, 4096, true, fampool::Permissions{});
    // One element inside the grant, one past it: the whole request is refused.
    EXPECT_EQ(openfam::FAM_ERR_NOPERM,
              Apply(grant.key, ElementOp::kAdd, 8, {4096, 8192}, Words({1, 1})));
    std::string back;
    EXPECT_EQ(0, Apply(grant.key, ElementOp::kGather, 8, {4096}, "", &back));
    EXPECT_EQ(back, Words({0}));
}

TEST_F(MemoryServerElementsTest, RevokedOrForgedKeyIsRefused) {
    fampool::KeyGrant grant = server_->GrantKey(extent_, 0, 4096, true, fampool::Permissions{});
    EXPECT_EQ(openfam::FAM_ERR_NOPERM,
              Apply(grant.key ^ 0x5555, ElementOp::kAdd, 8, {0}, Words({1})));
    server_->RevokeKeys(extent_, 0);
    EXPECT_EQ(openfam::FAM_ERR_NOPERM, Apply(grant.key, ElementOp::kAdd, 8, {0}, Words({1})));
}

TEST_F(MemoryServerElementsTest, MalformedRequestsAreRefusedAsInvalid) {
    fampool::KeyGrant grant = server_->GrantKey(extent_, 0, 4096, true, fampool::Permissions{});
    // Operands that do not match the elements, an unknown operation, an add of 2-byte elements,
    // an unaligned add, and a gather whose reply would exceed a message.
    EXPECT_EQ(openfam::FAM_ERR_INVALID, Apply(grant.key, ElementOp::kAdd, 8, {0, 8}, Words({1})));
    EXPECT_EQ(openfam::FAM_ERR_INVALID,
              Apply(grant.key, static_cast<ElementOp>(9), 8, {0}, Words({1})));
    EXPECT_EQ(openfam::FAM_ERR_INVALID, Apply(grant.key, ElementOp::kAdd, 2, {0}, "ab"));
    EXPECT_EQ(openfam::FAM_ERR_INVALID, Apply(grant.key, ElementOp::kAdd, 8, {4}, Words({1})));
    EXPECT_EQ(openfam::FAM_ERR_INVALID,
              Apply(grant.key, ElementOp::kGather, uint64_t{1} << 35, {0}, ""));
}

// Found by tests/fuzz/memory_server_rpc_fuzz: a call that mapped past the end of a heap failed
// (rightly) but left an empty entry in the server's mapping cache, and destroying the extent
// then dereferenced it and killed the server.
TEST_F(MemoryServerElementsTest, ACallPastTheHeapsEndFailsAndTheExtentCanStillBeDestroyed) {
    EXPECT_THROW(server_->Zero(extent_, 2 << 20, 4096), fampool::Failure);
    EXPECT_NO_THROW(server_->DestroyExtent(extent_));
}

// Found by tests/fuzz/memory_server_rpc_fuzz: a copy whose layout said RAID5 over one member
// (or with no stripe unit) divided by zero placing its bytes; it is refused by name.
TEST_F(MemoryServerElementsTest, ACopyOfARaid5LayoutWithTooFewMembersIsRefused) {
    fampool::ItemLayout item;
    item.extent = extent_;
    item.size = 4096;
    item.interleave = 4096;
    item.raid5_members = 1;
    item.servers.push_back({7, "", 0, 0, false, {}});
    CaughtError caught = CatchFamError([&] { server_->Copy(item, 0, item, 0, 64); });
    EXPECT_EQ(caught.code, openfam::FAM_ERR_INVALID);
    EXPECT_NE(caught.message.find("RAID5 needs 3 members"), std::string::npos) << caught.message;
    item.raid5_members = 3;
    item.interleave = 0;
    EXPECT_EQ(CatchFamError([&] { server_->Copy(item, 0, item, 0, 64); }).code,
              openfam::FAM_ERR_INVALID);
}

}  // namespace
}  // namespace fampool_test
