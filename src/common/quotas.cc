#include "common/quotas.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "common/config.h"
#include "common/did_you_mean.h"
#include "common/error.h"
#include "common/file_access.h"

namespace fampool {
namespace {

[[noreturn]] void BadQuota(const std::string &path, const std::string &what) {
    Fail(openfam::FAM_ERR_INVALID, "configuration file {}: quotas: {}", path, what);
}

std::string QuotaScalar(const YAML::Node &node, const std::string &path, const std::string &where) {
    if (!node.IsScalar()) BadQuota(path, where + " must be a single value");
    return node.as<std::string>();
}

QuotaLimits ReadQuotaLimits(const YAML::Node &node, const std::string &path,
                            const std::string &where, bool group) {
    const std::set<std::string> keys = group
                                           ? std::set<std::string>{"bytes", "regions"}
                                           : std::set<std::string>{"bytes", "regions", "sessions"};
    if (!node.IsMap()) {
        BadQuota(path, where + " must be a map of " +
                           (group ? "bytes, regions" : "bytes, regions, sessions"));
    }
    QuotaLimits limits;
    for (const auto &entry : node) {
        std::string key = entry.first.as<std::string>();
        std::string at = where + "." + key;
        if (!keys.count(key)) {
            BadQuota(path,
                     fmt::format("{}: unknown key \"{}\"{}{}", where, key, DidYouMean(key, keys),
                                 group && key == "sessions"
                                     ? " (sessions are bounded per user, not per group)"
                                     : ""));
        }
        std::string text = QuotaScalar(entry.second, path, at);
        bool count = key != "bytes";
        if (count && (text.empty() || text.size() > 19 ||
                      text.find_first_not_of("0123456789") != std::string::npos)) {
            BadQuota(path, fmt::format("{} \"{}\" must be a whole number", at, text));
        }
        uint64_t value = count ? std::stoull(text) : ParseSize(("quotas: " + at).c_str(), text);
        if (key == "bytes") limits.bytes = value;
        if (key == "regions") limits.regions = value;
        if (key == "sessions") {
            if (value == 0)
                BadQuota(path, at + " must be at least 1 (a user with none could not call)");
            limits.sessions = value;
        }
    }
    return limits;
}

std::map<uint32_t, QuotaLimits> ReadQuotaAccounts(const YAML::Node &node, const std::string &path,
                                                  bool group) {
    const char *kind = group ? "groups" : "users";
    if (!node.IsMap())
        BadQuota(path, fmt::format("{} must be a map from name (or id) to limits", kind));
    std::map<uint32_t, QuotaLimits> accounts;
    for (const auto &entry : node) {
        std::string text = QuotaScalar(entry.first, path, kind);
        uint32_t id = 0;
        std::string name;
        bool found = group ? FindGroup(text, &id, &name) : FindUser(text, &id, &name);
        if (!found) {
            BadQuota(path,
                     fmt::format("{}: no {} \"{}\" on this host (getent {} {})", kind,
                                 group ? "group" : "user", text, group ? "group" : "passwd", text));
        }
        if (accounts.count(id)) {
            BadQuota(path,
                     fmt::format("{}: {} {} is listed twice", kind, group ? "gid" : "uid", id));
        }
        accounts[id] = ReadQuotaLimits(entry.second, path, std::string(kind) + "." + text, group);
    }
    return accounts;
}

}  // namespace

QuotaLimits Quotas::User(uint32_t uid) const {
    QuotaLimits limits = defaults;
    auto own = users.find(uid);
    if (own == users.end()) return limits;
    if (own->second.bytes) limits.bytes = own->second.bytes;
    if (own->second.regions) limits.regions = own->second.regions;
    if (own->second.sessions) limits.sessions = own->second.sessions;
    return limits;
}

const QuotaLimits *Quotas::Group(uint32_t gid) const {
    auto found = groups.find(gid);
    return found == groups.end() ? nullptr : &found->second;
}

uint64_t Quotas::Sessions(uint32_t uid) const {
    return User(uid).sessions.value_or(kDefaultSessionsPerUser);
}

bool Quotas::BoundsRegions() const {
    auto bounds = [](const QuotaLimits &limits) { return limits.bytes || limits.regions; };
    if (bounds(defaults)) return true;
    for (const auto &[id, limits] : users) {
        if (bounds(limits)) return true;
    }
    for (const auto &[id, limits] : groups) {
        if (bounds(limits)) return true;
    }
    return false;
}

Quotas ReadQuotas(const YAML::Node &node, const std::string &path) {
    if (!node.IsMap()) BadQuota(path, "must be a map of default, users, groups");
    const std::set<std::string> keys = {"default", "users", "groups"};
    Quotas quotas;
    for (const auto &entry : node) {
        std::string key = entry.first.as<std::string>();
        if (!keys.count(key)) {
            BadQuota(path, fmt::format("unknown key \"{}\"{} (known: default, users, groups)", key,
                                       DidYouMean(key, keys)));
        }
        if (key == "default")
            quotas.defaults = ReadQuotaLimits(entry.second, path, "default", false);
        if (key == "users") quotas.users = ReadQuotaAccounts(entry.second, path, false);
        if (key == "groups") quotas.groups = ReadQuotaAccounts(entry.second, path, true);
    }
    return quotas;
}

std::string QuotaOwner(bool group, uint32_t id) {
    uint32_t found = 0;
    std::string name;
    bool named = group ? FindGroup(std::to_string(id), &found, &name)
                       : FindUser(std::to_string(id), &found, &name);
    if (!named || name == std::to_string(id)) {
        return fmt::format("{} {}", group ? "group" : "user", id);
    }
    return fmt::format("{} {} ({})", group ? "group" : "user", id, name);
}

}  // namespace fampool
