// The host's interfaces and routes (common/network.h): which local address a client's fabric
// endpoints bind to.
#include "common/network.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace fampool_test {
namespace {

TEST(NetworkTest, HostOfDropsThePortAndTheBracketsOfV6) {
    EXPECT_EQ(fampool::HostOf("10.0.0.1:8787"), "10.0.0.1");
    EXPECT_EQ(fampool::HostOf("meta01:8787"), "meta01");
    EXPECT_EQ(fampool::HostOf("[fd00::2]:8787"), "fd00::2");
    EXPECT_EQ(fampool::HostOf("meta01"), "meta01");
}

TEST(NetworkTest, LoopbackInterfaceHasTheLoopbackAddress) {
    EXPECT_EQ(fampool::InterfaceAddress("lo"), "127.0.0.1");
    std::vector<std::string> names = fampool::InterfaceNames();
    EXPECT_NE(std::find(names.begin(), names.end(), "lo"), names.end());
    EXPECT_EQ(std::count(names.begin(), names.end(), "lo"), 1) << "each name once";
}

TEST(NetworkTest, UnknownInterfaceHasNoAddress) {
    EXPECT_EQ(fampool::InterfaceAddress("nosuch0"), "");
    EXPECT_EQ(fampool::InterfaceAddress(""), "");
}

TEST(NetworkTest, SourceTowardALoopbackHostIsOnLoopback) {
    EXPECT_EQ(fampool::SourceAddressToward("127.0.0.1"), "127.0.0.1");
    EXPECT_EQ(fampool::SourceAddressToward("127.0.0.2"), "127.0.0.1");
    EXPECT_EQ(fampool::SourceAddressToward("localhost"), "127.0.0.1") << "IPv4 first";
}

// (No name lookup here: a test must not depend on a name server.)
TEST(NetworkTest, SourceTowardNoHostIsEmpty) { EXPECT_EQ(fampool::SourceAddressToward(""), ""); }

// A socket on 127.0.0.1 at a port of the kernel's choosing, listening (a server that never
// accepts: as a stopped one) or only bound (nothing listens); its "host:port".
std::string LoopbackSocket(bool listening, int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(bind(*fd, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
    if (listening) EXPECT_EQ(listen(*fd, 4), 0);
    EXPECT_EQ(getsockname(*fd, reinterpret_cast<sockaddr *>(&address), &length), 0);
    return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

// What the heartbeats ask to tell a dead memory server from a stopped one
// (meta/metadata_health.cc).
TEST(NetworkTest, APortRefusesOnlyWhenNothingListensThere) {
    const auto bound = std::chrono::milliseconds(200);
    int listener = -1, closed = -1;
    std::string listening = LoopbackSocket(true, &listener);
    std::string nobody = LoopbackSocket(false, &closed);
    EXPECT_FALSE(fampool::PortRefuses(listening, bound)) << "a listener that never accepts";
    EXPECT_TRUE(fampool::PortRefuses(nobody, bound)) << "a port nothing listens on";
    close(listener);
    EXPECT_TRUE(fampool::PortRefuses(listening, bound)) << "the listener gone";
    close(closed);
    EXPECT_FALSE(fampool::PortRefuses("127.0.0.1", bound)) << "no port: not known refused";
    EXPECT_FALSE(fampool::PortRefuses("", bound));
}

}  // namespace
}  // namespace fampool_test
