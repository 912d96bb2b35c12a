// first_program.cc: the program of docs/first-program.md. It makes a region and an item,
// writes a greeting into the item, reads it back and cleans up; it prints the greeting and
// exits 0 when what it read is what it wrote.
#include <fam/fam.h>

#include <cstdio>
#include <cstring>

using namespace openfam;

int main() {
    fam f;
    try {
        f.fam_initialize("default", nullptr);  // the embedded model unless a cluster is set up
        // A region an interrupted run left behind goes first.
        try {
            Fam_Region_Descriptor *old = f.fam_lookup_region("first_program");
            f.fam_destroy_region(old);
            delete old;
        } catch (Fam_Exception &) {
        }
        Fam_Region_Descriptor *region =
            f.fam_create_region("first_program", 1 << 20, 0700, nullptr);
        Fam_Descriptor *item = f.fam_allocate("greeting", 64, 0600, region);
        char out[64] = "hello from fabric-attached memory", in[64] = {0};
        f.fam_put_blocking(out, item, 0, sizeof out);
        f.fam_get_blocking(in, item, 0, sizeof in);
        std::printf("%s\n", in);
        f.fam_deallocate(item);
        f.fam_destroy_region(region);
        delete item;
        delete region;
        f.fam_finalize("default");
        return std::strcmp(in, out) == 0 ? 0 : 1;
    } catch (Fam_Exception &e) {
        std::fprintf(stderr, "first_program: %s\n", e.fam_error_msg());
        f.fam_abort(1);  // ends the process with status 1
        return 1;
    }
}
