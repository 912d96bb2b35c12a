// contexts.cc: independent streams of data-path operations, one per thread.
//
// A fam_context, opened with fam_context_open, accepts the data-path calls (get, put, gather,
// scatter), the atomics and fam_fence / fam_quiet / fam_progress. Its fam_quiet waits only for
// the operations issued through that context, so threads that each own a context do not wait
// for one another. Control-path calls (regions, items, backups, barriers) stay on the fam
// object: on a context they throw FAM_ERR_INVALIDOP.
//
// Threads need the thread model FAM_THREAD_MULTIPLE, requested here through Fam_Options; the
// example prints the options the session ended up with.
//
// Run it alone: ./contexts. It exits 0 when every thread's data arrived.
#include <fam/fam.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "example_contexts";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr int kThreads = 4;
constexpr uint64_t kBlocks = 64;         // blocks per thread
constexpr uint64_t kBlockBytes = 16384;  // bytes per block
constexpr uint64_t kSliceBytes = kBlocks * kBlockBytes;

void expect(bool ok, const char *what) {
    if (!ok) throw std::runtime_error(what);
}

void destroy_if_exists(fam &my_fam, const char *name) {
    try {
        Fam_Region_Descriptor *stale = my_fam.fam_lookup_region(name);
        my_fam.fam_destroy_region(stale);
        delete stale;
        std::printf("  destroyed region \"%s\" left by an earlier run\n", name);
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
    }
}

void print_option(fam &my_fam, const char *name) {
    char *value = static_cast<char *>(const_cast<void *>(my_fam.fam_get_option(name)));
    std::printf("  option %-17s = %s\n", name, value);
    std::free(value);
}

// One thread's work: fill its slice of the item with non-blocking puts through its own context,
// wait for them with the context's fam_quiet, then count a block done with an atomic.
void writer(fam_context *ctx, Fam_Descriptor *item, int id) {
    std::vector<unsigned char> slice(kSliceBytes, static_cast<unsigned char>('A' + id));
    uint64_t base = static_cast<uint64_t>(id) * kSliceBytes;
    for (uint64_t b = 0; b < kBlocks; ++b) {
        ctx->fam_put_nonblocking(slice.data() + b * kBlockBytes, item, base + b * kBlockBytes,
                                 kBlockBytes);
    }
    ctx->fam_quiet();  // this thread's puts only
    expect(ctx->fam_progress() == 0, "a context has pending operations after its quiet");
    ctx->fam_add(item, kThreads * kSliceBytes, uint64_t{1});  // the "done" counter
}

void run(fam &my_fam) {
    std::printf("contexts: session options\n");
    print_option(my_fam, "FAM_THREAD_MODEL");
    print_option(my_fam, "FAM_CONTEXT_MODEL");

    destroy_if_exists(my_fam, kRegionName);
    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, 8 * kMiB, 0700, nullptr);
    // kThreads slices, then one uint64 counter.
    Fam_Descriptor *item = my_fam.fam_allocate("slices", kThreads * kSliceBytes + 64, 0600, region);

    std::vector<fam_context *> contexts;
    for (int t = 0; t < kThreads; ++t) contexts.push_back(my_fam.fam_context_open());
    std::printf("contexts: opened %d contexts\n", kThreads);

    // Control-path calls belong to the fam object, not to a context.
    try {
        delete contexts[0]->fam_lookup_region(kRegionName);
        throw std::runtime_error("a control-path call on a context was not refused");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_INVALIDOP, "control path on a context: wrong error");
        std::printf("contexts: fam_lookup_region on a context refused as expected: %s\n", e.what());
    }

    std::vector<std::exception_ptr> failure(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            try {
                writer(contexts[t], item, t);
            } catch (...) {
                failure[t] = std::current_exception();
            }
        });
    }
    for (std::thread &thread : threads) thread.join();
    for (const std::exception_ptr &f : failure)
        if (f) std::rethrow_exception(f);
    std::printf("contexts: %d threads each wrote %llu KiB with %llu non-blocking puts\n", kThreads,
                static_cast<unsigned long long>(kSliceBytes / 1024),
                static_cast<unsigned long long>(kBlocks));

    for (fam_context *ctx : contexts) my_fam.fam_context_close(ctx);

    // Check from the main fam object: every slice holds its thread's letter.
    std::vector<unsigned char> all(kThreads * kSliceBytes);
    my_fam.fam_get_blocking(all.data(), item, 0, all.size());
    for (uint64_t i = 0; i < all.size(); ++i)
        expect(all[i] == 'A' + i / kSliceBytes, "a slice holds another thread's data");
    uint64_t done = my_fam.fam_fetch_uint64(item, kThreads * kSliceBytes);
    expect(done == kThreads, "not every thread counted itself done");
    std::printf("contexts: all %d slices verified, done counter = %llu\n", kThreads,
                static_cast<unsigned long long>(done));

    my_fam.fam_deallocate(item);
    delete item;
    my_fam.fam_destroy_region(region);
    delete region;
}

}  // namespace

int main() {
    fam my_fam;
    try {
        char thread_model[] = "FAM_THREAD_MULTIPLE";
        Fam_Options options{};
        options.famThreadModel = thread_model;
        my_fam.fam_initialize("default", &options);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("contexts: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "contexts: FAILED: %s (Fam_Error %d)\n", e.what(), e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "contexts: FAILED: %s\n", e.what());
    }
    return 1;
}
