// Region attributes as callers give them. A C program may store any int in a field of
// Fam_Region_Attributes, and a gRPC request any int32: reading such a value as the enumeration
// type is undefined behaviour in C++ (found by tests/fuzz/c_api_fuzz). Every way in reads the
// fields as integers and checks them here first.
#ifndef FAMPOOL_COMMON_REGION_ATTRIBUTES_H_
#define FAMPOOL_COMMON_REGION_ATTRIBUTES_H_

#include <cstring>
#include <string>

#include "fam/fam.h"

namespace fampool {

// A field of an OpenFAM enumeration type as the int a caller stored in it (any value).
template <typename Enum>
int RawValue(const Enum &field) {
    static_assert(sizeof(Enum) == sizeof(int), "OpenFAM's enumerations are int-sized");
    int value;
    std::memcpy(&value, &field, sizeof value);
    return value;
}

// The attributes built from their integer values; FAM_ERR_INVALID naming the field, its value
// and `region` when one is outside its enumeration.
Fam_Region_Attributes AttributesFromIntegers(int redundancy, int memory_type, int interleave,
                                             int permission_level, const std::string &region);
// The same for attributes stored by a caller (each field's bytes read as an int).
Fam_Region_Attributes CheckedAttributes(const Fam_Region_Attributes &attributes,
                                        const std::string &region);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_REGION_ATTRIBUTES_H_
