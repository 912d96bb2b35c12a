#include "meta/records.h"

#include <cstring>

#include "common/error.h"

namespace fampool {
namespace {

// Layouts are versioned by their first byte so that later releases can extend them.
constexpr uint8_t kRegionVersion = 2;
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
Header ReadHeader(std::string_view bytes, uint8_t version, const char *what) {
    Header header;
    if (bytes.size() < sizeof header) {
        Fail(openfam::FAM_ERR_METADATA, "{} record is truncated ({} bytes)", what, bytes.size());
    }
    std::memcpy(&header, bytes.data(), sizeof header);
    if (header.version != version) {
        Fail(openfam::FAM_ERR_METADATA, "{} record has unknown version {}", what, header.version);
    }
    return header;
}

}  // namespace

std::string EncodeRegion(const RegionInfo &region) {
    RegionHeader header{};
    header.version = kRegionVersion;
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
    return bytes + region.name;
}

RegionInfo DecodeRegion(uint64_t id, std::string_view bytes) {
    auto header = ReadHeader<RegionHeader>(bytes, kRegionVersion, "region");
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
    region.name = std::string(bytes.substr(servers_end));
    region.size = header.size;
    region.perm = header.perm;
    region.uid = header.uid;
    region.gid = header.gid;
    region.attributes.memoryType = static_cast<Fam_Memory_Type>(header.memory_type);
    region.attributes.interleaveEnable = static_cast<Fam_Interleave_Enable>(header.interleave);
    region.attributes.permissionLevel =
        static_cast<Fam_Permission_Level>(header.permission_level);
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
