// MemoryServerClient's first connection (rpc/memory_server_client.h): a call to a server never
// reached yet that finds no connection is made again waiting for one, unless nothing listens
// on the server's port.
#include "rpc/memory_server_client.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/error.h"

namespace fampool_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A TCP socket bound to 127.0.0.1 at a port of the kernel's choosing; listening or not.
int LoopbackSocket(bool listening, int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
    if (listening) {
        EXPECT_EQ(listen(fd, 16), 0);
    }
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length), 0);
    *port = ntohs(address.sin_port);
    return fd;
}

// The one call the test makes, answered by a real gRPC server of the memory-server protocol.
class DestroyOnly : public fampool::rpc::MemoryServer::Service {
  public:
    grpc::Status DestroyExtent(grpc::ServerContext *, const fampool::rpc::ExtentRequest *,
                               fampool::rpc::Empty *) override {
        ++calls;
        return grpc::Status::OK;
    }
    std::atomic<int> calls{0};
};

TEST(MemoryServerClientTest, FirstCallToAPortNothingListensOnFailsAtOnce) {
    int port = 0;
    int fd = LoopbackSocket(/*listening=*/false, &port);
    fampool::MemoryServerClient client(0, "127.0.0.1:" + std::to_string(port), milliseconds(5000));
    auto start = Clock::now();
    try {
        client.DestroyExtent(fampool::ExtentRef{1});
        ADD_FAILURE() << "a call to a port nothing listens on succeeded";
    } catch (const fampool::Failure &failure) {
        EXPECT_EQ(failure.fam_error(), openfam::FAM_ERR_RPC) << failure.fam_error_msg();
        EXPECT_NE(std::string(failure.fam_error_msg()).find("is unreachable"), std::string::npos)
            << failure.fam_error_msg();
    }
    EXPECT_LT(Clock::now() - start, milliseconds(2000))
        << "it waited for a server that is not there";
    close(fd);
}

TEST(MemoryServerClientTest, FirstCallWaitsForAServerWhoseFirstConnectionFailed) {
    // Something listens on the port and drops every connection (gRPC's first connect fails at
    // once), then the memory server takes the port, as one that was starting would.
    int port = 0;
    int fd = LoopbackSocket(/*listening=*/true, &port);
    // Not blocking: the thread must see `dropping` turn false.
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    std::atomic<bool> dropping{true};
    std::thread dropper([&] {
        while (dropping.load()) {
            int connection = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (connection >= 0) {
                close(connection);
            } else {
                std::this_thread::sleep_for(milliseconds(1));
            }
        }
    });
    const std::string address = "127.0.0.1:" + std::to_string(port);
    DestroyOnly service;
    std::unique_ptr<grpc::Server> server;
    std::thread starter([&] {
        std::this_thread::sleep_for(milliseconds(500));
        dropping = false;
        dropper.join();
        close(fd);
        grpc::ServerBuilder builder;
        builder.AddListeningPort(address, grpc::InsecureServerCredentials());
        builder.RegisterService(&service);
        server = builder.BuildAndStart();
    });
    fampool::MemoryServerClient client(0, address, milliseconds(10000));
    auto start = Clock::now();
    EXPECT_NO_THROW(client.DestroyExtent(fampool::ExtentRef{1}));
    auto waited = Clock::now() - start;
    starter.join();
    ASSERT_TRUE(server) << "the test's gRPC server did not start on " << address;
    EXPECT_EQ(service.calls.load(), 1);
    EXPECT_GE(waited, milliseconds(400)) << "the call did not meet the dropped connections";
    EXPECT_LT(waited, milliseconds(8000));
    server->Shutdown();
}

}  // namespace
}  // namespace fampool_test
