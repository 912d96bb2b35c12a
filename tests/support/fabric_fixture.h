// The fixture of the libfabric data-path tests (fabric_test.cc: transfers and atomics;
// fabric_failure_test.cc: refused keys, dead servers, stale shm names): both halves in one
// process, FabricServers over plain buffers (standing in for a memory server's heaps) and a
// FabricTransport whose channels read, write and update them, for each provider fampool
// supports on this machine (tcp, shm, sockets). Items are built by hand, as the metadata
// service would describe them, so the tests check exactly where bytes land on each server
// (including the interleaving formula of common/fam_objects.h). Every wait is bounded by the
// channel's timeout.
#ifndef FAMPOOL_TESTS_SUPPORT_FABRIC_FIXTURE_H_
#define FAMPOOL_TESTS_SUPPORT_FABRIC_FIXTURE_H_

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

#include "common/atomic_apply.h"
#include "common/error.h"
#include "common/fam_objects.h"
#include "common/memory_server.h"
#include "memserver/fabric_server.h"
#include "test_support.h"
#include "transport/fabric/fabric_transport.h"

namespace fampool::fabric_fixture {

using fampool_test::CatchFamError;
using fampool_test::IsFamError;
using fampool_test::ThrowsFamError;
using Clock = std::chrono::steady_clock;

constexpr size_t kServerBytes = 4 << 20;  // each server's "extent"
constexpr uint64_t kInterleave = 4096;
constexpr uint64_t kRegion = 7;
constexpr uint64_t kMiB = 1 << 20;

inline bool Slow(const std::string &provider) { return provider == "sockets"; }

// Memory standing in for one server's extent: mmap'd, filled with a marker byte.
class Extent {
  public:
    Extent() {
        void *memory =
            mmap(nullptr, kServerBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    void CreateExtent(ExtentRef, uint64_t, uint64_t) override { Unused(); }
    void DestroyExtent(ExtentRef) override { Unused(); }
    void ResizeExtent(ExtentRef, uint64_t, uint64_t, uint64_t) override { Unused(); }
    void Zero(ExtentRef, uint64_t, uint64_t) override { Unused(); }
    void Copy(const ItemLayout &, uint64_t, const ItemLayout &, uint64_t, uint64_t) override {
        Unused();
    }
    BackupInfo Backup(const ItemLayout &, const BackupInfo &) override { Unused(); }
    BackupInfo DescribeBackup(const std::string &, const Caller &) override { Unused(); }
    void Restore(const std::string &, const ItemLayout &, const Caller &) override { Unused(); }
    void DeleteBackup(const std::string &, const Caller &) override { Unused(); }
    std::vector<BackupInfo> ListBackups(const Caller &) override { Unused(); }
    KeyGrant GrantKey(ExtentRef, uint64_t, uint64_t, bool, const Permissions &) override {
        Unused();
    }
    void RevokeKeys(ExtentRef, uint64_t) override { Unused(); }
    // Memory-side gathers and scatters: applied with the CPU, as a memory server does.
    void ApplyElements(ExtentRef, uint64_t, ElementOp op, uint64_t element_size,
                       const std::vector<uint64_t> &offsets, char *data) override {
        ++element_batches;
        for (size_t i = 0; i < offsets.size(); ++i) {
            ApplyElement(op, element_size, bytes_ + offsets[i], data + i * element_size);
        }
    }

    int atomics = 0;
    int element_batches = 0;
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
        WaitUntilStopped();
        stopped_ = true;
        watchdog_ = std::thread([this, resume_after] {
            std::unique_lock<std::mutex> lock(watch_mutex_);
            if (!watch_.wait_for(lock, resume_after, [this] { return !stopped_; })) {
                stopped_ = false;  // before the signal: a reader that still sees true was stopped
                kill(pid_, SIGCONT);
            }
        });
    }
    // SIGSTOP reaches the server's threads a little later: an operation posted at once may
    // still be served. Waits (at most a second) until every thread of it is stopped.
    void WaitUntilStopped() {
        auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (std::chrono::steady_clock::now() < give_up) {
            bool all = true;
            std::string tasks = "/proc/" + std::to_string(pid_) + "/task";
            std::error_code ignored;
            for (const auto &task : std::filesystem::directory_iterator(tasks, ignored)) {
                std::ifstream stat(task.path() / "stat");
                std::string line;
                std::getline(stat, line);
                size_t close = line.rfind(')');
                if (close != std::string::npos && close + 2 < line.size() &&
                    line[close + 2] != 'T' && line[close + 2] != 't') {
                    all = false;
                }
            }
            if (all) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
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
            server->fallback =
                std::make_unique<BufferMemoryServer>(server->id, server->extent.bytes());
            server->writable = server->fabric->Register(server->extent.bytes(), kServerBytes, true);
            server->read_only =
                server->fabric->Register(server->extent.bytes(), kServerBytes, false);
            servers_.push_back(std::move(server));
        }
    }

    // OpenClient's direct access opens heap files by name (fabric_direct: path), as these
    // tests' servers have no same-node socket (heap_socket_test has that path).
    bool direct_by_path_ = false;
    void OpenClient(int timeout_ms = 10000, bool register_local = false, bool checked_reads = false,
                    bool direct = true, uint64_t memory_side_elements = 64) {
        FabricConfig config;
        config.memory_side_elements = memory_side_elements;
        config.provider = provider();
        config.timeout_ms = timeout_ms;
        config.register_local = register_local;
        config.checked_reads = checked_reads;
        config.direct = direct;
        config.direct_by_path = direct_by_path_;
        transport_ =
            std::make_unique<FabricTransport>(config, [this](uint64_t id) -> MemoryServer & {
                for (auto &server : servers_) {
                    if (server->id == id) return *server->fallback;
                }
                throw Failure(openfam::FAM_ERR_NOTFOUND, "no memory server " + std::to_string(id));
            });
        channel_ = transport_->OpenChannel();
    }

    ServerAccess AccessTo(const Server &server, bool writable) const {
        const Registrar::Registration &registration = writable ? server.writable : server.read_only;
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
        return servers_[block % count]
            ->extent.bytes()[(block / count) * kInterleave + v % kInterleave];
    }

    static std::vector<char> Pattern(size_t n, unsigned seed) {
        std::vector<char> bytes(n);
        for (size_t i = 0; i < n; ++i)
            bytes[i] = static_cast<char>((i * 131 + seed * 7 + i / 4099) & 0xff);
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

// The providers the tests run on, and their names as test-name suffixes.
inline auto Providers() {
    return ::testing::Values(std::string("tcp"), std::string("shm"), std::string("sockets"));
}
inline std::string ProviderName(const ::testing::TestParamInfo<std::string> &info) {
    return info.param;
}

}  // namespace fampool::fabric_fixture

#endif  // FAMPOOL_TESTS_SUPPORT_FABRIC_FIXTURE_H_
