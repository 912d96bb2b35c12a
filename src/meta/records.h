// How regions and items are stored in the metadata tables (fixed header, then the name).
#ifndef FAMPOOL_META_RECORDS_H_
#define FAMPOOL_META_RECORDS_H_

#include <string>
#include <string_view>

#include "meta/client/metadata_service.h"

namespace fampool {

std::string EncodeRegion(const RegionInfo &region);
RegionInfo DecodeRegion(uint64_t id, std::string_view bytes);

// Items keep their own fields only; the region part of ItemInfo is filled by the store.
std::string EncodeItem(const ItemInfo &item);
ItemInfo DecodeItem(uint64_t region_id, uint64_t offset, std::string_view bytes);

}  // namespace fampool

#endif  // FAMPOOL_META_RECORDS_H_
