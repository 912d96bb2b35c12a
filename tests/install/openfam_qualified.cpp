// A program written the way OpenFAM 3.2's headers let one write it, built by install_test.sh
// against an installed fampool: OpenFAM's names qualified (openfam::Fam_Options,
// openfam::int128_t, openfam::DATAITEM, ...) with no using-directive, `struct stat` and the
// S_I* modes through fam/fam.h alone, set_permissionLevel and get_memserver_id. fam/fam.h is
// the only header before the checks that need <sys/stat.h>.
#include <fam/fam.h>

static_assert(sizeof(struct stat) > 0, "fam/fam.h declares struct stat, as OpenFAM's does");

#include <cstdio>
#include <cstring>

int main() {
    struct stat root;
    if (stat("/", &root) != 0) return 2;
    openfam::fam *fam = new openfam::fam();
    openfam::Fam_Options options;
    std::memset(&options, 0, sizeof options);
    char runtime[] = "NONE";
    options.runtime = runtime;
    try {
        fam->fam_initialize("default", &options);
        openfam::Fam_Region_Attributes attributes = {openfam::NONE, openfam::VOLATILE,
                                                     openfam::DISABLE, openfam::REGION};
        openfam::Fam_Region_Descriptor *region =
            fam->fam_create_region("install_qualified", 1 << 20, S_IRWXU, &attributes);
        region->set_permissionLevel(openfam::REGION);
        openfam::Fam_Descriptor *item = fam->fam_allocate("x", 64, S_IRUSR | S_IWUSR, region);
        openfam::int128_t one = 1;
        fam->fam_set(item, 0, one << 70);
        bool ok = fam->fam_fetch_int128(item, 0) == (one << 70) &&
                  region->get_memserver_id() == item->get_first_memserver_id() &&
                  item->get_desc_status() == openfam::DESC_INIT_DONE;
        fam->fam_deallocate(item);
        fam->fam_destroy_region(region);
        fam->fam_finalize("default");
        delete item;
        delete region;
        delete fam;
        std::printf("openfam qualified program: %s\n", ok ? "ok" : "wrong values");
        return ok ? 0 : 1;
    } catch (openfam::Fam_Exception &e) {
        std::fprintf(stderr, "fam error %d: %s\n", e.fam_error(), e.fam_error_msg());
        return 1;
    }
}
