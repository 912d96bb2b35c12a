// openfam::fam: the facade. Each method runs its FamImpl counterpart under its own name, so that
// every error message starts with the call the user made (non-blocking calls and non-fetching
// atomics under Issue, whose failures wait for fam_quiet). Nothing else happens here.
#include "fam/fam.h"

#include <cstring>

#include "client/fam_impl.h"
#include "common/error.h"

namespace openfam {

using fampool::AtomicOp;
using fampool::FamImpl;
using fampool::Guard;

namespace {

// Runs a non-blocking call or a non-fetching atomic. A failure found when it is issued (an
// offset past the end, no permission) waits for the next fam_quiet, as OpenFAM programs
// expect: they issue these calls outside any try block.
template <typename Body>
void Issue(FamImpl *impl, const char *call, Body &&body) {
    Guard(call, [&] {
        try {
            body();
        } catch (const fampool::Failure &failure) {
            if (!impl->Defer(call, failure)) throw;
        }
    });
}

template <typename T>
void Update(FamImpl *impl, const char *call, AtomicOp op, Fam_Descriptor *d, uint64_t offset,
            T value) {
    Issue(impl, call, [&] { impl->Data().Atomic<T>(op, /*fetching=*/false, d, offset, value); });
}

template <typename T>
T Fetch(FamImpl *impl, const char *call, AtomicOp op, Fam_Descriptor *d, uint64_t offset,
        T value = T(), T compare = T()) {
    return Guard(call, [&] {
        return impl->Data().Atomic<T>(op, /*fetching=*/true, d, offset, value, compare);
    });
}

}  // namespace

fam::fam() : impl_(new FamImpl()) {}
fam::~fam() { delete impl_; }

// Life cycle and options.
void fam::fam_initialize(const char *groupName, Fam_Options *options) {
    Guard("fam_initialize", [&] { impl_->Initialize(groupName, options); });
}
void fam::fam_finalize(const char *groupName) {
    Guard("fam_finalize", [&] { impl_->Finalize(groupName); });
}
void fam::fam_abort(int status) {
    Guard("fam_abort", [&] { impl_->Abort(status); });
}
void fam::fam_barrier_all() {
    Guard("fam_barrier_all", [&] { impl_->Barrier(); });
}
const char **fam::fam_list_options() {
    return Guard("fam_list_options", [&] { return impl_->ListOptions(); });
}
const void *fam::fam_get_option(const char *optionName) {
    return Guard("fam_get_option", [&] { return impl_->GetOption(optionName); });
}
const void *fam::fam_get_option(char *optionName) {
    return fam_get_option(static_cast<const char *>(optionName));
}

// Regions.
Fam_Region_Descriptor *fam::fam_lookup_region(const char *name) {
    return Guard("fam_lookup_region", [&] { return impl_->LookupRegion(name); });
}
Fam_Region_Descriptor *fam::fam_create_region_intent(const char *name, uint64_t size,
                                                     mode_t permissions,
                                                     Fam_Region_Intent_Attributes *attributes) {
    return Guard("fam_create_region_intent", [&] {
        return impl_->CreateRegion(name, size, permissions,
                                   attributes ? &attributes->attributes : nullptr,
                                   attributes ? &attributes->intent : nullptr);
    });
}
Fam_Region_Descriptor *fam::fam_create_region(const char *name, uint64_t size, mode_t permissions,
                                              Fam_Region_Attributes *regionAttributes) {
    return Guard("fam_create_region",
                 [&] { return impl_->CreateRegion(name, size, permissions, regionAttributes); });
}
void fam::fam_destroy_region(Fam_Region_Descriptor *descriptor) {
    Guard("fam_destroy_region", [&] { impl_->DestroyRegion(descriptor); });
}
void fam::fam_resize_region(Fam_Region_Descriptor *descriptor, uint64_t nbytes) {
    Guard("fam_resize_region", [&] { impl_->ResizeRegion(descriptor, nbytes); });
}

// Items.
Fam_Descriptor *fam::fam_lookup(const char *itemName, const char *regionName) {
    return Guard("fam_lookup", [&] { return impl_->Lookup(itemName, regionName); });
}
Fam_Descriptor *fam::fam_allocate(uint64_t nbytes, mode_t accessPermissions,
                                  Fam_Region_Descriptor *region) {
    return Guard("fam_allocate",
                 [&] { return impl_->Allocate(nullptr, nbytes, accessPermissions, region); });
}
Fam_Descriptor *fam::fam_allocate(const char *name, uint64_t nbytes, mode_t accessPermissions,
                                  Fam_Region_Descriptor *region) {
    return Guard("fam_allocate", [&] {
        if (!name)
            fampool::Fail(FAM_ERR_NULLPTR, "item name is NULL (use the unnamed fam_allocate)");
        return impl_->Allocate(name, nbytes, accessPermissions, region);  // "": unnamed
    });
}
void fam::fam_deallocate(Fam_Descriptor *descriptor) {
    Guard("fam_deallocate", [&] { impl_->Deallocate(descriptor); });
}
void fam::fam_close(Fam_Descriptor *descriptor) {
    Guard("fam_close", [&] { impl_->Close(descriptor); });
}
void fam::fam_change_permissions(Fam_Descriptor *descriptor, mode_t accessPermissions) {
    Guard("fam_change_permissions",
          [&] { impl_->ChangePermissions(descriptor, accessPermissions); });
}
void fam::fam_change_permissions(Fam_Region_Descriptor *descriptor, mode_t accessPermissions) {
    Guard("fam_change_permissions",
          [&] { impl_->ChangePermissions(descriptor, accessPermissions); });
}
void fam::fam_stat(Fam_Descriptor *descriptor, Fam_Stat *famInfo) {
    Guard("fam_stat", [&] { impl_->Stat(descriptor, famInfo); });
}
void fam::fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo) {
    Guard("fam_stat", [&] { impl_->Stat(descriptor, famInfo); });
}
void fam::fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo, Fam_Placement *placement) {
    Guard("fam_stat", [&] { impl_->Stat(descriptor, famInfo, placement); });
}

// Get and put.
void fam::fam_get_blocking(void *local, Fam_Descriptor *d, uint64_t offset, uint64_t nbytes) {
    Guard("fam_get_blocking", [&] { impl_->Data().Get(local, d, offset, nbytes, true); });
}
void fam::fam_get_nonblocking(void *local, Fam_Descriptor *d, uint64_t offset, uint64_t nbytes) {
    Issue(impl_, "fam_get_nonblocking",
          [&] { impl_->Data().Get(local, d, offset, nbytes, false); });
}
void fam::fam_put_blocking(void *local, Fam_Descriptor *d, uint64_t offset, uint64_t nbytes) {
    Guard("fam_put_blocking", [&] { impl_->Data().Put(local, d, offset, nbytes, true); });
}
void fam::fam_put_nonblocking(void *local, Fam_Descriptor *d, uint64_t offset, uint64_t nbytes) {
    Issue(impl_, "fam_put_nonblocking",
          [&] { impl_->Data().Put(local, d, offset, nbytes, false); });
}

// Gather and scatter.
void fam::fam_gather_blocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                              uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
    Guard("fam_gather_blocking", [&] {
        impl_->Data().Gather(local, d, nElements, firstElement, stride, elementSize, true);
    });
}
void fam::fam_gather_blocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                              uint64_t *elementIndex, uint64_t elementSize) {
    Guard("fam_gather_blocking",
          [&] { impl_->Data().Gather(local, d, nElements, elementIndex, elementSize, true); });
}
void fam::fam_gather_nonblocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                                 uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
    Issue(impl_, "fam_gather_nonblocking", [&] {
        impl_->Data().Gather(local, d, nElements, firstElement, stride, elementSize, false);
    });
}
void fam::fam_gather_nonblocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                                 uint64_t *elementIndex, uint64_t elementSize) {
    Issue(impl_, "fam_gather_nonblocking",
          [&] { impl_->Data().Gather(local, d, nElements, elementIndex, elementSize, false); });
}
void fam::fam_queue_operation(FAM_QUEUE_OP op, void *local, Fam_Descriptor *d, uint64_t nElements,
                              uint64_t *elementIndex, uint64_t elementSize) {
    // Read as an int: a C caller may pass any, and loading one outside the enumeration as
    // FAM_QUEUE_OP is undefined behaviour (UBSan's finding); QueueOperation refuses it.
    int number;
    std::memcpy(&number, &op, sizeof number);
    Guard("fam_queue_operation",
          [&] { impl_->QueueOperation(number, local, d, nElements, elementIndex, elementSize); });
}
void fam::fam_aggregate_flush(Fam_Descriptor *d) {
    Guard("fam_aggregate_flush", [&] { impl_->AggregateFlush(d); });
}
void fam::fam_scatter_blocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                               uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
    Guard("fam_scatter_blocking", [&] {
        impl_->Data().Scatter(local, d, nElements, firstElement, stride, elementSize, true);
    });
}
void fam::fam_scatter_blocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                               uint64_t *elementIndex, uint64_t elementSize) {
    Guard("fam_scatter_blocking",
          [&] { impl_->Data().Scatter(local, d, nElements, elementIndex, elementSize, true); });
}
void fam::fam_scatter_nonblocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                                  uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
    Issue(impl_, "fam_scatter_nonblocking", [&] {
        impl_->Data().Scatter(local, d, nElements, firstElement, stride, elementSize, false);
    });
}
void fam::fam_scatter_nonblocking(void *local, Fam_Descriptor *d, uint64_t nElements,
                                  uint64_t *elementIndex, uint64_t elementSize) {
    Issue(impl_, "fam_scatter_nonblocking",
          [&] { impl_->Data().Scatter(local, d, nElements, elementIndex, elementSize, false); });
}

// Copy, backup and restore.
void *fam::fam_copy(Fam_Descriptor *src, uint64_t srcOffset, Fam_Descriptor *dest,
                    uint64_t destOffset, uint64_t nbytes) {
    return Guard("fam_copy", [&] { return impl_->Copy(src, srcOffset, dest, destOffset, nbytes); });
}
void fam::fam_copy_wait(void *waitObj) {
    Guard("fam_copy_wait", [&] { impl_->Wait(waitObj); });
}
void *fam::fam_backup(Fam_Descriptor *src, const char *backupName,
                      Fam_Backup_Options *backupOptions) {
    return Guard("fam_backup", [&] { return impl_->Backup(src, backupName, backupOptions); });
}
void fam::fam_backup_wait(void *waitObj) {
    Guard("fam_backup_wait", [&] { impl_->Wait(waitObj); });
}
void *fam::fam_restore(const char *backupName, Fam_Descriptor *dest) {
    return Guard("fam_restore", [&] { return impl_->Restore(backupName, dest); });
}
void *fam::fam_restore(const char *backupName, Fam_Region_Descriptor *destRegion,
                       const char *dataitemName, mode_t accessPermissions, Fam_Descriptor **dest) {
    return Guard("fam_restore", [&] {
        return impl_->Restore(backupName, destRegion, dataitemName, accessPermissions, dest);
    });
}
void fam::fam_restore_wait(void *waitObj) {
    Guard("fam_restore_wait", [&] { impl_->Wait(waitObj); });
}
void *fam::fam_delete_backup(const char *backupName) {
    return Guard("fam_delete_backup", [&] { return impl_->DeleteBackup(backupName); });
}
void fam::fam_delete_backup_wait(void *waitObj) {
    Guard("fam_delete_backup_wait", [&] { impl_->Wait(waitObj); });
}
char *fam::fam_list_backup(const char *backupName) {
    return Guard("fam_list_backup", [&] { return impl_->ListBackup(backupName); });
}

// Map.
void *fam::fam_map(Fam_Descriptor *descriptor) {
    return Guard("fam_map", [&] { return impl_->Map(descriptor); });
}
void fam::fam_unmap(void *local, Fam_Descriptor *descriptor) {
    Guard("fam_unmap", [&] { impl_->Unmap(local, descriptor); });
}

// Atomics.
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, int128_t value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, float value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_set(Fam_Descriptor *d, uint64_t offset, double value) {
    Update(impl_, "fam_set", AtomicOp::kSet, d, offset, value);
}
void fam::fam_add(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    Update(impl_, "fam_add", AtomicOp::kAdd, d, offset, value);
}
void fam::fam_add(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    Update(impl_, "fam_add", AtomicOp::kAdd, d, offset, value);
}
void fam::fam_add(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_add", AtomicOp::kAdd, d, offset, value);
}
void fam::fam_add(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_add", AtomicOp::kAdd, d, offset, value);
}
void fam::fam_add(Fam_Descriptor *d, uint64_t offset, float value) {
    Update(impl_, "fam_add", AtomicOp::kAdd, d, offset, value);
}
void fam::fam_add(Fam_Descriptor *d, uint64_t offset, double value) {
    Update(impl_, "fam_add", AtomicOp::kAdd, d, offset, value);
}
void fam::fam_subtract(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    Update(impl_, "fam_subtract", AtomicOp::kSubtract, d, offset, value);
}
void fam::fam_subtract(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    Update(impl_, "fam_subtract", AtomicOp::kSubtract, d, offset, value);
}
void fam::fam_subtract(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_subtract", AtomicOp::kSubtract, d, offset, value);
}
void fam::fam_subtract(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_subtract", AtomicOp::kSubtract, d, offset, value);
}
void fam::fam_subtract(Fam_Descriptor *d, uint64_t offset, float value) {
    Update(impl_, "fam_subtract", AtomicOp::kSubtract, d, offset, value);
}
void fam::fam_subtract(Fam_Descriptor *d, uint64_t offset, double value) {
    Update(impl_, "fam_subtract", AtomicOp::kSubtract, d, offset, value);
}
void fam::fam_min(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    Update(impl_, "fam_min", AtomicOp::kMin, d, offset, value);
}
void fam::fam_min(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    Update(impl_, "fam_min", AtomicOp::kMin, d, offset, value);
}
void fam::fam_min(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_min", AtomicOp::kMin, d, offset, value);
}
void fam::fam_min(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_min", AtomicOp::kMin, d, offset, value);
}
void fam::fam_min(Fam_Descriptor *d, uint64_t offset, float value) {
    Update(impl_, "fam_min", AtomicOp::kMin, d, offset, value);
}
void fam::fam_min(Fam_Descriptor *d, uint64_t offset, double value) {
    Update(impl_, "fam_min", AtomicOp::kMin, d, offset, value);
}
void fam::fam_max(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    Update(impl_, "fam_max", AtomicOp::kMax, d, offset, value);
}
void fam::fam_max(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    Update(impl_, "fam_max", AtomicOp::kMax, d, offset, value);
}
void fam::fam_max(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_max", AtomicOp::kMax, d, offset, value);
}
void fam::fam_max(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_max", AtomicOp::kMax, d, offset, value);
}
void fam::fam_max(Fam_Descriptor *d, uint64_t offset, float value) {
    Update(impl_, "fam_max", AtomicOp::kMax, d, offset, value);
}
void fam::fam_max(Fam_Descriptor *d, uint64_t offset, double value) {
    Update(impl_, "fam_max", AtomicOp::kMax, d, offset, value);
}
void fam::fam_and(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_and", AtomicOp::kAnd, d, offset, value);
}
void fam::fam_and(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_and", AtomicOp::kAnd, d, offset, value);
}
void fam::fam_or(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_or", AtomicOp::kOr, d, offset, value);
}
void fam::fam_or(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_or", AtomicOp::kOr, d, offset, value);
}
void fam::fam_xor(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    Update(impl_, "fam_xor", AtomicOp::kXor, d, offset, value);
}
void fam::fam_xor(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    Update(impl_, "fam_xor", AtomicOp::kXor, d, offset, value);
}

int32_t fam::fam_fetch_int32(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<int32_t>(impl_, "fam_fetch_int32", AtomicOp::kFetch, d, offset);
}
int64_t fam::fam_fetch_int64(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<int64_t>(impl_, "fam_fetch_int64", AtomicOp::kFetch, d, offset);
}
int128_t fam::fam_fetch_int128(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<int128_t>(impl_, "fam_fetch_int128", AtomicOp::kFetch, d, offset);
}
uint32_t fam::fam_fetch_uint32(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<uint32_t>(impl_, "fam_fetch_uint32", AtomicOp::kFetch, d, offset);
}
uint64_t fam::fam_fetch_uint64(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<uint64_t>(impl_, "fam_fetch_uint64", AtomicOp::kFetch, d, offset);
}
float fam::fam_fetch_float(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<float>(impl_, "fam_fetch_float", AtomicOp::kFetch, d, offset);
}
double fam::fam_fetch_double(Fam_Descriptor *d, uint64_t offset) {
    return Fetch<double>(impl_, "fam_fetch_double", AtomicOp::kFetch, d, offset);
}
int32_t fam::fam_swap(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    return Fetch(impl_, "fam_swap", AtomicOp::kSwap, d, offset, value);
}
int64_t fam::fam_swap(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    return Fetch(impl_, "fam_swap", AtomicOp::kSwap, d, offset, value);
}
uint32_t fam::fam_swap(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_swap", AtomicOp::kSwap, d, offset, value);
}
uint64_t fam::fam_swap(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_swap", AtomicOp::kSwap, d, offset, value);
}
float fam::fam_swap(Fam_Descriptor *d, uint64_t offset, float value) {
    return Fetch(impl_, "fam_swap", AtomicOp::kSwap, d, offset, value);
}
double fam::fam_swap(Fam_Descriptor *d, uint64_t offset, double value) {
    return Fetch(impl_, "fam_swap", AtomicOp::kSwap, d, offset, value);
}
int32_t fam::fam_compare_swap(Fam_Descriptor *d, uint64_t offset, int32_t oldValue,
                              int32_t newValue) {
    return Fetch(impl_, "fam_compare_swap", AtomicOp::kCompareSwap, d, offset, newValue, oldValue);
}
int64_t fam::fam_compare_swap(Fam_Descriptor *d, uint64_t offset, int64_t oldValue,
                              int64_t newValue) {
    return Fetch(impl_, "fam_compare_swap", AtomicOp::kCompareSwap, d, offset, newValue, oldValue);
}
uint32_t fam::fam_compare_swap(Fam_Descriptor *d, uint64_t offset, uint32_t oldValue,
                               uint32_t newValue) {
    return Fetch(impl_, "fam_compare_swap", AtomicOp::kCompareSwap, d, offset, newValue, oldValue);
}
uint64_t fam::fam_compare_swap(Fam_Descriptor *d, uint64_t offset, uint64_t oldValue,
                               uint64_t newValue) {
    return Fetch(impl_, "fam_compare_swap", AtomicOp::kCompareSwap, d, offset, newValue, oldValue);
}
int128_t fam::fam_compare_swap(Fam_Descriptor *d, uint64_t offset, int128_t oldValue,
                               int128_t newValue) {
    return Fetch(impl_, "fam_compare_swap", AtomicOp::kCompareSwap, d, offset, newValue, oldValue);
}
int32_t fam::fam_fetch_add(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    return Fetch(impl_, "fam_fetch_add", AtomicOp::kAdd, d, offset, value);
}
int64_t fam::fam_fetch_add(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    return Fetch(impl_, "fam_fetch_add", AtomicOp::kAdd, d, offset, value);
}
uint32_t fam::fam_fetch_add(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_add", AtomicOp::kAdd, d, offset, value);
}
uint64_t fam::fam_fetch_add(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_add", AtomicOp::kAdd, d, offset, value);
}
float fam::fam_fetch_add(Fam_Descriptor *d, uint64_t offset, float value) {
    return Fetch(impl_, "fam_fetch_add", AtomicOp::kAdd, d, offset, value);
}
double fam::fam_fetch_add(Fam_Descriptor *d, uint64_t offset, double value) {
    return Fetch(impl_, "fam_fetch_add", AtomicOp::kAdd, d, offset, value);
}
int32_t fam::fam_fetch_subtract(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    return Fetch(impl_, "fam_fetch_subtract", AtomicOp::kSubtract, d, offset, value);
}
int64_t fam::fam_fetch_subtract(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    return Fetch(impl_, "fam_fetch_subtract", AtomicOp::kSubtract, d, offset, value);
}
uint32_t fam::fam_fetch_subtract(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_subtract", AtomicOp::kSubtract, d, offset, value);
}
uint64_t fam::fam_fetch_subtract(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_subtract", AtomicOp::kSubtract, d, offset, value);
}
float fam::fam_fetch_subtract(Fam_Descriptor *d, uint64_t offset, float value) {
    return Fetch(impl_, "fam_fetch_subtract", AtomicOp::kSubtract, d, offset, value);
}
double fam::fam_fetch_subtract(Fam_Descriptor *d, uint64_t offset, double value) {
    return Fetch(impl_, "fam_fetch_subtract", AtomicOp::kSubtract, d, offset, value);
}
int32_t fam::fam_fetch_min(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    return Fetch(impl_, "fam_fetch_min", AtomicOp::kMin, d, offset, value);
}
int64_t fam::fam_fetch_min(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    return Fetch(impl_, "fam_fetch_min", AtomicOp::kMin, d, offset, value);
}
uint32_t fam::fam_fetch_min(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_min", AtomicOp::kMin, d, offset, value);
}
uint64_t fam::fam_fetch_min(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_min", AtomicOp::kMin, d, offset, value);
}
float fam::fam_fetch_min(Fam_Descriptor *d, uint64_t offset, float value) {
    return Fetch(impl_, "fam_fetch_min", AtomicOp::kMin, d, offset, value);
}
double fam::fam_fetch_min(Fam_Descriptor *d, uint64_t offset, double value) {
    return Fetch(impl_, "fam_fetch_min", AtomicOp::kMin, d, offset, value);
}
int32_t fam::fam_fetch_max(Fam_Descriptor *d, uint64_t offset, int32_t value) {
    return Fetch(impl_, "fam_fetch_max", AtomicOp::kMax, d, offset, value);
}
int64_t fam::fam_fetch_max(Fam_Descriptor *d, uint64_t offset, int64_t value) {
    return Fetch(impl_, "fam_fetch_max", AtomicOp::kMax, d, offset, value);
}
uint32_t fam::fam_fetch_max(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_max", AtomicOp::kMax, d, offset, value);
}
uint64_t fam::fam_fetch_max(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_max", AtomicOp::kMax, d, offset, value);
}
float fam::fam_fetch_max(Fam_Descriptor *d, uint64_t offset, float value) {
    return Fetch(impl_, "fam_fetch_max", AtomicOp::kMax, d, offset, value);
}
double fam::fam_fetch_max(Fam_Descriptor *d, uint64_t offset, double value) {
    return Fetch(impl_, "fam_fetch_max", AtomicOp::kMax, d, offset, value);
}
uint32_t fam::fam_fetch_and(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_and", AtomicOp::kAnd, d, offset, value);
}
uint64_t fam::fam_fetch_and(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_and", AtomicOp::kAnd, d, offset, value);
}
uint32_t fam::fam_fetch_or(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_or", AtomicOp::kOr, d, offset, value);
}
uint64_t fam::fam_fetch_or(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_or", AtomicOp::kOr, d, offset, value);
}
uint32_t fam::fam_fetch_xor(Fam_Descriptor *d, uint64_t offset, uint32_t value) {
    return Fetch(impl_, "fam_fetch_xor", AtomicOp::kXor, d, offset, value);
}
uint64_t fam::fam_fetch_xor(Fam_Descriptor *d, uint64_t offset, uint64_t value) {
    return Fetch(impl_, "fam_fetch_xor", AtomicOp::kXor, d, offset, value);
}

// Ordering and contexts.
void fam::fam_fence() {
    Guard("fam_fence", [&] { impl_->Fence(); });
}
void fam::fam_quiet() {
    Guard("fam_quiet", [&] { impl_->Quiet(); });
}
uint64_t fam::fam_progress() {
    return Guard("fam_progress", [&] { return impl_->Progress(); });
}
fam_context *fam::fam_context_open() {
    return Guard("fam_context_open", [&] { return impl_->ContextOpen(); });
}
void fam::fam_context_close(fam_context *context) {
    Guard("fam_context_close", [&] { impl_->ContextClose(context); });
}

}  // namespace openfam
