// spmv: y = A x with A, x and y in FAM and OpenSHMEM between the PEs: the hybrid SpMV of the
// OpenSHMEM + FAM paper (seed 001, section III-B; seed 000, section IV-C).
//
// Ingest: the PEs write the CSR arrays of A (row_ptr, col_idx, values) and x into FAM, each its
// block of rows. Multiply: each PE reads its rows in groups of --group rows (fam_get), fetches
// the x entries those rows use with one indexed fam_gather per group (or, --x whole, reads all
// of x once, as the paper's PEs do), multiplies, and writes its slice of y to FAM. I/O time (FAM
// reads and writes) and compute time are measured apart. Check: each PE reads its slice of y
// back and compares it with a serial computation from the matrix's generator; the PEs' error
// counts and checksums meet on PE 0 through the symmetric heap.
//
// Matrices: --matrix laplace (the 5-point Laplacian of a G x G grid, G = --grid) or random
// (--rows R rows of --per-row nonzeros at random columns: every x fetch is a scattered one).
// --interleave on|off: the region's items striped over the memory servers, or not.
//
//   oshrun -np 2 spmv [--matrix laplace|random] [--grid 300] [--rows N] [--per-row 8]
//                     [--group 4096] [--x gather|whole] [--interleave on|off]
//   fampool run -n 2 spmv ...
#include <fam/fam.h>
#include <shmem.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "appkit/app.h"

using namespace openfam;

namespace {

const char *kUsage =
    "spmv [--matrix laplace|random] [--grid G] [--rows R] [--per-row K] [--group ROWS]\n"
    "     [--x gather|whole] [--interleave on|off]\n"
    "  y = A x with A, x and y in FAM (hybrid OpenSHMEM + FAM); run under oshrun or fampool run";

struct Matrix {
    bool laplace = true;
    uint64_t grid = 300, rows = 0, per_row = 8;

    // The nonzeros of row r in increasing column order: (column, value). Values are multiples
    // of 1/8 and x entries small integers, so every y is exact in floating point.
    void Row(uint64_t r, std::vector<std::pair<uint64_t, double>> *out) const {
        out->clear();
        if (laplace) {
            uint64_t i = r / grid, j = r % grid;
            if (i > 0) out->push_back({r - grid, -1.0});
            if (j > 0) out->push_back({r - 1, -1.0});
            out->push_back({r, 4.0});
            if (j + 1 < grid) out->push_back({r + 1, -1.0});
            if (i + 1 < grid) out->push_back({r + grid, -1.0});
            return;
        }
        for (uint64_t k = 0; k < per_row; ++k) {
            uint64_t column = apps::Mix64(r * per_row + k) % rows;
            out->push_back({column, static_cast<double>(apps::Mix64(column + r) % 16) / 8.0});
        }
    }
    uint64_t RowLength(uint64_t r) const {
        if (!laplace) return per_row;
        uint64_t i = r / grid, j = r % grid;
        return 1 + (i > 0) + (j > 0) + (j + 1 < grid) + (i + 1 < grid);
    }
    static double X(uint64_t column) { return static_cast<double>(column % 13) - 6.0; }
};

struct Items {
    Fam_Descriptor *row_ptr, *col_idx, *values, *x, *y;
};

// Writes this PE's rows of A and its block of x into FAM.
void Ingest(fam &f, const apps::Pe &pe, const Matrix &a, const Items &items) {
    uint64_t begin = pe.BlockBegin(a.rows), end = pe.BlockEnd(a.rows);
    // The first nonzero of each row: prefix sums of row lengths, computed by every PE for the
    // rows before its own (cheap beside the matrix's size).
    uint64_t first = 0;
    for (uint64_t r = 0; r < begin; ++r) first += a.RowLength(r);
    std::vector<uint64_t> row_ptr, col_idx;
    std::vector<double> values;
    std::vector<std::pair<uint64_t, double>> row;
    uint64_t at = first;
    for (uint64_t r = begin; r < end; ++r) {
        row_ptr.push_back(at);
        a.Row(r, &row);
        for (auto [column, value] : row) {
            col_idx.push_back(column);
            values.push_back(value);
        }
        at += row.size();
    }
    if (pe.rank + 1 == pe.count) row_ptr.push_back(at);  // the end of the last row
    f.fam_put_blocking(row_ptr.data(), items.row_ptr, begin * 8, row_ptr.size() * 8);
    if (!col_idx.empty()) {
        f.fam_put_blocking(col_idx.data(), items.col_idx, first * 8, col_idx.size() * 8);
        f.fam_put_blocking(values.data(), items.values, first * 8, values.size() * 8);
    }
    std::vector<double> x(end - begin);
    for (uint64_t r = begin; r < end; ++r) x[r - begin] = Matrix::X(r);
    if (!x.empty()) f.fam_put_blocking(x.data(), items.x, begin * 8, x.size() * 8);
}

struct Times {
    double io = 0, compute = 0;
    uint64_t nonzeros = 0;
};

// y = A x for this PE's rows, in groups of `group` rows.
Times Multiply(fam &f, const apps::Pe &pe, const Matrix &a, const Items &items, uint64_t group,
               bool whole_x) {
    Times t;
    uint64_t begin = pe.BlockBegin(a.rows), end = pe.BlockEnd(a.rows);
    apps::Timer clock;
    std::vector<double> x_all;
    if (whole_x) {
        x_all.resize(a.rows);
        f.fam_get_blocking(x_all.data(), items.x, 0, a.rows * 8);
    }
    t.io += clock.Seconds();
    std::vector<uint64_t> row_ptr, col_idx;
    std::vector<double> values, x_used, y(end - begin);
    for (uint64_t g = begin; g < end; g += group) {
        uint64_t n = std::min(group, end - g);
        clock.Restart();
        row_ptr.resize(n + 1);
        f.fam_get_blocking(row_ptr.data(), items.row_ptr, g * 8, (n + 1) * 8);
        uint64_t first = row_ptr[0], count = row_ptr[n] - first;
        col_idx.resize(count);
        values.resize(count);
        x_used.resize(count);
        if (count) {
            f.fam_get_nonblocking(col_idx.data(), items.col_idx, first * 8, count * 8);
            f.fam_get_nonblocking(values.data(), items.values, first * 8, count * 8);
            f.fam_quiet();
            if (!whole_x) f.fam_gather_blocking(x_used.data(), items.x, count, col_idx.data(), 8);
        }
        t.io += clock.Seconds();
        clock.Restart();
        for (uint64_t r = 0; r < n; ++r) {
            double sum = 0;
            for (uint64_t k = row_ptr[r] - first; k < row_ptr[r + 1] - first; ++k) {
                sum += values[k] * (whole_x ? x_all[col_idx[k]] : x_used[k]);
            }
            y[g - begin + r] = sum;
        }
        t.compute += clock.Seconds();
        t.nonzeros += count;
    }
    clock.Restart();
    if (!y.empty()) f.fam_put_blocking(y.data(), items.y, begin * 8, y.size() * 8);
    t.io += clock.Seconds();
    return t;
}

// Reads this PE's slice of y back from FAM and counts the entries that differ from a serial
// computation; returns (errors, sum of y).
std::pair<uint64_t, double> Verify(fam &f, const apps::Pe &pe, const Matrix &a,
                                   const Items &items) {
    uint64_t begin = pe.BlockBegin(a.rows), end = pe.BlockEnd(a.rows);
    std::vector<double> y(end - begin);
    if (!y.empty()) f.fam_get_blocking(y.data(), items.y, begin * 8, y.size() * 8);
    std::vector<std::pair<uint64_t, double>> row;
    uint64_t errors = 0;
    double sum = 0;
    for (uint64_t r = begin; r < end; ++r) {
        a.Row(r, &row);
        double want = 0;
        for (auto [column, value] : row) want += value * Matrix::X(column);
        errors += y[r - begin] != want;
        sum += y[r - begin];
    }
    return {errors, sum};
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Matrix a;
    a.laplace = args.Text("matrix", "laplace") != "random";
    a.grid = args.Count("grid", 300);
    a.per_row = std::max<uint64_t>(1, args.Count("per-row", 8));
    a.rows = a.laplace ? a.grid * a.grid : args.Count("rows", 100000);
    uint64_t group = std::max<uint64_t>(1, args.Count("group", 4096));
    bool whole_x = args.Text("x", "gather") == "whole";
    bool interleave = args.Text("interleave", "on") != "off";
    if (a.rows == 0) {
        std::fprintf(stderr, "spmv: the matrix has no rows\n%s\n", kUsage);
        return 2;
    }

    shmem_init();
    static double partial[2];  // symmetric: each PE's error count and checksum, summed on PE 0
    static double totals[2];
    fam f;
    Fam_Options options{};
    int status = 1;
    try {
        f.fam_initialize("default", &options);
        apps::Pe pe = apps::PeOf(f);
        uint64_t nonzeros = 0;
        for (uint64_t r = 0; r < a.rows; ++r) nonzeros += a.RowLength(r);
        Fam_Region_Attributes attributes{};
        attributes.interleaveEnable = interleave ? ENABLE : DISABLE;
        uint64_t bytes = (a.rows + 1) * 8 + nonzeros * 16 + a.rows * 16;
        Fam_Region_Descriptor *region =
            apps::FreshRegion(f, pe, "spmv", bytes + (8 << 20), &attributes);
        Items items{apps::SharedItem(f, pe, region, "row_ptr", (a.rows + 1) * 8),
                    apps::SharedItem(f, pe, region, "col_idx", nonzeros * 8),
                    apps::SharedItem(f, pe, region, "values", nonzeros * 8),
                    apps::SharedItem(f, pe, region, "x", a.rows * 8),
                    apps::SharedItem(f, pe, region, "y", a.rows * 8)};
        apps::Timer ingest;
        Ingest(f, pe, a, items);
        shmem_barrier_all();
        double ingest_seconds = ingest.Seconds();

        apps::Timer total;
        Times t = Multiply(f, pe, a, items, group, whole_x);
        shmem_barrier_all();
        double seconds = total.Seconds();

        auto [errors, sum] = Verify(f, pe, a, items);
        partial[0] = static_cast<double>(errors);
        partial[1] = sum;
        shmem_barrier_all();
        if (pe.first()) {
            totals[0] = totals[1] = 0;
            for (uint64_t p = 0; p < pe.count; ++p) {
                double remote[2];
                shmem_getmem(remote, partial, sizeof remote, static_cast<int>(p));
                totals[0] += remote[0];
                totals[1] += remote[1];
            }
            char fields[640];
            std::snprintf(
                fields, sizeof fields,
                "matrix=%s model=%s pes=%lu interleave=%s x=%s rows=%lu nonzeros=%lu group=%lu "
                "ingest_seconds=%.4f seconds=%.4f io_seconds=%.4f compute_seconds=%.4f "
                "rate=%.4g unit=nonzeros/s",
                a.laplace ? "laplace" : "random", apps::ModelOf(f).c_str(),
                static_cast<unsigned long>(pe.count), interleave ? "on" : "off",
                whole_x ? "whole" : "gather", static_cast<unsigned long>(a.rows),
                static_cast<unsigned long>(nonzeros), static_cast<unsigned long>(group),
                ingest_seconds, seconds, t.io, t.compute, nonzeros / seconds);
            apps::Result("spmv", fields);
            char detail[128];
            std::snprintf(detail, sizeof detail, "wrong_entries=%.0f checksum=%.6g", totals[0],
                          totals[1]);
            status = apps::Check("spmv", totals[0] == 0, detail);
        }
        shmem_barrier_all();
        if (pe.first()) f.fam_destroy_region(region);
        f.fam_finalize("default");
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "spmv: %s\n", e.fam_error_msg());
        status = 1;
    }
    // Only PE 0 knows the outcome; the others say nothing but succeed when they did not fail.
    if (shmem_my_pe() != 0 && status == 1 && totals[0] == 0) status = 0;
    shmem_finalize();
    return status;
}
