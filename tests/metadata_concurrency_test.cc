// metadata_concurrency_test.cc: metadata calls that do not wait for one another. Creating a
// region waits for each of its memory servers to create its extent; the metadata service makes
// those calls with no store transaction open, so that allocations go on meanwhile. With the
// transaction held across them, one server's late answer (its link full, a packet sent again)
// held every metadata write of the cluster: a PE's fam_allocate got no answer in 10 s.
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "cluster_fixtures.h"
#include "common/test_hold.h"

namespace fampool_test {
namespace {

constexpr const char *kHold = "server.extent-created";

// Two memory servers, each answering every extent's creation 5 s late.
class SlowExtentCreationTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "2:0"; }
    void PrepareEnvironment() override {
        ClusterTest::PrepareEnvironment();
        SetEnv("FAMPOOL_TEST_HOLD", std::string(kHold) + "=5000");
        fampool::ReloadTestHolds();
    }
    void TearDown() override {
        ClusterTest::TearDown();
        SetEnv("FAMPOOL_TEST_HOLD", std::nullopt);
        fampool::ReloadTestHolds();
    }
    // How many times the servers' logs say they held at kHold.
    size_t Held() {
        size_t n = 0;
        for (int i = 0; i < 2; ++i) {
            std::ifstream in(cluster()->dir() + "/server" + std::to_string(i) + ".log");
            for (std::string line; std::getline(in, line);) n += line.find(kHold) != line.npos;
        }
        return n;
    }
};

TEST_F(SlowExtentCreationTest, AllocationsGoOnWhileARegionIsCreated) {
    auto kept = CreateRegion("kept", 8 << 20);  // held too: 5 s
    size_t before = Held();
    std::atomic<bool> created{false};
    std::string failure;
    std::thread creator([&] {
        try {
            std::unique_ptr<Fam_Region_Descriptor> slow(
                fam()->fam_create_region("slow", 8 << 20, 0777, nullptr));
        } catch (const Fam_Exception &error) {
            failure = error.fam_error_msg();
        }
        created.store(true);
    });
    // The creation is at the servers (held) before the allocation starts.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    while (Held() == before && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool reached = Held() > before;
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate("x", 4096, 0600, kept.get()));
    fam()->fam_deallocate(item.get());
    bool allocated_first = !created.load();
    creator.join();
    ASSERT_TRUE(reached) << "the creation of region \"slow\" did not reach a memory server in 4 s; "
                         << cluster()->Logs();
    EXPECT_TRUE(allocated_first)
        << "fam_allocate and fam_deallocate returned only after region \"slow\" was created";
    EXPECT_EQ(failure, "");
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("slow"));
    EXPECT_NE(found, nullptr);
}

}  // namespace
}  // namespace fampool_test
