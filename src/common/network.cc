#include "common/network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace fampool {
namespace {

// The numeric form of an IPv4 or IPv6 socket address; "" for any other family.
std::string Numeric(const sockaddr *address) {
    char text[INET6_ADDRSTRLEN] = {};
    if (address->sa_family == AF_INET) {
        auto *in = reinterpret_cast<const sockaddr_in *>(address);
        if (!inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) return "";
    } else if (address->sa_family == AF_INET6) {
        auto *in6 = reinterpret_cast<const sockaddr_in6 *>(address);
        if (!inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text)) return "";
    } else {
        return "";
    }
    return text;
}

// Calls `visit(name, family, address)` for every IPv4 and IPv6 address of an interface.
template <typename Visit>
void EachInterfaceAddress(Visit visit) {
    ifaddrs *all = nullptr;
    if (getifaddrs(&all) != 0) return;
    for (ifaddrs *entry = all; entry; entry = entry->ifa_next) {
        if (!entry->ifa_addr || !entry->ifa_name) continue;
        std::string address = Numeric(entry->ifa_addr);
        if (!address.empty()) {
            visit(std::string(entry->ifa_name), entry->ifa_addr->sa_family, address);
        }
    }
    freeifaddrs(all);
}

}  // namespace

std::string HostOf(const std::string &address) {
    size_t colon = address.rfind(':');
    std::string host = colon == std::string::npos ? address : address.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return host;
}

int PortOf(const std::string &address) {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos || colon + 1 == address.size()) return 0;
    std::string digits = address.substr(colon + 1);
    if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
    int port = std::stoi(digits);
    return port <= 65535 ? port : 0;
}

std::string InterfaceAddress(const std::string &device) {
    std::string v4, v6;
    EachInterfaceAddress([&](const std::string &name, int family, const std::string &address) {
        if (name != device) return;
        if (family == AF_INET && v4.empty()) v4 = address;
        if (family == AF_INET6 && v6.empty()) v6 = address;
    });
    return v4.empty() ? v6 : v4;
}

std::vector<std::string> InterfaceNames() {
    std::vector<std::string> names;
    EachInterfaceAddress([&](const std::string &name, int, const std::string &) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    });
    return names;
}

std::string SourceAddressToward(const std::string &host) {
    // IPv4 first (a host name often resolves to ::1 or an IPv6 address too, while the servers
    // listen on IPv4), IPv6 when the host has no IPv4 address.
    std::string source = SourceAddressToward(host, AF_INET);
    return source.empty() ? SourceAddressToward(host, AF_INET6) : source;
}

std::string SourceAddressToward(const std::string &host, int family) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo *found = nullptr;
    // Any port: connecting a datagram socket only chooses the route, nothing is sent.
    if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return "";
    std::string source;
    for (addrinfo *entry = found; entry && source.empty(); entry = entry->ai_next) {
        int fd = socket(entry->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        sockaddr_storage local{};
        socklen_t length = sizeof local;
        if (connect(fd, entry->ai_addr, entry->ai_addrlen) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr *>(&local), &length) == 0) {
            source = Numeric(reinterpret_cast<sockaddr *>(&local));
        }
        close(fd);
    }
    freeaddrinfo(found);
    return source;
}

bool PortRefuses(const std::string &address, std::chrono::milliseconds timeout) {
    int port = PortOf(address);
    if (port == 0) return false;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    std::string service = std::to_string(port);
    if (getaddrinfo(HostOf(address).c_str(), service.c_str(), &hints, &found) != 0) return false;
    bool refused = found != nullptr;
    for (addrinfo *entry = found; entry && refused; entry = entry->ai_next) {
        int fd = socket(entry->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            refused = false;
            break;
        }
        int error = 0;
        if (connect(fd, entry->ai_addr, entry->ai_addrlen) != 0) error = errno;
        if (error == EINPROGRESS) {
            pollfd waiting{fd, POLLOUT, 0};
            if (poll(&waiting, 1, static_cast<int>(timeout.count())) == 1) {
                socklen_t length = sizeof error;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
            }
        }
        close(fd);
        // Refused only when every address of the host refuses.
        refused = error == ECONNREFUSED;
    }
    freeaddrinfo(found);
    return refused;
}

void EnterNetworkNamespace(const std::string &name) {
    std::string path = "/run/netns/" + name;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        Fail(openfam::FAM_ERR_INVALID, "network namespace {} ({}): {}", name, path,
             std::strerror(errno));
    }
    int entered = setns(fd, CLONE_NEWNET);
    int error = errno;
    close(fd);
    if (entered != 0) {
        Fail(openfam::FAM_ERR_INVALID, "cannot enter network namespace {}: {}{}", name,
             std::strerror(error),
             error == EPERM ? " (entering a namespace needs CAP_SYS_ADMIN: run as root)" : "");
    }
}

}  // namespace fampool
