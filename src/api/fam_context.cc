// openfam::fam_context's control-path methods. OpenFAM 3.2's header declares them again on the
// context, so programs built against it call these symbols; each goes to fam's own method,
// which refuses it on a context with FAM_ERR_INVALIDOP (docs/semantics.md, "Differences").
#include "fam/fam.h"

namespace openfam {

fam_context::~fam_context() = default;

void fam_context::fam_initialize(const char *groupName, Fam_Options *options) {
    fam::fam_initialize(groupName, options);
}
void fam_context::fam_finalize(const char *groupName) { fam::fam_finalize(groupName); }
void fam_context::fam_abort(int status) { fam::fam_abort(status); }
void fam_context::fam_barrier_all() { fam::fam_barrier_all(); }
const char **fam_context::fam_list_options() { return fam::fam_list_options(); }
const void *fam_context::fam_get_option(char *optionName) {
    return fam::fam_get_option(static_cast<const char *>(optionName));
}
Fam_Region_Descriptor *fam_context::fam_lookup_region(const char *name) {
    return fam::fam_lookup_region(name);
}
Fam_Descriptor *fam_context::fam_lookup(const char *itemName, const char *regionName) {
    return fam::fam_lookup(itemName, regionName);
}
Fam_Region_Descriptor *fam_context::fam_create_region(const char *name, uint64_t size,
                                                      mode_t permissions,
                                                      Fam_Region_Attributes *regionAttributes) {
    return fam::fam_create_region(name, size, permissions, regionAttributes);
}
void fam_context::fam_destroy_region(Fam_Region_Descriptor *descriptor) {
    fam::fam_destroy_region(descriptor);
}
void fam_context::fam_resize_region(Fam_Region_Descriptor *descriptor, uint64_t nbytes) {
    fam::fam_resize_region(descriptor, nbytes);
}
Fam_Descriptor *fam_context::fam_allocate(uint64_t nbytes, mode_t accessPermissions,
                                          Fam_Region_Descriptor *region) {
    return fam::fam_allocate(nbytes, accessPermissions, region);
}
Fam_Descriptor *fam_context::fam_allocate(const char *name, uint64_t nbytes,
                                          mode_t accessPermissions, Fam_Region_Descriptor *region) {
    return fam::fam_allocate(name, nbytes, accessPermissions, region);
}
void fam_context::fam_deallocate(Fam_Descriptor *descriptor) { fam::fam_deallocate(descriptor); }
void fam_context::fam_close(Fam_Descriptor *descriptor) { fam::fam_close(descriptor); }
void fam_context::fam_change_permissions(Fam_Descriptor *descriptor, mode_t accessPermissions) {
    fam::fam_change_permissions(descriptor, accessPermissions);
}
fam_context *fam_context::fam_context_open() { return fam::fam_context_open(); }
void fam_context::fam_context_close(fam_context *context) { fam::fam_context_close(context); }

}  // namespace openfam
