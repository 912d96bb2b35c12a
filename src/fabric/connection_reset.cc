#include "fabric/connection_reset.h"

#include <dirent.h>
#include <netinet/in.h>
#include <rdma/fi_domain.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <utility>

namespace fampool {
namespace {

using Endpoint = std::pair<in6_addr, uint16_t>;  // IPv6 (IPv4 mapped), port

bool SocketAddress(const sockaddr_storage &address, socklen_t length, Endpoint *out) {
    if (address.ss_family == AF_INET && length >= sizeof(sockaddr_in)) {
        const auto *v4 = reinterpret_cast<const sockaddr_in *>(&address);
        std::memset(&out->first, 0, sizeof out->first);
        out->first.s6_addr[10] = out->first.s6_addr[11] = 0xff;
        std::memcpy(&out->first.s6_addr[12], &v4->sin_addr, 4);
        out->second = v4->sin_port;
        return true;
    }
    if (address.ss_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
        const auto *v6 = reinterpret_cast<const sockaddr_in6 *>(&address);
        out->first = v6->sin6_addr;
        out->second = v6->sin6_port;
        return true;
    }
    return false;
}

bool Same(const Endpoint &a, const Endpoint &b) {
    return a.second == b.second && std::memcmp(&a.first, &b.first, sizeof a.first) == 0;
}

}  // namespace

size_t ResetOnClose(fid_av *av, uint32_t addr_format, const std::vector<fi_addr_t> &peers) {
    if (addr_format != FI_SOCKADDR && addr_format != FI_SOCKADDR_IN &&
        addr_format != FI_SOCKADDR_IN6) {
        return 0;
    }
    std::vector<Endpoint> wanted;
    for (fi_addr_t peer : peers) {
        sockaddr_storage name{};
        size_t length = sizeof name;
        Endpoint endpoint;
        if (fi_av_lookup(av, peer, &name, &length) == 0 && length <= sizeof name &&
            SocketAddress(name, static_cast<socklen_t>(length), &endpoint)) {
            wanted.push_back(endpoint);
        }
    }
    if (wanted.empty()) return 0;
    // The provider does not name its sockets: every descriptor of the process is looked at.
    DIR *listing = opendir("/proc/self/fd");
    if (!listing) return 0;
    size_t set = 0;
    while (dirent *entry = readdir(listing)) {
        char *end = nullptr;
        const int fd = static_cast<int>(std::strtol(entry->d_name, &end, 10));
        if (end == entry->d_name || *end != '\0' || fd == dirfd(listing)) continue;
        int type = 0;
        socklen_t size = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) {
            continue;
        }
        sockaddr_storage peer{};
        socklen_t length = sizeof peer;
        Endpoint endpoint;
        if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &length) != 0 ||
            !SocketAddress(peer, length, &endpoint)) {
            continue;
        }
        for (const Endpoint &each : wanted) {
            if (!Same(each, endpoint)) continue;
            linger abort{1, 0};
            if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort) == 0) {
                ++set;
            }
            break;
        }
    }
    closedir(listing);
    return set;
}

}  // namespace fampool
