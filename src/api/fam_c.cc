// src/api/fam_c.cc: the C API (fam/fam_c.h) over openfam::fam.
//
// Every c_fam_* function is one call of the C++ API handed to one of two adapters: with_status
// (for int results) or with_result (for pointers and values). Both run the call through
// guarded(), the one place where C++ exceptions are caught and turned into the calling thread's
// last error, so that no exception ever reaches a C caller.
//
// Every handle a C caller holds is a void * made from an openfam::fam * (never from a derived
// pointer), so that turning it back into an openfam::fam * is always valid, for contexts too.

#include <fam/fam_c.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>

namespace {

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

// The calling thread's last error. The message lives in a fixed buffer so that recording an
// error never allocates (and so never throws) while an exception is being handled; a longer
// message is truncated.
struct LastError {
    int code = 0;
    char message[1024] = "";
};
thread_local LastError last_error;

void clear_error() noexcept {
    last_error.code = 0;
    last_error.message[0] = '\0';
}

// A failure must read as one in C: a code of 0 (FAM_NO_ERROR) becomes FAM_ERR_UNKNOWN, and an
// empty message is replaced by one that names the C call and the code.
void record_error(const char *api, int code, const char *message) noexcept {
    last_error.code = code > 0 ? code : openfam::FAM_ERR_UNKNOWN;
    if (message != nullptr && message[0] != '\0') {
        std::snprintf(last_error.message, sizeof last_error.message, "%s", message);
    } else {
        std::snprintf(last_error.message, sizeof last_error.message, "%s: failed with error %d",
                      api, last_error.code);
    }
}

// Runs call, records its outcome as the thread's last error and tells whether it succeeded.
// The only try/catch of the C API.
template <typename Call>
bool guarded(const char *api, Call &&call) noexcept {
    char message[256];
    try {
        call();
        clear_error();
        return true;
    } catch (const Fam_Exception &e) {
        record_error(api, e.fam_error(), e.fam_error_msg());
    } catch (const std::bad_alloc &) {
        std::snprintf(message, sizeof message, "%s: out of client memory", api);
        record_error(api, openfam::FAM_ERR_MEMORY, message);
    } catch (const std::exception &e) {
        std::snprintf(message, sizeof message, "%s: %s", api, e.what());
        record_error(api, openfam::FAM_ERR_UNKNOWN, message);
    } catch (...) {
        std::snprintf(message, sizeof message, "%s: unknown C++ exception", api);
        record_error(api, openfam::FAM_ERR_UNKNOWN, message);
    }
    return false;
}

[[noreturn]] void throw_null(const char *api, const char *what) {
    throw Fam_Exception(openfam::FAM_ERR_NULLPTR, (std::string(api) + ": " + what).c_str());
}

// The fam object (or context) behind a handle.
fam &object(c_fam *handle, const char *api) {
    if (handle == nullptr) throw_null(api, "NULL c_fam handle");
    return *static_cast<fam *>(handle);
}

void *handle_of(fam *object) { return static_cast<void *>(object); }

// Descriptors go to the C++ API as they are: a NULL one is the C++ API's to reject.
Fam_Descriptor *item(c_fam_desc *desc) { return static_cast<Fam_Descriptor *>(desc); }
Fam_Region_Descriptor *region(c_fam_region_desc *desc) {
    return static_cast<Fam_Region_Descriptor *>(desc);
}

// For calls with an int result: 0, or the negated error code.
template <typename Call>
int with_status(const char *api, c_fam *handle, Call &&call) noexcept {
    if (guarded(api, [&] { call(object(handle, api)); })) return 0;
    return -last_error.code;
}

// For calls with a pointer or value result: the result, or T{} (NULL, 0) on failure.
template <typename T, typename Call>
T with_result(const char *api, c_fam *handle, Call &&call) noexcept {
    T result{};
    guarded(api, [&] { result = call(object(handle, api)); });
    return result;
}

}  // namespace

extern "C" {

int c_fam_error(void) { return last_error.code; }

const char *c_fam_error_msg(void) { return last_error.message; }

// ---- Life cycle and options ----

c_fam *c_fam_create(void) {
    c_fam *handle = nullptr;
    guarded(__func__, [&] { handle = handle_of(new fam()); });
    return handle;
}

void c_fam_delete(c_fam *handle) { delete static_cast<fam *>(handle); }

int c_fam_initialize(c_fam *handle, const char *groupName, c_fam_options *options) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_initialize(groupName, options); });
}

int c_fam_finalize(c_fam *handle, const char *groupName) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_finalize(groupName); });
}

int c_fam_abort(c_fam *handle, int status) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_abort(status); });
}

int c_fam_barrier_all(c_fam *handle) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_barrier_all(); });
}

const char **c_fam_list_options(c_fam *handle) {
    return with_result<const char **>(__func__, handle,
                                      [&](fam &f) { return f.fam_list_options(); });
}

const void *c_fam_get_option(c_fam *handle, const char *optionName) {
    return with_result<const void *>(__func__, handle,
                                     [&](fam &f) { return f.fam_get_option(optionName); });
}

// ---- Regions ----

c_fam_region_desc *c_fam_create_region(c_fam *handle, const char *name, size_t size, mode_t perm,
                                       Fam_Region_Attributes *attributes) {
    return with_result<c_fam_region_desc *>(__func__, handle, [&](fam &f) {
        return f.fam_create_region(name, size, perm, attributes);
    });
}

c_fam_region_desc *c_fam_create_region_intent(c_fam *handle, const char *name, size_t size,
                                              mode_t perm,
                                              Fam_Region_Intent_Attributes *attributes) {
    return with_result<c_fam_region_desc *>(__func__, handle, [&](fam &f) {
        return f.fam_create_region_intent(name, size, perm, attributes);
    });
}

c_fam_region_desc *c_fam_lookup_region(c_fam *handle, const char *name) {
    return with_result<c_fam_region_desc *>(__func__, handle,
                                            [&](fam &f) { return f.fam_lookup_region(name); });
}

int c_fam_destroy_region(c_fam *handle, c_fam_region_desc *desc) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_destroy_region(region(desc)); });
}

int c_fam_resize_region(c_fam *handle, c_fam_region_desc *desc, uint64_t nbytes) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_resize_region(region(desc), nbytes); });
}

int c_fam_stat_region(c_fam *handle, c_fam_region_desc *desc, Fam_Stat *info) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_stat(region(desc), info); });
}

int c_fam_stat_region_placement(c_fam *handle, c_fam_region_desc *desc, Fam_Stat *info,
                                Fam_Placement *placement) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_stat(region(desc), info, placement); });
}

int c_fam_change_permissions_region(c_fam *handle, c_fam_region_desc *desc, mode_t perm) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_change_permissions(region(desc), perm); });
}

// ---- Data items ----

c_fam_desc *c_fam_allocate(c_fam *handle, size_t nbytes, mode_t perm, c_fam_region_desc *desc) {
    return with_result<c_fam_desc *>(
        __func__, handle, [&](fam &f) { return f.fam_allocate(nbytes, perm, region(desc)); });
}

c_fam_desc *c_fam_allocate_named(c_fam *handle, const char *name, size_t nbytes, mode_t perm,
                                 c_fam_region_desc *desc) {
    return with_result<c_fam_desc *>(
        __func__, handle, [&](fam &f) { return f.fam_allocate(name, nbytes, perm, region(desc)); });
}

c_fam_desc *c_fam_lookup(c_fam *handle, const char *itemName, const char *regionName) {
    return with_result<c_fam_desc *>(__func__, handle,
                                     [&](fam &f) { return f.fam_lookup(itemName, regionName); });
}

int c_fam_deallocate(c_fam *handle, c_fam_desc *desc) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_deallocate(item(desc)); });
}

int c_fam_close(c_fam *handle, c_fam_desc *desc) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_close(item(desc)); });
}

int c_fam_stat_data(c_fam *handle, c_fam_desc *desc, Fam_Stat *info) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_stat(item(desc), info); });
}

int c_fam_change_permissions_data(c_fam *handle, c_fam_desc *desc, mode_t perm) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_change_permissions(item(desc), perm); });
}

void c_fam_free_desc(c_fam_desc *desc) { delete item(desc); }

void c_fam_free_region_desc(c_fam_region_desc *desc) { delete region(desc); }

// ---- Get and put ----

int c_fam_get_blocking(c_fam *handle, void *local, c_fam_desc *desc, uint64_t offset,
                       size_t nbytes) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_get_blocking(local, item(desc), offset, nbytes); });
}

int c_fam_get_nonblocking(c_fam *handle, void *local, c_fam_desc *desc, uint64_t offset,
                          size_t nbytes) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_get_nonblocking(local, item(desc), offset, nbytes); });
}

int c_fam_put_blocking(c_fam *handle, void *local, c_fam_desc *desc, uint64_t offset,
                       size_t nbytes) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_put_blocking(local, item(desc), offset, nbytes); });
}

int c_fam_put_nonblocking(c_fam *handle, void *local, c_fam_desc *desc, uint64_t offset,
                          size_t nbytes) {
    return with_status(__func__, handle,
                       [&](fam &f) { f.fam_put_nonblocking(local, item(desc), offset, nbytes); });
}

// ---- Gather and scatter ----

int c_fam_gather_blocking_stride(c_fam *handle, void *local, c_fam_desc *desc, uint64_t nElements,
                                 uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_gather_blocking(local, item(desc), nElements, firstElement, stride, elementSize);
    });
}

int c_fam_gather_blocking_index(c_fam *handle, void *local, c_fam_desc *desc, uint64_t nElements,
                                uint64_t *elementIndex, uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_gather_blocking(local, item(desc), nElements, elementIndex, elementSize);
    });
}

int c_fam_gather_nonblocking_stride(c_fam *handle, void *local, c_fam_desc *desc,
                                    uint64_t nElements, uint64_t firstElement, uint64_t stride,
                                    uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_gather_nonblocking(local, item(desc), nElements, firstElement, stride, elementSize);
    });
}

int c_fam_gather_nonblocking_index(c_fam *handle, void *local, c_fam_desc *desc, uint64_t nElements,
                                   uint64_t *elementIndex, uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_gather_nonblocking(local, item(desc), nElements, elementIndex, elementSize);
    });
}

int c_fam_scatter_blocking_stride(c_fam *handle, void *local, c_fam_desc *desc, uint64_t nElements,
                                  uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_scatter_blocking(local, item(desc), nElements, firstElement, stride, elementSize);
    });
}

int c_fam_scatter_blocking_index(c_fam *handle, void *local, c_fam_desc *desc, uint64_t nElements,
                                 uint64_t *elementIndex, uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_scatter_blocking(local, item(desc), nElements, elementIndex, elementSize);
    });
}

int c_fam_scatter_nonblocking_stride(c_fam *handle, void *local, c_fam_desc *desc,
                                     uint64_t nElements, uint64_t firstElement, uint64_t stride,
                                     uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_scatter_nonblocking(local, item(desc), nElements, firstElement, stride, elementSize);
    });
}

int c_fam_scatter_nonblocking_index(c_fam *handle, void *local, c_fam_desc *desc,
                                    uint64_t nElements, uint64_t *elementIndex,
                                    uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_scatter_nonblocking(local, item(desc), nElements, elementIndex, elementSize);
    });
}

// ---- Memory-side aggregation ----

int c_fam_queue_operation(c_fam *handle, FAM_QUEUE_OP op, void *local, c_fam_desc *desc,
                          uint64_t nElements, uint64_t *elementIndex, uint64_t elementSize) {
    return with_status(__func__, handle, [&](fam &f) {
        f.fam_queue_operation(op, local, item(desc), nElements, elementIndex, elementSize);
    });
}

int c_fam_aggregate_flush(c_fam *handle, c_fam_desc *desc) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_aggregate_flush(item(desc)); });
}

// ---- Copy ----

void *c_fam_copy(c_fam *handle, c_fam_desc *src, uint64_t srcOffset, c_fam_desc *dest,
                 uint64_t destOffset, uint64_t nbytes) {
    return with_result<void *>(__func__, handle, [&](fam &f) {
        return f.fam_copy(item(src), srcOffset, item(dest), destOffset, nbytes);
    });
}

int c_fam_copy_wait(c_fam *handle, void *waitObj) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_copy_wait(waitObj); });
}

// ---- Backup and restore ----

void *c_fam_backup(c_fam *handle, c_fam_desc *src, const char *backupName,
                   Fam_Backup_Options *options) {
    return with_result<void *>(
        __func__, handle, [&](fam &f) { return f.fam_backup(item(src), backupName, options); });
}

int c_fam_backup_wait(c_fam *handle, void *waitObj) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_backup_wait(waitObj); });
}

void *c_fam_restore(c_fam *handle, const char *backupName, c_fam_desc *dest) {
    return with_result<void *>(__func__, handle,
                               [&](fam &f) { return f.fam_restore(backupName, item(dest)); });
}

void *c_fam_restore_region(c_fam *handle, const char *backupName, c_fam_region_desc *desc,
                           const char *itemName, mode_t perm, c_fam_desc **dest) {
    // The C++ call may fill in *dest only when the restore completes, so it gets the caller's
    // own pointer rather than a local copy (void * and Fam_Descriptor * share a representation).
    auto *out = reinterpret_cast<Fam_Descriptor **>(dest);
    return with_result<void *>(__func__, handle, [&](fam &f) {
        return f.fam_restore(backupName, region(desc), itemName, perm, out);
    });
}

int c_fam_restore_wait(c_fam *handle, void *waitObj) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_restore_wait(waitObj); });
}

void *c_fam_delete_backup(c_fam *handle, const char *backupName) {
    return with_result<void *>(__func__, handle,
                               [&](fam &f) { return f.fam_delete_backup(backupName); });
}

int c_fam_delete_backup_wait(c_fam *handle, void *waitObj) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_delete_backup_wait(waitObj); });
}

char *c_fam_list_backup(c_fam *handle, const char *backupName) {
    return with_result<char *>(__func__, handle,
                               [&](fam &f) { return f.fam_list_backup(backupName); });
}

// ---- Map ----

void *c_fam_map(c_fam *handle, c_fam_desc *desc) {
    return with_result<void *>(__func__, handle, [&](fam &f) { return f.fam_map(item(desc)); });
}

int c_fam_unmap(c_fam *handle, void *local, c_fam_desc *desc) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_unmap(local, item(desc)); });
}

// ---- Atomics ----
//
// One line per C function: its name, the C++ method it calls and the operand type; overload
// resolution on the operand type picks the method's typed form.

#define C_FAM_NONFETCHING(c_name, method, T)                                        \
    int c_name(c_fam *handle, c_fam_desc *desc, uint64_t offset, T operand) {       \
        return with_status(#c_name, handle,                                         \
                           [&](fam &f) { f.method(item(desc), offset, operand); }); \
    }

#define C_FAM_FETCH(c_name, method, T)                                               \
    T c_name(c_fam *handle, c_fam_desc *desc, uint64_t offset) {                     \
        return with_result<T>(#c_name, handle,                                       \
                              [&](fam &f) { return f.method(item(desc), offset); }); \
    }

#define C_FAM_FETCHING(c_name, method, T)                                                     \
    T c_name(c_fam *handle, c_fam_desc *desc, uint64_t offset, T operand) {                   \
        return with_result<T>(#c_name, handle,                                                \
                              [&](fam &f) { return f.method(item(desc), offset, operand); }); \
    }

#define C_FAM_COMPARE_SWAP(c_name, T)                                                    \
    T c_name(c_fam *handle, c_fam_desc *desc, uint64_t offset, T oldValue, T newValue) { \
        return with_result<T>(#c_name, handle, [&](fam &f) {                             \
            return f.fam_compare_swap(item(desc), offset, oldValue, newValue);           \
        });                                                                              \
    }

C_FAM_NONFETCHING(c_fam_set_int32, fam_set, int32_t)
C_FAM_NONFETCHING(c_fam_set_int64, fam_set, int64_t)
C_FAM_NONFETCHING(c_fam_set_uint32, fam_set, uint32_t)
C_FAM_NONFETCHING(c_fam_set_uint64, fam_set, uint64_t)
C_FAM_NONFETCHING(c_fam_set_float, fam_set, float)
C_FAM_NONFETCHING(c_fam_set_double, fam_set, double)

C_FAM_NONFETCHING(c_fam_add_int32, fam_add, int32_t)
C_FAM_NONFETCHING(c_fam_add_int64, fam_add, int64_t)
C_FAM_NONFETCHING(c_fam_add_uint32, fam_add, uint32_t)
C_FAM_NONFETCHING(c_fam_add_uint64, fam_add, uint64_t)
C_FAM_NONFETCHING(c_fam_add_float, fam_add, float)
C_FAM_NONFETCHING(c_fam_add_double, fam_add, double)

C_FAM_NONFETCHING(c_fam_subtract_int32, fam_subtract, int32_t)
C_FAM_NONFETCHING(c_fam_subtract_int64, fam_subtract, int64_t)
C_FAM_NONFETCHING(c_fam_subtract_uint32, fam_subtract, uint32_t)
C_FAM_NONFETCHING(c_fam_subtract_uint64, fam_subtract, uint64_t)
C_FAM_NONFETCHING(c_fam_subtract_float, fam_subtract, float)
C_FAM_NONFETCHING(c_fam_subtract_double, fam_subtract, double)

C_FAM_NONFETCHING(c_fam_min_int32, fam_min, int32_t)
C_FAM_NONFETCHING(c_fam_min_int64, fam_min, int64_t)
C_FAM_NONFETCHING(c_fam_min_uint32, fam_min, uint32_t)
C_FAM_NONFETCHING(c_fam_min_uint64, fam_min, uint64_t)
C_FAM_NONFETCHING(c_fam_min_float, fam_min, float)
C_FAM_NONFETCHING(c_fam_min_double, fam_min, double)

C_FAM_NONFETCHING(c_fam_max_int32, fam_max, int32_t)
C_FAM_NONFETCHING(c_fam_max_int64, fam_max, int64_t)
C_FAM_NONFETCHING(c_fam_max_uint32, fam_max, uint32_t)
C_FAM_NONFETCHING(c_fam_max_uint64, fam_max, uint64_t)
C_FAM_NONFETCHING(c_fam_max_float, fam_max, float)
C_FAM_NONFETCHING(c_fam_max_double, fam_max, double)

C_FAM_NONFETCHING(c_fam_and_uint32, fam_and, uint32_t)
C_FAM_NONFETCHING(c_fam_and_uint64, fam_and, uint64_t)
C_FAM_NONFETCHING(c_fam_or_uint32, fam_or, uint32_t)
C_FAM_NONFETCHING(c_fam_or_uint64, fam_or, uint64_t)
C_FAM_NONFETCHING(c_fam_xor_uint32, fam_xor, uint32_t)
C_FAM_NONFETCHING(c_fam_xor_uint64, fam_xor, uint64_t)

C_FAM_FETCH(c_fam_fetch_int32, fam_fetch_int32, int32_t)
C_FAM_FETCH(c_fam_fetch_int64, fam_fetch_int64, int64_t)
C_FAM_FETCH(c_fam_fetch_uint32, fam_fetch_uint32, uint32_t)
C_FAM_FETCH(c_fam_fetch_uint64, fam_fetch_uint64, uint64_t)
C_FAM_FETCH(c_fam_fetch_float, fam_fetch_float, float)
C_FAM_FETCH(c_fam_fetch_double, fam_fetch_double, double)

C_FAM_FETCHING(c_fam_swap_int32, fam_swap, int32_t)
C_FAM_FETCHING(c_fam_swap_int64, fam_swap, int64_t)
C_FAM_FETCHING(c_fam_swap_uint32, fam_swap, uint32_t)
C_FAM_FETCHING(c_fam_swap_uint64, fam_swap, uint64_t)
C_FAM_FETCHING(c_fam_swap_float, fam_swap, float)
C_FAM_FETCHING(c_fam_swap_double, fam_swap, double)

C_FAM_COMPARE_SWAP(c_fam_compare_swap_int32, int32_t)
C_FAM_COMPARE_SWAP(c_fam_compare_swap_int64, int64_t)
C_FAM_COMPARE_SWAP(c_fam_compare_swap_uint32, uint32_t)
C_FAM_COMPARE_SWAP(c_fam_compare_swap_uint64, uint64_t)

C_FAM_FETCHING(c_fam_fetch_add_int32, fam_fetch_add, int32_t)
C_FAM_FETCHING(c_fam_fetch_add_int64, fam_fetch_add, int64_t)
C_FAM_FETCHING(c_fam_fetch_add_uint32, fam_fetch_add, uint32_t)
C_FAM_FETCHING(c_fam_fetch_add_uint64, fam_fetch_add, uint64_t)
C_FAM_FETCHING(c_fam_fetch_add_float, fam_fetch_add, float)
C_FAM_FETCHING(c_fam_fetch_add_double, fam_fetch_add, double)

C_FAM_FETCHING(c_fam_fetch_subtract_int32, fam_fetch_subtract, int32_t)
C_FAM_FETCHING(c_fam_fetch_subtract_int64, fam_fetch_subtract, int64_t)
C_FAM_FETCHING(c_fam_fetch_subtract_uint32, fam_fetch_subtract, uint32_t)
C_FAM_FETCHING(c_fam_fetch_subtract_uint64, fam_fetch_subtract, uint64_t)
C_FAM_FETCHING(c_fam_fetch_subtract_float, fam_fetch_subtract, float)
C_FAM_FETCHING(c_fam_fetch_subtract_double, fam_fetch_subtract, double)

C_FAM_FETCHING(c_fam_fetch_min_int32, fam_fetch_min, int32_t)
C_FAM_FETCHING(c_fam_fetch_min_int64, fam_fetch_min, int64_t)
C_FAM_FETCHING(c_fam_fetch_min_uint32, fam_fetch_min, uint32_t)
C_FAM_FETCHING(c_fam_fetch_min_uint64, fam_fetch_min, uint64_t)
C_FAM_FETCHING(c_fam_fetch_min_float, fam_fetch_min, float)
C_FAM_FETCHING(c_fam_fetch_min_double, fam_fetch_min, double)

C_FAM_FETCHING(c_fam_fetch_max_int32, fam_fetch_max, int32_t)
C_FAM_FETCHING(c_fam_fetch_max_int64, fam_fetch_max, int64_t)
C_FAM_FETCHING(c_fam_fetch_max_uint32, fam_fetch_max, uint32_t)
C_FAM_FETCHING(c_fam_fetch_max_uint64, fam_fetch_max, uint64_t)
C_FAM_FETCHING(c_fam_fetch_max_float, fam_fetch_max, float)
C_FAM_FETCHING(c_fam_fetch_max_double, fam_fetch_max, double)

C_FAM_FETCHING(c_fam_fetch_and_uint32, fam_fetch_and, uint32_t)
C_FAM_FETCHING(c_fam_fetch_and_uint64, fam_fetch_and, uint64_t)
C_FAM_FETCHING(c_fam_fetch_or_uint32, fam_fetch_or, uint32_t)
C_FAM_FETCHING(c_fam_fetch_or_uint64, fam_fetch_or, uint64_t)
C_FAM_FETCHING(c_fam_fetch_xor_uint32, fam_fetch_xor, uint32_t)
C_FAM_FETCHING(c_fam_fetch_xor_uint64, fam_fetch_xor, uint64_t)

#ifdef __SIZEOF_INT128__
C_FAM_NONFETCHING(c_fam_set_int128, fam_set, int128_t)
C_FAM_FETCH(c_fam_fetch_int128, fam_fetch_int128, int128_t)
C_FAM_COMPARE_SWAP(c_fam_compare_swap_int128, int128_t)
#endif

#undef C_FAM_NONFETCHING
#undef C_FAM_FETCH
#undef C_FAM_FETCHING
#undef C_FAM_COMPARE_SWAP

// ---- Ordering ----

int c_fam_fence(c_fam *handle) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_fence(); });
}

int c_fam_quiet(c_fam *handle) {
    return with_status(__func__, handle, [&](fam &f) { f.fam_quiet(); });
}

uint64_t c_fam_progress(c_fam *handle) {
    return with_result<uint64_t>(__func__, handle, [&](fam &f) { return f.fam_progress(); });
}

// ---- Contexts ----

c_fam_context *c_fam_context_open(c_fam *handle) {
    return with_result<c_fam_context *>(__func__, handle, [&](fam &f) {
        return handle_of(f.fam_context_open());  // stored as a fam *, like every handle
    });
}

int c_fam_context_close(c_fam *handle, c_fam_context *context) {
    return with_status(__func__, handle, [&](fam &f) {
        if (context == nullptr) throw_null("c_fam_context_close", "NULL context");
        // fam has no virtual member (OpenFAM's layout), so no dynamic_cast: fam_context_close
        // refuses, with FAM_ERR_INVALID, a handle that is not a context this object opened,
        // comparing pointers only.
        f.fam_context_close(static_cast<openfam::fam_context *>(static_cast<fam *>(context)));
    });
}

}  // extern "C"
