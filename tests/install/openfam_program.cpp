// A program written for OpenFAM, unchanged: it includes fam/fam.h, uses openfam::fam with
// Fam_Options, and the calls and descriptors of OpenFAM's API. The install test builds it
// against an installed fampool (CMake and pkg-config) and runs it on the embedded model.
#include <fam/fam.h>

#include <cstdio>
#include <cstring>
#include <iostream>

using namespace openfam;

int main() {
    fam *my_fam = new fam();
    Fam_Options fm;
    memset(&fm, 0, sizeof(Fam_Options));
    fm.runtime = strdup("NONE");
    try {
        my_fam->fam_initialize("default", &fm);
        Fam_Region_Descriptor *region =
            my_fam->fam_create_region("install_check", 8 * 1024 * 1024, 0777, NULL);
        Fam_Descriptor *item = my_fam->fam_allocate("counts", 4096, 0600, region);
        int64_t values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        my_fam->fam_put_blocking(values, item, 0, sizeof(values));
        my_fam->fam_add(item, 0, static_cast<int64_t>(41));
        int64_t back[8] = {0};
        my_fam->fam_get_blocking(back, item, 0, sizeof(back));
        Fam_Stat info;
        my_fam->fam_stat(item, &info);
        my_fam->fam_deallocate(item);
        my_fam->fam_destroy_region(region);
        my_fam->fam_finalize("default");
        if (back[0] != 42 || back[7] != 8 || info.size != 4096) {
            std::cerr << "wrong values: " << back[0] << " " << back[7] << " " << info.size << "\n";
            return 1;
        }
        std::printf("openfam program: ok\n");
    } catch (Fam_Exception &e) {
        std::cerr << "fam error " << e.fam_error() << ": " << e.fam_error_msg() << "\n";
        return 1;
    }
    delete my_fam;
    return 0;
}
