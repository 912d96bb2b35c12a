// Addresses: host:port, this host's network interfaces and routes (which local address a
// client's fabric endpoints bind to: client/session.cc).
#ifndef FAMPOOL_COMMON_NETWORK_H_
#define FAMPOOL_COMMON_NETWORK_H_

#include <chrono>
#include <string>
#include <vector>

namespace fampool {

// The host part of "host:port" (of "[v6]:port": v6, without the brackets).
std::string HostOf(const std::string &address);

// The port of "host:port" (also "[v6]:port"); 0 if there is none or it is not a port number.
int PortOf(const std::string &address);

// The address of network interface `device` (its first IPv4 address, else its first IPv6
// one), or "" when no interface of that name has one.
std::string InterfaceAddress(const std::string &device);

// The names of the interfaces that have an address, in the system's order, each once.
std::vector<std::string> InterfaceNames();

// The local address this host sends from to reach `host` (a name or a literal address): the
// source address of the route there. "" when `host` does not resolve or no route leads to it.
// Sends nothing. IPv4 when `host` has an IPv4 address, else IPv6.
std::string SourceAddressToward(const std::string &host);
// The same for one address family (AF_INET, AF_INET6).
std::string SourceAddressToward(const std::string &host, int family);

// Whether a TCP connection to `address` ("host:port") is refused: nothing listens on that
// port (the process is gone), as against a process that listens but is stopped or busy (the
// kernel accepts its connections) or a host that does not answer within `timeout`. False when
// the address does not resolve or the connection is accepted or times out.
bool PortRefuses(const std::string &address, std::chrono::milliseconds timeout);

// Moves the calling thread (and the threads and processes it creates from now on) into the
// network namespace named `name` (/run/netns/NAME, as `ip netns add` makes them). Call it
// before any thread is started. Throws Failure(FAM_ERR_INVALID) naming the namespace and the
// cause (not found; not permitted: it needs CAP_SYS_ADMIN, as root has).
void EnterNetworkNamespace(const std::string &name);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_NETWORK_H_
