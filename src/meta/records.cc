#include "meta/records.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace fampool {
namespace {

// Layouts are versioned by their first byte so that later releases can extend them.
// Region records: version 2, or version 3 (redundant regions), which puts its copy servers and
// member states between the server ids and the name.
constexpr uint8_t kRegionVersion = 2;
constexpr uint8_t kRedundantRegionVersion = 3;
// Version 4 (regions created with an intent): version 3's part, then the intent (hints, kind,
// server ids, failure domain, host) and the placement's reason, each string as a 2-byte length
// and its bytes.
constexpr uint8_t kIntentRegionVersion = 4;
constexpr uint8_t kItemVersion = 1;

struct __attribute__((packed)) RegionHeader {
    uint8_t version;
    uint8_t memory_type, interleave, permission_level, redundancy;
    uint32_t perm, uid, gid;
    uint64_t size;
    uint64_t interleave_size;
    uint16_t server_count;  // followed by that many 8-byte server ids, then the name
};

struct __attribute__((packed)) ItemHeader {
    uint8_t version;
    uint32_t perm, uid, gid;
    uint64_t size;
};

template <typename Header>
Header ReadHeader(std::string_view bytes, uint8_t version, const char *what, uint8_t newest = 0) {
    Header header;
    if (bytes.size() < sizeof header) {
        Fail(openfam::FAM_ERR_METADATA, "{} record is truncated ({} bytes)", what, bytes.size());
    }
    std::memcpy(&header, bytes.data(), sizeof header);
    if (header.version < version || header.version > std::max(version, newest)) {
        Fail(openfam::FAM_ERR_METADATA, "{} record has unknown version {}", what, header.version);
    }
    return header;
}

}  // namespace

std::string EncodeRegion(const RegionInfo &region) {
    RegionHeader header{};
    bool intent = !region.intent.empty() || !region.placement.empty();
    header.version = intent                ? kIntentRegionVersion
                     : IsRedundant(region) ? kRedundantRegionVersion
                                           : kRegionVersion;
    header.memory_type = static_cast<uint8_t>(region.attributes.memoryType);
    header.interleave = static_cast<uint8_t>(region.attributes.interleaveEnable);
    header.permission_level = static_cast<uint8_t>(region.attributes.permissionLevel);
    header.redundancy = static_cast<uint8_t>(region.attributes.redundancyLevel);
    header.perm = region.perm;
    header.uid = region.uid;
    header.gid = region.gid;
    header.size = region.size;
    header.interleave_size = region.interleave_size;
    header.server_count = static_cast<uint16_t>(region.memory_servers.size());
    std::string bytes(reinterpret_cast<const char *>(&header), sizeof header);
    for (uint64_t id : region.memory_servers) bytes.append(reinterpret_cast<const char *>(&id), 8);
    auto count = [&bytes](size_t n) {
        uint16_t value = static_cast<uint16_t>(n);
        bytes.append(reinterpret_cast<const char *>(&value), 2);
    };
    auto text = [&](const std::string &value) {
        std::string_view kept = std::string_view(value).substr(0, 0xffff);
        count(kept.size());
        bytes.append(kept);
    };
    if (header.version >= kRedundantRegionVersion) {
        count(region.copy_servers.size());
        for (uint64_t id : region.copy_servers)
            bytes.append(reinterpret_cast<const char *>(&id), 8);
        count(region.member_state.size());
        bytes.append(region.member_state.begin(), region.member_state.end());
    }
    if (header.version == kIntentRegionVersion) {
        bytes.append(reinterpret_cast<const char *>(&region.intent.hints), 4);
        text(region.intent.kind);
        count(region.intent.servers.size());
        for (uint64_t id : region.intent.servers) {
            bytes.append(reinterpret_cast<const char *>(&id), 8);
        }
        text(region.intent.failure_domain);
        text(region.intent.host);
        text(region.placement);
    }
    return bytes + region.name;
}

RegionInfo DecodeRegion(uint64_t id, std::string_view bytes) {
    auto header = ReadHeader<RegionHeader>(bytes, kRegionVersion, "region", kIntentRegionVersion);
    RegionInfo region;
    region.id = id;
    size_t servers_end = sizeof header + 8 * size_t{header.server_count};
    if (bytes.size() < servers_end) {
        Fail(openfam::FAM_ERR_METADATA, "region record {} is truncated", id);
    }
    for (uint16_t i = 0; i < header.server_count; ++i) {
        uint64_t server;
        std::memcpy(&server, bytes.data() + sizeof header + 8 * i, 8);
        region.memory_servers.push_back(server);
    }
    if (header.version >= kRedundantRegionVersion) {
        auto take = [&](size_t n) {
            if (bytes.size() < servers_end + n) {
                Fail(openfam::FAM_ERR_METADATA, "region record {} is truncated", id);
            }
            std::string_view part = bytes.substr(servers_end, n);
            servers_end += n;
            return part;
        };
        auto count = [&] {
            uint16_t value;
            std::memcpy(&value, take(2).data(), 2);
            return value;
        };
        auto ids = [&](std::vector<uint64_t> *out) {
            uint16_t n = count();
            std::string_view raw = take(8 * size_t{n});
            for (uint16_t i = 0; i < n; ++i) {
                uint64_t server;
                std::memcpy(&server, raw.data() + 8 * i, 8);
                out->push_back(server);
            }
        };
        ids(&region.copy_servers);
        std::string_view states = take(count());
        region.member_state.assign(states.begin(), states.end());
        if (header.version == kIntentRegionVersion) {
            auto text = [&] { return std::string(take(count())); };
            std::memcpy(&region.intent.hints, take(4).data(), 4);
            region.intent.kind = text();
            ids(&region.intent.servers);
            region.intent.failure_domain = text();
            region.intent.host = text();
            region.placement = text();
        }
    }
    region.name = std::string(bytes.substr(servers_end));
    region.size = header.size;
    region.perm = header.perm;
    region.uid = header.uid;
    region.gid = header.gid;
    region.attributes.memoryType = static_cast<Fam_Memory_Type>(header.memory_type);
    region.attributes.interleaveEnable = static_cast<Fam_Interleave_Enable>(header.interleave);
    region.attributes.permissionLevel = static_cast<Fam_Permission_Level>(header.permission_level);
    region.attributes.redundancyLevel = static_cast<Fam_Redundancy_Level>(header.redundancy);
    region.interleave_size = header.interleave_size;
    return region;
}

std::string EncodeItem(const ItemInfo &item) {
    ItemHeader header{};
    header.version = kItemVersion;
    header.perm = item.perm;
    header.uid = item.uid;
    header.gid = item.gid;
    header.size = item.size;
    std::string bytes(reinterpret_cast<const char *>(&header), sizeof header);
    return bytes + item.name;
}

ItemInfo DecodeItem(uint64_t region_id, uint64_t offset, std::string_view bytes) {
    auto header = ReadHeader<ItemHeader>(bytes, kItemVersion, "item");
    ItemInfo item;
    item.region_id = region_id;
    item.offset = offset;
    item.size = header.size;
    item.perm = header.perm;
    item.uid = header.uid;
    item.gid = header.gid;
    item.name = std::string(bytes.substr(sizeof header));
    return item;
}

}  // namespace fampool
