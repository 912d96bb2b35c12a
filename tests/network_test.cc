// The host's interfaces and routes (common/network.h): which local address a client's fabric
// endpoints bind to.
#include "common/network.h"

#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace fampool_test
