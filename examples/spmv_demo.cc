// spmv_demo.cc: sparse matrix-vector product over FAM, on one or many PEs.
//
// The quick start's main example. PE 0 builds the matrix of the 2-D 5-point Laplacian on a
// G x G grid (G*G rows, about 5*G*G nonzeros) in CSR form and a vector x, and stores the four
// arrays as items of the region "spmv_demo". Every PE then computes y = A*x for its block of
// rows, reading its rows' CSR slices with fam_get_blocking and the x entries they refer to with
// the indexed fam_gather_blocking, in batches, and writes its slice of y to FAM. PE 0 reads y
// back, compares every entry with a direct local computation, prints a checksum, the largest
// error, the time and the throughput, and destroys the region.
//
//   ./spmv_demo [G]                                       one PE (runtime NONE)
//   mpirun -n 4 ./spmv_demo [G]                           four PEs (runtime PMIX)
//   (as root: mpirun --allow-run-as-root --oversubscribe -n 4 ./spmv_demo)
//
// G defaults to 2000 (4M rows, 20M nonzeros, 0.5 GB of FAM; about a second on one PE).
// Exits 0 only if y is correct.
#include <fam/fam.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "spmv_demo";
constexpr uint64_t kDefaultGrid = 2000;
constexpr uint64_t kMaxGrid = 5000;   // 25M rows: 2.6 GB of FAM, as much again on PE 0
constexpr uint64_t kBatch = 1 << 16;  // nonzeros fetched and gathered per batch
constexpr uint64_t kStatsBytes = 64;  // uint64 counters: [0] nonzeros, [1] bytes, [2] rows

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// A sparse matrix in compressed sparse row form: the nonzeros of row r are
// values[row_ptr[r] .. row_ptr[r+1]) in the columns col_idx[row_ptr[r] .. row_ptr[r+1]).
struct CsrMatrix {
    uint64_t rows = 0;
    std::vector<uint64_t> row_ptr;
    std::vector<uint64_t> col_idx;
    std::vector<double> values;
};

// The 5-point Laplacian with Dirichlet boundaries: 4 on the diagonal, -1 for each of the (up
// to four) grid neighbours. Columns are in increasing order within each row.
CsrMatrix laplacian_2d(uint64_t g) {
    CsrMatrix a;
    a.rows = g * g;
    a.row_ptr.reserve(a.rows + 1);
    a.col_idx.reserve(5 * a.rows);
    a.values.reserve(5 * a.rows);
    a.row_ptr.push_back(0);
    for (uint64_t i = 0; i < g; ++i) {
        for (uint64_t j = 0; j < g; ++j) {
            uint64_t r = i * g + j;
            auto add = [&](uint64_t col, double v) {
                a.col_idx.push_back(col);
                a.values.push_back(v);
            };
            if (i > 0) add(r - g, -1.0);
            if (j > 0) add(r - 1, -1.0);
            add(r, 4.0);
            if (j + 1 < g) add(r + 1, -1.0);
            if (i + 1 < g) add(r + g, -1.0);
            a.row_ptr.push_back(a.col_idx.size());
        }
    }
    return a;
}

// Multiples of 1/8 below 128: every product and sum in y is exact in binary floating point,
// so the FAM result must equal the local one bit for bit, whatever the summation order.
std::vector<double> make_x(uint64_t n) {
    std::vector<double> x(n);
    for (uint64_t k = 0; k < n; ++k) x[k] = static_cast<double>((k * 7919) % 1024) / 8.0;
    return x;
}

std::vector<double> multiply(const CsrMatrix &a, const std::vector<double> &x) {
    std::vector<double> y(a.rows);
    for (uint64_t r = 0; r < a.rows; ++r) {
        double sum = 0;
        for (uint64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
            sum += a.values[k] * x[a.col_idx[k]];
        y[r] = sum;
    }
    return y;
}

int int_option(fam &my_fam, const char *name) {
    int *value = static_cast<int *>(const_cast<void *>(my_fam.fam_get_option(name)));
    int result = *value;
    std::free(value);
    return result;
}

struct Items {
    Fam_Descriptor *row_ptr = nullptr, *col_idx = nullptr, *values = nullptr;
    Fam_Descriptor *x = nullptr, *y = nullptr, *stats = nullptr;

    void release() {
        for (Fam_Descriptor *d : {row_ptr, col_idx, values, x, y, stats}) delete d;
    }
};

// PE 0: a fresh region holding the matrix, x, room for y and the counters every PE adds to.
Items store_problem(fam &my_fam, const CsrMatrix &a, const std::vector<double> &x) {
    try {
        Fam_Region_Descriptor *stale = my_fam.fam_lookup_region(kRegionName);
        my_fam.fam_destroy_region(stale);
        delete stale;
        std::printf("spmv_demo: destroyed region \"%s\" left by an earlier run\n", kRegionName);
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
    }

    const uint64_t n = a.rows, nnz = a.values.size();
    const uint64_t bytes = (n + 1) * 8 + 2 * nnz * 8 + 2 * n * 8 + kStatsBytes;
    const uint64_t region_size = bytes + bytes / 8 + (1 << 20);  // room for alignment
    Fam_Region_Descriptor *region =
        my_fam.fam_create_region(kRegionName, region_size, 0777, nullptr);
    Items items;
    items.row_ptr = my_fam.fam_allocate("row_ptr", (n + 1) * 8, 0666, region);
    items.col_idx = my_fam.fam_allocate("col_idx", nnz * 8, 0666, region);
    items.values = my_fam.fam_allocate("values", nnz * 8, 0666, region);
    items.x = my_fam.fam_allocate("x", n * 8, 0666, region);
    items.y = my_fam.fam_allocate("y", n * 8, 0666, region);
    items.stats = my_fam.fam_allocate("stats", kStatsBytes, 0666, region);
    delete region;

    // const_cast: the put reads the buffer; the OpenFAM signature just is not const.
    my_fam.fam_put_blocking(const_cast<uint64_t *>(a.row_ptr.data()), items.row_ptr, 0,
                            (n + 1) * 8);
    my_fam.fam_put_blocking(const_cast<uint64_t *>(a.col_idx.data()), items.col_idx, 0, nnz * 8);
    my_fam.fam_put_blocking(const_cast<double *>(a.values.data()), items.values, 0, nnz * 8);
    my_fam.fam_put_blocking(const_cast<double *>(x.data()), items.x, 0, n * 8);
    return items;
}

Items look_up_problem(fam &my_fam) {
    Items items;
    items.row_ptr = my_fam.fam_lookup("row_ptr", kRegionName);
    items.col_idx = my_fam.fam_lookup("col_idx", kRegionName);
    items.values = my_fam.fam_lookup("values", kRegionName);
    items.x = my_fam.fam_lookup("x", kRegionName);
    items.y = my_fam.fam_lookup("y", kRegionName);
    items.stats = my_fam.fam_lookup("stats", kRegionName);
    return items;
}

// One PE's share of y = A*x: rows [lo, hi). Returns the bytes it moved through FAM.
uint64_t multiply_rows(fam &my_fam, const Items &items, uint64_t lo, uint64_t hi,
                       uint64_t *nonzeros) {
    uint64_t moved = 0;
    std::vector<uint64_t> row_ptr(hi - lo + 1);
    my_fam.fam_get_blocking(row_ptr.data(), items.row_ptr, lo * 8, row_ptr.size() * 8);
    moved += row_ptr.size() * 8;

    std::vector<double> y(hi - lo);
    std::vector<uint64_t> cols(kBatch);
    std::vector<double> vals(kBatch), xs(kBatch);
    uint64_t r = lo;
    while (r < hi) {
        // A batch is as many whole rows as fit in kBatch nonzeros (at least one row).
        uint64_t end = r + 1;
        while (end < hi && row_ptr[end + 1 - lo] - row_ptr[r - lo] <= kBatch) ++end;
        const uint64_t first = row_ptr[r - lo], count = row_ptr[end - lo] - first;
        if (count > cols.size()) {  // a single row longer than a batch
            cols.resize(count);
            vals.resize(count);
            xs.resize(count);
        }
        my_fam.fam_get_blocking(cols.data(), items.col_idx, first * 8, count * 8);
        my_fam.fam_get_blocking(vals.data(), items.values, first * 8, count * 8);
        // x[cols[0]], x[cols[1]], ...: the column indices are the gather's element indices.
        my_fam.fam_gather_blocking(xs.data(), items.x, count, cols.data(), sizeof(double));
        moved += 3 * count * 8;

        for (uint64_t row = r; row < end; ++row) {
            double sum = 0;
            for (uint64_t k = row_ptr[row - lo]; k < row_ptr[row + 1 - lo]; ++k)
                sum += vals[k - first] * xs[k - first];
            y[row - lo] = sum;
        }
        *nonzeros += count;
        r = end;
    }
    my_fam.fam_put_blocking(y.data(), items.y, lo * 8, y.size() * 8);
    moved += y.size() * 8;
    return moved;
}

// PE 0, after every PE has written its rows: compare y with the local product.
bool verify(fam &my_fam, const Items &items, const CsrMatrix &a, const std::vector<double> &x,
            double elapsed) {
    const uint64_t n = a.rows, nnz = a.values.size();
    std::vector<double> y(n);
    my_fam.fam_get_blocking(y.data(), items.y, 0, n * 8);
    std::vector<double> want = multiply(a, x);

    double max_error = 0, checksum = 0;
    for (uint64_t r = 0; r < n; ++r) {
        max_error = std::max(max_error, std::fabs(y[r] - want[r]));
        checksum += y[r];
    }
    uint64_t counted_nnz = my_fam.fam_fetch_uint64(items.stats, 0);
    uint64_t moved = my_fam.fam_fetch_uint64(items.stats, 8);
    uint64_t counted_rows = my_fam.fam_fetch_uint64(items.stats, 16);

    std::printf("spmv_demo: checksum sum(y) = %.6f, max |y - y_ref| = %.3g over %llu rows\n",
                checksum, max_error, static_cast<unsigned long long>(n));
    std::printf(
        "spmv_demo: y = A*x in %.3f s: %.1f M nonzeros/s, %.2f GB/s through FAM "
        "(%.1f MB moved)\n",
        elapsed, nnz / elapsed / 1e6, moved / elapsed / 1e9, moved / 1e6);

    bool ok = true;
    if (max_error > 1e-9) {
        std::printf("spmv_demo: FAILED: y differs from the local product\n");
        ok = false;
    }
    if (counted_nnz != nnz || counted_rows != n) {
        std::printf(
            "spmv_demo: FAILED: the PEs covered %llu rows / %llu nonzeros, expected "
            "%llu / %llu\n",
            static_cast<unsigned long long>(counted_rows),
            static_cast<unsigned long long>(counted_nnz), static_cast<unsigned long long>(n),
            static_cast<unsigned long long>(nnz));
        ok = false;
    }
    return ok;
}

void destroy_region(fam &my_fam) {
    Fam_Region_Descriptor *region = my_fam.fam_lookup_region(kRegionName);
    my_fam.fam_destroy_region(region);
    delete region;
}

// The grid side from the command line, or 0 if the command line is not valid.
uint64_t parse_grid(int argc, char **argv) {
    if (argc < 2) return kDefaultGrid;
    char *end = nullptr;
    unsigned long long g = std::strtoull(argv[1], &end, 10);
    if (argc > 2 || *end != '\0' || g < 2 || g > kMaxGrid) return 0;
    return g;
}

}  // namespace

int main(int argc, char **argv) {
    fam my_fam;
    int pe = 0, pes = 1;
    bool initialized = false;
    const uint64_t g = parse_grid(argc, argv);
    if (g == 0) {
        std::fprintf(stderr, "usage: spmv_demo [G]   (grid side, 2..%llu, default %llu)\n",
                     static_cast<unsigned long long>(kMaxGrid),
                     static_cast<unsigned long long>(kDefaultGrid));
        return 2;
    }
    try {
        my_fam.fam_initialize("default", nullptr);
        initialized = true;
        pe = int_option(my_fam, "PE_ID");
        pes = int_option(my_fam, "PE_COUNT");

        CsrMatrix a;
        std::vector<double> x;
        Items items;
        if (pe == 0) {
            auto start = Clock::now();
            a = laplacian_2d(g);
            x = make_x(a.rows);
            items = store_problem(my_fam, a, x);
            std::printf(
                "spmv_demo: %d PE(s); %llux%llu grid: %llu rows, %llu nonzeros; "
                "generated and stored in %.3f s\n",
                pes, static_cast<unsigned long long>(g), static_cast<unsigned long long>(g),
                static_cast<unsigned long long>(a.rows),
                static_cast<unsigned long long>(a.values.size()), seconds_since(start));
        }
        my_fam.fam_barrier_all();  // the problem is in FAM
        if (pe != 0) items = look_up_problem(my_fam);

        // Everyone starts together; the time is the slowest PE's (the second barrier).
        my_fam.fam_barrier_all();
        auto start = Clock::now();
        const uint64_t n = g * g;
        const uint64_t lo = n * pe / pes, hi = n * (pe + 1) / pes;
        uint64_t nonzeros = 0;
        uint64_t moved = multiply_rows(my_fam, items, lo, hi, &nonzeros);
        double mine = seconds_since(start);
        my_fam.fam_add(items.stats, 0, nonzeros);
        my_fam.fam_add(items.stats, 8, moved);
        my_fam.fam_add(items.stats, 16, hi - lo);
        std::printf("spmv_demo: PE %d: rows [%llu, %llu), %llu nonzeros in %.3f s\n", pe,
                    static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
                    static_cast<unsigned long long>(nonzeros), mine);
        std::fflush(stdout);
        my_fam.fam_barrier_all();  // every slice of y is in FAM
        double elapsed = seconds_since(start);

        bool ok = true;
        if (pe == 0) {
            ok = verify(my_fam, items, a, x, elapsed);
            items.release();
            destroy_region(my_fam);
            std::printf("spmv_demo: %s\n", ok ? "OK" : "FAILED");
        } else {
            items.release();
        }
        my_fam.fam_finalize("default");
        return ok ? 0 : 1;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "spmv_demo: PE %d: FAILED: %s (Fam_Error %d)\n", pe, e.what(),
                     e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "spmv_demo: PE %d: FAILED: %s\n", pe, e.what());
    }
    // The other PEs may be waiting in a barrier for this one: end the whole job.
    if (initialized && pes > 1) {
        try {
            my_fam.fam_abort(1);
        } catch (...) {
        }
    }
    return 1;
}
