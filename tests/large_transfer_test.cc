// Transfers of any size on the memory-server model over tcp: a 4 GiB put and get of one item, a
// 2 GiB item striped over three servers and a RAID1 one, 1 GiB totals over RAID5, non-blocking
// calls and a strided scatter and gather, and 1 GiB over shm, all verified; and a memory server
// stopped (SIGSTOP) for twice the data path's bound, or killed, while two threads have 1 GiB
// gets and puts in flight: each thread gets a Fam_Exception naming the server, the process
// lives, and the next calls succeed once the server answers again (over tcp, and where the
// providers allow it over shm and sockets); and the same with one get's response half received
// when the server stops (closing an endpoint then crashed libfabric 1.17's tcp under ofi_rxm).
//
// Its tests run one at a time (each moves gibibytes through three servers): four at once on
// two cores under ASan (scripts/sanitize runs 4 tests at a time) took more than 30 s to start
// two threads' second 1 GiB calls over sockets (2 runs of 2; 15 s for the whole test alone).
// ctest-resource-lock: gibibytes
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster_fixtures.h"

namespace fampool_test {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;
// The test cluster's fabric_timeout_ms (support/test_cluster.cc).
constexpr auto kBound = std::chrono::milliseconds(5000);

// A word of the pattern item `seed` holds at word `index`: no two words alike within 4 GiB.
uint64_t Word(uint64_t seed, uint64_t index) {
    return (index * 0x9e3779b97f4a7c15ull) ^ (seed << 56) ^ index;
}

// A buffer of `bytes` (a multiple of 8) the test fills with a pattern and checks.
class Pattern {
  public:
    explicit Pattern(uint64_t bytes) : words_(bytes / 8), data_(new uint64_t[bytes / 8]) {}
    void *data() { return data_.get(); }
    void Fill(uint64_t seed) {
        for (uint64_t i = 0; i < words_; ++i) data_[i] = Word(seed, i);
    }
    void Clear() { std::memset(data_.get(), 0, words_ * 8); }
    // The first word that is not the pattern's, or the word count when all are.
    uint64_t FirstWrong(uint64_t seed) const {
        for (uint64_t i = 0; i < words_; ++i) {
            if (data_[i] != Word(seed, i)) return i;
        }
        return words_;
    }
    uint64_t words() const { return words_; }

  private:
    uint64_t words_;
    std::unique_ptr<uint64_t[]> data_;
};

// Three memory servers over tcp, no interleaving, every region on all of them.
class LargeTransferTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0:tcp:region_span_size_per_memoryserver=0"; }
    bool AutoInitialize() const override { return false; }
    void SetUp() override {
        ClusterTest::SetUp();
        if (HasFatalFailure()) return;
        Fam_Options options = EmptyOptions();
        options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
        InitializeFam(&options);
        plain_.interleaveEnable = DISABLE;
    }

    // Puts the pattern to the whole item, clears the buffer, gets it back and checks it.
    void PutGetAndCheck(Fam_Descriptor *item, Pattern *buffer, uint64_t seed) {
        buffer->Fill(seed);
        fam()->fam_put_blocking(buffer->data(), item, 0, buffer->words() * 8);
        buffer->Clear();
        fam()->fam_get_blocking(buffer->data(), item, 0, buffer->words() * 8);
        uint64_t wrong = buffer->FirstWrong(seed);
        EXPECT_EQ(wrong, buffer->words()) << "word " << wrong << " of the item read back wrong";
    }

    // An item of `size` on memory server `index` (not 0, which also runs the metadata service).
    std::unique_ptr<Fam_Descriptor> ItemOnServer(Fam_Region_Descriptor *region, uint64_t size,
                                                 uint64_t index) {
        std::vector<std::unique_ptr<Fam_Descriptor>> others;
        std::string placed;
        for (int i = 0; i < 6; ++i) {
            auto item = Allocate(("i" + std::to_string(i)).c_str(), size, region);
            if (ServerIndexOfItem(item.get()) == index) {
                for (auto &other : others) fam()->fam_deallocate(other.get());
                return item;
            }
            placed += " " + std::to_string(ServerIndexOfItem(item.get()));
            others.push_back(std::move(item));
        }
        ADD_FAILURE() << "no item of " << size << " bytes placed on memory server " << index
                      << "; on servers" << placed;
        return nullptr;
    }

    Fam_Region_Attributes plain_{};  // no interleaving: an item lies on one server
};

// The sizes of the two tests below: 4 GiB and 2 GiB, a quarter of that under AddressSanitizer,
// whose shadow memory and checked copies would take the machine's 24 GiB and minutes; the
// operations are 1 MiB each at every size, so the smaller items take the same paths.
constexpr uint64_t kOneItem = (kAddressSanitizer ? 1 : 4) * kGiB;
constexpr uint64_t kLayered = kOneItem / 2;

TEST_F(LargeTransferTest, FourGiBPutAndGetOfOneItemComplete) {
    auto region = CreateRegion("big", kOneItem + 4 * kMiB, 0700, &plain_);
    auto item = Allocate("item", kOneItem, region.get());
    Pattern buffer(kOneItem);
    PutGetAndCheck(item.get(), &buffer, 1);
}

TEST_F(LargeTransferTest, TwoGiBStripedAndRaid1PutsAndGetsComplete) {
    Pattern buffer(kLayered);
    Fam_Region_Attributes striped{}, mirrored{};
    striped.interleaveEnable = ENABLE;
    mirrored.redundancyLevel = RAID1;
    mirrored.interleaveEnable = DISABLE;
    using Level = std::pair<const char *, Fam_Region_Attributes *>;
    for (auto [name, attributes] : {Level{"striped", &striped}, Level{"raid1", &mirrored}}) {
        SCOPED_TRACE(name);
        auto region = CreateRegion(name, kLayered + 12 * kMiB, 0700, attributes);
        auto item = Allocate("item", kLayered, region.get());
        PutGetAndCheck(item.get(), &buffer, attributes == &striped ? 2 : 3);
        fam()->fam_deallocate(item.get());
        fam()->fam_destroy_region(region.get());
    }
}

// Large totals on the other paths: non-blocking calls and quiet, a strided scatter and gather
// (each element its own operation or more), a RAID5 item, and shm, all verified. A quarter of
// the size under AddressSanitizer.
constexpr uint64_t kOtherPaths = (kAddressSanitizer ? 1 : 4) * 256 * kMiB;

TEST_F(LargeTransferTest, NonBlockingAndScatterGatherTotalsComplete) {
    Pattern buffer(kOtherPaths);
    auto region = CreateRegion("plain", 3 * kOtherPaths, 0700, &plain_);
    {
        SCOPED_TRACE("non-blocking");
        auto item = Allocate("item", kOtherPaths, region.get());
        buffer.Fill(9);
        fam()->fam_put_nonblocking(buffer.data(), item.get(), 0, kOtherPaths);
        fam()->fam_quiet();
        buffer.Clear();
        fam()->fam_get_nonblocking(buffer.data(), item.get(), 0, kOtherPaths);
        fam()->fam_quiet();
        EXPECT_EQ(buffer.FirstWrong(9), buffer.words());
        fam()->fam_deallocate(item.get());
    }
    {
        SCOPED_TRACE("scatter and gather");
        // Every other 64 KiB element of an item twice the buffer: the buffer's whole size.
        constexpr uint64_t kElement = 64 * 1024;
        const uint64_t elements = kOtherPaths / kElement;
        auto item = Allocate("strided", 2 * kOtherPaths, region.get());
        buffer.Fill(10);
        fam()->fam_scatter_blocking(buffer.data(), item.get(), elements, 0, 2, kElement);
        buffer.Clear();
        fam()->fam_gather_blocking(buffer.data(), item.get(), elements, 0, 2, kElement);
        EXPECT_EQ(buffer.FirstWrong(10), buffer.words());
        fam()->fam_deallocate(item.get());
    }
    fam()->fam_destroy_region(region.get());
}

// RAID5 stripes by the interleave size: a cluster with 1 MiB stripe units.
class LargeTransferRaid5Test : public LargeTransferTest {
  protected:
    const char *Spec() const override {
        return "3:1048576:tcp:region_span_size_per_memoryserver=0";
    }
};

TEST_F(LargeTransferRaid5Test, GibibytePutAndGetOfOneItemComplete) {
    Fam_Region_Attributes parity{};
    parity.redundancyLevel = RAID5;
    parity.interleaveEnable = ENABLE;
    auto region = CreateRegion("raid5", 2 * kOtherPaths + 12 * kMiB, 0700, &parity);
    auto item = Allocate("item", kOtherPaths, region.get());
    Pattern buffer(kOtherPaths);
    PutGetAndCheck(item.get(), &buffer, 8);
}

// The same server-side paths over shm: items this process maps (fabric_direct, the default).
class LargeTransferShmTest : public LargeTransferTest {
  protected:
    const char *Spec() const override { return "3:0:shm:region_span_size_per_memoryserver=0"; }
};

TEST_F(LargeTransferShmTest, GibibytePutAndGetOfOneItemComplete) {
    auto region = CreateRegion("big", kOtherPaths + 4 * kMiB, 0700, &plain_);
    auto item = Allocate("item", kOtherPaths, region.get());
    Pattern buffer(kOtherPaths);
    PutGetAndCheck(item.get(), &buffer, 11);
}

// Two threads each make blocking 1 GiB calls on the item (one puts, one gets) until one fails
// or `stop` is set; each keeps what its failing call threw.
class TwoThreadsInFlight {
  public:
    TwoThreadsInFlight(fam *f, Fam_Descriptor *item) : put_buffer_(kGiB, 7), get_buffer_(kGiB, 0) {
        threads_.emplace_back([this, f, item] {
            Loop(&caught_[0], [&] { f->fam_put_blocking(put_buffer_.data(), item, 0, kGiB); });
        });
        threads_.emplace_back([this, f, item] {
            Loop(&caught_[1], [&] { f->fam_get_blocking(get_buffer_.data(), item, 0, kGiB); });
        });
    }
    // Waits until each thread has started its second call (so one is in flight now).
    bool WaitBusy() {
        auto until = Clock::now() + std::chrono::seconds(30);
        while (calls_[0].load() < 2 || calls_[1].load() < 2) {
            if (Clock::now() > until) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return true;
    }
    // Joins both threads; what each threw.
    std::vector<CaughtError> Join() {
        for (std::thread &thread : threads_) thread.join();
        return {caught_[0], caught_[1]};
    }
    ~TwoThreadsInFlight() {
        stop_ = true;
        for (std::thread &thread : threads_) {
            if (thread.joinable()) thread.join();
        }
    }

  private:
    void Loop(CaughtError *caught, const std::function<void()> &call) {
        size_t index = caught == &caught_[0] ? 0 : 1;
        // Bounded: a call that never fails ends the loop after a minute.
        auto until = Clock::now() + std::chrono::seconds(60);
        while (!stop_ && Clock::now() < until) {
            calls_[index].fetch_add(1);
            *caught = CatchFamError(call);
            if (caught->thrown) return;
        }
    }

    std::vector<char> put_buffer_, get_buffer_;
    std::atomic<bool> stop_{false};
    std::atomic<int> calls_[2] = {0, 0};
    CaughtError caught_[2];
    std::vector<std::thread> threads_;
};

void ExpectGivenUpOn(const std::vector<CaughtError> &caught, uint64_t server) {
    const char *calls[] = {"fam_put_blocking", "fam_get_blocking"};
    for (size_t i = 0; i < caught.size(); ++i) {
        SCOPED_TRACE(calls[i]);
        ASSERT_TRUE(caught[i].thrown) << "the call never failed";
        EXPECT_NE(caught[i].code, kNotAFamException) << caught[i].message;
        EXPECT_NE(caught[i].message.find(calls[i]), std::string::npos) << caught[i].message;
        EXPECT_NE(caught[i].message.find("memory server " + std::to_string(server)),
                  std::string::npos)
            << caught[i].message;
    }
}

// Two threads' 1 GiB calls on an item of memory server 1 while `interrupt` stops or kills it:
// what each call threw.
std::vector<CaughtError> InterruptedCalls(fam *f, Fam_Descriptor *item,
                                          const std::function<void()> &interrupt) {
    TwoThreadsInFlight threads(f, item);
    if (!threads.WaitBusy()) {
        ADD_FAILURE() << "the calls did not start in 30 s";
        return {};
    }
    interrupt();
    return threads.Join();
}

// A memory server stopped for twice the bound, or killed, while two threads' 1 GiB calls are
// in flight on an item it holds: each call fails naming it, and once it answers again (or was
// restarted) whole-item calls succeed.
class GiveUpTest : public LargeTransferTest {
  protected:
    void Stopped() {
        auto region = CreateRegion("r", 6 * kGiB, 0700, &plain_);
        auto item = ItemOnServer(region.get(), kGiB, 1);
        ASSERT_NE(item, nullptr);
        auto caught = InterruptedCalls(fam(), item.get(), [this] {
            cluster()->Pause(1);
            std::this_thread::sleep_for(2 * kBound);
        });
        cluster()->Resume(1);
        ExpectGivenUpOn(caught, 1);
        // The server answers again: whole-item calls on the same item succeed.
        Pattern buffer(kGiB);
        PutGetAndCheck(item.get(), &buffer, 4);
    }
    void Killed() {
        auto region = CreateRegion("r", 6 * kGiB, 0700, &plain_);
        auto item = ItemOnServer(region.get(), kGiB, 1);
        ASSERT_NE(item, nullptr);
        auto caught = InterruptedCalls(fam(), item.get(), [this] { cluster()->Kill(1, SIGKILL); });
        ExpectGivenUpOn(caught, 1);
        // The restarted server serves new regions: whole-item calls there succeed.
        cluster()->Restart(1);
        WaitForCluster();
        auto again = CreateRegion("again", 6 * kGiB, 0700, &plain_);
        auto fresh = ItemOnServer(again.get(), kGiB, 1);
        ASSERT_NE(fresh, nullptr);
        Pattern buffer(kGiB);
        PutGetAndCheck(fresh.get(), &buffer, 5);
    }
};

TEST_F(GiveUpTest, ServerStoppedWithGibibytesInFlightFailsThemAndServesAgain) { Stopped(); }

TEST_F(GiveUpTest, ServerKilledWithGibibytesInFlightFailsThemAndTheProcessGoesOn) { Killed(); }

// The same over sockets. Not over shm: a shm server stopped or killed while it holds its
// queue's lock (libfabric 1.17's shm keeps a pthread spinlock in the server's shared region)
// leaves the client spinning on that lock inside fi_writemsg, where the bound cannot act: for
// as long as the server is stopped (the stopped case hung 600 s in a full run, its threads
// joined before the server was resumed), and for good once it is dead; docs/robustness.md.
// Over sockets, a server stopped with 1 GiB calls in flight never completed the process's
// later operations once it resumed (4 of 4), until a channel that gives up aborted its
// connections first (FabricDomain::closing_leaks_operations).
class SocketsGiveUpTest : public GiveUpTest {
  protected:
    const char *Spec() const override { return "3:0:sockets:region_span_size_per_memoryserver=0"; }
};

TEST_F(SocketsGiveUpTest, ServerStoppedWithGibibytesInFlightFailsThemAndServesAgain) { Stopped(); }

TEST_F(SocketsGiveUpTest, ServerKilledWithGibibytesInFlightFailsThemAndTheProcessGoesOn) {
    Killed();
}

// Non-blocking gets posted and left undriven while the server answers: its responses fill the
// socket buffers and one is left half sent; the server is then stopped, and the quiet that
// follows receives up to the middle of that response, waits out the bound and gives up. The
// channel's endpoint then closes with that response half received, which crashed the process
// on libfabric 1.17's tcp under ofi_rxm (SIGSEGV in fi_close, 3 runs of 3) until the channel
// ended its connection's reception first.
TEST_F(LargeTransferTest, GivingUpOnAHalfReceivedGetDoesNotCrash) {
    auto region = CreateRegion("r", 6 * kGiB, 0700, &plain_);
    auto item = ItemOnServer(region.get(), 256 * kMiB, 1);
    ASSERT_NE(item, nullptr);
    std::vector<char> buffer(256 * kMiB, 1);
    fam()->fam_put_blocking(buffer.data(), item.get(), 0, buffer.size());
    for (uint64_t at = 0; at < buffer.size(); at += 4 * kMiB) {
        fam()->fam_get_nonblocking(buffer.data() + at, item.get(), at, 4 * kMiB);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cluster()->Pause(1);
    auto caught = CatchFamError([&] { fam()->fam_quiet(); });
    cluster()->Resume(1);
    EXPECT_TRUE(caught.thrown) << "the quiet did not fail with the server stopped";
    EXPECT_NE(caught.message.find("memory server 1"), std::string::npos) << caught.message;
    // The next calls work: the item reads back as it was put.
    std::vector<char> again(buffer.size(), 0);
    fam()->fam_get_blocking(again.data(), item.get(), 0, again.size());
    EXPECT_EQ(std::count(again.begin(), again.end(), 1), static_cast<long>(again.size()));
}

}  // namespace
}  // namespace fampool_test
