// fam/fam_c.h: the OpenFAM API for C.
//
// One c_fam_* function per method of openfam::fam (fam/fam.h), over opaque handles. The enums
// and structs (Fam_Region_Attributes, Fam_Stat, Fam_Options, ...) are the ones of fam/fam.h.
// The header compiles as C11 and as C++.
//
// Handles. A c_fam is an openfam::fam object made by c_fam_create and freed by c_fam_delete. A
// c_fam_context (from c_fam_context_open) is usable wherever a c_fam is: pass it as the first
// argument of the data-path, atomic and ordering calls to use that context. A c_fam_desc is an
// openfam::Fam_Descriptor, a c_fam_region_desc an openfam::Fam_Region_Descriptor; both are owned
// by the caller, who frees them with c_fam_free_desc / c_fam_free_region_desc.
//
// Errors. No C++ exception ever crosses this interface. Every c_fam_* call except c_fam_error and
// c_fam_error_msg sets the calling thread's last error: 0 and "" when it succeeds, the Fam_Error
// code (one of the C_FAM_* constants below) and the message of the failure when it fails.
//   - Functions returning int return 0 on success and the negated Fam_Error code on failure
//     (-C_FAM_ERR_NOTFOUND, ...; -1 when a failure carries no code).
//   - Functions returning a pointer return NULL on failure.
//   - Functions returning a value (the fetching atomics, c_fam_progress) return the value on
//     success and 0 on failure. As 0 is also a legal value, check c_fam_error() == 0 after them.
#ifndef FAM_FAM_C_H_
#define FAM_FAM_C_H_

#include <fam/fam.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// The values of openfam::Fam_Error (fam/fam_exception.h, a C++ header), for C callers.
#define C_FAM_NO_ERROR 0
#define C_FAM_ERR_UNKNOWN 1
#define C_FAM_ERR_NOPERM 2
#define C_FAM_ERR_TIMEOUT 3
#define C_FAM_ERR_INVALID 4
#define C_FAM_ERR_LIBFABRIC 5
#define C_FAM_ERR_SHM 6
#define C_FAM_ERR_NOT_CREATED 7
#define C_FAM_ERR_NOTFOUND 8
#define C_FAM_ERR_ALREADYEXIST 9
#define C_FAM_ERR_ALLOCATOR 10
#define C_FAM_ERR_RPC 11
#define C_FAM_ERR_PMI 12
#define C_FAM_ERR_OUTOFRANGE 13
#define C_FAM_ERR_NO_SPACE 14
#define C_FAM_ERR_NULLPTR 15
#define C_FAM_ERR_UNIMPL 16
#define C_FAM_ERR_RESOURCE 17
#define C_FAM_ERR_INVALIDOP 18
#define C_FAM_ERR_RPC_CLIENT_NOTFOUND 19
#define C_FAM_ERR_MEMSERV_LIST_EMPTY 20
#define C_FAM_ERR_METADATA 21
#define C_FAM_ERR_MEMORY 22
#define C_FAM_ERR_NAME_TOO_LONG 23
#define C_FAM_ERR_ATL_QUEUE_FULL 24
#define C_FAM_ERR_ATL_QUEUE_INSERT 25
#define C_FAM_ERR_ATL_NOT_ENABLED 26
#define C_FAM_ERR_ATL 27
#define C_FAM_BACKUP_NOT_CREATED 28
#define C_FAM_BACKUP_NOTFOUND 29
#define C_FAM_BACKUP_INFO_NOTFOUND 30
#define C_FAM_ERR_NOT_PWR_TWO 31

#ifdef __cplusplus
extern "C" {
#endif

typedef void c_fam, c_fam_region_desc, c_fam_desc, c_fam_context;
typedef Fam_Options c_fam_options;

// The last error of the calling thread: its Fam_Error code (0 after a call that succeeded) and
// its message ("" after a call that succeeded). The message stays valid until the thread's next
// c_fam_* call.
int c_fam_error(void);
const char *c_fam_error_msg(void);

// Life cycle and options. c_fam_create makes an uninitialized object; c_fam_initialize must
// come first and c_fam_finalize last; c_fam_delete frees the object (NULL is ignored).
// c_fam_abort returns only when it fails. c_fam_list_options returns a NULL-terminated list
// of option names; c_fam_get_option a new copy of the value (a char * string, or an int * for
// PE_COUNT and PE_ID) that the caller frees with free().
c_fam *c_fam_create(void);
void c_fam_delete(c_fam *fam);
int c_fam_initialize(c_fam *fam, const char *groupName, c_fam_options *options);
int c_fam_finalize(c_fam *fam, const char *groupName);
int c_fam_abort(c_fam *fam, int status);
int c_fam_barrier_all(c_fam *fam);
const char **c_fam_list_options(c_fam *fam);
const void *c_fam_get_option(c_fam *fam, const char *optionName);

// Regions. attributes may be NULL (all defaults).
c_fam_region_desc *c_fam_create_region(c_fam *fam, const char *name, size_t size, mode_t perm,
                                       Fam_Region_Attributes *attributes);
c_fam_region_desc *c_fam_lookup_region(c_fam *fam, const char *name);
int c_fam_destroy_region(c_fam *fam, c_fam_region_desc *region);
int c_fam_resize_region(c_fam *fam, c_fam_region_desc *region, uint64_t nbytes);
int c_fam_stat_region(c_fam *fam, c_fam_region_desc *region, Fam_Stat *info);
// fampool's extension (fam/fam.h, Fam_Region_Intent): a region placed by intent, and the
// account of a region's placement. `placement` may be NULL to fill `info` only.
c_fam_region_desc *c_fam_create_region_intent(c_fam *fam, const char *name, size_t size,
                                              mode_t perm,
                                              Fam_Region_Intent_Attributes *attributes);
int c_fam_stat_region_placement(c_fam *fam, c_fam_region_desc *region, Fam_Stat *info,
                                Fam_Placement *placement);
int c_fam_change_permissions_region(c_fam *fam, c_fam_region_desc *region, mode_t perm);

// Data items. region NULL means the default region. c_fam_close releases what the client holds
// for the descriptor; the item stays.
c_fam_desc *c_fam_allocate(c_fam *fam, size_t nbytes, mode_t perm, c_fam_region_desc *region);
c_fam_desc *c_fam_allocate_named(c_fam *fam, const char *name, size_t nbytes, mode_t perm,
                                 c_fam_region_desc *region);
c_fam_desc *c_fam_lookup(c_fam *fam, const char *itemName, const char *regionName);
int c_fam_deallocate(c_fam *fam, c_fam_desc *item);
int c_fam_close(c_fam *fam, c_fam_desc *item);
int c_fam_stat_data(c_fam *fam, c_fam_desc *item, Fam_Stat *info);
int c_fam_change_permissions_data(c_fam *fam, c_fam_desc *item, mode_t perm);

// Descriptors are the caller's: these free the client-side objects (NULL is ignored). They
// never touch the item or region itself.
void c_fam_free_desc(c_fam_desc *item);
void c_fam_free_region_desc(c_fam_region_desc *region);

// Get and put: nbytes bytes between local and the item at offset. The non-blocking forms may
// report their errors at the next c_fam_quiet.
int c_fam_get_blocking(c_fam *fam, void *local, c_fam_desc *item, uint64_t offset, size_t nbytes);
int c_fam_get_nonblocking(c_fam *fam, void *local, c_fam_desc *item, uint64_t offset,
                          size_t nbytes);
int c_fam_put_blocking(c_fam *fam, void *local, c_fam_desc *item, uint64_t offset, size_t nbytes);
int c_fam_put_nonblocking(c_fam *fam, void *local, c_fam_desc *item, uint64_t offset,
                          size_t nbytes);

// Gather (item to local) and scatter (local to item) of nElements elements of elementSize
// bytes. _stride: element i is at (firstElement + i * stride) * elementSize in the item.
// _index: element i is at elementIndex[i] * elementSize.
int c_fam_gather_blocking_stride(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                 uint64_t firstElement, uint64_t stride, uint64_t elementSize);
int c_fam_gather_blocking_index(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                uint64_t *elementIndex, uint64_t elementSize);
int c_fam_gather_nonblocking_stride(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                    uint64_t firstElement, uint64_t stride, uint64_t elementSize);
int c_fam_gather_nonblocking_index(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                   uint64_t *elementIndex, uint64_t elementSize);
int c_fam_scatter_blocking_stride(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                  uint64_t firstElement, uint64_t stride, uint64_t elementSize);
int c_fam_scatter_blocking_index(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                 uint64_t *elementIndex, uint64_t elementSize);
int c_fam_scatter_nonblocking_stride(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                     uint64_t firstElement, uint64_t stride, uint64_t elementSize);
int c_fam_scatter_nonblocking_index(c_fam *fam, void *local, c_fam_desc *item, uint64_t nElements,
                                    uint64_t *elementIndex, uint64_t elementSize);

// FAM-to-FAM copy, done memory-side. c_fam_copy returns a wait object (NULL on failure) that
// c_fam_copy_wait consumes.
void *c_fam_copy(c_fam *fam, c_fam_desc *src, uint64_t srcOffset, c_fam_desc *dest,
                 uint64_t destOffset, uint64_t nbytes);
int c_fam_copy_wait(c_fam *fam, void *waitObj);

// Backup and restore to the archive store. Each starter returns a wait object (NULL on failure)
// for the matching _wait call. c_fam_restore writes into an existing item; c_fam_restore_region
// allocates the item itemName in region and stores its descriptor in *dest (set when the call
// returns, at the latest when c_fam_restore_wait returns). c_fam_list_backup returns a
// description of the backup (all backups for "*" or NULL) that the caller frees with free().
void *c_fam_backup(c_fam *fam, c_fam_desc *src, const char *backupName,
                   Fam_Backup_Options *options);
int c_fam_backup_wait(c_fam *fam, void *waitObj);
void *c_fam_restore(c_fam *fam, const char *backupName, c_fam_desc *dest);
void *c_fam_restore_region(c_fam *fam, const char *backupName, c_fam_region_desc *region,
                           const char *itemName, mode_t perm, c_fam_desc **dest);
int c_fam_restore_wait(c_fam *fam, void *waitObj);
void *c_fam_delete_backup(c_fam *fam, const char *backupName);
int c_fam_delete_backup_wait(c_fam *fam, void *waitObj);
char *c_fam_list_backup(c_fam *fam, const char *backupName);

// Load/store access to an item where its memory is reachable from this node.
void *c_fam_map(c_fam *fam, c_fam_desc *item);
int c_fam_unmap(c_fam *fam, void *local, c_fam_desc *item);

// Non-fetching atomics at offset in the item (aligned to the operand's size). Return 0 or the
// negated error code.
int c_fam_set_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int c_fam_set_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
int c_fam_set_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_set_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_set_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
int c_fam_set_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int c_fam_add_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int c_fam_add_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
int c_fam_add_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_add_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_add_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
int c_fam_add_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int c_fam_subtract_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int c_fam_subtract_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
int c_fam_subtract_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_subtract_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_subtract_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
int c_fam_subtract_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int c_fam_min_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int c_fam_min_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
int c_fam_min_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_min_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_min_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
int c_fam_min_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int c_fam_max_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int c_fam_max_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
int c_fam_max_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_max_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_max_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
int c_fam_max_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int c_fam_and_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_and_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_or_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_or_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
int c_fam_xor_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
int c_fam_xor_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);

// Fetching atomics. Each returns the value at offset before the operation (c_fam_fetch_*: the
// value there); on failure it returns 0 and sets the thread's last error, so check
// c_fam_error() == 0 to tell a fetched 0 from a failure. c_fam_compare_swap_* writes newValue
// only when the value there equals oldValue.
int32_t c_fam_fetch_int32(c_fam *fam, c_fam_desc *item, uint64_t offset);
int64_t c_fam_fetch_int64(c_fam *fam, c_fam_desc *item, uint64_t offset);
uint32_t c_fam_fetch_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset);
uint64_t c_fam_fetch_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset);
float c_fam_fetch_float(c_fam *fam, c_fam_desc *item, uint64_t offset);
double c_fam_fetch_double(c_fam *fam, c_fam_desc *item, uint64_t offset);

int32_t c_fam_swap_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int64_t c_fam_swap_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
uint32_t c_fam_swap_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_swap_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
float c_fam_swap_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
double c_fam_swap_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int32_t c_fam_compare_swap_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t oldValue,
                                 int32_t newValue);
int64_t c_fam_compare_swap_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t oldValue,
                                 int64_t newValue);
uint32_t c_fam_compare_swap_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t oldValue,
                                   uint32_t newValue);
uint64_t c_fam_compare_swap_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t oldValue,
                                   uint64_t newValue);

int32_t c_fam_fetch_add_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int64_t c_fam_fetch_add_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
uint32_t c_fam_fetch_add_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_add_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
float c_fam_fetch_add_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
double c_fam_fetch_add_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int32_t c_fam_fetch_subtract_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int64_t c_fam_fetch_subtract_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
uint32_t c_fam_fetch_subtract_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_subtract_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
float c_fam_fetch_subtract_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
double c_fam_fetch_subtract_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int32_t c_fam_fetch_min_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int64_t c_fam_fetch_min_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
uint32_t c_fam_fetch_min_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_min_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
float c_fam_fetch_min_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
double c_fam_fetch_min_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

int32_t c_fam_fetch_max_int32(c_fam *fam, c_fam_desc *item, uint64_t offset, int32_t value);
int64_t c_fam_fetch_max_int64(c_fam *fam, c_fam_desc *item, uint64_t offset, int64_t value);
uint32_t c_fam_fetch_max_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_max_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
float c_fam_fetch_max_float(c_fam *fam, c_fam_desc *item, uint64_t offset, float value);
double c_fam_fetch_max_double(c_fam *fam, c_fam_desc *item, uint64_t offset, double value);

uint32_t c_fam_fetch_and_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_and_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
uint32_t c_fam_fetch_or_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_or_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);
uint32_t c_fam_fetch_xor_uint32(c_fam *fam, c_fam_desc *item, uint64_t offset, uint32_t value);
uint64_t c_fam_fetch_xor_uint64(c_fam *fam, c_fam_desc *item, uint64_t offset, uint64_t value);

// 128-bit atomics, where the compiler has a 128-bit integer (int128_t, from fam/fam.h).
#ifdef __SIZEOF_INT128__
int c_fam_set_int128(c_fam *fam, c_fam_desc *item, uint64_t offset, int128_t value);
int128_t c_fam_fetch_int128(c_fam *fam, c_fam_desc *item, uint64_t offset);
int128_t c_fam_compare_swap_int128(c_fam *fam, c_fam_desc *item, uint64_t offset, int128_t oldValue,
                                   int128_t newValue);
#endif

// Memory-side aggregation (fam_queue_operation, fam_aggregate_flush in fam/fam.h).
int c_fam_queue_operation(c_fam *fam, FAM_QUEUE_OP op, void *local, c_fam_desc *item,
                          uint64_t nElements, uint64_t *elementIndex, uint64_t elementSize);
int c_fam_aggregate_flush(c_fam *fam, c_fam_desc *item);

// Ordering and completion of the operations issued through fam (an object or a context).
// c_fam_fence orders earlier non-blocking writes and atomics before later ones; c_fam_quiet
// waits for all of them and returns the first error any of them hit; c_fam_progress returns
// how many are still pending (0 and the last error set on failure).
int c_fam_fence(c_fam *fam);
int c_fam_quiet(c_fam *fam);
uint64_t c_fam_progress(c_fam *fam);

// Contexts: independent streams of data-path operations with their own quiet. A context
// accepts the get/put, gather/scatter, atomic and ordering calls; control-path calls on it
// fail with C_FAM_ERR_INVALIDOP. c_fam_context_close fails with C_FAM_ERR_INVALID when
// context is not a context.
c_fam_context *c_fam_context_open(c_fam *fam);
int c_fam_context_close(c_fam *fam, c_fam_context *context);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FAM_FAM_C_H_
