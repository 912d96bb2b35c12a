// access_worker: what another user may do to a region and an item, run by the cluster tests
// as a separate program (exec, not fork: a forked child must not share the parent's gRPC and
// libfabric state) under another uid/gid.
//
//   access_worker REGION ITEM
//
// Initializes fam from the environment (FAMPOOL_CONFIG), then tries each operation below and
// prints one line per operation, "<operation> <FAM error code>" (0: it succeeded):
//   lookup_region, lookup_item, get (8 bytes at 0), put (0x5555555555555555 at 0), set (7 at 8,
//   then fam_quiet, which reports its error), allocate (a 64-byte item "worker-item" in
//   REGION), deallocate (that item, if allocated), resize_region (to twice its size),
//   destroy_region.
// Exit status 0 when every operation ran (whatever it returned), 2 when fam_initialize threw.
#include <fam/fam.h>
#include <fam/fam_exception.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

void Try(const char *operation, const std::function<void()> &body) {
    int code = 0;
    try {
        body();
    } catch (const Fam_Exception &e) {
        code = e.fam_error();
    }
    std::printf("%s %d\n", operation, code);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: access_worker REGION ITEM\n");
        return 2;
    }
    fam f;
    try {
        f.fam_initialize("default", nullptr);
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "access_worker: fam_initialize: %s\n", e.fam_error_msg());
        return 2;
    }
    std::unique_ptr<Fam_Region_Descriptor> region;
    std::unique_ptr<Fam_Descriptor> item, mine;
    Try("lookup_region", [&] { region.reset(f.fam_lookup_region(argv[1])); });
    Try("lookup_item", [&] { item.reset(f.fam_lookup(argv[2], argv[1])); });
    uint64_t read = 0, written = 0x5555555555555555ull;
    Try("get", [&] { f.fam_get_blocking(&read, item.get(), 0, sizeof read); });
    Try("put", [&] { f.fam_put_blocking(&written, item.get(), 0, sizeof written); });
    Try("set", [&] {
        f.fam_set(item.get(), 8, uint64_t{7});
        f.fam_quiet();  // where a non-fetching atomic's error is reported
    });
    Try("allocate", [&] { mine.reset(f.fam_allocate("worker-item", 64, 0600, region.get())); });
    Try("deallocate", [&] { f.fam_deallocate(mine.get()); });
    Try("resize_region", [&] {
        Fam_Stat stat{};
        f.fam_stat(region.get(), &stat);
        f.fam_resize_region(region.get(), 2 * stat.size);
    });
    Try("destroy_region", [&] { f.fam_destroy_region(region.get()); });
    f.fam_finalize("default");
    return 0;
}
