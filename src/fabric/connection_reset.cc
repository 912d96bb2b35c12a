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

// Whether a connection to `peer` is one to `wanted`: the same address and port, or the same
// port where `wanted` names no address (a server listening on every address is reached at
// one of them).
bool Reaches(const Endpoint &peer, const Endpoint &wanted) {
    static const in6_addr kAny = IN6ADDR_ANY_INIT;
    static const in6_addr kAnyV4 = {{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0}}};
    if (peer.second != wanted.second) return false;
    return std::memcmp(&peer.first, &wanted.first, sizeof peer.first) == 0 ||
           std::memcmp(&wanted.first, &kAny, sizeof kAny) == 0 ||
           std::memcmp(&wanted.first, &kAnyV4, sizeof kAnyV4) == 0;
}

// The peer of socket `fd`, when it is a connected TCP socket.
bool PeerOf(int fd, Endpoint *peer) {
    int type = 0;
    socklen_t size = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) {
        return false;
    }
    sockaddr_storage name{};
    socklen_t length = sizeof name;
    return getpeername(fd, reinterpret_cast<sockaddr *>(&name), &length) == 0 &&
           SocketAddress(name, length, peer);
}

bool Wanted(const Endpoint &peer, const std::vector<Endpoint> &wanted) {
    for (const Endpoint &each : wanted) {
        if (Reaches(peer, each)) return true;
    }
    return false;
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
        Endpoint peer;
        if (!PeerOf(fd, &peer) || !Wanted(peer, wanted)) continue;
        linger abort{1, 0};
        if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort) != 0) continue;
        // Another thread may have closed the descriptor and opened another socket under its
        // number meanwhile: that one is put back as it was.
        if (PeerOf(fd, &peer) && Wanted(peer, wanted)) {
            ++set;
        } else {
            linger keep{0, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &keep, sizeof keep);
        }
    }
    closedir(listing);
    return set;
}

}  // namespace fampool
