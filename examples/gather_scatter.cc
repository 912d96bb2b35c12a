// gather_scatter.cc: moving scattered elements of an item in one call.
//
// Gather collects elements of an item into a dense local buffer; scatter spreads a dense local
// buffer over elements of an item. Elements are addressed either by a stride (element i is at
// (firstElement + i * stride) * elementSize) or by an index array (element i is at
// elementIndex[i] * elementSize). Both have blocking and non-blocking forms.
//
// The example treats an item as a 64 x 64 matrix of int64, row-major: a column is a strided
// gather, a diagonal is a stride of 65, and an arbitrary set of cells is an indexed gather.
//
// Run it alone: ./gather_scatter. It exits 0 when every element lands where it should.
#include <fam/fam.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "example_gather_scatter";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kN = 64;  // matrix order
constexpr uint64_t kElem = sizeof(int64_t);

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

// The value the example stores in cell (row, col): easy to recognise when read back.
int64_t cell(uint64_t row, uint64_t col) { return static_cast<int64_t>(row * 1000 + col); }

void run(fam &my_fam) {
    destroy_if_exists(my_fam, kRegionName);
    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, 4 * kMiB, 0700, nullptr);
    Fam_Descriptor *matrix = my_fam.fam_allocate("matrix", kN * kN * kElem, 0600, region);

    // Fill the matrix with one put: cell (r, c) = r * 1000 + c.
    std::vector<int64_t> local(kN * kN);
    for (uint64_t r = 0; r < kN; ++r)
        for (uint64_t c = 0; c < kN; ++c) local[r * kN + c] = cell(r, c);
    my_fam.fam_put_blocking(local.data(), matrix, 0, local.size() * kElem);
    std::printf("gather_scatter: stored a %llux%llu int64 matrix, row-major\n",
                static_cast<unsigned long long>(kN), static_cast<unsigned long long>(kN));

    // Column 5: elements 5, 5 + 64, 5 + 128, ... -> first element 5, stride 64.
    std::vector<int64_t> column(kN);
    my_fam.fam_gather_blocking(column.data(), matrix, kN, 5, kN, kElem);
    for (uint64_t r = 0; r < kN; ++r) expect(column[r] == cell(r, 5), "column gather");
    std::printf("gather_scatter: strided gather of column 5: %lld, %lld, ..., %lld\n",
                static_cast<long long>(column[0]), static_cast<long long>(column[1]),
                static_cast<long long>(column[kN - 1]));

    // Indexed gather: any cells, in any order, repeats allowed.
    std::vector<uint64_t> index = {0, kN * kN - 1, 3 * kN + 7, 3 * kN + 7, 10};
    std::vector<int64_t> picked(index.size());
    my_fam.fam_gather_blocking(picked.data(), matrix, index.size(), index.data(), kElem);
    for (size_t i = 0; i < index.size(); ++i)
        expect(picked[i] == local[index[i]], "indexed gather");
    std::printf(
        "gather_scatter: indexed gather of cells {0, 4095, 199, 199, 10}: %lld %lld %lld "
        "%lld %lld\n",
        static_cast<long long>(picked[0]), static_cast<long long>(picked[1]),
        static_cast<long long>(picked[2]), static_cast<long long>(picked[3]),
        static_cast<long long>(picked[4]));

    // Strided scatter: set the diagonal (stride kN + 1) to -1 ...
    std::vector<int64_t> minus_ones(kN, -1);
    my_fam.fam_scatter_blocking(minus_ones.data(), matrix, kN, 0, kN + 1, kElem);
    // ... and an indexed scatter, non-blocking, to the four corners.
    std::vector<uint64_t> corners = {0, kN - 1, kN * (kN - 1), kN * kN - 1};
    std::vector<int64_t> corner_values = {7, 8, 9, 10};
    my_fam.fam_scatter_nonblocking(corner_values.data(), matrix, corners.size(), corners.data(),
                                   kElem);
    my_fam.fam_quiet();  // the scatter is complete, corner_values may be reused

    // Read the whole matrix back and check every cell.
    std::vector<int64_t> back(kN * kN);
    my_fam.fam_gather_nonblocking(back.data(), matrix, kN * kN, 0, 1, kElem);  // stride 1 = all
    my_fam.fam_quiet();
    for (uint64_t r = 0; r < kN; ++r) {
        for (uint64_t c = 0; c < kN; ++c) {
            int64_t want = (r == c) ? -1 : cell(r, c);
            if (r * kN + c == corners[0]) want = 7;
            if (r * kN + c == corners[1]) want = 8;
            if (r * kN + c == corners[2]) want = 9;
            if (r * kN + c == corners[3]) want = 10;
            expect(back[r * kN + c] == want, "scatter wrote the wrong cells");
        }
    }
    std::printf(
        "gather_scatter: diagonal scattered to -1, corners to 7..10; all %llu cells "
        "verified\n",
        static_cast<unsigned long long>(kN * kN));

    // An index past the end is refused and nothing is written.
    uint64_t bad_index[] = {1, kN * kN};
    int64_t two[] = {111, 222};
    try {
        my_fam.fam_scatter_blocking(two, matrix, 2, bad_index, kElem);
        throw std::runtime_error("a scatter past the end was not refused");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_OUTOFRANGE, "scatter past the end: wrong error code");
        std::printf("gather_scatter: scatter to element %llu refused as expected: %s\n",
                    static_cast<unsigned long long>(kN * kN), e.what());
    }
    int64_t untouched = 0;
    my_fam.fam_get_blocking(&untouched, matrix, 1 * kElem, kElem);
    expect(untouched == cell(0, 1), "a refused scatter wrote element 1");

    my_fam.fam_deallocate(matrix);
    delete matrix;
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
        std::printf("gather_scatter: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "gather_scatter: FAILED: %s (Fam_Error %d)\n", e.what(),
                     e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gather_scatter: FAILED: %s\n", e.what());
    }
    return 1;
}
