// `fampool rm REGION [ITEM]`: destroys a region or deallocates a data item, on either model,
// as the caller's real uid and gid, so that the metadata's own permission checks decide (only
// a region's owner destroys it; an item goes with write permission on its region, by its owner
// or the region's).
#include <cstdio>

#include "cli.h"
#include "meta/client/metadata_service.h"
#include "pool.h"

namespace fampool::cli {

int Remove(const RemoveOptions &options) {
    Pool pool("rm", options.cluster);
    if (!options.item.empty()) {
        const std::string object = ItemObject(options.item, options.region);
        // A volatile region of an earlier boot lost its heap with the reboot: its items have no
        // bytes left to release, and the next program drops the region whole.
        if (pool.volatile_regions_lost()) {
            RegionInfo region = pool.Ask(RegionObject(options.region), [&] {
                return pool.metadata().LookupRegion(options.region, pool.caller());
            });
            if (region.attributes.memoryType == VOLATILE) {
                Die(1,
                    "fampool rm: {}: the volatile region's heap went with the reboot; remove "
                    "the region (fampool rm -r {}), or start a program, which releases it",
                    object, ShellQuote(options.region));
            }
        }
        ItemInfo item = pool.Ask(object, [&] {
            return pool.metadata().LookupItem(options.item, options.region, pool.caller());
        });
        pool.Ask(object, [&] {
            pool.metadata().DeallocateItem(item.region_id, item.offset, pool.caller());
        });
        std::printf("deallocated %s (%s)\n", object.c_str(), Bytes(item.size).c_str());
        return 0;
    }
    const std::string object = RegionObject(options.region);
    RegionInfo region = pool.Ask(
        object, [&] { return pool.metadata().LookupRegion(options.region, pool.caller()); });
    // fam_destroy_region takes the region's items with it; rm asks for -r first, as rmdir
    // refuses a directory that is not empty, so that a typo does not cost a region of data.
    size_t items = pool.Ask(object, [&] { return pool.ListItems(region.id).size(); });
    if (items > 0 && !options.recursive) {
        Die(1,
            "fampool rm: {} holds {} data item{}: deallocate them first (fampool rm {} ITEM), "
            "or destroy the region with them: fampool rm -r {}",
            object, items, items == 1 ? "" : "s", ShellQuote(options.region),
            ShellQuote(options.region));
    }
    pool.Ask(object, [&] { pool.metadata().DestroyRegion(region.id, pool.caller()); });
    std::printf("destroyed %s (%s%s)\n", object.c_str(), Bytes(region.size).c_str(),
                items
                    ? fmt::format(", with its {} data item{}", items, items == 1 ? "" : "s").c_str()
                    : "");
    return 0;
}

}  // namespace fampool::cli
