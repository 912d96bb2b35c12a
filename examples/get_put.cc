// get_put.cc: moving bytes between a local buffer and a data item.
//
// fam_put_* copies local memory into an item, fam_get_* copies an item into local memory; the
// offset and length are bytes within the item. The blocking forms return when the transfer is
// complete. The non-blocking forms return at once: the local buffer must stay untouched until
// fam_quiet() returns, which completes every outstanding operation (and reports the first
// error any of them hit). fam_progress() tells how many are still pending, and fam_fence()
// orders earlier non-blocking writes before later ones.
//
// Run it alone: ./get_put. It exits 0 when every value read back is the value written.
#include <fam/fam.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "example_get_put";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kCount = 1 << 20;  // doubles in the item: 8 MiB
constexpr uint64_t kItemSize = kCount * sizeof(double);

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

void run(fam &my_fam) {
    destroy_if_exists(my_fam, kRegionName);
    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, 32 * kMiB, 0700, nullptr);
    Fam_Descriptor *item = my_fam.fam_allocate("vector", kItemSize, 0600, region);
    std::printf("get_put: item \"vector\" holds %llu doubles (%llu MiB)\n",
                static_cast<unsigned long long>(kCount),
                static_cast<unsigned long long>(kItemSize / kMiB));

    // Blocking: the whole vector in one put, then back in one get.
    std::vector<double> out(kCount);
    std::iota(out.begin(), out.end(), 0.0);
    my_fam.fam_put_blocking(out.data(), item, 0, kItemSize);
    std::vector<double> in(kCount, -1.0);
    my_fam.fam_get_blocking(in.data(), item, 0, kItemSize);
    expect(in == out, "blocking get did not return what the blocking put wrote");
    std::printf("get_put: blocking put + get of %llu bytes: contents match\n",
                static_cast<unsigned long long>(kItemSize));

    // A slice: elements [1000, 1010) live at byte offset 1000 * 8.
    double slice[10];
    my_fam.fam_get_blocking(slice, item, 1000 * sizeof(double), sizeof slice);
    expect(slice[0] == 1000.0 && slice[9] == 1009.0, "slice read the wrong elements");
    std::printf("get_put: elements 1000..1009 read at byte offset %zu: %.0f .. %.0f\n",
                1000 * sizeof(double), slice[0], slice[9]);

    // Non-blocking: post the vector as 16 chunks, then wait for all of them with fam_quiet.
    constexpr uint64_t kChunks = 16;
    constexpr uint64_t kChunkBytes = kItemSize / kChunks;
    for (double &v : out) v = -v;
    for (uint64_t c = 0; c < kChunks; ++c) {
        my_fam.fam_put_nonblocking(reinterpret_cast<char *>(out.data()) + c * kChunkBytes, item,
                                   c * kChunkBytes, kChunkBytes);
    }
    std::printf("get_put: posted %llu non-blocking puts, %llu still pending\n",
                static_cast<unsigned long long>(kChunks),
                static_cast<unsigned long long>(my_fam.fam_progress()));
    my_fam.fam_quiet();
    expect(my_fam.fam_progress() == 0, "operations still pending after fam_quiet");

    std::fill(in.begin(), in.end(), 0.0);
    for (uint64_t c = 0; c < kChunks; ++c) {
        my_fam.fam_get_nonblocking(reinterpret_cast<char *>(in.data()) + c * kChunkBytes, item,
                                   c * kChunkBytes, kChunkBytes);
    }
    my_fam.fam_quiet();
    expect(in == out, "non-blocking gets did not return what the non-blocking puts wrote");
    std::printf("get_put: after fam_quiet, %llu non-blocking gets return the new contents\n",
                static_cast<unsigned long long>(kChunks));

    // Two non-blocking writes to the same place: fam_fence makes the second land after the
    // first, so the item ends up with the second value.
    double first = 1.0, second = 2.0;
    my_fam.fam_put_nonblocking(&first, item, 0, sizeof first);
    my_fam.fam_fence();
    my_fam.fam_put_nonblocking(&second, item, 0, sizeof second);
    my_fam.fam_quiet();
    double value = 0;
    my_fam.fam_get_blocking(&value, item, 0, sizeof value);
    expect(value == second, "fence did not order the two puts");
    std::printf("get_put: put 1.0, fence, put 2.0 -> element 0 reads %.1f\n", value);

    // Errors of non-blocking calls surface at the next fam_quiet.
    my_fam.fam_get_nonblocking(in.data(), item, kItemSize - 8, 16);
    try {
        my_fam.fam_quiet();
        throw std::runtime_error("a non-blocking get past the end was not refused");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_OUTOFRANGE, "get past the end: wrong error code");
        std::printf("get_put: get past the end refused as expected: %s\n", e.what());
    }

    my_fam.fam_deallocate(item);
    delete item;
    my_fam.fam_destroy_region(region);
    delete region;
}

}  // namespace

int main() {
    fam my_fam;
    try {
        my_fam.fam_initialize("default", nullptr);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("get_put: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "get_put: FAILED: %s (Fam_Error %d)\n", e.what(), e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "get_put: FAILED: %s\n", e.what());
    }
    return 1;
}
