// What one user (or group) may hold of a cluster: the `quotas` key of the cluster file
// (docs/configuration.md, "Quotas"). The metadata service bounds the bytes and regions a user's
// and a group's regions take; every service (metadata shards, memory servers) bounds the
// sessions one user has open with it. The cluster user, who runs the services, has no quota.
#ifndef FAMPOOL_COMMON_QUOTAS_H_
#define FAMPOOL_COMMON_QUOTAS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace YAML {
class Node;
}

namespace fampool {

// Sessions one user may have open with one service when the file sets none: enough for a job
// of that many processes, each of which opens one session with each service it calls, and a
// bound on what one user's sessions take of the service's memory (about 200 bytes each).
constexpr uint64_t kDefaultSessionsPerUser = 65536;

// Limits of one user or group; unset: no limit (sessions: kDefaultSessionsPerUser).
struct QuotaLimits {
    std::optional<uint64_t> bytes;    // what its regions reserve on the memory servers
    std::optional<uint64_t> regions;  // regions it owns
    std::optional<uint64_t> sessions;
};

struct Quotas {
    QuotaLimits defaults;                    // every user without an entry of their own
    std::map<uint32_t, QuotaLimits> users;   // by uid; a field left unset takes the default
    std::map<uint32_t, QuotaLimits> groups;  // by gid (bytes and regions only)

    // The limits that bind user `uid`: its own entry, field by field over the default.
    QuotaLimits User(uint32_t uid) const;
    // The limits of group `gid`, if the file gives it any.
    const QuotaLimits *Group(uint32_t gid) const;
    uint64_t Sessions(uint32_t uid) const;
    // Whether any user or group has a bound on bytes or regions (the metadata service counts
    // what its regions take only then).
    bool BoundsRegions() const;
};

// Reads the `quotas` key: {default: LIMITS, users: {NAME_OR_UID: LIMITS}, groups:
// {NAME_OR_GID: LIMITS}}, LIMITS a map of bytes (a size: 10GiB), regions and sessions. Names
// are resolved on this host. Throws FAM_ERR_INVALID naming the file, the key and the cause.
Quotas ReadQuotas(const YAML::Node &node, const std::string &path);

// "user 1001 (alice)" / "group 100 (users)": how refusals name whose quota it is.
std::string QuotaOwner(bool group, uint32_t id);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_QUOTAS_H_
