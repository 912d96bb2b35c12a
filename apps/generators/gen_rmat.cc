// gen_rmat: a Graph500-style R-MAT (Kronecker) graph, built as a CSR in FAM by all PEs.
//
// The graph has V = 2^scale vertices and E = edge-factor * V directed edges (self loops and
// repeated edges kept, as Graph500 keeps them). Edge k is drawn from a counter-based stream
// (apps::Mix64 of the seed's key plus a counter), so the graph depends on the seed only, never
// on the number of PEs. Each of its `scale` levels picks a quadrant with the R-MAT
// probabilities A=0.57, B=0.19, C=0.19, D=0.05; both ends are then relabelled by a bijection
// of the vertex ids (Graph500 permutes them too) so that the heavy vertices spread over all
// PEs' blocks instead of crowding into the first one.
//
// Building the CSR (README.md shows the layout):
//   1. generate  PE p draws edges [p*E/P, (p+1)*E/P) and counts them per source vertex.
//   2. degrees   every PE adds its counts into row_ptr[u+1] with memory-side aggregation
//                (fam_queue_operation(OP_ADD_INDEXED) + fam_aggregate_flush), and writes the
//                same counts as its row of the scratch item "pe_offsets" (P x V words).
//   3. prefix    each PE turns its block of degrees into row_ptr entries (an exclusive scan:
//                block sums meet in the "board" item), then turns column u of pe_offsets into
//                the slot where each PE's edges of row u start (checking that the PEs' counts
//                add up to the aggregated degree).
//   4. place     each PE scatters its edges' destinations into col_idx with OP_SCATTER;
//                within a row, edges sit in edge-id order, so the CSR is the same for any P.
//   5. check     row_ptr non-decreasing, row_ptr[0] = 0, row_ptr[V] = E, every col_idx < V,
//                the degrees sum to E, and the fingerprint of the edge multiset (sum of
//                Mix64(src*V+dst)) read back from the CSR equals the one summed at generation.
//                The CHECK line also shows a digest of col_idx in slot order (layout=), which
//                is the same for any number of PEs.
//
//   gen_rmat [--scale 16] [--edge-factor 16] [--seed 1] [--region rmat] [--keep]
//   mpirun -np 2 gen_rmat ...        fampool run -n 2 gen_rmat ...
#include <fam/fam.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "appkit/app.h"

using namespace openfam;

namespace {

const char *kUsage =
    "gen_rmat [--scale S] [--edge-factor E] [--seed N] [--region NAME] [--keep] [--batch B]\n"
    "  an R-MAT graph of 2^S vertices and E*2^S edges (default S=16, E=16, seed 1), built as a\n"
    "  CSR (items row_ptr, col_idx, graph_info) in the FAM region NAME (default \"rmat\");\n"
    "  --keep leaves the region in FAM for other applications; B elements per\n"
    "  fam_queue_operation call (default 8192)";

// "RMATCSR1" read as a little-endian word: the first word of graph_info.
constexpr uint64_t kInfoMagic = 0x3152534354414d52ull;
constexpr uint64_t kChunkWords = 1 << 20;  // words per get/put (8 MiB)

// Words of the "board" item, where the PEs' partial results meet.
enum Board : uint64_t {
    kGeneratedPrint = 0,  // sum of the edge fingerprints at generation
    kCsrPrint = 1,        // the same sum, read back from the CSR
    kErrors = 2,          // check failures
    kDegreeSum = 3,       // sum of the degrees read back from row_ptr
    kCountMismatch = 4,   // rows whose per-PE counts do not add up to the aggregated degree
    kLayoutPrint = 5,     // sum over slots j of Mix64(j + Mix64(col_idx[j])): order-sensitive
    kBlockSums = 8,       // word 8 + p: edges whose source lies in PE p's block of vertices
};

struct Graph {
    uint64_t scale = 16, edge_factor = 16, seed = 1;
    uint64_t vertices = 0, edges = 0;
    uint64_t key = 0, words_per_edge = 1;  // the random stream: key and draws per edge
    uint64_t relabel1 = 0, relabel2 = 0;   // the vertex bijection's constants

    void Setup() {
        vertices = uint64_t{1} << scale;
        edges = edge_factor * vertices;
        key = apps::Mix64(seed);
        words_per_edge = (scale + 3) / 4;  // one 16-bit draw per level
        relabel1 = apps::Mix64(key ^ 0x5bd1e995u) | 1;
        relabel2 = apps::Mix64(key ^ 0x27d4eb2fu) | 1;
    }

    // A bijection of [0, V): odd multiplications, an addition and right xor-shifts, each of
    // them invertible modulo 2^scale.
    uint64_t Relabel(uint64_t v) const {
        uint64_t mask = vertices - 1, shift = (scale + 1) / 2;
        v = (v * relabel1) & mask;
        v ^= v >> shift;
        v = (v * relabel2 + relabel1) & mask;
        v ^= v >> shift;
        return v;
    }

    // Edge k: its source and destination after relabelling.
    void Edge(uint64_t k, uint64_t *src, uint64_t *dst) const {
        // Thresholds of A, A+B and A+B+C out of 65536.
        constexpr uint64_t kA = 37355, kAB = 49807, kABC = 62259;
        uint64_t s = 0, d = 0, word = 0;
        for (uint64_t level = 0; level < scale; ++level) {
            if (level % 4 == 0) word = apps::Mix64(key + k * words_per_edge + level / 4);
            uint64_t draw = (word >> (16 * (level % 4))) & 0xffff;
            uint64_t bit = uint64_t{1} << (scale - 1 - level);
            if (draw >= kABC) {
                s |= bit, d |= bit;
            } else if (draw >= kAB) {
                s |= bit;
            } else if (draw >= kA) {
                d |= bit;
            }
        }
        *src = Relabel(s);
        *dst = Relabel(d);
    }

    uint64_t Fingerprint(uint64_t src, uint64_t dst) const {
        return apps::Mix64(src * vertices + dst);
    }
};

struct Job {
    fam *f = nullptr;
    apps::Pe pe;
    Graph g;
    uint64_t batch = 8192;
    Fam_Descriptor *row_ptr = nullptr, *col_idx = nullptr, *pe_offsets = nullptr;
    Fam_Descriptor *board = nullptr, *info = nullptr;
};

void GetWords(fam &f, Fam_Descriptor *item, uint64_t first, uint64_t count, uint64_t *out) {
    for (uint64_t done = 0; done < count; done += kChunkWords) {
        uint64_t n = std::min(kChunkWords, count - done);
        f.fam_get_blocking(out + done, item, (first + done) * 8, n * 8);
    }
}

void PutWords(fam &f, Fam_Descriptor *item, uint64_t first, uint64_t count, uint64_t *in) {
    for (uint64_t done = 0; done < count; done += kChunkWords) {
        uint64_t n = std::min(kChunkWords, count - done);
        f.fam_put_blocking(in + done, item, (first + done) * 8, n * 8);
    }
}

// Queues `count` elements of one operation on `item` in calls of at most `batch` elements.
void QueueAll(Job &job, FAM_QUEUE_OP op, Fam_Descriptor *item, std::vector<uint64_t> &index,
              std::vector<uint64_t> &value) {
    for (uint64_t done = 0; done < index.size(); done += job.batch) {
        uint64_t n = std::min<uint64_t>(job.batch, index.size() - done);
        job.f->fam_queue_operation(op, value.data() + done, item, n, index.data() + done, 8);
    }
    job.f->fam_aggregate_flush(item);
}

// Step 1: this PE's edges, in edge-id order, and their count per source vertex.
void Generate(Job &job, std::vector<uint64_t> *src, std::vector<uint64_t> *dst,
              std::vector<uint64_t> *counts) {
    uint64_t begin = job.pe.BlockBegin(job.g.edges), end = job.pe.BlockEnd(job.g.edges);
    src->resize(end - begin);
    dst->resize(end - begin);
    counts->assign(job.g.vertices, 0);
    uint64_t print = 0;
    for (uint64_t k = begin; k < end; ++k) {
        uint64_t s, d;
        job.g.Edge(k, &s, &d);
        (*src)[k - begin] = s;
        (*dst)[k - begin] = d;
        ++(*counts)[s];
        print += job.g.Fingerprint(s, d);
    }
    job.f->fam_add(job.board, kGeneratedPrint * 8, print);
    job.f->fam_quiet();
}

// Step 2: degrees into row_ptr[u+1] by aggregation; this PE's counts into pe_offsets row p.
void AddDegrees(Job &job, std::vector<uint64_t> &counts) {
    std::vector<uint64_t> index, value;
    for (uint64_t u = 0; u < job.g.vertices; ++u) {
        if (counts[u] == 0) continue;
        index.push_back(u + 1);
        value.push_back(counts[u]);
    }
    QueueAll(job, OP_ADD_INDEXED, job.row_ptr, index, value);
    PutWords(*job.f, job.pe_offsets, job.pe.rank * job.g.vertices, job.g.vertices, counts.data());
}

// Step 3: row_ptr for this PE's block of vertices, then the per-PE slots of its rows.
void Prefix(Job &job) {
    fam &f = *job.f;
    uint64_t b = job.pe.BlockBegin(job.g.vertices), e = job.pe.BlockEnd(job.g.vertices);
    std::vector<uint64_t> degree(e - b);
    GetWords(f, job.row_ptr, b + 1, e - b, degree.data());
    uint64_t block_sum = 0;
    for (uint64_t d : degree) block_sum += d;
    f.fam_put_blocking(&block_sum, job.board, (kBlockSums + job.pe.rank) * 8, 8);
    f.fam_barrier_all();  // every PE has read its degrees before any writes row_ptr

    std::vector<uint64_t> sums(job.pe.count);
    f.fam_get_blocking(sums.data(), job.board, kBlockSums * 8, job.pe.count * 8);
    uint64_t start = 0;
    for (uint64_t q = 0; q < job.pe.rank; ++q) start += sums[q];
    std::vector<uint64_t> rows(e - b + 1);
    rows[0] = start;
    for (uint64_t u = b; u < e; ++u) rows[u - b + 1] = rows[u - b] + degree[u - b];
    // Row_ptr[e] is the next PE's first entry: only the last PE writes the final one.
    PutWords(f, job.row_ptr, b, e - b + (job.pe.rank + 1 == job.pe.count), rows.data());

    // Column u of pe_offsets: PE q's edges of row u start at row_ptr[u] + sum of the counts
    // of the PEs before q.
    uint64_t width = e - b;
    std::vector<uint64_t> block(job.pe.count * width);
    for (uint64_t q = 0; q < job.pe.count; ++q) {
        GetWords(f, job.pe_offsets, q * job.g.vertices + b, width, block.data() + q * width);
    }
    uint64_t mismatches = 0;
    for (uint64_t u = 0; u < width; ++u) {
        uint64_t slot = rows[u];
        for (uint64_t q = 0; q < job.pe.count; ++q) {
            uint64_t count = block[q * width + u];
            block[q * width + u] = slot;
            slot += count;
        }
        mismatches += slot != rows[u + 1];
    }
    for (uint64_t q = 0; q < job.pe.count; ++q) {
        PutWords(f, job.pe_offsets, q * job.g.vertices + b, width, block.data() + q * width);
    }
    f.fam_add(job.board, kCountMismatch * 8, mismatches);
    f.fam_quiet();
}

// Step 4: this PE's destinations into col_idx, at its slots of each row, in edge-id order.
void Place(Job &job, const std::vector<uint64_t> &src, std::vector<uint64_t> &dst) {
    std::vector<uint64_t> slot(job.g.vertices);
    GetWords(*job.f, job.pe_offsets, job.pe.rank * job.g.vertices, job.g.vertices, slot.data());
    std::vector<uint64_t> position(src.size());
    for (uint64_t i = 0; i < src.size(); ++i) position[i] = slot[src[i]]++;
    QueueAll(job, OP_SCATTER, job.col_idx, position, dst);
}

// Step 5: this PE's block of rows read back from FAM.
void Check(Job &job) {
    fam &f = *job.f;
    const Graph &g = job.g;
    uint64_t b = job.pe.BlockBegin(g.vertices), e = job.pe.BlockEnd(g.vertices);
    std::vector<uint64_t> rows(e - b + 1);
    GetWords(f, job.row_ptr, b, e - b + 1, rows.data());
    uint64_t errors = 0, degree_sum = 0, print = 0, layout = 0;
    if (b == 0 && rows[0] != 0) ++errors;
    if (e == g.vertices && rows[e - b] != g.edges) ++errors;
    for (uint64_t u = b; u < e; ++u) {
        if (rows[u - b + 1] < rows[u - b]) ++errors;
        degree_sum += rows[u - b + 1] - rows[u - b];
    }
    if (errors == 0 && rows[e - b] <= g.edges) {
        uint64_t first = rows[0], count = rows[e - b] - first;
        std::vector<uint64_t> cols(std::min(count, kChunkWords));
        uint64_t u = b;
        for (uint64_t done = 0; done < count; done += cols.size()) {
            uint64_t n = std::min<uint64_t>(cols.size(), count - done);
            f.fam_get_blocking(cols.data(), job.col_idx, (first + done) * 8, n * 8);
            for (uint64_t i = 0; i < n; ++i) {
                uint64_t j = first + done + i;
                while (rows[u - b + 1] <= j) ++u;  // the row that slot j belongs to
                if (cols[i] >= g.vertices) ++errors;
                print += g.Fingerprint(u, cols[i]);
                layout += apps::Mix64(j + apps::Mix64(cols[i]));
            }
        }
    } else {
        ++errors;  // row_ptr is broken; col_idx cannot be read by row
    }
    f.fam_add(job.board, kErrors * 8, errors);
    f.fam_add(job.board, kDegreeSum * 8, degree_sum);
    f.fam_add(job.board, kCsrPrint * 8, print);
    f.fam_add(job.board, kLayoutPrint * 8, layout);
    f.fam_quiet();
}

std::string Fields(const Job &job, const char *phase, double seconds) {
    char text[256];
    std::snprintf(text, sizeof text, "phase=%s model=%s pes=%lu scale=%lu vertices=%lu edges=%lu",
                  phase, apps::ModelOf(*job.f).c_str(), static_cast<unsigned long>(job.pe.count),
                  static_cast<unsigned long>(job.g.scale),
                  static_cast<unsigned long>(job.g.vertices),
                  static_cast<unsigned long>(job.g.edges));
    char timing[128];
    std::snprintf(timing, sizeof timing, " seconds=%.4f rate=%.4g unit=edges/s", seconds,
                  seconds > 0 ? job.g.edges / seconds : 0.0);
    return std::string(text) + timing;
}

// Runs the five steps between barriers, timing each on PE 0. Returns the exit status.
int Build(Job &job) {
    fam &f = *job.f;
    apps::Timer total, phase;
    std::vector<uint64_t> src, dst, counts;
    double seconds[5];
    Generate(job, &src, &dst, &counts);
    f.fam_barrier_all();
    seconds[0] = phase.Seconds();
    phase.Restart();
    AddDegrees(job, counts);
    counts = std::vector<uint64_t>();
    f.fam_barrier_all();
    seconds[1] = phase.Seconds();
    phase.Restart();
    Prefix(job);
    f.fam_barrier_all();
    seconds[2] = phase.Seconds();
    phase.Restart();
    Place(job, src, dst);
    src = dst = std::vector<uint64_t>();
    f.fam_barrier_all();
    seconds[3] = phase.Seconds();
    double build_seconds = total.Seconds();
    phase.Restart();
    Check(job);
    f.fam_barrier_all();
    seconds[4] = phase.Seconds();

    uint64_t board[kBlockSums];
    f.fam_get_blocking(board, job.board, 0, sizeof board);
    const Graph &g = job.g;
    bool passed = board[kErrors] == 0 && board[kCountMismatch] == 0 &&
                  board[kDegreeSum] == g.edges && board[kCsrPrint] == board[kGeneratedPrint];
    if (job.pe.first()) {
        uint64_t info[8] = {kInfoMagic, 1,       g.scale, g.edge_factor,
                            g.vertices, g.edges, g.seed,  board[kGeneratedPrint]};
        f.fam_put_blocking(info, job.info, 0, sizeof info);
        const char *names[5] = {"generate", "degrees", "prefix", "place", "check"};
        for (int i = 0; i < 5; ++i) apps::Result("gen_rmat", Fields(job, names[i], seconds[i]));
        uint64_t csr_bytes = (g.vertices + 1 + g.edges) * 8;
        char extra[256];
        std::snprintf(extra, sizeof extra,
                      " csr_bytes=%lu bandwidth=%.1f bandwidth_unit=MB/s peak_rss=%lu",
                      static_cast<unsigned long>(csr_bytes), csr_bytes / build_seconds / 1e6,
                      static_cast<unsigned long>(apps::PeakRss()));
        apps::Result("gen_rmat", Fields(job, "build", build_seconds) + extra);
        char detail[320];
        std::snprintf(detail, sizeof detail,
                      "errors=%lu count_mismatches=%lu degree_sum=%lu edges=%lu "
                      "fingerprint=%016lx csr_fingerprint=%016lx layout=%016lx",
                      static_cast<unsigned long>(board[kErrors]),
                      static_cast<unsigned long>(board[kCountMismatch]),
                      static_cast<unsigned long>(board[kDegreeSum]),
                      static_cast<unsigned long>(g.edges),
                      static_cast<unsigned long>(board[kGeneratedPrint]),
                      static_cast<unsigned long>(board[kCsrPrint]),
                      static_cast<unsigned long>(board[kLayoutPrint]));
        apps::Check("gen_rmat", passed, detail);
    }
    return passed ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Job job;
    job.g.scale = args.Count("scale", 16);
    job.g.edge_factor = args.Count("edge-factor", 16);
    job.g.seed = args.Count("seed", 1);
    job.batch = std::max<uint64_t>(1, args.Count("batch", 8192));
    std::string region_name = args.Text("region", "rmat");
    bool keep = args.Flag("keep");
    if (job.g.scale < 1 || job.g.scale > 32 || job.g.edge_factor < 1 || job.g.edge_factor > 1024 ||
        region_name.empty()) {
        std::fprintf(stderr,
                     "gen_rmat: --scale must be 1..32, --edge-factor 1..1024 and --region a "
                     "name\n%s\n",
                     kUsage);
        return 2;
    }
    job.g.Setup();
    return apps::RunJob("gen_rmat", [&](fam &f, const apps::Pe &pe) {
        job.f = &f;
        job.pe = pe;
        const Graph &g = job.g;
        uint64_t board_bytes = (kBlockSums + job.pe.count) * 8;
        uint64_t items = (g.vertices + 1 + g.edges + job.pe.count * g.vertices) * 8 + board_bytes;
        Fam_Region_Descriptor *region =
            apps::FreshRegion(f, job.pe, region_name.c_str(), items + items / 16 + (4 << 20));
        job.row_ptr = apps::SharedItem(f, job.pe, region, "row_ptr", (g.vertices + 1) * 8);
        job.col_idx = apps::SharedItem(f, job.pe, region, "col_idx", g.edges * 8);
        job.info = apps::SharedItem(f, job.pe, region, "graph_info", 64);
        job.pe_offsets =
            apps::SharedItem(f, job.pe, region, "pe_offsets", job.pe.count * g.vertices * 8);
        job.board = apps::SharedItem(f, job.pe, region, "board", board_bytes);
        int status = Build(job);
        f.fam_barrier_all();
        if (job.pe.first()) {
            if (keep) {
                f.fam_deallocate(job.pe_offsets);
                f.fam_deallocate(job.board);
                std::printf("gen_rmat: kept region \"%s\" (items row_ptr, col_idx, graph_info)\n",
                            region_name.c_str());
            } else {
                f.fam_destroy_region(region);
            }
        }
        for (Fam_Descriptor *item :
             {job.row_ptr, job.col_idx, job.info, job.pe_offsets, job.board}) {
            delete item;
        }
        delete region;
        return status;
    });
}
