// The libfabric data path when things go wrong (tests/support/fabric_fixture.h): writes and
// atomics through read-only, forged or deregistered keys, offsets past a registration, dead
// servers and dead clients, a taken port, and shm endpoint names a dead process left behind.
// Each failure is reported within the channel's timeout and the servers keep serving.
#include "fabric_fixture.h"

namespace fampool {
namespace {

using namespace fabric_fixture;

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
    // A fetching atomic fails at once; a non-fetching one, like a non-blocking put, at quiet.
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto item = Plain(0, 0, 4096, /*writable=*/false);
    uint64_t add = 1, old = 0;
    EXPECT_TRUE(Refused(
        [&] { channel_->Atomic(*item, 0, AtomicOp::kAdd, DataType::kUint64, &add, nullptr, &old); },
        "fi_atomic"));
    channel_->Atomic(*item, 0, AtomicOp::kAdd, DataType::kUint64, &add, nullptr, nullptr);
    EXPECT_TRUE(Refused([&] { channel_->Quiet(); }, "fi_atomic"));
    EXPECT_EQ(0x5a, servers_[0]->extent.bytes()[0]);
    channel_->Quiet();  // reported once
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

TEST_P(FabricTest, CheckedReadsRefuseAForgedKeyAtEverySize) {
    // fabric_checked_reads keeps shm's large reads on the path that checks the key.
    StartServers(1);
    OpenClient(kRefusalTimeoutMs, /*register_local=*/false, /*checked_reads=*/true);
    ItemInfo info = Region();
    info.size = kMiB;
    info.access.push_back(AccessTo(*servers_[0], true));
    info.access[0].key ^= 0x5555;
    auto forged = transport_->Attach(info);
    std::vector<char> buffer(kMiB, 1);
    for (uint64_t size : {uint64_t{256}, uint64_t{65536}}) {
        SCOPED_TRACE(size);
        EXPECT_TRUE(
            Refused([&] { channel_->Read(forged, 0, buffer.data(), size, true); }, "fi_read"));
    }
    auto good = Plain(0, 0, kMiB);
    channel_->Read(good, 0, buffer.data(), 65536, true);
    EXPECT_EQ(servers_[0]->extent.bytes()[0], buffer[0]);
}

TEST_P(FabricTest, OffsetPastRegistrationFailsAndServerKeepsServing) {
    StartServers(1);
    OpenClient(kRefusalTimeoutMs);
    auto beyond = Plain(0, kServerBytes - 128, 4096);  // runs 3968 bytes past the extent
    std::vector<char> buffer(4096, 1);
    EXPECT_TRUE(Refused([&] { channel_->Read(beyond, 0, buffer.data(), 4096, true); }, "fi_read"));
    EXPECT_TRUE(
        Refused([&] { channel_->Write(beyond, 0, buffer.data(), 4096, true); }, "fi_write"));
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

// An item striped over a live server and a silent one: the probes of the stall, which the live
// server answers, are not progress, so the read still fails within a few timeouts instead of
// waiting for the silent server forever. The silent server is stopped (its connections stay
// open, nothing is answered); over shm it is killed instead, since a stopped shm server may hold
// its shared region's spin lock (libfabric 1.17) and stall every client's post.
TEST_P(FabricTest, SilentServerBesideALiveOneFailsWithinTimeout) {
    const bool kill_it = provider() == "shm";
    StartServers(1);
    ServerProcess silent(provider(), FirstPort() + 4);
    ASSERT_TRUE(silent.started()) << "the memory server process did not start";
    OpenClient(/*timeout_ms=*/1500);
    ItemInfo info = Region();
    info.region.memory_servers = {servers_[0]->id, silent.id()};
    info.region.interleave_size = kInterleave;
    info.name = "striped";
    info.size = 2 * kInterleave;
    info.access = {AccessTo(*servers_[0], true), silent.access()};
    auto item = transport_->Attach(info);
    std::vector<char> buffer(info.size, 1);
    channel_->Write(item, 0, buffer.data(), buffer.size(), true);  // both connected
    if (kill_it) {
        silent.Kill();
    } else {
        silent.Stop(std::chrono::seconds(30));
    }
    auto start = Clock::now();
    auto caught =
        CatchFamError([&] { channel_->Read(item, 0, buffer.data(), buffer.size(), true); });
    auto elapsed = Clock::now() - start;
    if (!kill_it) {
        bool still_stopped = silent.StillStopped();
        silent.Continue();
        EXPECT_TRUE(still_stopped) << "the server was resumed before the read ended";
    }
    EXPECT_EQ(openfam::FAM_ERR_LIBFABRIC, caught.code)
        << fampool_test::FamErrorName(caught.code) << ": " << caught.message;
    EXPECT_LT(elapsed, std::chrono::milliseconds(8000));
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
                std::to_string(index))
                   .c_str());
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

// --- ofi_rxm's buffer size (tcp) --------------------------------------------------------------

// libfampool sets FI_OFI_RXM_BUFFER_SIZE when it is loaded, and every process must use the same
// size. A process whose libfabric read its settings before that (here: the variable changed
// after libfabric read it) fails at its first endpoint, naming both sizes, instead of having
// its connections refused and timing out later.
TEST(RxmBufferSizeTest, EndpointWhoseBuffersTheEnvironmentNoLongerNamesFailsClearly) {
    FabricConfig config;
    config.provider = "tcp";
    { FabricDomain first(config, FabricDomain::Role::kClient); }  // libfabric reads its settings
    const char *named = getenv("FI_OFI_RXM_BUFFER_SIZE");
    ASSERT_NE(nullptr, named) << "libfampool sets a default when it is loaded";
    const std::string effective = named;
    const std::string other = std::to_string(std::stoul(effective) * 2);
    setenv("FI_OFI_RXM_BUFFER_SIZE", other.c_str(), 1);
    FabricDomain domain(config, FabricDomain::Role::kClient);
    FidPtr<fid_av> av = domain.OpenAddressVector();
    auto caught = CatchFamError([&] { OpenEndpoint(domain, av.get(), EndpointOptions{}); });
    setenv("FI_OFI_RXM_BUFFER_SIZE", effective.c_str(), 1);
    EXPECT_TRUE(IsFamError(caught, openfam::FAM_ERR_LIBFABRIC,
                           {effective + "-byte message buffers", "FI_OFI_RXM_BUFFER_SIZE=" + other,
                            "every process of the job"}))
        << caught.message;
    // With the environment as libfabric read it, the same endpoint opens.
    EXPECT_NO_THROW(OpenEndpoint(domain, av.get(), EndpointOptions{}));
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmFabricTest, ::testing::Values(std::string("shm")), ProviderName);

INSTANTIATE_TEST_SUITE_P(Providers, FabricTest, Providers(), ProviderName);

}  // namespace
}  // namespace fampool
