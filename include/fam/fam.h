// fam/fam.h: the OpenFAM programming interface as fampool implements it.
//
// The first half is plain C (enums and structs shared with fam/fam_c.h); the second half, for
// C++ only, declares the descriptors and the openfam::fam class whose methods are the API.
// Errors are reported by throwing openfam::Fam_Exception (fam/fam_exception.h).
//
// Names, as in OpenFAM 3.2: in C++ every type and enumerator below lives in namespace openfam
// (openfam::Fam_Options, openfam::RAID1, openfam::int128_t), so that programs written for
// OpenFAM compile and link unchanged; each is also declared at global scope, so that code that
// names them unqualified, with or without `using namespace openfam`, compiles too. In C they
// are global. Like OpenFAM's, this header includes <sys/stat.h> (mode_t, S_IRUSR, ...).
#ifndef FAM_FAM_H_
#define FAM_FAM_H_

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 int128_t;
#endif

#define FAM_SUCCESS 0

#ifdef __cplusplus
namespace openfam {
#ifdef __SIZEOF_INT128__
typedef ::int128_t int128_t;
#endif
extern "C" {
#endif

typedef enum Fam_Interleave_Enable {
    INTERLEAVE_DEFAULT = 0,
    ENABLE,
    DISABLE
} Fam_Interleave_Enable;
typedef enum Fam_Memory_Type { MEMORY_TYPE_DEFAULT = 0, VOLATILE, PERSISTENT } Fam_Memory_Type;
typedef enum Fam_Redundancy_Level {
    REDUNDANCY_LEVEL_DEFAULT = 0,
    NONE,
    RAID1,
    RAID5
} Fam_Redundancy_Level;
typedef enum Fam_Permission_Level {
    PERMISSION_LEVEL_DEFAULT = 0,
    REGION,
    DATAITEM
} Fam_Permission_Level;

typedef struct Fam_Region_Attributes {
    Fam_Redundancy_Level redundancyLevel;
    Fam_Memory_Type memoryType;
    Fam_Interleave_Enable interleaveEnable;
    Fam_Permission_Level permissionLevel;
} Fam_Region_Attributes;

typedef enum Fam_Descriptor_Status {
    DESC_INVALID,
    DESC_INIT_DONE,
    DESC_INIT_DONE_BUT_KEY_NOT_VALID,
    DESC_UNINITIALIZED
} Fam_Descriptor_Status;

// Names an item or a region across processes: two integers a PE can send to another.
typedef struct Fam_Global_Descriptor {
    uint64_t regionId;
    uint64_t offset;
} Fam_Global_Descriptor;

#define FAM_MAX_MEMORY_SERVERS 256

// Filled in by fam_stat. `name` points into the descriptor and lives as long as it does.
typedef struct Fam_Stat {
    uint64_t size;
    mode_t perm;
    char *name;
    uint32_t uid;
    uint32_t gid;
    Fam_Region_Attributes region_attributes;
    uint64_t num_memservers;
    uint64_t interleaveSize;
    uint64_t memory_servers[FAM_MAX_MEMORY_SERVERS];
} Fam_Stat;

// Intent-based placement (a fampool extension from seed 003, SharP UMA; docs/intent.md): a
// region's creator says what it intends for the data, and the metadata service maps that onto
// the memory servers' kinds, speeds and failure domains. Programs that do not use it see
// OpenFAM's fields, sizes and behaviour unchanged.
//
// Hints, or'ed together (each group at most one of its values where they exclude each other).
// Usage: how the data is accessed. Accessibility: who reads it. Resilience: what it survives.
typedef enum Fam_Intent_Hint {
    FAM_HINT_NONE = 0,
    FAM_HINT_BANDWIDTH = 1u << 0,    // streamed in large transfers: the set of servers whose
                                     // striped bandwidth is the highest
    FAM_HINT_LATENCY = 1u << 1,      // small scattered accesses: the lowest-latency servers
    FAM_HINT_NEAR_PE = 1u << 2,      // used mostly by the creating PE: servers on its node first
    FAM_HINT_CAPACITY = 1u << 3,     // large and cold: the far tier, then the most free memory
    FAM_HINT_JOB = 1u << 8,          // read by this job only: volatile memory is enough
    FAM_HINT_ACROSS_JOBS = 1u << 9,  // read by later jobs, across restarts: persistent memory
    FAM_HINT_VOLATILE = 1u << 16,    // may be lost with a server's restart
    FAM_HINT_PERSISTENT = 1u << 17,  // survives a server's restart: persistent memory
    FAM_HINT_SURVIVE_FAILURE = 1u << 18  // survives a server's death: RAID1 (and persistent
                                         // memory unless FAM_HINT_VOLATILE is given)
} Fam_Intent_Hint;

// A memory server's kind of memory: DRAM, persistent memory (NVRAM, or heaps on a local file
// system), or a slower far tier (CXL-attached memory, a parallel file system).
typedef enum Fam_Memory_Kind {
    FAM_KIND_ANY = 0,
    FAM_KIND_DRAM,
    FAM_KIND_PERSISTENT,
    FAM_KIND_FAR
} Fam_Memory_Kind;

#define FAM_INTENT_MAX_SERVERS 16
#define FAM_INTENT_DOMAIN_LENGTH 64

// Hints and constraints. Constraints must hold, or the region is refused with an error that
// names the unmet one; hints choose among the servers the constraints leave.
typedef struct Fam_Region_Intent {
    uint32_t hints;         // Fam_Intent_Hint values or'ed; 0: none
    Fam_Memory_Kind kind;   // only servers of this kind; FAM_KIND_ANY: any
    uint32_t server_count;  // only these memory servers (ids); 0: any
    uint64_t servers[FAM_INTENT_MAX_SERVERS];
    char failure_domain[FAM_INTENT_DOMAIN_LENGTH];  // only servers in this domain; "": any
} Fam_Region_Intent;

// fam_create_region_intent's attributes: OpenFAM's, and the intent.
typedef struct Fam_Region_Intent_Attributes {
    Fam_Region_Attributes attributes;
    Fam_Region_Intent intent;
} Fam_Region_Intent_Attributes;

// fam_stat's account of a region's placement: the intent it was created with (all zero for a
// region created without one) and why the metadata service chose its servers.
#define FAM_PLACEMENT_REASON_LENGTH 1024
typedef struct Fam_Placement {
    Fam_Region_Intent intent;
    char reason[FAM_PLACEMENT_REASON_LENGTH];
} Fam_Placement;

// Element operations fam_queue_operation queues (memory-side aggregation, a fampool extension
// from the OpenFAM paper's section V-B; OpenFAM has not frozen it): add the 4- or 8-byte
// integers given to the indexed elements (atomically), write them, or read them.
typedef enum FAM_QUEUE_OP { OP_ADD_INDEXED = 0, OP_SCATTER, OP_GATHER } FAM_QUEUE_OP;

typedef struct Fam_Backup_Options {
    uint32_t backup_option_reserved;
} Fam_Backup_Options;

// Options of fam_initialize. Any field may be NULL: the configuration file, then the built-in
// default supplies it.
typedef struct Fam_Options {
    char *defaultRegionName;
    char *cisServer;
    char *grpcPort;
    char *libfabricProvider;
    char *famThreadModel;
    char *cisInterfaceType;
    char *openFamModel;
    char *famContextModel;
    char *numConsumer;
    char *runtime;
    char *fam_default_memory_type;
    char *if_device;
    void *local_buf_addr;
    uint64_t local_buf_size;
} Fam_Options;

#ifdef __cplusplus
}  // extern "C"
}  // namespace openfam

// The global names of the types and enumerators above (OpenFAM 3.2 declares nine of these; the
// rest keep programs written for earlier fampool versions compiling).
using openfam::DATAITEM;
using openfam::DESC_INIT_DONE;
using openfam::DESC_INIT_DONE_BUT_KEY_NOT_VALID;
using openfam::DESC_INVALID;
using openfam::DESC_UNINITIALIZED;
using openfam::DISABLE;
using openfam::ENABLE;
using openfam::Fam_Backup_Options;
using openfam::Fam_Descriptor_Status;
using openfam::Fam_Global_Descriptor;
using openfam::FAM_HINT_ACROSS_JOBS;
using openfam::FAM_HINT_BANDWIDTH;
using openfam::FAM_HINT_CAPACITY;
using openfam::FAM_HINT_JOB;
using openfam::FAM_HINT_LATENCY;
using openfam::FAM_HINT_NEAR_PE;
using openfam::FAM_HINT_NONE;
using openfam::FAM_HINT_PERSISTENT;
using openfam::FAM_HINT_SURVIVE_FAILURE;
using openfam::FAM_HINT_VOLATILE;
using openfam::Fam_Intent_Hint;
using openfam::Fam_Interleave_Enable;
using openfam::FAM_KIND_ANY;
using openfam::FAM_KIND_DRAM;
using openfam::FAM_KIND_FAR;
using openfam::FAM_KIND_PERSISTENT;
using openfam::Fam_Memory_Kind;
using openfam::Fam_Memory_Type;
using openfam::Fam_Options;
using openfam::Fam_Permission_Level;
using openfam::Fam_Placement;
using openfam::FAM_QUEUE_OP;
using openfam::Fam_Redundancy_Level;
using openfam::Fam_Region_Attributes;
using openfam::Fam_Region_Intent;
using openfam::Fam_Region_Intent_Attributes;
using openfam::Fam_Stat;
using openfam::INTERLEAVE_DEFAULT;
using openfam::MEMORY_TYPE_DEFAULT;
using openfam::NONE;
using openfam::OP_ADD_INDEXED;
using openfam::OP_GATHER;
using openfam::OP_SCATTER;
using openfam::PERMISSION_LEVEL_DEFAULT;
using openfam::PERSISTENT;
using openfam::RAID1;
using openfam::RAID5;
using openfam::REDUNDANCY_LEVEL_DEFAULT;
using openfam::REGION;
using openfam::VOLATILE;

#include <fam/fam_exception.h>

namespace fampool {
struct DescriptorState;
struct RegionDescriptorState;
class FamImpl;
}  // namespace fampool

namespace openfam {

// A handle on one data item. Owned by the caller; `delete` is legal. It carries everything the
// data path needs, so get/put/atomics on it make no metadata round trip.
class Fam_Descriptor {
  public:
    Fam_Descriptor();
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor);
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t itemSize);
    Fam_Descriptor(const Fam_Descriptor &other);
    Fam_Descriptor &operator=(const Fam_Descriptor &other);
    ~Fam_Descriptor();

    Fam_Global_Descriptor get_global_descriptor();
    void set_global_descriptor(Fam_Global_Descriptor gDescriptor);
    uint64_t get_size();
    void set_size(uint64_t itemSize);
    char *get_name();
    mode_t get_perm();
    uint32_t get_uid();
    uint32_t get_gid();
    uint64_t get_interleave_size();
    uint64_t get_used_memsrv_cnt();
    uint64_t *get_memserver_ids();
    uint64_t get_first_memserver_id();
    Fam_Permission_Level get_permissionLevel();
    Fam_Descriptor_Status get_desc_status();
    void set_desc_status(Fam_Descriptor_Status status);
    void set_desc_status(int status);

    // The item's fabric keys and base addresses, one per memory server holding its bytes (in
    // get_memserver_ids order), as the metadata service granted them to this process; valid
    // until the next call of the same getter. NULL before the descriptor's first use, on the
    // embedded model and for RAID1/RAID5 items (whose members' keys fampool keeps apart).
    uint64_t *get_keys();
    uint64_t *get_base_address_list();

    // The descriptor's own copy of the item's attributes, as in OpenFAM: set_perm, set_name,
    // set_uid, set_gid and set_permissionLevel change what this descriptor's getters return,
    // not the item (fam_change_permissions does that) and not what fampool does with it.
    // get_context returns what set_context stored (fampool's data path does not use it).
    void set_perm(mode_t perm);
    void set_name(char *name);
    void set_uid(uint32_t uid);
    void set_gid(uint32_t gid);
    void set_permissionLevel(Fam_Permission_Level permissionLevel);
    void *get_context();
    void set_context(void *context);

    // Where the data path reaches the item is the metadata service's to say: these throw
    // FAM_ERR_INVALIDOP, naming the call (OpenFAM's library uses them to fill descriptors in).
    void bind_keys(uint64_t *keys, uint64_t count);
    void set_base_address_list(uint64_t *addresses, uint64_t count);
    void set_interleave_size(uint64_t interleaveSize);
    void set_used_memsrv_cnt(uint64_t count);
    void set_memserver_ids(uint64_t *ids);

    // fampool-private state; not part of the OpenFAM contract.
    fampool::DescriptorState *state() { return state_; }

  private:
    fampool::DescriptorState *state_;
};

// A handle on one region. Owned by the caller; `delete` is legal.
class Fam_Region_Descriptor {
  public:
    Fam_Region_Descriptor();
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor);
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t regionSize);
    Fam_Region_Descriptor(const Fam_Region_Descriptor &other);
    Fam_Region_Descriptor &operator=(const Fam_Region_Descriptor &other);
    ~Fam_Region_Descriptor();

    Fam_Global_Descriptor get_global_descriptor();
    void set_global_descriptor(Fam_Global_Descriptor gDescriptor);
    uint64_t get_size();
    void set_size(uint64_t regionSize);
    char *get_name();
    mode_t get_perm();
    uint32_t get_uid();
    uint32_t get_gid();
    Fam_Redundancy_Level get_redundancyLevel();
    Fam_Memory_Type get_memoryType();
    Fam_Interleave_Enable get_interleaveEnable();
    Fam_Permission_Level get_permissionLevel();
    uint64_t get_interleave_size();
    uint64_t get_used_memsrv_cnt();
    uint64_t *get_memserver_ids();
    // The first memory server of the region (its only one unless it spans several).
    uint64_t get_memserver_id();
    Fam_Descriptor_Status get_desc_status();
    void set_desc_status(Fam_Descriptor_Status status);
    void set_desc_status(int status);

    // The descriptor's own copy of the region's attributes, as in OpenFAM: the setters change
    // what this descriptor's getters return, not the region (fam_change_permissions and
    // fam_resize_region do that) and not what fampool does with it; get_context returns what
    // set_context stored.
    void set_perm(mode_t perm);
    void set_name(char *name);
    void set_redundancyLevel(Fam_Redundancy_Level level);
    void set_memoryType(Fam_Memory_Type type);
    void set_interleaveEnable(Fam_Interleave_Enable enable);
    void set_permissionLevel(Fam_Permission_Level permissionLevel);
    void *get_context();
    void set_context(void *context);

    // fampool-private state; not part of the OpenFAM contract.
    fampool::RegionDescriptorState *state() { return state_; }

  private:
    fampool::RegionDescriptorState *state_;
};

class fam_context;

// The OpenFAM API. One object per PE (or per independent user of FAM within a PE); every call
// below throws Fam_Exception on failure. Its layout is OpenFAM 3.2's (one pointer, no virtual
// member), so that programs built against OpenFAM's header run on libfampool (libopenfam.so).
class fam {
  public:
    fam();
    ~fam();
    fam(const fam &) = delete;
    fam &operator=(const fam &) = delete;

    // Life cycle and options.
    void fam_initialize(const char *groupName, Fam_Options *options);
    void fam_finalize(const char *groupName);
    void fam_abort(int status);
    void fam_barrier_all();
    const char **fam_list_options();
    const void *fam_get_option(const char *optionName);
    const void *fam_get_option(char *optionName);    // OpenFAM 3.2's signature
    const void *fam_get_option(decltype(nullptr)) {  // refused, FAM_ERR_NULLPTR
        return fam_get_option(static_cast<const char *>(nullptr));
    }

    // Regions.
    Fam_Region_Descriptor *fam_lookup_region(const char *name);
    Fam_Region_Descriptor *fam_create_region(const char *name, uint64_t size, mode_t permissions,
                                             Fam_Region_Attributes *regionAttributes);
    // fampool's extension: a region placed by intent (Fam_Region_Intent above). NULL
    // attributes: as fam_create_region with NULL. Throws FAM_ERR_INVALID for contradictory
    // hints or hints that contradict the attributes, FAM_ERR_RESOURCE when no server meets a
    // constraint, FAM_ERR_NO_SPACE when those that do lack room; the message names the part.
    Fam_Region_Descriptor *fam_create_region_intent(const char *name, uint64_t size,
                                                    mode_t permissions,
                                                    Fam_Region_Intent_Attributes *attributes);
    void fam_destroy_region(Fam_Region_Descriptor *descriptor);
    void fam_resize_region(Fam_Region_Descriptor *descriptor, uint64_t nbytes);

    // Data items.
    Fam_Descriptor *fam_lookup(const char *itemName, const char *regionName);
    Fam_Descriptor *fam_allocate(uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region);
    Fam_Descriptor *fam_allocate(const char *name, uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region);
    void fam_deallocate(Fam_Descriptor *descriptor);
    void fam_close(Fam_Descriptor *descriptor);
    void fam_change_permissions(Fam_Descriptor *descriptor, mode_t accessPermissions);
    void fam_change_permissions(Fam_Region_Descriptor *descriptor, mode_t accessPermissions);
    void fam_stat(Fam_Descriptor *descriptor, Fam_Stat *famInfo);
    void fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo);
    // fampool's extension: also the region's intent and why it was placed where it is.
    void fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo, Fam_Placement *placement);

    // Get and put.
    void fam_get_blocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                          uint64_t nbytes);
    void fam_get_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                             uint64_t nbytes);
    void fam_put_blocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                          uint64_t nbytes);
    void fam_put_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t offset,
                             uint64_t nbytes);

    // Gather and scatter: strided (element i at (firstElement + i * stride) * elementSize)
    // and indexed (element i at elementIndex[i] * elementSize).
    void fam_gather_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                             uint64_t firstElement, uint64_t stride, uint64_t elementSize);
    void fam_gather_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                             uint64_t *elementIndex, uint64_t elementSize);
    void fam_gather_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                uint64_t firstElement, uint64_t stride, uint64_t elementSize);
    void fam_gather_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                uint64_t *elementIndex, uint64_t elementSize);
    void fam_scatter_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                              uint64_t firstElement, uint64_t stride, uint64_t elementSize);
    void fam_scatter_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                              uint64_t *elementIndex, uint64_t elementSize);
    void fam_scatter_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                 uint64_t firstElement, uint64_t stride, uint64_t elementSize);
    void fam_scatter_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                 uint64_t *elementIndex, uint64_t elementSize);

    // Memory-side aggregation (docs/semantics.md, "Memory-side operations"): queues an operation on
    // nElements elements of elementSize bytes, element i at index elementIndex[i] of the item,
    // with its bytes at local + i * elementSize. The queue ships to the memory servers, which
    // apply it, when it holds aggregation_threshold elements or at fam_aggregate_flush; an
    // OP_GATHER's results are in `local` when that returns (keep it valid until then).
    void fam_queue_operation(FAM_QUEUE_OP op, void *local, Fam_Descriptor *descriptor,
                             uint64_t nElements, uint64_t *elementIndex, uint64_t elementSize);
    // Ships what is queued for the item and returns when the memory servers have applied it.
    void fam_aggregate_flush(Fam_Descriptor *descriptor);

    // FAM-to-FAM copy, done memory-side.
    void *fam_copy(Fam_Descriptor *src, uint64_t srcOffset, Fam_Descriptor *dest,
                   uint64_t destOffset, uint64_t nbytes);
    void fam_copy_wait(void *waitObj);

    // Backup and restore to the archive store.
    void *fam_backup(Fam_Descriptor *src, const char *backupName,
                     Fam_Backup_Options *backupOptions);
    void fam_backup_wait(void *waitObj);
    void *fam_restore(const char *backupName, Fam_Descriptor *dest);
    void *fam_restore(const char *backupName, Fam_Region_Descriptor *destRegion,
                      const char *dataitemName, mode_t accessPermissions, Fam_Descriptor **dest);
    void fam_restore_wait(void *waitObj);
    void *fam_delete_backup(const char *backupName);
    void fam_delete_backup_wait(void *waitObj);
    char *fam_list_backup(const char *backupName);

    // Load/store access where the memory is reachable from this node.
    void *fam_map(Fam_Descriptor *descriptor);
    void fam_unmap(void *local, Fam_Descriptor *descriptor);

    // Non-fetching atomics.
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int128_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, float value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, double value);

    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, float value);
    void fam_add(Fam_Descriptor *descriptor, uint64_t offset, double value);

    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, float value);
    void fam_subtract(Fam_Descriptor *descriptor, uint64_t offset, double value);

    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, float value);
    void fam_min(Fam_Descriptor *descriptor, uint64_t offset, double value);

    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, float value);
    void fam_max(Fam_Descriptor *descriptor, uint64_t offset, double value);

    void fam_and(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_and(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_or(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_or(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_xor(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_xor(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);

    // Fetching atomics.
    int32_t fam_fetch_int32(Fam_Descriptor *descriptor, uint64_t offset);
    int64_t fam_fetch_int64(Fam_Descriptor *descriptor, uint64_t offset);
    int128_t fam_fetch_int128(Fam_Descriptor *descriptor, uint64_t offset);
    uint32_t fam_fetch_uint32(Fam_Descriptor *descriptor, uint64_t offset);
    uint64_t fam_fetch_uint64(Fam_Descriptor *descriptor, uint64_t offset);
    float fam_fetch_float(Fam_Descriptor *descriptor, uint64_t offset);
    double fam_fetch_double(Fam_Descriptor *descriptor, uint64_t offset);

    int32_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    int64_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    uint32_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_swap(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    float fam_swap(Fam_Descriptor *descriptor, uint64_t offset, float value);
    double fam_swap(Fam_Descriptor *descriptor, uint64_t offset, double value);

    int32_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, int32_t oldValue,
                             int32_t newValue);
    int64_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, int64_t oldValue,
                             int64_t newValue);
    uint32_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, uint32_t oldValue,
                              uint32_t newValue);
    uint64_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, uint64_t oldValue,
                              uint64_t newValue);
    int128_t fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, int128_t oldValue,
                              int128_t newValue);

    int32_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    int64_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    uint32_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    float fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, float value);
    double fam_fetch_add(Fam_Descriptor *descriptor, uint64_t offset, double value);

    int32_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    int64_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    uint32_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    float fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, float value);
    double fam_fetch_subtract(Fam_Descriptor *descriptor, uint64_t offset, double value);

    int32_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    int64_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    uint32_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    float fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, float value);
    double fam_fetch_min(Fam_Descriptor *descriptor, uint64_t offset, double value);

    int32_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    int64_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    uint32_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    float fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, float value);
    double fam_fetch_max(Fam_Descriptor *descriptor, uint64_t offset, double value);

    uint32_t fam_fetch_and(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_and(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    uint32_t fam_fetch_or(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_or(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    uint32_t fam_fetch_xor(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_xor(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);

    // Ordering and completion of this object's (or context's) operations.
    void fam_fence();
    void fam_quiet();
    uint64_t fam_progress();

    // Contexts: independent streams of data-path operations with their own quiet.
    fam_context *fam_context_open();
    void fam_context_close(fam_context *context);

    // fampool-private: the implementation behind this object.
    fampool::FamImpl *impl() { return impl_; }

  protected:
    explicit fam(fampool::FamImpl *impl) : impl_(impl) {}
    fampool::FamImpl *impl_;
};

// A context opened by fam::fam_context_open. It accepts the data-path, atomic and ordering calls
// of fam; control-path calls on it throw FAM_ERR_INVALIDOP. It declares them again, as OpenFAM
// 3.2's header does, so that programs built against that header find them.
class fam_context : public fam {
  public:
    explicit fam_context(fampool::FamImpl *impl) : fam(impl) {}
    ~fam_context();

    using fam::fam_allocate;
    using fam::fam_change_permissions;
    using fam::fam_get_option;
    void fam_initialize(const char *groupName, Fam_Options *options);
    void fam_finalize(const char *groupName);
    void fam_abort(int status);
    void fam_barrier_all();
    const char **fam_list_options();
    const void *fam_get_option(char *optionName);
    Fam_Region_Descriptor *fam_lookup_region(const char *name);
    Fam_Descriptor *fam_lookup(const char *itemName, const char *regionName);
    Fam_Region_Descriptor *fam_create_region(const char *name, uint64_t size, mode_t permissions,
                                             Fam_Region_Attributes *regionAttributes);
    void fam_destroy_region(Fam_Region_Descriptor *descriptor);
    void fam_resize_region(Fam_Region_Descriptor *descriptor, uint64_t nbytes);
    Fam_Descriptor *fam_allocate(uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region);
    Fam_Descriptor *fam_allocate(const char *name, uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region);
    void fam_deallocate(Fam_Descriptor *descriptor);
    void fam_close(Fam_Descriptor *descriptor);
    void fam_change_permissions(Fam_Descriptor *descriptor, mode_t accessPermissions);
    fam_context *fam_context_open();
    void fam_context_close(fam_context *context);
};

}  // namespace openfam

#endif  // __cplusplus

#endif  // FAM_FAM_H_
