// OpenFAM 3.2's public C++ interface as its header lays it out (types and enumerators in
// namespace openfam; fam, the descriptors and fam_context each one pointer, no virtual member;
// no default arguments), for tests/install's ABI check: a program built against these
// declarations references what an OpenFAM 3.2 binary references. Written for fampool from
// OpenFAM 3.2's documented interface; not OpenFAM's file.
#ifndef OPENFAM32_FAM_H_
#define OPENFAM32_FAM_H_

#include <stdint.h>
#include <sys/stat.h>

namespace openfam {
extern "C" {
typedef enum { INTERLEAVE_DEFAULT = 0, ENABLE, DISABLE } Fam_Interleave_Enable;
typedef enum { MEMORY_TYPE_DEFAULT = 0, VOLATILE, PERSISTENT } Fam_Memory_Type;
typedef enum { REDUNDANCY_LEVEL_DEFAULT = 0, NONE, RAID1, RAID5 } Fam_Redundancy_Level;
typedef enum { PERMISSION_LEVEL_DEFAULT = 0, REGION, DATAITEM } Fam_Permission_Level;
typedef struct {
    Fam_Redundancy_Level redundancyLevel;
    Fam_Memory_Type memoryType;
    Fam_Interleave_Enable interleaveEnable;
    Fam_Permission_Level permissionLevel;
} Fam_Region_Attributes;
typedef enum {
    DESC_INVALID = 0,
    DESC_INIT_DONE,
    DESC_INIT_DONE_BUT_KEY_NOT_VALID,
    DESC_UNINITIALIZED
} Fam_Descriptor_Status;
typedef struct {
    uint64_t regionId;
    uint64_t offset;
} Fam_Global_Descriptor;
typedef struct {
    uint64_t size;
    mode_t perm;
    char *name;
    uint32_t uid;
    uint32_t gid;
    Fam_Region_Attributes region_attributes;
    uint64_t num_memservers;
    uint64_t interleaveSize;
    uint64_t memory_servers[256];
} Fam_Stat;
typedef struct {
    uint32_t backup_option_reserved;
} Fam_Backup_Options;
typedef struct {
    char *defaultRegionName, *cisServer, *grpcPort, *libfabricProvider, *famThreadModel,
        *cisInterfaceType, *openFamModel, *famContextModel, *numConsumer, *runtime,
        *fam_default_memory_type, *if_device;
    void *local_buf_addr;
    uint64_t local_buf_size;
} Fam_Options;
}  // extern "C"

typedef __int128 int128_t;

class Fam_Descriptor {
  public:
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t itemSize);
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor);
    Fam_Descriptor();
    ~Fam_Descriptor();
    Fam_Global_Descriptor get_global_descriptor();
    void bind_keys(uint64_t *tempKey, uint64_t cnt);
    uint64_t *get_keys();
    void *get_context();
    void set_context(void *context);
    void set_base_address_list(uint64_t *addressList, uint64_t cnt);
    uint64_t *get_base_address_list();
    int get_desc_status();
    void set_desc_status(int update_status);
    void set_size(uint64_t itemSize);
    void set_perm(mode_t perm);
    void set_name(char *name);
    void set_interleave_size(uint64_t interleaveSize);
    uint64_t get_size();
    mode_t get_perm();
    char *get_name();
    uint64_t get_interleave_size();
    void set_used_memsrv_cnt(uint64_t cnt);
    uint64_t get_used_memsrv_cnt();
    void set_memserver_ids(uint64_t *ids);
    uint64_t *get_memserver_ids();
    uint64_t get_first_memserver_id();
    uint32_t get_uid();
    void set_uid(uint32_t uid);
    uint32_t get_gid();
    void set_gid(uint32_t gid);
    void set_permissionLevel(Fam_Permission_Level permissionLevel);
    Fam_Permission_Level get_permissionLevel();

  private:
    void *impl_;
};

class Fam_Region_Descriptor {
  public:
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t regionSize);
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor);
    Fam_Region_Descriptor();
    ~Fam_Region_Descriptor();
    Fam_Global_Descriptor get_global_descriptor();
    void *get_context();
    void set_context(void *context);
    int get_desc_status();
    void set_desc_status(int update_status);
    void set_size(uint64_t regionSize);
    void set_perm(mode_t perm);
    void set_name(char *name);
    void set_redundancyLevel(Fam_Redundancy_Level level);
    void set_memoryType(Fam_Memory_Type type);
    void set_interleaveEnable(Fam_Interleave_Enable enable);
    void set_permissionLevel(Fam_Permission_Level level);
    Fam_Redundancy_Level get_redundancyLevel();
    Fam_Memory_Type get_memoryType();
    Fam_Interleave_Enable get_interleaveEnable();
    Fam_Permission_Level get_permissionLevel();
    uint64_t get_size();
    mode_t get_perm();
    char *get_name();
    uint64_t get_memserver_id();

  private:
    void *impl_;
};

class fam_context;

#define OPENFAM32_NONFETCHING(op)                                         \
    void op(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);  \
    void op(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);  \
    void op(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value); \
    void op(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value); \
    void op(Fam_Descriptor *descriptor, uint64_t offset, float value);    \
    void op(Fam_Descriptor *descriptor, uint64_t offset, double value);
#define OPENFAM32_FETCHING(op)                                                \
    int32_t op(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);   \
    int64_t op(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);   \
    uint32_t op(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value); \
    uint64_t op(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value); \
    float op(Fam_Descriptor *descriptor, uint64_t offset, float value);       \
    double op(Fam_Descriptor *descriptor, uint64_t offset, double value);
#define OPENFAM32_TRANSFER(op) \
    void op(void *local, Fam_Descriptor *descriptor, uint64_t offset, uint64_t nbytes);
#define OPENFAM32_ELEMENTS(op)                                                                   \
    void op(void *local, Fam_Descriptor *descriptor, uint64_t nElements, uint64_t firstElement,  \
            uint64_t stride, uint64_t elementSize);                                              \
    void op(void *local, Fam_Descriptor *descriptor, uint64_t nElements, uint64_t *elementIndex, \
            uint64_t elementSize);

class fam {
  public:
    void fam_initialize(const char *groupName, Fam_Options *options);
    void fam_finalize(const char *groupName);
    void fam_abort(int status);
    void fam_barrier_all();
    const char **fam_list_options(void);
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
    void fam_change_permissions(Fam_Region_Descriptor *descriptor, mode_t accessPermissions);
    void fam_stat(Fam_Descriptor *descriptor, Fam_Stat *famInfo);
    void fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo);
    OPENFAM32_TRANSFER(fam_get_blocking)
    OPENFAM32_TRANSFER(fam_get_nonblocking)
    OPENFAM32_TRANSFER(fam_put_blocking)
    OPENFAM32_TRANSFER(fam_put_nonblocking)
    void *fam_map(Fam_Descriptor *descriptor);
    void fam_unmap(void *local, Fam_Descriptor *descriptor);
    OPENFAM32_ELEMENTS(fam_gather_blocking)
    OPENFAM32_ELEMENTS(fam_gather_nonblocking)
    OPENFAM32_ELEMENTS(fam_scatter_blocking)
    OPENFAM32_ELEMENTS(fam_scatter_nonblocking)
    void *fam_copy(Fam_Descriptor *src, uint64_t srcOffset, Fam_Descriptor *dest,
                   uint64_t destOffset, uint64_t nbytes);
    void fam_copy_wait(void *waitObj);
    void *fam_backup(Fam_Descriptor *src, const char *BackupName,
                     Fam_Backup_Options *backupOptions);
    void *fam_restore(const char *BackupName, Fam_Descriptor *dest);
    void *fam_restore(const char *BackupName, Fam_Region_Descriptor *destRegion,
                      const char *dataitemName, mode_t accessPermissions, Fam_Descriptor **dest);
    void fam_backup_wait(void *waitObj);
    void fam_restore_wait(void *waitObj);
    void *fam_delete_backup(const char *BackupName);
    void fam_delete_backup_wait(void *waitObj);
    char *fam_list_backup(const char *BackupName);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int32_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int64_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, int128_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, float value);
    void fam_set(Fam_Descriptor *descriptor, uint64_t offset, double value);
    OPENFAM32_NONFETCHING(fam_add)
    OPENFAM32_NONFETCHING(fam_subtract)
    OPENFAM32_NONFETCHING(fam_min)
    OPENFAM32_NONFETCHING(fam_max)
    void fam_and(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_and(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_or(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_or(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    void fam_xor(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    void fam_xor(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    uint32_t fam_fetch_and(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_and(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    uint32_t fam_fetch_or(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_or(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    uint32_t fam_fetch_xor(Fam_Descriptor *descriptor, uint64_t offset, uint32_t value);
    uint64_t fam_fetch_xor(Fam_Descriptor *descriptor, uint64_t offset, uint64_t value);
    int32_t fam_fetch_int32(Fam_Descriptor *descriptor, uint64_t offset);
    int64_t fam_fetch_int64(Fam_Descriptor *descriptor, uint64_t offset);
    int128_t fam_fetch_int128(Fam_Descriptor *descriptor, uint64_t offset);
    uint32_t fam_fetch_uint32(Fam_Descriptor *descriptor, uint64_t offset);
    uint64_t fam_fetch_uint64(Fam_Descriptor *descriptor, uint64_t offset);
    float fam_fetch_float(Fam_Descriptor *descriptor, uint64_t offset);
    double fam_fetch_double(Fam_Descriptor *descriptor, uint64_t offset);
    OPENFAM32_FETCHING(fam_swap)
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
    OPENFAM32_FETCHING(fam_fetch_add)
    OPENFAM32_FETCHING(fam_fetch_subtract)
    OPENFAM32_FETCHING(fam_fetch_min)
    OPENFAM32_FETCHING(fam_fetch_max)
    void fam_fence(void);
    void fam_quiet(void);
    fam_context *fam_context_open();
    void fam_context_close(fam_context *);
    uint64_t fam_progress(void);
    fam();
    ~fam();

  protected:
    void *pimpl_;
};

class fam_context : public fam {
  public:
    fam_context(void *inp_fam_impl);
    ~fam_context();
    void fam_initialize(const char *groupName, Fam_Options *options);
    void fam_finalize(const char *groupName);
    void fam_abort(int status);
    void fam_barrier_all();
    const char **fam_list_options(void);
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
    void fam_context_close(fam_context *);
};

}  // namespace openfam

#endif  // OPENFAM32_FAM_H_
