// c_api_worker: exercises the C API (fam/fam_c.h) from a program compiled as C11, which also
// proves that the header is valid C.
//
// It runs in the data directory named by FAMPOOL_HOME (and FAMPOOL_SHM_DIR), which the test
// that launches it creates fresh. It prints one line per check, "PASS <check>" or
// "FAIL <check>: <why>", and exits 0 only when every check passed. When a step that later
// checks depend on fails (create, initialize, region, item), it stops at once with status 1.
#include <fam/fam_c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

// Records one check. On failure it also prints the thread's last C API error.
static int check(int ok, const char *name, const char *detail) {
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        ++failures;
        printf("FAIL %s: %s (last error %d: %s)\n", name, detail, c_fam_error(), c_fam_error_msg());
    }
    fflush(stdout);
    return ok;
}

// A check whose failure leaves nothing for the later checks to work on.
static void require(int ok, const char *name, const char *detail) {
    if (!check(ok, name, detail)) {
        printf("stopping: %d check(s) failed\n", failures);
        exit(1);
    }
}

static void fill_pattern(unsigned char *buf, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) buf[i] = (unsigned char)((i * 31u + seed) & 0xffu);
}

enum { kItemSize = 4096, kRegionSize = 1 << 20, kChunk = 256 };

int main(void) {
    if (getenv("FAMPOOL_HOME") == NULL || getenv("FAMPOOL_SHM_DIR") == NULL) {
        printf("FAIL environment: FAMPOOL_HOME and FAMPOOL_SHM_DIR must be set\n");
        return 2;
    }

    // ---- Life cycle ----
    c_fam *fam = c_fam_create();
    require(fam != NULL, "create", "c_fam_create returned NULL");
    require(c_fam_initialize(fam, "default", NULL) == 0, "initialize", "c_fam_initialize failed");
    check(c_fam_error() == 0 && strcmp(c_fam_error_msg(), "") == 0, "success_clears_error",
          "last error not cleared after a successful call");

    const int *pe_id = (const int *)c_fam_get_option(fam, "PE_ID");
    check(pe_id != NULL && *pe_id == 0, "get_option_pe_id", "PE_ID is not an int * equal to 0");
    free((void *)pe_id);

    const char **options = c_fam_list_options(fam);
    int has_pe_count = 0;
    for (int i = 0; options != NULL && options[i] != NULL; ++i) {
        if (strcmp(options[i], "PE_COUNT") == 0) has_pe_count = 1;
    }
    check(has_pe_count, "list_options", "PE_COUNT missing from c_fam_list_options");
    check(c_fam_barrier_all(fam) == 0, "barrier_all", "c_fam_barrier_all failed");

    // ---- Regions and items ----
    c_fam_region_desc *region = c_fam_create_region(fam, "c_api_region", kRegionSize, 0777, NULL);
    require(region != NULL, "create_region", "c_fam_create_region returned NULL");
    c_fam_desc *item = c_fam_allocate_named(fam, "c_api_item", kItemSize, 0777, region);
    require(item != NULL, "allocate_named", "c_fam_allocate_named returned NULL");

    // ---- Put and get ----
    unsigned char out[kChunk], in[kChunk];
    fill_pattern(out, sizeof out, 7);
    memset(in, 0, sizeof in);
    int rc_put = c_fam_put_blocking(fam, out, item, 0, sizeof out);
    int rc_get = c_fam_get_blocking(fam, in, item, 0, sizeof in);
    check(rc_put == 0 && rc_get == 0 && memcmp(out, in, sizeof out) == 0, "put_get_round_trip",
          "bytes read differ from bytes written");

    unsigned char nb_out[kChunk], nb_in[kChunk];
    fill_pattern(nb_out, sizeof nb_out, 99);
    memset(nb_in, 0, sizeof nb_in);
    int rc_nb = c_fam_put_nonblocking(fam, nb_out, item, 1024, sizeof nb_out);
    int rc_quiet = c_fam_quiet(fam);
    rc_get = c_fam_get_blocking(fam, nb_in, item, 1024, sizeof nb_in);
    check(rc_nb == 0 && rc_quiet == 0 && rc_get == 0 && memcmp(nb_out, nb_in, sizeof nb_in) == 0,
          "put_nonblocking_quiet", "data of a non-blocking put not visible after c_fam_quiet");
    uint64_t pending = c_fam_progress(fam);
    check(pending == 0 && c_fam_error() == 0, "progress_after_quiet",
          "operations still pending after c_fam_quiet");

    // ---- Strided gather: elements 1, 4, 7, 10 of sixteen uint64 values at offset 2048 ----
    uint64_t values[16], gathered[4] = {0, 0, 0, 0};
    for (uint64_t i = 0; i < 16; ++i) values[i] = 1000 + i;
    int rc_scatter = c_fam_put_blocking(fam, values, item, 2048, sizeof values);
    int rc_gather =
        c_fam_gather_blocking_stride(fam, gathered, item, 4, 2048 / 8 + 1, 3, sizeof(uint64_t));
    check(rc_scatter == 0 && rc_gather == 0 && gathered[0] == 1001 && gathered[1] == 1004 &&
              gathered[2] == 1007 && gathered[3] == 1010,
          "gather_blocking_stride", "gathered elements are not 1001, 1004, 1007, 1010");

    uint64_t index[3] = {2048 / 8 + 15, 2048 / 8, 2048 / 8 + 8};
    uint64_t by_index[3] = {0, 0, 0};
    rc_gather = c_fam_gather_blocking_index(fam, by_index, item, 3, index, sizeof(uint64_t));
    check(rc_gather == 0 && by_index[0] == 1015 && by_index[1] == 1000 && by_index[2] == 1008,
          "gather_blocking_index", "gathered elements are not 1015, 1000, 1008");

    // ---- Atomics, at offsets 3072 and up ----
    int rc = c_fam_set_int32(fam, item, 3072, -17);
    int32_t i32 = c_fam_fetch_int32(fam, item, 3072);
    check(rc == 0 && i32 == -17 && c_fam_error() == 0, "set_int32", "fetched value is not -17");

    rc = c_fam_set_uint64(fam, item, 3080, 40);
    uint64_t before = c_fam_fetch_add_uint64(fam, item, 3080, 2);
    uint64_t after = c_fam_fetch_uint64(fam, item, 3080);
    check(rc == 0 && before == 40 && after == 42, "fetch_add_uint64",
          "fetch_add did not return 40 and leave 42");

    rc = c_fam_add_int64(fam, item, 3088, -5);
    check(rc == 0 && c_fam_fetch_int64(fam, item, 3088) == -5, "add_int64",
          "zero-filled value plus -5 is not -5");

    int128_t first = ((int128_t)0x0123456789abcdefLL << 64) | 0x1122334455667788LL;
    int128_t second = -((int128_t)1 << 100);
    rc = c_fam_set_int128(fam, item, 3104, first);
    int128_t previous = c_fam_compare_swap_int128(fam, item, 3104, first, second);
    int128_t now = c_fam_fetch_int128(fam, item, 3104);
    check(rc == 0 && previous == first && now == second, "compare_swap_int128_swaps",
          "matching compare_swap did not install the new value");
    previous = c_fam_compare_swap_int128(fam, item, 3104, first, first);
    now = c_fam_fetch_int128(fam, item, 3104);
    check(previous == second && now == second, "compare_swap_int128_keeps",
          "compare_swap with a stale old value changed the item");

    rc = c_fam_set_double(fam, item, 3120, 2.5);
    double dbl = c_fam_fetch_double(fam, item, 3120);
    check(rc == 0 && dbl == 2.5 && c_fam_error() == 0, "fetch_double", "fetched value is not 2.5");

    rc = c_fam_add_int32(fam, item, 3073, 1);  // misaligned: the error waits for c_fam_quiet
    check(rc == 0, "misaligned_atomic_issue", "misaligned non-fetching atomic failed when issued");
    rc = c_fam_quiet(fam);
    check(rc == -C_FAM_ERR_INVALID && c_fam_error() == C_FAM_ERR_INVALID, "misaligned_atomic",
          "c_fam_quiet after a misaligned atomic did not fail with FAM_ERR_INVALID");

    // ---- Stat ----
    Fam_Stat stat;
    memset(&stat, 0, sizeof stat);
    rc = c_fam_stat_data(fam, item, &stat);
    check(rc == 0 && stat.size == kItemSize && stat.name != NULL &&
              strcmp(stat.name, "c_api_item") == 0,
          "stat_data", "size or name of the item is wrong");
    memset(&stat, 0, sizeof stat);
    rc = c_fam_stat_region(fam, region, &stat);
    check(rc == 0 && stat.size == kRegionSize, "stat_region", "size of the region is wrong");

    // ---- Lookup ----
    c_fam_desc *found = c_fam_lookup(fam, "c_api_item", "c_api_region");
    memset(in, 0, sizeof in);
    rc = found != NULL ? c_fam_get_blocking(fam, in, found, 0, sizeof in) : -1;
    check(found != NULL && rc == 0 && memcmp(out, in, sizeof in) == 0, "lookup",
          "lookup failed or its descriptor reads other bytes");
    c_fam_free_desc(found);
    c_fam_region_desc *found_region = c_fam_lookup_region(fam, "c_api_region");
    check(found_region != NULL, "lookup_region", "c_fam_lookup_region returned NULL");
    c_fam_free_region_desc(found_region);

    // ---- Errors ----
    c_fam_desc *missing = c_fam_lookup(fam, "no_such_item", "c_api_region");
    check(missing == NULL && c_fam_error() == C_FAM_ERR_NOTFOUND && c_fam_error_msg()[0] != '\0',
          "lookup_missing_is_notfound", "expected NULL and C_FAM_ERR_NOTFOUND with a message");
    rc = c_fam_get_blocking(fam, in, item, kItemSize - 8, 16);
    check(rc == -C_FAM_ERR_OUTOFRANGE && c_fam_error() == C_FAM_ERR_OUTOFRANGE,
          "get_past_end_is_outofrange", "expected -C_FAM_ERR_OUTOFRANGE");
    rc = c_fam_put_blocking(NULL, out, item, 0, 8);
    check(rc == -C_FAM_ERR_NULLPTR && strstr(c_fam_error_msg(), "c_fam_put_blocking") != NULL,
          "null_handle_is_nullptr", "expected -C_FAM_ERR_NULLPTR naming c_fam_put_blocking");

    // ---- Map ----
    unsigned char *mapped = (unsigned char *)c_fam_map(fam, item);
    check(mapped != NULL && memcmp(mapped, out, sizeof out) == 0, "map",
          "mapped memory does not hold the item's bytes");
    if (mapped != NULL) {
        check(c_fam_unmap(fam, mapped, item) == 0, "unmap", "c_fam_unmap failed");
    }

    // ---- Context ----
    c_fam_context *ctx = c_fam_context_open(fam);
    check(ctx != NULL, "context_open", "c_fam_context_open returned NULL");
    if (ctx != NULL) {
        unsigned char ctx_out[64], ctx_in[64];
        fill_pattern(ctx_out, sizeof ctx_out, 5);
        int rc_ctx_put = c_fam_put_nonblocking(ctx, ctx_out, item, 3584, sizeof ctx_out);
        int rc_ctx_quiet = c_fam_quiet(ctx);
        int rc_ctx_get = c_fam_get_blocking(fam, ctx_in, item, 3584, sizeof ctx_in);
        check(rc_ctx_put == 0 && rc_ctx_quiet == 0 && rc_ctx_get == 0 &&
                  memcmp(ctx_out, ctx_in, sizeof ctx_in) == 0,
              "context_put_quiet", "data put through the context not visible after its quiet");
        c_fam_region_desc *denied = c_fam_create_region(ctx, "c_api_ctx_region", 4096, 0777, NULL);
        check(denied == NULL && c_fam_error() == C_FAM_ERR_INVALIDOP, "context_control_invalidop",
              "control-path call on a context did not fail with C_FAM_ERR_INVALIDOP");
        check(c_fam_context_close(fam, ctx) == 0, "context_close", "c_fam_context_close failed");
    }

    // ---- Copy ----
    c_fam_desc *dest = c_fam_allocate_named(fam, "c_api_copy", kItemSize, 0777, region);
    require(dest != NULL, "allocate_copy_dest", "c_fam_allocate_named returned NULL");
    void *copy = c_fam_copy(fam, item, 0, dest, 512, sizeof out);
    rc = copy != NULL ? c_fam_copy_wait(fam, copy) : -1;
    memset(in, 0, sizeof in);
    rc_get = c_fam_get_blocking(fam, in, dest, 512, sizeof in);
    check(copy != NULL && rc == 0 && rc_get == 0 && memcmp(out, in, sizeof in) == 0, "copy_wait",
          "copied bytes differ from the source");

    // ---- Backup and restore ----
    Fam_Backup_Options backup_options;
    memset(&backup_options, 0, sizeof backup_options);
    void *backup = c_fam_backup(fam, item, "c_api_backup", &backup_options);
    rc = backup != NULL ? c_fam_backup_wait(fam, backup) : -1;
    check(backup != NULL && rc == 0, "backup", "c_fam_backup or c_fam_backup_wait failed");

    char *listing = c_fam_list_backup(fam, "c_api_backup");
    check(listing != NULL && strstr(listing, "c_api_backup") != NULL, "list_backup",
          "listing does not name the backup");
    free(listing);

    unsigned char zeros[kChunk];
    memset(zeros, 0, sizeof zeros);
    c_fam_put_blocking(fam, zeros, item, 0, sizeof zeros);
    void *restore = c_fam_restore(fam, "c_api_backup", item);
    rc = restore != NULL ? c_fam_restore_wait(fam, restore) : -1;
    memset(in, 0, sizeof in);
    rc_get = c_fam_get_blocking(fam, in, item, 0, sizeof in);
    check(restore != NULL && rc == 0 && rc_get == 0 && memcmp(out, in, sizeof in) == 0, "restore",
          "restored item does not hold the backed-up bytes");

    c_fam_desc *restored = NULL;
    restore = c_fam_restore_region(fam, "c_api_backup", region, "c_api_restored", 0777, &restored);
    rc = restore != NULL ? c_fam_restore_wait(fam, restore) : -1;
    memset(in, 0, sizeof in);
    rc_get = restored != NULL ? c_fam_get_blocking(fam, in, restored, 0, sizeof in) : -1;
    check(restore != NULL && rc == 0 && rc_get == 0 && memcmp(out, in, sizeof in) == 0,
          "restore_region", "new item does not hold the backed-up bytes");

    void *removal = c_fam_delete_backup(fam, "c_api_backup");
    rc = removal != NULL ? c_fam_delete_backup_wait(fam, removal) : -1;
    check(removal != NULL && rc == 0, "delete_backup", "c_fam_delete_backup failed");
    listing = c_fam_list_backup(fam, "c_api_backup");
    check(listing == NULL && c_fam_error() == C_FAM_BACKUP_NOTFOUND, "deleted_backup_is_gone",
          "listing a deleted backup did not fail with C_FAM_BACKUP_NOTFOUND");
    free(listing);

    // ---- Tear down ----
    if (restored != NULL) {
        check(c_fam_deallocate(fam, restored) == 0, "deallocate_restored", "deallocate failed");
        c_fam_free_desc(restored);
    }
    check(c_fam_deallocate(fam, dest) == 0, "deallocate_copy_dest", "deallocate failed");
    c_fam_free_desc(dest);
    check(c_fam_deallocate(fam, item) == 0, "deallocate", "deallocate failed");
    c_fam_free_desc(item);
    missing = c_fam_lookup(fam, "c_api_item", "c_api_region");
    check(missing == NULL && c_fam_error() == C_FAM_ERR_NOTFOUND, "deallocated_item_is_gone",
          "lookup of a deallocated item did not fail with C_FAM_ERR_NOTFOUND");

    check(c_fam_destroy_region(fam, region) == 0, "destroy_region", "destroy failed");
    c_fam_free_region_desc(region);
    found_region = c_fam_lookup_region(fam, "c_api_region");
    check(found_region == NULL && c_fam_error() == C_FAM_ERR_NOTFOUND, "destroyed_region_is_gone",
          "lookup of a destroyed region did not fail with NOTFOUND");

    check(c_fam_finalize(fam, "default") == 0, "finalize", "c_fam_finalize failed");
    c_fam_delete(fam);

    printf("%s: %d check(s) failed\n", failures == 0 ? "OK" : "FAILED", failures);
    return failures == 0 ? 0 : 1;
}
