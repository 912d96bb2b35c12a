#include "common/region_attributes.h"

#include <cstring>

#include "common/error.h"

namespace fampool {
namespace {

void CheckRange(int value, int last, const char *field, const char *type,
                const std::string &region) {
    if (value >= 0 && value <= last) return;
    Fail(openfam::FAM_ERR_INVALID, "region \"{}\": {} {} is not a {} (0 to {})", region, field,
         value, type, last);
}

}  // namespace

Fam_Region_Attributes AttributesFromIntegers(int redundancy, int memory_type, int interleave,
                                             int permission_level, const std::string &region) {
    CheckRange(redundancy, RAID5, "redundancyLevel", "Fam_Redundancy_Level", region);
    CheckRange(memory_type, PERSISTENT, "memoryType", "Fam_Memory_Type", region);
    CheckRange(interleave, DISABLE, "interleaveEnable", "Fam_Interleave_Enable", region);
    CheckRange(permission_level, DATAITEM, "permissionLevel", "Fam_Permission_Level", region);
    Fam_Region_Attributes attributes{};
    attributes.redundancyLevel = static_cast<Fam_Redundancy_Level>(redundancy);
    attributes.memoryType = static_cast<Fam_Memory_Type>(memory_type);
    attributes.interleaveEnable = static_cast<Fam_Interleave_Enable>(interleave);
    attributes.permissionLevel = static_cast<Fam_Permission_Level>(permission_level);
    return attributes;
}

Fam_Region_Attributes CheckedAttributes(const Fam_Region_Attributes &attributes,
                                        const std::string &region) {
    return AttributesFromIntegers(
        RawValue(attributes.redundancyLevel), RawValue(attributes.memoryType),
        RawValue(attributes.interleaveEnable), RawValue(attributes.permissionLevel), region);
}

}  // namespace fampool
