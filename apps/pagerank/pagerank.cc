// pagerank: PageRank to convergence over a CSR graph in FAM (the one gen_rmat --keep leaves).
//
// Ranks are fixed-point integers (2^40 is a rank of 1): the contributions that edges push to
// their destinations are then added exactly, in any order, by the memory servers
// (fam_queue_operation with OP_ADD_INDEXED), so the result does not depend on the number of PEs
// or on the order the adds arrive in, and a serial computation must match it bit for bit.
//
// Each iteration, PE p (owning the block p of source vertices):
//   1. streams its rows of the CSR (row_ptr, col_idx) and its ranks from FAM, and queues, for
//      every edge u -> v, the add of d * rank[u] / outdeg(u) to next[v]; a vertex without
//      out-edges adds its rank to the iteration's dangling mass (fam_add);
//   2. after a barrier, reads its block of next and the dangling mass, makes the new ranks
//      rank[v] = (1 - d) / V + next[v] + d * dangling / V, adds |new - old| to the iteration's
//      change (fam_add), writes the ranks and zeroes its block of next;
//   3. after a barrier, stops when the total change is below --tolerance (or at --iterations).
// Check: PE 0 reads the whole graph and repeats the computation serially with the same
// integers: every rank and the iteration count must match exactly, and the ranks sum to 1
// within the rounding of the fixed point.
//
//   gen_rmat --scale 14 --keep && pagerank [--region rmat] [--drop-graph]
//   fampool run -n 2 gen_rmat --scale 16 --keep && fampool run -n 2 pagerank --drop-graph
#include <fam/fam.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "appkit/app.h"

using namespace openfam;

namespace {

const char *kUsage =
    "pagerank [--region rmat] [--damping 0.85] [--tolerance 1e-6] [--iterations 100]\n"
    "         [--chunk EDGES] [--drop-graph] [--no-check]\n"
    "  PageRank over the CSR graph gen_rmat --keep left in FAM (region --region)";

constexpr double kOne = 1099511627776.0;  // 2^40: the fixed-point rank of 1
constexpr uint64_t kGraphMagic = 0x3152534354414d52ull;

struct Params {
    uint64_t vertices = 0, edges = 0;
    double damping = 0.85, tolerance = 1e-6;
    uint64_t max_iterations = 100, chunk = 1 << 16;
};

// The integer arithmetic of one vertex, shared by the PEs and the serial check.
struct Fixed {
    uint64_t base;  // (1 - d) / V
    double damping;
    uint64_t vertices;
    uint64_t Contribution(uint64_t rank, uint64_t degree) const {
        return static_cast<uint64_t>(damping * static_cast<double>(rank) / degree);
    }
    uint64_t NewRank(uint64_t pushed, uint64_t dangling) const {
        return base + pushed +
               static_cast<uint64_t>(damping * static_cast<double>(dangling) /
                                     static_cast<double>(vertices));
    }
};

Fixed FixedOf(const Params &p) {
    return Fixed{static_cast<uint64_t>((1.0 - p.damping) * kOne / p.vertices), p.damping,
                 p.vertices};
}

struct Graph {
    Fam_Descriptor *row_ptr, *col_idx;
};

struct State {
    Fam_Descriptor *rank, *next, *board;  // board: [2 i] dangling, [2 i + 1] change of iteration i
};

// Step 1 for this PE's block of sources.
void Push(fam &f, const apps::Pe &pe, const Params &p, const Fixed &fx, const Graph &g,
          const State &s, uint64_t iteration) {
    uint64_t begin = pe.BlockBegin(p.vertices), end = pe.BlockEnd(p.vertices);
    if (begin == end) {
        f.fam_barrier_all();
        return;
    }
    std::vector<uint64_t> row_ptr(end - begin + 1), rank(end - begin);
    f.fam_get_blocking(row_ptr.data(), g.row_ptr, begin * 8, row_ptr.size() * 8);
    f.fam_get_blocking(rank.data(), s.rank, begin * 8, rank.size() * 8);
    std::vector<uint64_t> targets, adds;
    uint64_t dangling = 0;
    // Rows in chunks of about p.chunk edges: the edges stream from FAM, never all in DRAM.
    for (uint64_t u = begin; u < end;) {
        uint64_t first = row_ptr[u - begin], last_row = u;
        while (last_row < end && row_ptr[last_row + 1 - begin] - first <= p.chunk) ++last_row;
        if (last_row == u) last_row = u + 1;  // one row longer than a chunk goes alone
        uint64_t count = row_ptr[last_row - begin] - first;
        targets.resize(count);
        adds.resize(count);
        if (count) f.fam_get_blocking(targets.data(), g.col_idx, first * 8, count * 8);
        for (uint64_t v = u; v < last_row; ++v) {
            uint64_t lo = row_ptr[v - begin] - first, hi = row_ptr[v + 1 - begin] - first;
            if (lo == hi) {
                dangling += rank[v - begin];
                continue;
            }
            uint64_t share = fx.Contribution(rank[v - begin], hi - lo);
            for (uint64_t k = lo; k < hi; ++k) adds[k] = share;
        }
        if (count) {
            f.fam_queue_operation(OP_ADD_INDEXED, adds.data(), s.next, count, targets.data(), 8);
        }
        u = last_row;
    }
    f.fam_aggregate_flush(s.next);
    f.fam_add(s.board, 2 * iteration * 8, dangling);
    f.fam_quiet();
    f.fam_barrier_all();
}

// Step 2 for this PE's block of vertices.
void Update(fam &f, const apps::Pe &pe, const Params &p, const Fixed &fx, const State &s,
            uint64_t iteration) {
    uint64_t begin = pe.BlockBegin(p.vertices), end = pe.BlockEnd(p.vertices);
    uint64_t dangling = f.fam_fetch_uint64(s.board, 2 * iteration * 8);
    uint64_t change = 0;
    if (begin < end) {
        std::vector<uint64_t> rank(end - begin), next(end - begin);
        f.fam_get_blocking(rank.data(), s.rank, begin * 8, rank.size() * 8);
        f.fam_get_blocking(next.data(), s.next, begin * 8, next.size() * 8);
        for (uint64_t i = 0; i < rank.size(); ++i) {
            uint64_t updated = fx.NewRank(next[i], dangling);
            change += updated > rank[i] ? updated - rank[i] : rank[i] - updated;
            rank[i] = updated;
            next[i] = 0;
        }
        f.fam_put_blocking(rank.data(), s.rank, begin * 8, rank.size() * 8);
        f.fam_put_blocking(next.data(), s.next, begin * 8, next.size() * 8);
    }
    f.fam_add(s.board, (2 * iteration + 1) * 8, change);
    f.fam_quiet();
    f.fam_barrier_all();
}

// The same computation in one process: returns the ranks, and the iterations in `*iterations`.
std::vector<uint64_t> Serial(fam &f, const Params &p, const Fixed &fx, const Graph &g,
                             uint64_t *iterations) {
    std::vector<uint64_t> row_ptr(p.vertices + 1), col_idx(p.edges);
    f.fam_get_blocking(row_ptr.data(), g.row_ptr, 0, row_ptr.size() * 8);
    if (p.edges) f.fam_get_blocking(col_idx.data(), g.col_idx, 0, p.edges * 8);
    std::vector<uint64_t> rank(p.vertices, static_cast<uint64_t>(kOne / p.vertices)), next;
    for (*iterations = 0; *iterations < p.max_iterations;) {
        next.assign(p.vertices, 0);
        uint64_t dangling = 0;
        for (uint64_t u = 0; u < p.vertices; ++u) {
            uint64_t degree = row_ptr[u + 1] - row_ptr[u];
            if (degree == 0) {
                dangling += rank[u];
                continue;
            }
            uint64_t share = fx.Contribution(rank[u], degree);
            for (uint64_t k = row_ptr[u]; k < row_ptr[u + 1]; ++k) next[col_idx[k]] += share;
        }
        uint64_t change = 0;
        for (uint64_t v = 0; v < p.vertices; ++v) {
            uint64_t updated = fx.NewRank(next[v], dangling);
            change += updated > rank[v] ? updated - rank[v] : rank[v] - updated;
            rank[v] = updated;
        }
        ++*iterations;
        if (change / kOne < p.tolerance) break;
    }
    return rank;
}

int Run(fam &f, const apps::Pe &pe, Params p, const std::string &graph_region, bool check,
        bool drop_graph) {
    Fam_Descriptor *info = f.fam_lookup("graph_info", graph_region.c_str());
    uint64_t words[8];
    f.fam_get_blocking(words, info, 0, sizeof words);
    if (words[0] != kGraphMagic) {
        std::fprintf(stderr, "pagerank: region \"%s\" holds no gen_rmat graph\n",
                     graph_region.c_str());
        return 1;
    }
    p.vertices = words[4];
    p.edges = words[5];
    Graph g{f.fam_lookup("row_ptr", graph_region.c_str()),
            f.fam_lookup("col_idx", graph_region.c_str())};
    Fixed fx = FixedOf(p);
    uint64_t bytes = p.vertices * 16 + p.max_iterations * 16 + 4096;
    Fam_Region_Descriptor *region = apps::FreshRegion(f, pe, "pagerank", bytes + (8 << 20));
    State s{apps::SharedItem(f, pe, region, "rank", p.vertices * 8),
            apps::SharedItem(f, pe, region, "next", p.vertices * 8),
            apps::SharedItem(f, pe, region, "board", p.max_iterations * 16)};
    uint64_t begin = pe.BlockBegin(p.vertices), end = pe.BlockEnd(p.vertices);
    std::vector<uint64_t> initial(end - begin, static_cast<uint64_t>(kOne / p.vertices));
    if (!initial.empty()) {
        f.fam_put_blocking(initial.data(), s.rank, begin * 8, initial.size() * 8);
    }
    f.fam_barrier_all();

    apps::Timer timer;
    uint64_t iterations = 0;
    double change = 0;
    while (iterations < p.max_iterations) {
        Push(f, pe, p, fx, g, s, iterations);
        Update(f, pe, p, fx, s, iterations);
        change = f.fam_fetch_uint64(s.board, (2 * iterations + 1) * 8) / kOne;
        ++iterations;
        if (change < p.tolerance) break;
    }
    double seconds = timer.Seconds();
    int status = 0;
    if (pe.first()) {
        char fields[512];
        std::snprintf(fields, sizeof fields,
                      "model=%s pes=%lu vertices=%lu edges=%lu iterations=%lu change=%.3g "
                      "seconds=%.4f rate=%.4g unit=edges/s",
                      apps::ModelOf(f).c_str(), static_cast<unsigned long>(pe.count),
                      static_cast<unsigned long>(p.vertices), static_cast<unsigned long>(p.edges),
                      static_cast<unsigned long>(iterations), change, seconds,
                      static_cast<double>(p.edges) * iterations / seconds);
        apps::Result("pagerank", fields);
        if (check) {
            uint64_t serial_iterations = 0;
            std::vector<uint64_t> want = Serial(f, p, fx, g, &serial_iterations);
            std::vector<uint64_t> got(p.vertices);
            f.fam_get_blocking(got.data(), s.rank, 0, got.size() * 8);
            uint64_t wrong = 0;
            double total = 0;
            for (uint64_t v = 0; v < p.vertices; ++v) {
                wrong += got[v] != want[v];
                total += got[v] / kOne;
            }
            // Each iteration rounds every contribution and rank down by under one unit.
            double slack = 2.0 * static_cast<double>(p.edges + p.vertices) * iterations / kOne;
            bool passed = wrong == 0 && serial_iterations == iterations &&
                          std::fabs(total - 1.0) <= slack + 1e-9 && change < p.tolerance;
            char detail[256];
            std::snprintf(detail, sizeof detail,
                          "wrong_ranks=%lu iterations=%lu serial_iterations=%lu rank_sum=%.9f "
                          "converged=%s",
                          static_cast<unsigned long>(wrong), static_cast<unsigned long>(iterations),
                          static_cast<unsigned long>(serial_iterations), total,
                          change < p.tolerance ? "yes" : "no");
            status = apps::Check("pagerank", passed, detail);
        } else {
            status = apps::Check("pagerank", change < p.tolerance, "converged only (--no-check)");
        }
    }
    f.fam_barrier_all();
    if (pe.first()) {
        f.fam_destroy_region(region);
        if (drop_graph) {
            Fam_Region_Descriptor *graph = f.fam_lookup_region(graph_region.c_str());
            f.fam_destroy_region(graph);
            delete graph;
        }
    }
    delete info;
    return status;
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Params p;
    p.damping = args.Real("damping", 0.85);
    p.tolerance = args.Real("tolerance", 1e-6);
    p.max_iterations = args.Count("iterations", 100);
    p.chunk = std::max<uint64_t>(1, args.Count("chunk", 1 << 16));
    if (!(p.damping > 0 && p.damping < 1) || !(p.tolerance > 0) || p.max_iterations == 0 ||
        p.max_iterations > 100000) {
        std::fprintf(stderr,
                     "pagerank: --damping must be in (0, 1), --tolerance above 0, "
                     "--iterations 1..100000\n%s\n",
                     kUsage);
        return 2;
    }
    return apps::RunJob("pagerank", [&](fam &f, const apps::Pe &pe) {
        int status = Run(f, pe, p, args.Text("region", "rmat"), !args.Flag("no-check"),
                         args.Flag("drop-graph"));
        // Only PE 0 checks; the others succeed when nothing failed.
        return pe.first() ? status : 0;
    });
}
