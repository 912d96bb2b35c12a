// An OpenFAM 3.2 binary, as far as the linker and loader can tell: built against openfam32/
// (OpenFAM 3.2's declarations and layouts, not fampool's headers) and linked with -lopenfam.
// install_test.sh links it against a stand-in libopenfam.so that carries OpenFAM's soname,
// then runs it with the library path pointing at fampool's install: every symbol must resolve
// in libfampool (LD_BIND_NOW) and the run must work on the embedded model.
//
// Refer() names every public member of OpenFAM 3.2's classes (it runs only with 100
// arguments, never here), so the program references all their symbols; main() runs a job:
// initialize, region and item, put and get, atomics (int128 too), stat, a context, an error
// caught and read through Fam_Exception's virtual members, a control call refused on the
// context, finalize.
#include <fam/fam.h>
#include <fam/fam_exception.h>

#include <cstdio>
#include <cstring>

using namespace openfam;

namespace {

template <typename T>
void Atomics(fam *f, Fam_Descriptor *d, T v) {
    f->fam_add(d, 0, v);
    f->fam_subtract(d, 0, v);
    f->fam_min(d, 0, v);
    f->fam_max(d, 0, v);
    f->fam_set(d, 0, v);
    f->fam_swap(d, 0, v);
    f->fam_fetch_add(d, 0, v);
    f->fam_fetch_subtract(d, 0, v);
    f->fam_fetch_min(d, 0, v);
    f->fam_fetch_max(d, 0, v);
}

template <typename T>
void Bitwise(fam *f, Fam_Descriptor *d, T v) {
    f->fam_and(d, 0, v);
    f->fam_or(d, 0, v);
    f->fam_xor(d, 0, v);
    f->fam_fetch_and(d, 0, v);
    f->fam_fetch_or(d, 0, v);
    f->fam_fetch_xor(d, 0, v);
    f->fam_compare_swap(d, 0, v, v);
}

void Refer(fam *f, fam_context *c, Fam_Descriptor *d, Fam_Region_Descriptor *r) {
    char name[] = "x";
    uint64_t u[1] = {0};
    void *p = u;
    Fam_Stat s;
    Fam_Global_Descriptor g = d->get_global_descriptor();
    Fam_Descriptor *out = nullptr;
    f->fam_initialize(name, nullptr);
    f->fam_finalize(name);
    f->fam_abort(1);
    f->fam_barrier_all();
    f->fam_list_options();
    f->fam_get_option(name);
    f->fam_lookup_region(name);
    f->fam_lookup(name, name);
    f->fam_create_region(name, 1, 0, nullptr);
    f->fam_destroy_region(r);
    f->fam_resize_region(r, 1);
    f->fam_allocate(1, 0, r);
    f->fam_allocate(name, 1, 0, r);
    f->fam_deallocate(d);
    f->fam_close(d);
    f->fam_change_permissions(d, 0);
    f->fam_change_permissions(r, 0);
    f->fam_stat(d, &s);
    f->fam_stat(r, &s);
    f->fam_get_blocking(p, d, 0, 1);
    f->fam_get_nonblocking(p, d, 0, 1);
    f->fam_put_blocking(p, d, 0, 1);
    f->fam_put_nonblocking(p, d, 0, 1);
    f->fam_map(d);
    f->fam_unmap(p, d);
    f->fam_gather_blocking(p, d, 1, 0, 1, 1);
    f->fam_gather_blocking(p, d, 1, u, 1);
    f->fam_gather_nonblocking(p, d, 1, 0, 1, 1);
    f->fam_gather_nonblocking(p, d, 1, u, 1);
    f->fam_scatter_blocking(p, d, 1, 0, 1, 1);
    f->fam_scatter_blocking(p, d, 1, u, 1);
    f->fam_scatter_nonblocking(p, d, 1, 0, 1, 1);
    f->fam_scatter_nonblocking(p, d, 1, u, 1);
    f->fam_copy_wait(f->fam_copy(d, 0, d, 0, 1));
    f->fam_backup_wait(f->fam_backup(d, name, nullptr));
    f->fam_restore_wait(f->fam_restore(name, d));
    f->fam_restore_wait(f->fam_restore(name, r, name, 0, &out));
    f->fam_delete_backup_wait(f->fam_delete_backup(name));
    f->fam_list_backup(name);
    Atomics<int32_t>(f, d, 1);
    Atomics<int64_t>(f, d, 1);
    Atomics<uint32_t>(f, d, 1);
    Atomics<uint64_t>(f, d, 1);
    Atomics<float>(f, d, 1);
    Atomics<double>(f, d, 1);
    Bitwise<uint32_t>(f, d, 1);
    Bitwise<uint64_t>(f, d, 1);
    f->fam_compare_swap(d, 0, int32_t(1), int32_t(1));
    f->fam_compare_swap(d, 0, int64_t(1), int64_t(1));
    f->fam_set(d, 0, int128_t(1));
    f->fam_compare_swap(d, 0, int128_t(1), int128_t(1));
    f->fam_fetch_int32(d, 0);
    f->fam_fetch_int64(d, 0);
    f->fam_fetch_int128(d, 0);
    f->fam_fetch_uint32(d, 0);
    f->fam_fetch_uint64(d, 0);
    f->fam_fetch_float(d, 0);
    f->fam_fetch_double(d, 0);
    f->fam_fence();
    f->fam_quiet();
    f->fam_progress();
    f->fam_context_close(f->fam_context_open());
    c->fam_initialize(name, nullptr);
    c->fam_finalize(name);
    c->fam_abort(1);
    c->fam_barrier_all();
    c->fam_list_options();
    c->fam_get_option(name);
    c->fam_lookup_region(name);
    c->fam_lookup(name, name);
    c->fam_create_region(name, 1, 0, nullptr);
    c->fam_destroy_region(r);
    c->fam_resize_region(r, 1);
    c->fam_allocate(1, 0, r);
    c->fam_allocate(name, 1, 0, r);
    c->fam_deallocate(d);
    c->fam_close(d);
    c->fam_change_permissions(d, 0);
    c->fam_context_close(c->fam_context_open());
    Fam_Descriptor a(g, 1), b(g), e;
    Fam_Region_Descriptor ra(g, 1), rb(g), re;
    d->bind_keys(u, 1);
    d->get_keys();
    d->set_context(d->get_context());
    d->set_base_address_list(u, 1);
    d->get_base_address_list();
    d->set_desc_status(d->get_desc_status());
    d->set_size(d->get_size());
    d->set_perm(d->get_perm());
    d->set_name(d->get_name());
    d->set_interleave_size(d->get_interleave_size());
    d->set_used_memsrv_cnt(d->get_used_memsrv_cnt());
    d->set_memserver_ids(d->get_memserver_ids());
    d->get_first_memserver_id();
    d->set_uid(d->get_uid());
    d->set_gid(d->get_gid());
    d->set_permissionLevel(d->get_permissionLevel());
    r->get_global_descriptor();
    r->set_context(r->get_context());
    r->set_desc_status(r->get_desc_status());
    r->set_size(r->get_size());
    r->set_perm(r->get_perm());
    r->set_name(r->get_name());
    r->set_redundancyLevel(r->get_redundancyLevel());
    r->set_memoryType(r->get_memoryType());
    r->set_interleaveEnable(r->get_interleaveEnable());
    r->set_permissionLevel(r->get_permissionLevel());
    r->get_memserver_id();
    Fam_Exception x1, x2("m"), x3(FAM_ERR_INVALID, "m"), x4(x3);
    x1 = x4;
    std::printf("%s %d %s\n", x2.fam_error_msg(), x2.fam_error(), x2.what());
}

int Check(bool ok, const char *what) {
    if (!ok) std::fprintf(stderr, "openfam abi program: %s\n", what);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
    fam *f = new fam();
    static_assert(sizeof(fam) == sizeof(void *), "OpenFAM 3.2's fam is one pointer");
    Fam_Options options;
    std::memset(&options, 0, sizeof options);
    char runtime[] = "NONE";
    options.runtime = runtime;
    int failures = 0;
    try {
        f->fam_initialize("default", &options);
        Fam_Region_Descriptor *region = f->fam_create_region("abi", 1 << 20, 0700, nullptr);
        Fam_Descriptor *item = f->fam_allocate("x", 4096, 0600, region);
        if (argc == 100) Refer(f, nullptr, item, region);
        char out[6] = "hello", in[6] = {0};
        f->fam_put_blocking(out, item, 0, sizeof out);
        f->fam_get_blocking(in, item, 0, sizeof in);
        failures += Check(std::strcmp(in, "hello") == 0, "put/get");
        f->fam_set(item, 64, int64_t(40));
        f->fam_add(item, 64, int64_t(2));
        failures += Check(f->fam_fetch_int64(item, 64) == 42, "fam_add");
        int128_t big = int128_t(1) << 100;
        f->fam_set(item, 128, int128_t(0));
        failures += Check(f->fam_compare_swap(item, 128, int128_t(0), big) == 0 &&
                              f->fam_fetch_int128(item, 128) == big,
                          "128-bit compare-swap");
        Fam_Stat info;
        f->fam_stat(item, &info);
        failures += Check(info.size == 4096 && std::strcmp(info.name, "x") == 0, "fam_stat");
        failures += Check(item->get_desc_status() == DESC_INIT_DONE, "descriptor status");
        failures += Check(region->get_memserver_id() == item->get_first_memserver_id(),
                          "memory server ids");
        fam_context *context = f->fam_context_open();
        context->fam_put_nonblocking(out, item, 256, sizeof out);
        context->fam_quiet();
        try {
            context->fam_allocate("y", 64, 0600, region);  // fam_context's own symbol
            failures += Check(false, "fam_allocate on a context was accepted");
        } catch (Fam_Exception &e) {
            failures += Check(e.fam_error() == FAM_ERR_INVALIDOP, "context refusal's code");
        }
        f->fam_context_close(context);
        try {
            f->fam_lookup("no such item", "abi");
            failures += Check(false, "lookup of a missing item succeeded");
        } catch (Fam_Exception &e) {  // read through the virtual members of OpenFAM's layout
            failures += Check(e.fam_error() == FAM_ERR_NOTFOUND, "fam_error()");
            failures +=
                Check(std::strstr(e.fam_error_msg(), "no such item") != nullptr, "fam_error_msg()");
            failures += Check(std::strstr(e.what(), "no such item") != nullptr, "what()");
        }
        f->fam_deallocate(item);
        f->fam_destroy_region(region);
        f->fam_finalize("default");
        delete item;
        delete region;
    } catch (Fam_Exception &e) {
        std::fprintf(stderr, "openfam abi program: fam error %d: %s\n", e.fam_error(),
                     e.fam_error_msg());
        return 1;
    }
    delete f;
    if (failures == 0) std::printf("openfam abi program: ok\n");
    return failures == 0 ? 0 : 1;
}
