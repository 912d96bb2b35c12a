// copy_map.cc: FAM-to-FAM copies, and load/store access through a mapping.
//
// fam_copy copies bytes from one item to another (in the same region or another) on the memory
// side: no data passes through the caller's buffers. It returns a wait object; fam_copy_wait
// blocks until that copy is done. Several copies may be in flight at once.
//
// fam_map makes an item addressable with ordinary loads and stores where its memory is
// reachable from this node (always in the embedded model). What is stored through the mapping
// is what fam_get returns, and the other way round. fam_unmap ends the mapping.
//
// Run it alone: ./copy_map. It exits 0 when every copied and mapped byte checks out.
#include <fam/fam.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

using namespace openfam;

namespace {

const char *kSourceRegion = "example_copy_map_src";
const char *kDestRegion = "example_copy_map_dst";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kWords = kMiB / sizeof(uint64_t);  // 1 MiB items

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

void copies(fam &my_fam, Fam_Descriptor *source, Fam_Descriptor *dest) {
    std::vector<uint64_t> words(kWords);
    for (uint64_t i = 0; i < kWords; ++i) words[i] = i * i;
    my_fam.fam_put_blocking(words.data(), source, 0, kMiB);

    // Whole item, then the first 4 KiB of the source again to the last 4 KiB of the
    // destination: two copies in flight, each waited for through its own wait object.
    void *whole = my_fam.fam_copy(source, 0, dest, 0, kMiB);
    my_fam.fam_copy_wait(whole);
    void *tail = my_fam.fam_copy(source, 0, dest, kMiB - 4096, 4096);
    my_fam.fam_copy_wait(tail);

    std::vector<uint64_t> copied(kWords);
    my_fam.fam_get_blocking(copied.data(), dest, 0, kMiB);
    constexpr uint64_t kTailStart = kWords - 4096 / sizeof(uint64_t);
    for (uint64_t i = 0; i < kWords; ++i) {
        uint64_t want = i < kTailStart ? i * i : (i - kTailStart) * (i - kTailStart);
        expect(copied[i] == want, "fam_copy wrote the wrong bytes");
    }
    std::printf("copy_map: fam_copy of 1 MiB across regions, then 4 KiB to the end: verified\n");

    try {
        my_fam.fam_copy_wait(my_fam.fam_copy(source, 0, dest, 4096, kMiB));
        throw std::runtime_error("a copy past the end of the destination was not refused");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_OUTOFRANGE, "copy past the end: wrong error code");
        std::printf("copy_map: copy running past the destination refused as expected: %s\n",
                    e.what());
    }
}

void mapping(fam &my_fam, Fam_Descriptor *item) {
    auto *words = static_cast<uint64_t *>(my_fam.fam_map(item));
    std::printf("copy_map: mapped the destination item at %p\n", static_cast<void *>(words));

    // Loads see what fam_copy wrote ...
    expect(words[3] == 9 && words[1000] == 1000000, "mapped loads do not see the item");
    // ... and stores are seen by fam_get.
    for (uint64_t i = 0; i < 16; ++i) words[i] = ~i;
    uint64_t seen[16];
    my_fam.fam_get_blocking(seen, item, 0, sizeof seen);
    for (uint64_t i = 0; i < 16; ++i) expect(seen[i] == ~i, "fam_get does not see stores");
    std::printf("copy_map: loads through the mapping see FAM, fam_get sees 16 stored words\n");

    my_fam.fam_unmap(words, item);
    std::printf("copy_map: unmapped\n");
}

void run(fam &my_fam) {
    destroy_if_exists(my_fam, kSourceRegion);
    destroy_if_exists(my_fam, kDestRegion);
    Fam_Region_Descriptor *src_region =
        my_fam.fam_create_region(kSourceRegion, 4 * kMiB, 0700, nullptr);
    Fam_Region_Descriptor *dst_region =
        my_fam.fam_create_region(kDestRegion, 4 * kMiB, 0700, nullptr);
    Fam_Descriptor *source = my_fam.fam_allocate("source", kMiB, 0600, src_region);
    Fam_Descriptor *dest = my_fam.fam_allocate("dest", kMiB, 0600, dst_region);

    copies(my_fam, source, dest);
    mapping(my_fam, dest);

    my_fam.fam_deallocate(source);
    my_fam.fam_deallocate(dest);
    delete source;
    delete dest;
    my_fam.fam_destroy_region(src_region);
    my_fam.fam_destroy_region(dst_region);
    delete src_region;
    delete dst_region;
}

}  // namespace

int main() {
    fam my_fam;
    try {
        my_fam.fam_initialize("default", nullptr);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("copy_map: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "copy_map: FAILED: %s (Fam_Error %d)\n", e.what(), e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "copy_map: FAILED: %s\n", e.what());
    }
    return 1;
}
