// items.cc: data items, the objects a program reads and writes inside a region.
//
// An item is a zero-filled extent of a region, with a name (or none), a size and permissions.
// This example allocates a named and an anonymous item, finds the named one again by name,
// rebuilds a descriptor from the two integers another PE would receive, changes an item's
// permissions (allowed in a region whose permission level is DATAITEM), and shows the errors
// for a taken name, an access past the end and a write without permission.
//
// Run it alone: ./items. It exits 0 when every step behaved as the API promises.
#include <fam/fam.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "example_items";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kItemSize = 4096;

void expect(bool ok, const char *what) {
    if (!ok) throw std::runtime_error(what);
}

// Runs `call`, which must fail with `error`; prints the message the library gave.
template <typename Call>
void expect_error(Call call, Fam_Error error, const char *what) {
    try {
        call();
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != error) throw;
        std::printf("  %s refused as expected: %s\n", what, e.what());
        return;
    }
    throw std::runtime_error(std::string(what) + " was not refused");
}

void destroy_if_exists(fam &my_fam, const char *name) {
    try {
        Fam_Region_Descriptor *stale = my_fam.fam_lookup_region(name);
        my_fam.fam_destroy_region(stale);
        delete stale;
        std::printf("  destroyed region \"%s\" left by an earlier run\n", name);
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
    }
}

void print_item(fam &my_fam, Fam_Descriptor *item) {
    Fam_Stat st{};
    my_fam.fam_stat(item, &st);
    std::printf("  item \"%s\": %llu bytes, permissions %04o, owner uid %u\n",
                st.name && st.name[0] ? st.name : "(anonymous)",
                static_cast<unsigned long long>(st.size), static_cast<unsigned>(st.perm), st.uid);
}

void run(fam &my_fam) {
    destroy_if_exists(my_fam, kRegionName);

    // DATAITEM: each item's own permission bits apply (in a REGION-level region the region's
    // bits apply to all its items).
    Fam_Region_Attributes attrs{};
    attrs.permissionLevel = DATAITEM;
    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, 16 * kMiB, 0777, &attrs);
    std::printf("items: created region \"%s\" (16 MiB, item-level permissions)\n", kRegionName);

    std::printf("items: allocate \"counters\" (%llu bytes, 0600) and an anonymous item\n",
                static_cast<unsigned long long>(kItemSize));
    Fam_Descriptor *counters = my_fam.fam_allocate("counters", kItemSize, 0600, region);
    Fam_Descriptor *scratch = my_fam.fam_allocate(1024, 0644, region);
    print_item(my_fam, counters);
    print_item(my_fam, scratch);

    // New items are zero-filled.
    std::vector<unsigned char> bytes(kItemSize, 0xff);
    my_fam.fam_get_blocking(bytes.data(), counters, 0, kItemSize);
    for (unsigned char b : bytes) expect(b == 0, "a new item is not zero-filled");
    std::printf("  \"counters\" reads as %llu zero bytes\n",
                static_cast<unsigned long long>(kItemSize));

    expect_error([&] { delete my_fam.fam_allocate("counters", kItemSize, 0600, region); },
                 FAM_ERR_ALREADYEXIST, "a second item named \"counters\"");

    // Another process finds the item by its name and its region's name.
    std::printf("items: look \"counters\" up by name\n");
    Fam_Descriptor *found = my_fam.fam_lookup("counters", kRegionName);
    Fam_Global_Descriptor g = counters->get_global_descriptor();
    expect(found->get_global_descriptor().regionId == g.regionId &&
               found->get_global_descriptor().offset == g.offset,
           "lookup returned a different item");
    expect(found->get_size() == kItemSize, "looked-up item has the wrong size");

    // A descriptor travels between PEs as two integers (and, optionally, the size). The
    // receiver rebuilds it; its first use fetches whatever else it needs.
    std::printf("items: rebuild a descriptor from {regionId %llu, offset %llu}\n",
                static_cast<unsigned long long>(g.regionId),
                static_cast<unsigned long long>(g.offset));
    Fam_Descriptor rebuilt(g, kItemSize);
    uint64_t hello = 0x1234567890abcdefULL;
    my_fam.fam_put_blocking(&hello, &rebuilt, 64, sizeof hello);
    uint64_t seen = 0;
    my_fam.fam_get_blocking(&seen, found, 64, sizeof seen);
    expect(seen == hello, "write through the rebuilt descriptor not seen through the lookup");
    std::printf("  wrote 0x%llx through it, read it back through the looked-up descriptor\n",
                static_cast<unsigned long long>(seen));

    expect_error([&] { my_fam.fam_put_blocking(&hello, counters, kItemSize - 4, sizeof hello); },
                 FAM_ERR_OUTOFRANGE, "a put running 4 bytes past the end");

    // Permissions are checked for everyone, the owner included (also root: fampool has no
    // superuser exception). A read-only item refuses writes until it is made writable again.
    std::printf("items: make \"counters\" read-only (0400)\n");
    my_fam.fam_change_permissions(counters, 0400);
    print_item(my_fam, counters);
    expect_error([&] { my_fam.fam_put_blocking(&hello, counters, 0, sizeof hello); },
                 FAM_ERR_NOPERM, "a write to the read-only item");
    my_fam.fam_get_blocking(&seen, counters, 64, sizeof seen);
    expect(seen == hello, "read-only item lost its contents");
    my_fam.fam_change_permissions(counters, 0600);
    std::printf("  reads still work; permissions restored to 0600\n");

    // fam_close drops this process's resources for a descriptor; the item stays.
    my_fam.fam_close(found);
    delete found;

    std::printf("items: deallocate both items\n");
    my_fam.fam_deallocate(counters);
    my_fam.fam_deallocate(scratch);
    delete counters;
    delete scratch;
    expect_error([&] { delete my_fam.fam_lookup("counters", kRegionName); }, FAM_ERR_NOTFOUND,
                 "a lookup of the deallocated item");

    my_fam.fam_destroy_region(region);
    delete region;
    std::printf("items: destroyed region \"%s\"\n", kRegionName);
}

}  // namespace

int main() {
    fam my_fam;
    try {
        my_fam.fam_initialize("default", nullptr);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("items: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "items: FAILED: %s (Fam_Error %d)\n", e.what(), e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "items: FAILED: %s\n", e.what());
    }
    return 1;
}
