// The libfabric data path, both halves in one process: FabricServers over plain buffers
// (standing in for a memory server's heaps) and a FabricTransport whose channels read, write
// and update them, for each provider fampool supports on this machine (tcp, shm, sockets).
// Items are built by hand, as the metadata service would describe them, so the tests check
// exactly where bytes land on each server (including the interleaving formula of
// meta/metadata_service.h). Every wait is bounded by the channel's timeout.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "memserver/fabric_server.h"
#include "common/memory_server.h"
#include "meta/metadata_service.h"
#include "test_support.h"
#include "common/atomic_apply.h"
#include "transport/fabric/fabric_transport.h"

namespace fampool {
namespace {

using fampool_test::CatchFamError;
using fampool_test::IsFamError;
using fampool_test::ThrowsFamError;
using Clock = std::chrono::steady_clock;

constexpr size_t kServerBytes = 4 << 20;  // each server's "extent"
constexpr uint64_t kInterleave = 4096;
constexpr uint64_t kRegion = 7;
constexpr uint64_t kMiB = 1 << 20;

bool Slow(const std::string &provider) { return provider == "sockets"; }

// Memory standing in for one server's extent: mmap'd, filled with a marker byte.
class Extent {
  public:
    Extent() {
        void *memory = mmap(nullptr, kServerBytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED) throw std::runtime_error("mmap failed");
        bytes_ = static_cast<char *>(memory);
        std::memset(bytes_, 0x5a, kServerBytes);
    }
    ~Extent() { munmap(bytes_, kServerBytes); }
    char *bytes() { return bytes_; }

  private:
    char *bytes_;
};

// What a memory server's control path does for the atomics the provider cannot: applies them
// with the CPU to the same memory the fabric reaches. Nothing else is needed here.
class BufferMemoryServer : public MemoryServer {
  public:
    BufferMemoryServer(uint64_t id, char *bytes) : id_(id), bytes_(bytes) {}
    uint64_t id() const override { return id_; }
    void Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                const void *operand, const void *compare, void *result) override {
        ++atomics;
        last_region = extent.region_id;
        last_key = key;
        ApplyAtomic(bytes_ + offset, static_cast<AtomicOp>(op), static_cast<DataType>(type),
                    operand, compare, result);
    }
    void CreateExtent(ExtentRef, uint64_t) override { Unused(); }
    void DestroyExtent(ExtentRef) override { Unused(); }
    void ResizeExtent(ExtentRef, uint64_t, uint64_t) override { Unused(); }
    void Zero(ExtentRef, uint64_t, uint64_t) override { Unused(); }
    void Copy(const ItemLayout &, uint64_t, const ItemLayout &, uint64_t, uint64_t) override {
        Unused();
    }
    BackupInfo Backup(const ItemLayout &, const BackupInfo &) override { Unused(); }
    BackupInfo DescribeBackup(const std::string &) override { Unused(); }
    void Restore(const std::string &, const ItemLayout &) override { Unused(); }
    void DeleteBackup(const std::string &) override { Unused(); }
    std::vector<BackupInfo> ListBackups() override { Unused(); }
    KeyGrant GrantKey(ExtentRef, uint64_t, uint64_t, bool) override { Unused(); }
    void RevokeKeys(ExtentRef, uint64_t) override { Unused(); }

    int atomics = 0;
    uint64_t last_region = 0;
    uint64_t last_key = 0;

  private:
    [[noreturn]] static void Unused() {
        throw Failure(openfam::FAM_ERR_UNIMPL, "not used by the fabric tests");
    }
    uint64_t id_;
    char *bytes_;
};

// A memory server in a child process, so that it can stop or die the way a server host does
// (a server destroyed inside the client's process is not the same: shm then unmaps memory the
// client still uses). The child serves one writable buffer of `bytes` until it is killed by
// PID.
class ServerProcess {
  public:
    ServerProcess(const std::string &provider, int port, size_t bytes = 4096) : bytes_(bytes) {
        for (int attempt = 0; attempt < 4 && !started_; ++attempt, port += 8 * 97) {
            if (port >= 30000) port -= 10000;
            Start(provider, port);
        }
    }
    ~ServerProcess() { Kill(); }

    bool started() const { return started_; }
    uint64_t id() const { return 900; }
    ServerAccess access() const {
        ServerAccess access;
        access.server_id = id();
        access.fabric_address = address_;
        access.key = key_;
        access.base = base_;
        return access;
    }

    // A stopped server makes no progress: nothing sent to it completes until Continue, or
    // until `resume_after` has passed. The bound matters on shm: a server stopped while its
    // progress thread holds the lock of its shared region (libfabric 1.17 takes it with a
    // spin lock) makes every client posting to it spin until it runs again.
    void Stop(std::chrono::milliseconds resume_after) {
        if (pid_ <= 0) return;
        kill(pid_, SIGSTOP);
        stopped_ = true;
        watchdog_ = std::thread([this, resume_after] {
            std::unique_lock<std::mutex> lock(watch_mutex_);
            if (!watch_.wait_for(lock, resume_after, [this] { return !stopped_; })) {
                stopped_ = false;  // before the signal: a reader that still sees true was stopped
                kill(pid_, SIGCONT);
            }
        });
    }
    // True while the server has been stopped without a break since Stop.
    bool StillStopped() {
        std::lock_guard<std::mutex> lock(watch_mutex_);
        return stopped_;
    }
    void Continue() {
        {
            std::lock_guard<std::mutex> lock(watch_mutex_);
            stopped_ = false;
        }
        watch_.notify_all();
        if (watchdog_.joinable()) watchdog_.join();
        if (pid_ > 0) kill(pid_, SIGCONT);
    }

    void Kill() {
        if (watchdog_.joinable()) Continue();
        if (pid_ <= 0) return;
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        // What shm leaves behind when its owner dies: the endpoint's region.
        unlink(("/dev/shm/127.0.0.1:" + std::to_string(port_)).c_str());
    }

  private:
    void Start(const std::string &provider, int port) {
        int fds[2];
        if (pipe(fds) != 0) return;
        port_ = port;
        pid_ = fork();
        if (pid_ == 0) {
            close(fds[0]);
            Serve(provider, port, bytes_, fds[1]);
        }
        close(fds[1]);
        std::string line;
        char c;
        pollfd poll_fd{fds[0], POLLIN, 0};
        while (poll(&poll_fd, 1, 10000) > 0 && read(fds[0], &c, 1) == 1 && c != '\n') line += c;
        close(fds[0]);
        std::istringstream fields(line);
        std::string hex;
        if (!(fields >> hex >> key_ >> base_)) {
            Kill();
            return;
        }
        address_.clear();
        for (size_t i = 0; i + 1 < hex.size(); i += 2) {
            address_ += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
        }
        started_ = true;
    }

    // The child: serves until killed; exits 2 when the server cannot start.
    [[noreturn]] static void Serve(const std::string &provider, int port, size_t bytes, int fd) {
        try {
            FabricConfig config;
            config.provider = provider;
            config.service = std::to_string(port);
            FabricServer server(config);
            static std::vector<char> buffer(bytes);
            Registrar::Registration registration =
                server.Register(buffer.data(), buffer.size(), true);
            std::ostringstream text;
            for (unsigned char byte : server.address()) {
                text << std::hex << std::setw(2) << std::setfill('0') << int{byte};
            }
            text << std::dec << ' ' << registration.key << ' ' << registration.base << '\n';
            std::string line = text.str();
            if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
            for (;;) pause();
        } catch (...) {
            _exit(2);
        }
    }

    size_t bytes_;
    pid_t pid_ = -1;
    int port_ = 0;
    bool started_ = false;
    std::string address_;
    uint64_t key_ = 0, base_ = 0;
    std::mutex watch_mutex_;
    std::condition_variable watch_;
    bool stopped_ = false;
    std::thread watchdog_;
};

// A test's memory servers and a client transport to them.
class FabricTest : public ::testing::TestWithParam<std::string> {
  protected:
    struct Server {
        uint64_t id = 0;
        Extent extent;
        std::unique_ptr<FabricServer> fabric;
        std::unique_ptr<BufferMemoryServer> fallback;
        Registrar::Registration writable, read_only;
    };

    const std::string &provider() const { return GetParam(); }

    // Ports in 20000-29999: a block of eight per (test, provider), found by hashing the test's
    // name, so that tests running in parallel (ctest -j) do not meet; the next block is tried
    // when a port is taken anyway.
    int FirstPort() const {
        const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
        size_t hash = std::hash<std::string>{}(std::string(info->name()));
        return 20000 + static_cast<int>(hash % 1240) * 8;
    }

    void StartServers(int count) {
        int port = FirstPort();
        for (int i = 0; i < count; ++i) {
            auto server = std::make_unique<Server>();
            server->id = 100 + i;
            for (int attempt = 0;; ++attempt, port += 8 * 97) {
                if (port >= 30000) port -= 10000;
                FabricConfig config;
                config.provider = provider();
                config.service = std::to_string(port + i);
                try {
                    server->fabric = std::make_unique<FabricServer>(config);
                    break;
                } catch (const Failure &) {
                    if (attempt == 5) throw;
                }
            }
            server->fallback = std::make_unique<BufferMemoryServer>(server->id,
                                                                    server->extent.bytes());
            server->writable = server->fabric->Register(server->extent.bytes(), kServerBytes, true);
            server->read_only =
                server->fabric->Register(server->extent.bytes(), kServerBytes, false);
            servers_.push_back(std::move(server));
        }
    }

    void OpenClient(int timeout_ms = 10000, bool register_local = false) {
        FabricConfig config;
        config.provider = provider();
        config.timeout_ms = timeout_ms;
        config.register_local = register_local;
        transport_ = std::make_unique<FabricTransport>(config, [this](uint64_t id) -> MemoryServer & {
            for (auto &server : servers_) {
                if (server->id == id) return *server->fallback;
            }
            throw Failure(openfam::FAM_ERR_NOTFOUND, "no memory server " + std::to_string(id));
        });
        channel_ = transport_->OpenChannel();
    }

    ServerAccess AccessTo(const Server &server, bool writable) const {
        const Registrar::Registration &registration =
            writable ? server.writable : server.read_only;
        ServerAccess access;
        access.server_id = server.id;
        access.fabric_address = server.fabric->address();
        access.key = registration.key;
        access.base = registration.base;
        return access;
    }

    ItemInfo Region() const {
        ItemInfo item;
        item.region_id = kRegion;
        item.region.id = kRegion;
        item.region.attributes.memoryType = VOLATILE;
        for (const auto &server : servers_) item.region.memory_servers.push_back(server->id);
        item.can_read = true;
        return item;
    }

    // An item of `size` bytes at physical offset `physical` of server index `index`.
    std::shared_ptr<Binding> Plain(size_t index, uint64_t physical, uint64_t size,
                                   bool writable = true) {
        ItemInfo item = Region();
        item.name = "plain";
        item.offset = (uint64_t{index} << kServerIndexShift) | physical;
        item.size = size;
        item.can_write = writable;
        item.access.resize(servers_.size());
        item.access[index] = AccessTo(*servers_[index], writable);
        return transport_->Attach(item);
    }

    // A 4 KiB item on the first server, reached with a key that server never granted.
    std::shared_ptr<Binding> Forged() {
        ItemInfo info = Region();
        info.size = 4096;
        info.access.push_back(AccessTo(*servers_[0], true));
        info.access[0].key ^= 0x5555;
        return transport_->Attach(info);
    }

    // An item at virtual offset `offset` of a region interleaved in 4 KiB blocks over every
    // server.
    std::shared_ptr<Binding> Interleaved(uint64_t offset, uint64_t size, bool writable = true) {
        ItemInfo item = Region();
        item.name = "striped";
        item.region.interleave_size = kInterleave;
        item.offset = offset;
        item.size = size;
        item.can_write = writable;
        for (const auto &server : servers_) item.access.push_back(AccessTo(*server, writable));
        return transport_->Attach(item);
    }

    // Where virtual byte v of the interleaved region lives.
    char &InterleavedByte(uint64_t v) {
        uint64_t block = v / kInterleave, count = servers_.size();
        return servers_[block % count]->extent.bytes()[(block / count) * kInterleave +
                                                       v % kInterleave];
    }

    static std::vector<char> Pattern(size_t n, unsigned seed) {
        std::vector<char> bytes(n);
        for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 131 + seed * 7 + i / 4099) & 0xff);
        return bytes;
    }

    // How a provider reports an operation the server refuses (read-only key, forged or revoked
    // key, address outside the registration): sockets reports it; tcp drops it with the
    // connection and the channel finds it by probing; shm drops it silently, so it can only
    // time out.
    bool ReportsRefusals() const { return provider() != "shm"; }
    static constexpr int kRefusalTimeoutMs = 1500;

    // The call failed as the provider can report a refusal, within the bounded time.
    ::testing::AssertionResult Refused(const std::function<void()> &body, const char *call) {
        auto start = Clock::now();
        auto caught = CatchFamError(body);
        auto elapsed = Clock::now() - start;
        if (elapsed > std::chrono::milliseconds(kRefusalTimeoutMs + 3000)) {
            return ::testing::AssertionFailure()
                   << "took " << elapsed / std::chrono::milliseconds(1) << " ms";
        }
        if (ReportsRefusals()) return IsFamError(caught, openfam::FAM_ERR_LIBFABRIC, {call});
        return IsFamError(caught, openfam::FAM_ERR_LIBFABRIC, {"did not complete within"});
    }

    void TearDown() override {
        channel_.reset();
        transport_.reset();
        servers_.clear();
    }

    std::vector<std::unique_ptr<Server>> servers_;
    std::unique_ptr<FabricTransport> transport_;
    std::unique_ptr<Channel> channel_;
};

// --- get and put ---------------------------------------------------------------------------

TEST_P(FabricTest, BlockingPutThenGetRoundTrips) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 4096, kMiB + 8);
    for (uint64_t size : {uint64_t{1}, uint64_t{256}, kMiB}) {
        SCOPED_TRACE(size);
        std::vector<char> out = Pattern(size, static_cast<unsigned>(size));
        channel_->Write(item, 8, out.data(), size, true);
        EXPECT_EQ(0, std::memcmp(servers_[0]->extent.bytes() + 4096 + 8, out.data(), size));
        std::vector<char> in(size, 0);
        channel_->Read(item, 8, in.data(), size, true);
        EXPECT_EQ(out, in);
    }
}

TEST_P(FabricTest, NonBlockingPutThenGetCompleteAtQuiet) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, kMiB);
    for (uint64_t size : {uint64_t{1}, uint64_t{256}, kMiB}) {
        SCOPED_TRACE(size);
        std::vector<char> out = Pattern(size, 3);
        channel_->Write(item, 0, out.data(), size, false);
        channel_->Quiet();
        EXPECT_EQ(0, std::memcmp(servers_[0]->extent.bytes(), out.data(), size));
        std::vector<char> in(size, 0);
        channel_->Read(item, 0, in.data(), size, false);
        channel_->Quiet();
        EXPECT_EQ(out, in);
    }
}

TEST_P(FabricTest, InterleavedPutSpreadsBlocksOverServersByFormula) {
    StartServers(3);
    OpenClient();
    const uint64_t offset = 5 * kInterleave + 100;  // starts inside a block on server 2
    auto item = Interleaved(offset, kMiB);
    std::vector<char> out = Pattern(kMiB, 11);
    channel_->Write(item, 0, out.data(), kMiB, true);
    size_t wrong = 0;
    for (uint64_t i = 0; i < kMiB; ++i) wrong += InterleavedByte(offset + i) != out[i];
    EXPECT_EQ(0u, wrong);
    // Every server holds a third of the item.
    for (auto &server : servers_) {
        size_t changed = 0;
        for (size_t i = 0; i < kServerBytes; ++i) changed += server->extent.bytes()[i] != 0x5a;
        EXPECT_GT(changed, kMiB / 4) << "server " << server->id;
    }
}

TEST_P(FabricTest, InterleavedGetGathersBlocksFromEveryServer) {
    StartServers(3);
    OpenClient();
    const uint64_t offset = 3 * kInterleave;
    auto item = Interleaved(offset, kMiB);
    std::vector<char> expected = Pattern(kMiB, 5);
    for (uint64_t i = 0; i < kMiB; ++i) InterleavedByte(offset + i) = expected[i];
    std::vector<char> in(kMiB, 0);
    channel_->Read(item, 0, in.data(), kMiB, false);
    channel_->Quiet();
    EXPECT_EQ(expected, in);
    // An unaligned piece crossing two block boundaries.
    std::vector<char> piece(2 * kInterleave + 10, 0);
    channel_->Read(item, kInterleave - 5, piece.data(), piece.size(), true);
    EXPECT_EQ(0, std::memcmp(piece.data(), expected.data() + kInterleave - 5, piece.size()));
}

TEST_P(FabricTest, ScatterAndGatherStridedAndIndexedElements) {
    StartServers(3);
    OpenClient();
    auto plain = Plain(1, 0, 64 * 1024);
    auto striped = Interleaved(0, 64 * 1024);
    for (auto *item : {&plain, &striped}) {
        std::vector<uint64_t> values(64);
        for (size_t i = 0; i < values.size(); ++i) values[i] = 1000 + i;
        ElementPlan strided;  // every 97th 8-byte element: crosses interleave blocks
        strided.first = 3;
        strided.stride = 97;
        channel_->Elements(*item, strided, reinterpret_cast<char *>(values.data()), 64, 8, true, true);
        ElementPlan indexed;
        indexed.strided = false;
        for (size_t i = 0; i < 64; ++i) indexed.indices.push_back(3 + i * 97);
        std::vector<uint64_t> back(64, 0);
        channel_->Elements(*item, indexed, reinterpret_cast<char *>(back.data()), 64, 8, false, false);
        channel_->Quiet();
        EXPECT_EQ(values, back);
    }
    // The strided scatter put element i at byte (3 + 97 i) * 8 of the plain item on server 1.
    uint64_t value;
    std::memcpy(&value, servers_[1]->extent.bytes() + (3 + 97 * 10) * 8, 8);
    EXPECT_EQ(1010u, value);
}

TEST_P(FabricTest, ContiguousElementsMoveAsOneRun) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, 64 * 1024);
    std::vector<char> out = Pattern(16 * 1000, 9);
    ElementPlan plan;  // stride 1: one transfer
    plan.first = 10;
    plan.stride = 1;
    channel_->Elements(item, plan, out.data(), 1000, 16, true, true);
    EXPECT_EQ(0, std::memcmp(servers_[0]->extent.bytes() + 160, out.data(), out.size()));
}

// --- atomics -------------------------------------------------------------------------------

template <typename T>
void ExpectAtomicsMatchCpu(Channel &channel, Binding &item, char *fam, const char *label) {
    const AtomicOp ops[] = {AtomicOp::kSet, AtomicOp::kAdd, AtomicOp::kSubtract,
                            AtomicOp::kMin, AtomicOp::kMax, AtomicOp::kAnd,
                            AtomicOp::kOr,  AtomicOp::kXor, AtomicOp::kFetch,
                            AtomicOp::kSwap, AtomicOp::kCompareSwap};
    const DataType type = std::is_same_v<T, uint64_t> ? DataType::kUint64 : DataType::kInt64;
    const T operands[] = {T(5), T(-3), T(0x7000000000000001ull), T(-9000000000000000000ll)};
    T shadow = T(1234567);
    T start = shadow;
    channel.Atomic(item, 64, AtomicOp::kSet, type, &start, nullptr, nullptr);
    for (AtomicOp op : ops) {
        for (T operand : operands) {
            for (bool fetching : {false, true}) {
                if (!fetching && (op == AtomicOp::kFetch || op == AtomicOp::kSwap ||
                                  op == AtomicOp::kCompareSwap)) {
                    continue;
                }
                SCOPED_TRACE(testing::Message() << label << " op " << static_cast<int>(op)
                                                << " operand " << operand << " fetching "
                                                << fetching);
                T compare = shadow;  // compare-swap: succeeds (the current value)
                T expected_old = 0, old = 0;
                ApplyAtomic(reinterpret_cast<char *>(&shadow), op, type, &operand, &compare,
                            &expected_old);
                channel.Atomic(item, 64, op, type, &operand, &compare, fetching ? &old : nullptr);
                if (fetching) {
                    EXPECT_EQ(expected_old, old);
                }
                T now;
                std::memcpy(&now, fam + 64, sizeof(T));
                EXPECT_EQ(shadow, now);
            }
        }
    }
}

TEST_P(FabricTest, EveryAtomicOnUint64MatchesCpuAtomics) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 4096, 4096);
    ExpectAtomicsMatchCpu<uint64_t>(*channel_, *item, servers_[0]->extent.bytes() + 4096, "uint64");
}

TEST_P(FabricTest, EveryAtomicOnInt64MatchesCpuAtomics) {
    StartServers(3);
    OpenClient();
    // On an interleaved item: byte 64 + 2 blocks is on server 2.
    auto item = Interleaved(2 * kInterleave, 8 * kInterleave);
    ExpectAtomicsMatchCpu<int64_t>(*channel_, *item, servers_[2]->extent.bytes(), "int64");
}

TEST_P(FabricTest, FloatAddAndSubtractApplyRemotely) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, 4096);
    float start = 1.5f, add = 2.25f, subtract = 0.5f, old = 0;
    channel_->Atomic(*item, 16, AtomicOp::kSet, DataType::kFloat, &start, nullptr, nullptr);
    channel_->Atomic(*item, 16, AtomicOp::kAdd, DataType::kFloat, &add, nullptr, nullptr);
    channel_->Atomic(*item, 16, AtomicOp::kSubtract, DataType::kFloat, &subtract, nullptr, &old);
    EXPECT_EQ(3.75f, old);
    float now;
    std::memcpy(&now, servers_[0]->extent.bytes() + 16, sizeof(now));
    EXPECT_EQ(3.25f, now);
}

TEST_P(FabricTest, CompareSwapReplacesOnlyOnMatch) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, 4096);
    uint64_t start = 10, wrong = 11, right = 10, desired = 99, old = 0;
    channel_->Atomic(*item, 8, AtomicOp::kSet, DataType::kUint64, &start, nullptr, nullptr);
    channel_->Atomic(*item, 8, AtomicOp::kCompareSwap, DataType::kUint64, &desired, &wrong, &old);
    EXPECT_EQ(10u, old);
    uint64_t now;
    std::memcpy(&now, servers_[0]->extent.bytes() + 8, 8);
    EXPECT_EQ(10u, now);  // failed: unchanged
    channel_->Atomic(*item, 8, AtomicOp::kCompareSwap, DataType::kUint64, &desired, &right, &old);
    EXPECT_EQ(10u, old);
    std::memcpy(&now, servers_[0]->extent.bytes() + 8, 8);
    EXPECT_EQ(99u, now);
}

TEST_P(FabricTest, Int128CompareSwapGoesThroughMemoryServer) {
    StartServers(3);
    OpenClient();
    auto item = Interleaved(0, 8 * kInterleave);
    // Item byte kInterleave + 32 is in block 1: server index 1, physical offset 32.
    __int128 start = (__int128{0x1122334455667788} << 64) | 0x99, desired = 7, old = 0;
    std::memcpy(servers_[1]->extent.bytes() + 32, &start, 16);
    channel_->Atomic(*item, kInterleave + 32, AtomicOp::kCompareSwap, DataType::kInt128,
                     &desired, &start, &old);
    EXPECT_TRUE(old == start);
    __int128 now;
    std::memcpy(&now, servers_[1]->extent.bytes() + 32, 16);
    EXPECT_TRUE(now == desired);
    EXPECT_EQ(1, servers_[1]->fallback->atomics);
    EXPECT_EQ(kRegion, servers_[1]->fallback->last_region);
    EXPECT_EQ(servers_[1]->writable.key, servers_[1]->fallback->last_key) << "with the item's key";
}

TEST_P(FabricTest, FallbackAtomicComesAfterEarlierNonBlockingPut) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, 4096);
    __int128 value = 41, add = 1, old = 0;
    channel_->Write(item, 0, &value, 16, false);
    channel_->Atomic(*item, 0, AtomicOp::kAdd, DataType::kInt128, &add, nullptr, &old);
    EXPECT_TRUE(old == 41);
    channel_->Quiet();
}

// --- completion tracking -------------------------------------------------------------------

TEST_P(FabricTest, PendingCountsNonBlockingPutsUntilQuiet) {
    // A stopped server completes nothing, so what is posted stays pending until it resumes.
    ServerProcess server(provider(), FirstPort(), 2 * kMiB);
    ASSERT_TRUE(server.started()) << "the memory server process did not start";
    OpenClient();
    ItemInfo info = Region();
    info.region.memory_servers = {server.id()};
    info.size = 2 * kMiB;
    info.access.push_back(server.access());
    auto item = transport_->Attach(info);
    std::vector<char> out = Pattern(2 * kMiB, 1), in(2 * kMiB, 0);
    channel_->Write(item, 0, out.data(), 8, true);  // connected
    server.Stop(std::chrono::seconds(3));
    const int count = 8;
    for (int i = 0; i < count; ++i) channel_->Write(item, (i % 2) * kMiB, out.data(), kMiB, false);
    uint64_t pending = channel_->Pending();
    // Only a server that stayed stopped proves the count: on shm, posting can wait for the
    // watchdog to resume a server stopped inside its region's lock.
    if (server.StillStopped()) {
        EXPECT_GT(pending, 0u);
    }
    EXPECT_LE(pending, static_cast<uint64_t>(count));
    server.Continue();
    channel_->Quiet();
    EXPECT_EQ(0u, channel_->Pending());
    channel_->Read(item, 0, in.data(), kMiB, true);
    EXPECT_EQ(0, std::memcmp(in.data(), out.data(), kMiB));
}

TEST_P(FabricTest, ChannelsCompleteIndependently) {
    StartServers(1);
    OpenClient();
    auto other = transport_->OpenChannel();
    auto item = Plain(0, 0, 2 * kMiB);
    std::vector<char> out = Pattern(kMiB, 2);
    channel_->Write(item, 0, out.data(), kMiB, false);
    other->Quiet();  // nothing of its own to wait for
    EXPECT_EQ(0u, other->Pending());
    channel_->Quiet();
    EXPECT_EQ(0u, channel_->Pending());
}

TEST_P(FabricTest, ThreadsShareOneChannel) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, 64 * 1024);
    const int rounds = Slow(provider()) ? 5 : 200;
    std::memset(servers_[0]->extent.bytes(), 0, 8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
            uint64_t one = 1;
            std::vector<char> buffer(256, static_cast<char>(t));
            for (int i = 0; i < rounds; ++i) {
                channel_->Write(item, 1024 + t * 256, buffer.data(), 256, i % 2 == 0);
                channel_->Atomic(*item, 0, AtomicOp::kAdd, DataType::kUint64, &one, nullptr,
                                 nullptr);
            }
        });
    }
    for (auto &thread : threads) thread.join();
    channel_->Quiet();
    uint64_t sum;
    std::memcpy(&sum, servers_[0]->extent.bytes(), 8);
    EXPECT_EQ(2u * rounds, sum);
}

TEST_P(FabricTest, RegisteredLocalBuffersWorkLikeUnregistered) {
    StartServers(3);
    OpenClient(10000, /*register_local=*/true);
    auto item = Interleaved(0, kMiB);
    std::vector<char> out = Pattern(kMiB, 4), in(kMiB, 0);
    channel_->Write(item, 0, out.data(), kMiB, false);  // registered on the fly
    channel_->Quiet();
    channel_->Read(item, 0, in.data(), kMiB, true);
    EXPECT_EQ(out, in);
    char small[100] = {}, small_in[100] = {};
    std::memcpy(small, out.data(), 100);
    channel_->Write(item, kInterleave - 50, small, 100, true);  // bounced, two servers
    channel_->Read(item, kInterleave - 50, small_in, 100, true);
    EXPECT_EQ(0, std::memcmp(small, small_in, 100));
    uint64_t add = 5, old = 0;
    channel_->Atomic(*item, 0, AtomicOp::kAdd, DataType::kUint64, &add, nullptr, &old);
    uint64_t first;
    std::memcpy(&first, out.data(), 8);
    EXPECT_EQ(first, old);
}

// --- failures ------------------------------------------------------------------------------

TEST_P(FabricTest, BlockingWriteThroughReadOnlyKeyFails) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto item = Plain(0, 0, 4096, /*writable=*/false);
    std::vector<char> out(256, 1);
    EXPECT_TRUE(Refused([&] { channel_->Write(item, 0, out.data(), 256, true); }, "fi_write"));
    EXPECT_EQ(0x5a, servers_[0]->extent.bytes()[0]);
    std::vector<char> in(256, 0);  // reading through the same key works
    channel_->Read(item, 0, in.data(), 256, true);
    EXPECT_EQ(0x5a, in[0]);
}

TEST_P(FabricTest, NonBlockingWriteThroughReadOnlyKeyFailsAtQuiet) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto item = Plain(0, 0, 4096, /*writable=*/false);
    std::vector<char> out(256, 1);
    channel_->Write(item, 0, out.data(), 256, false);
    EXPECT_TRUE(Refused([&] { channel_->Quiet(); }, "fi_write"));
    EXPECT_EQ(0x5a, servers_[0]->extent.bytes()[0]);
    channel_->Quiet();  // reported once
    EXPECT_EQ(0u, channel_->Pending());
}

TEST_P(FabricTest, AtomicThroughReadOnlyKeyFails) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto item = Plain(0, 0, 4096, /*writable=*/false);
    uint64_t add = 1;
    EXPECT_TRUE(Refused(
        [&] {
            channel_->Atomic(*item, 0, AtomicOp::kAdd, DataType::kUint64, &add, nullptr, nullptr);
        },
        "fi_atomic"));
    EXPECT_EQ(0x5a, servers_[0]->extent.bytes()[0]);
}

TEST_P(FabricTest, ForgedKeyFailsAndServerKeepsServing) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto forged = Forged();
    std::vector<char> buffer(256, 1);
    EXPECT_TRUE(Refused([&] { channel_->Write(forged, 0, buffer.data(), 256, true); }, "fi_write"));
    EXPECT_TRUE(Refused([&] { channel_->Read(forged, 0, buffer.data(), 256, true); }, "fi_read"));
    EXPECT_EQ(0x5a, servers_[0]->extent.bytes()[0]);
    auto good = Plain(0, 0, 4096);
    channel_->Write(good, 0, buffer.data(), 256, true);
    EXPECT_EQ(1, servers_[0]->extent.bytes()[0]);
}

TEST_P(FabricTest, OffsetPastRegistrationFailsAndServerKeepsServing) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto beyond = Plain(0, kServerBytes - 128, 4096);  // runs 3968 bytes past the extent
    std::vector<char> buffer(4096, 1);
    EXPECT_TRUE(Refused([&] { channel_->Read(beyond, 0, buffer.data(), 4096, true); }, "fi_read"));
    EXPECT_TRUE(Refused([&] { channel_->Write(beyond, 0, buffer.data(), 4096, true); }, "fi_write"));
    EXPECT_EQ(0x5a, servers_[0]->extent.bytes()[kServerBytes - 1]);
    auto good = Plain(0, 0, 4096);
    channel_->Write(good, 0, buffer.data(), 256, true);
    EXPECT_EQ(1, servers_[0]->extent.bytes()[0]);
}

TEST_P(FabricTest, KeyFailsAfterDeregister) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto item = Plain(0, 0, 4096);
    std::vector<char> buffer(256, 1);
    channel_->Write(item, 0, buffer.data(), 256, true);
    servers_[0]->fabric->Deregister(servers_[0]->writable.handle);
    std::vector<char> other(256, 2);
    EXPECT_TRUE(Refused([&] { channel_->Write(item, 0, other.data(), 256, true); }, "fi_write"));
    EXPECT_EQ(1, servers_[0]->extent.bytes()[0]);
    EXPECT_TRUE(Refused([&] { channel_->Read(item, 0, other.data(), 256, true); }, "fi_read"));
}

TEST_P(FabricTest, DeadServerFailsWithinTimeout) {
    ServerProcess server(provider(), FirstPort());
    ASSERT_TRUE(server.started()) << "the memory server process did not start";
    OpenClient(/*timeout_ms=*/2000);
    ItemInfo info = Region();
    info.region.memory_servers = {server.id()};
    info.size = 4096;
    info.access.push_back(server.access());
    auto item = transport_->Attach(info);
    std::vector<char> buffer(256, 1);
    channel_->Write(item, 0, buffer.data(), 256, true);  // connected and working
    server.Kill();
    auto start = Clock::now();
    auto caught = CatchFamError([&] { channel_->Read(item, 0, buffer.data(), 256, true); });
    auto elapsed = Clock::now() - start;
    EXPECT_EQ(openfam::FAM_ERR_LIBFABRIC, caught.code)
        << fampool_test::FamErrorName(caught.code) << ": " << caught.message;
    EXPECT_NE(std::string::npos, caught.message.find("memory server 900")) << caught.message;
    EXPECT_LT(elapsed, std::chrono::milliseconds(6000));
    // The channel stays usable: nothing is left in flight.
    channel_->Drain();
    EXPECT_EQ(0u, channel_->Pending());
}

// A client process that dies without closing anything must leave an idle server idle: the
// server's progress thread sleeps again instead of spinning on what the provider left behind.
TEST_P(FabricTest, ServerStaysIdleAfterClientProcessDies) {
    // Forked before this process starts any fabric thread; told where to write by a pipe.
    int to_child[2];
    ASSERT_EQ(0, pipe(to_child));
    pid_t child = fork();
    if (child == 0) {
        close(to_child[1]);
        std::string line;
        char c;
        while (read(to_child[0], &c, 1) == 1 && c != '\n') line += c;
        std::istringstream fields(line);
        std::string hex;
        ServerAccess access;
        if (!(fields >> hex >> access.key >> access.base)) _exit(2);
        for (size_t i = 0; i + 1 < hex.size(); i += 2) {
            access.fabric_address += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
        }
        try {
            FabricConfig config;
            config.provider = GetParam();
            FabricTransport transport(config, [](uint64_t) -> MemoryServer & {
                throw Failure(openfam::FAM_ERR_UNIMPL, "no fallback");
            });
            ItemInfo info;
            info.size = 4096;
            info.access.push_back(access);
            auto item = transport.Attach(info);
            auto channel = transport.OpenChannel();
            char byte = 7;
            channel->Write(item, 0, &byte, 1, true);
        } catch (...) {
            _exit(3);
        }
        _exit(0);  // no destructor runs: the endpoint vanishes with the process
    }
    close(to_child[0]);
    StartServers(1);
    std::ostringstream text;
    for (unsigned char byte : servers_[0]->fabric->address()) {
        text << std::hex << std::setw(2) << std::setfill('0') << int{byte};
    }
    text << std::dec << ' ' << servers_[0]->writable.key << ' ' << servers_[0]->writable.base
         << '\n';
    std::string line = text.str();
    ASSERT_EQ(static_cast<ssize_t>(line.size()), write(to_child[1], line.data(), line.size()));
    close(to_child[1]);
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    // shm names a client's region after its PID; a dead client leaves it behind.
    for (int index = 0; index < 8; ++index) {
        unlink(("/dev/shm/" + std::to_string(child) + ":" + std::to_string(getuid()) + ":" +
                std::to_string(index)).c_str());
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client status " << status;
    EXPECT_EQ(7, servers_[0]->extent.bytes()[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto cpu = [] {
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
               (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    };
    double before = cpu();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    double share = cpu() - before;  // this process only sleeps: the server's thread is the rest
    EXPECT_LT(share, 0.2) << "the idle server used " << share * 100 << "% of a core";
}

TEST_P(FabricTest, SecondServerOnSamePortFailsWithLibfabricError) {
    StartServers(1);
    FabricConfig config;
    config.provider = provider();
    std::string address = servers_[0]->fabric->address();
    // The port the first server took: StartServers may have moved on from FirstPort().
    int port = FirstPort();
    for (int attempt = 0; attempt < 6; ++attempt, port += 8 * 97) {
        if (port >= 30000) port -= 10000;
        config.service = std::to_string(port);
        auto caught = CatchFamError([&] { FabricServer second(config); });
        if (caught.code == openfam::FAM_NO_ERROR) continue;  // not the first server's port
        EXPECT_TRUE(IsFamError(caught, openfam::FAM_ERR_LIBFABRIC, {"memory server endpoint"}));
        EXPECT_NE(std::string::npos, caught.message.find(config.service)) << caught.message;
        return;
    }
    ADD_FAILURE() << "a second server opened on every port tried";
}

TEST_P(FabricTest, MapIsRefusedWithInvalidOp) {
    StartServers(1);
    OpenClient();
    auto item = Plain(0, 0, 4096);
    EXPECT_TRUE(ThrowsFamError([&] { transport_->Map(*item, true); }, openfam::FAM_ERR_INVALIDOP,
                               "memory server 100"));
}

// --- shm endpoint names ----------------------------------------------------------------------

// shm backs each endpoint with a file /dev/shm/<pid>:<uid>:<index of the endpoint in the
// process>. A process killed with SIGKILL leaves its files behind, and once pids wrap around a
// new process can draw a dead one's pid: its endpoints then meet names taken by files stamped
// with its own, live, pid. StaleShmNames plants such files: copies of this process's newest
// endpoint file under the next `count` indices.
class StaleShmNames {
  public:
    explicit StaleShmNames(int count) {
        std::string prefix = std::to_string(getpid()) + ":" + std::to_string(getuid()) + ":";
        long newest = -1;
        for (const auto &entry : std::filesystem::directory_iterator("/dev/shm")) {
            std::string name = entry.path().filename();
            if (name.rfind(prefix, 0) != 0) continue;
            newest = std::max(newest, std::stol(name.substr(prefix.size())));
        }
        if (newest < 0) throw std::runtime_error("this process has no shm endpoint");
        std::ifstream source("/dev/shm/" + prefix + std::to_string(newest), std::ios::binary);
        std::vector<char> header(64 << 10);
        source.read(header.data(), static_cast<std::streamsize>(header.size()));
        header.resize(static_cast<size_t>(source.gcount()));
        for (int i = 1; i <= count; ++i) {
            paths_.push_back("/dev/shm/" + prefix + std::to_string(newest + i));
            std::ofstream(paths_.back(), std::ios::binary).write(header.data(), header.size());
        }
    }
    ~StaleShmNames() {
        for (const std::string &path : paths_) unlink(path.c_str());
    }
    // How many of the planted files are still there (the provider removes each one it meets).
    int Left() const {
        int left = 0;
        for (const std::string &path : paths_) left += std::filesystem::exists(path) ? 1 : 0;
        return left;
    }

  private:
    std::vector<std::string> paths_;
};

class ShmFabricTest : public FabricTest {};

TEST_P(ShmFabricTest, EndpointSkipsNamesADeadProcessOfTheSamePidLeft) {
    StartServers(1);
    OpenClient();
    StaleShmNames stale(2);
    std::unique_ptr<Channel> channel = transport_->OpenChannel();
    EXPECT_EQ(0, stale.Left()) << "the new endpoint did not meet the planted names";
    auto item = Plain(0, 0, 4096);
    std::vector<char> out = Pattern(256, 5), in(256, 0);
    channel->Write(item, 0, out.data(), out.size(), true);
    channel->Read(item, 0, in.data(), in.size(), true);
    EXPECT_EQ(out, in);
}

// After a timeout the channel replaces its endpoint; when that fails too the call says so, and
// the next call opens the channel again instead of using a closed endpoint.
TEST_P(ShmFabricTest, ChannelThatCannotReopenFailsClearlyAndOpensOnTheNextCall) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto forged = Forged();  // dropped by shm: the read times out
    std::vector<char> buffer(256, 1);
    {
        StaleShmNames stale(kEndpointNameAttempts);  // every name the reopening tries
        auto caught = CatchFamError([&] { channel_->Read(forged, 0, buffer.data(), 256, true); });
        EXPECT_TRUE(IsFamError(caught, openfam::FAM_ERR_LIBFABRIC, {"did not complete within"}));
        EXPECT_NE(std::string::npos, caught.message.find("reopening the channel's endpoint"))
            << caught.message;
        EXPECT_EQ(0u, channel_->Pending());
    }
    auto good = Plain(0, 0, 4096);
    channel_->Write(good, 0, buffer.data(), 256, true);
    EXPECT_EQ(1, servers_[0]->extent.bytes()[0]);
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmFabricTest, ::testing::Values(std::string("shm")),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                             return info.param;
                         });

INSTANTIATE_TEST_SUITE_P(Providers, FabricTest,
                         ::testing::Values(std::string("tcp"), std::string("shm"),
                                           std::string("sockets")),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                             return info.param;
                         });

}  // namespace
}  // namespace fampool
