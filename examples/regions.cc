// regions.cc: the life of a region, the unit in which FAM is reserved.
//
// A region is a named pool of fabric-attached memory with a size, permissions and attributes
// (volatile or persistent memory, region- or item-level permissions). This example creates one,
// looks it up by name, inspects it with fam_stat, grows it, changes its permissions and
// destroys it, showing on the way the errors a program meets most often (a name that is taken,
// a name that is gone).
//
// Run it alone: ./regions. It exits 0 when every step behaved as the API promises.
#include <fam/fam.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

using namespace openfam;

namespace {

const char *kRegionName = "example_regions";
const char *kPersistentRegionName = "example_regions_persistent";
constexpr uint64_t kMiB = 1024 * 1024;

// Stops the example when the API did not do what it promises.
void expect(bool ok, const char *what) {
    if (!ok) throw std::runtime_error(what);
}

const char *memory_type_name(Fam_Memory_Type type) {
    switch (type) {
        case VOLATILE:
            return "volatile";
        case PERSISTENT:
            return "persistent";
        default:
            return "default";
    }
}

// Prints a string option. fam_get_option returns a copy that the caller frees.
void print_option(fam &my_fam, const char *name) {
    char *value = static_cast<char *>(const_cast<void *>(my_fam.fam_get_option(name)));
    std::printf("  option %-14s = %s\n", name, value);
    std::free(value);
}

// An earlier run that stopped half way may have left the region behind; start clean.
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

void print_region(fam &my_fam, Fam_Region_Descriptor *region) {
    Fam_Stat st{};
    my_fam.fam_stat(region, &st);
    std::printf("  region \"%s\": %llu MiB, permissions %04o, owner uid %u, %s memory\n", st.name,
                static_cast<unsigned long long>(st.size / kMiB), static_cast<unsigned>(st.perm),
                st.uid, memory_type_name(st.region_attributes.memoryType));
}

void run(fam &my_fam) {
    std::printf("regions: the session\n");
    print_option(my_fam, "VERSION");
    print_option(my_fam, "OPENFAM_MODEL");
    print_option(my_fam, "RUNTIME");

    destroy_if_exists(my_fam, kRegionName);
    destroy_if_exists(my_fam, kPersistentRegionName);

    // Attributes left at their *_DEFAULT value take the configured defaults; here we ask for
    // volatile memory (gone at reboot) and one set of permissions for the whole region.
    Fam_Region_Attributes attrs{};
    attrs.redundancyLevel = NONE;
    attrs.memoryType = VOLATILE;
    attrs.interleaveEnable = INTERLEAVE_DEFAULT;
    attrs.permissionLevel = REGION;

    std::printf("regions: create \"%s\" (64 MiB, 0777)\n", kRegionName);
    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, 64 * kMiB, 0777, &attrs);
    print_region(my_fam, region);
    expect(region->get_size() == 64 * kMiB, "new region does not report 64 MiB");

    // Region names are unique: a second create with the same name fails and changes nothing.
    try {
        Fam_Region_Descriptor *twin = my_fam.fam_create_region(kRegionName, kMiB, 0777, nullptr);
        delete twin;
        throw std::runtime_error("a second region with the same name was created");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_ALREADYEXIST, "duplicate name: wrong error code");
        std::printf("  second create refused as expected: %s\n", e.what());
    }

    // Any process (or PE) finds the region by name. Both descriptors name the same region.
    std::printf("regions: look \"%s\" up by name\n", kRegionName);
    Fam_Region_Descriptor *found = my_fam.fam_lookup_region(kRegionName);
    expect(found->get_global_descriptor().regionId == region->get_global_descriptor().regionId,
           "lookup returned a different region");
    std::printf("  found region id %llu\n",
                static_cast<unsigned long long>(found->get_global_descriptor().regionId));
    delete found;

    std::printf("regions: grow to 128 MiB\n");
    my_fam.fam_resize_region(region, 128 * kMiB);
    print_region(my_fam, region);

    std::printf("regions: restrict permissions to the owner (0700)\n");
    my_fam.fam_change_permissions(region, 0700);
    Fam_Stat st{};
    my_fam.fam_stat(region, &st);
    expect((st.perm & 0777) == 0700, "permissions did not change to 0700");
    print_region(my_fam, region);

    // Persistent regions keep their contents across reboots (their heap lives in the data
    // directory instead of /dev/shm).
    std::printf("regions: create \"%s\" (16 MiB, persistent)\n", kPersistentRegionName);
    Fam_Region_Attributes persistent{};
    persistent.memoryType = PERSISTENT;
    Fam_Region_Descriptor *durable =
        my_fam.fam_create_region(kPersistentRegionName, 16 * kMiB, 0700, &persistent);
    print_region(my_fam, durable);
    expect(durable->get_memoryType() == PERSISTENT, "region is not persistent");
    my_fam.fam_destroy_region(durable);
    delete durable;

    // Destroying a region frees it and every item in it; its name is free again.
    std::printf("regions: destroy \"%s\"\n", kRegionName);
    my_fam.fam_destroy_region(region);
    delete region;
    try {
        Fam_Region_Descriptor *gone = my_fam.fam_lookup_region(kRegionName);
        delete gone;
        throw std::runtime_error("destroyed region can still be looked up");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_NOTFOUND, "lookup after destroy: wrong error code");
        std::printf("  lookup after destroy refused as expected: %s\n", e.what());
    }
}

}  // namespace

int main() {
    fam my_fam;
    try {
        my_fam.fam_initialize("default", nullptr);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("regions: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "regions: FAILED: %s (Fam_Error %d)\n", e.what(), e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "regions: FAILED: %s\n", e.what());
    }
    return 1;
}
