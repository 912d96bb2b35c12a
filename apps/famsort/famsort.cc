// famsort: FAMSort (seed paper 001, section III-E) of the gensort records gen_sort left in FAM,
// under a per-PE DRAM cap. See README.md; the phases are in phase1.cc and phase2.cc, the check
// in check.cc.
//
//   gen_sort --records 1000000 --keep && famsort [--dram-cap 16777216] [--bucket 8192] ...
//   mpirun -np 2 famsort ...        fampool run -n 2 famsort ...
#include "famsort/famsort.h"

#include <fam/fam.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "appkit/app.h"

using namespace openfam;

namespace famsort {

uint64_t AnonRss() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("RssAnon:", 0) == 0) {
            return std::strtoull(line.c_str() + 8, nullptr, 10) << 10;
        }
    }
    return 0;
}

}  // namespace famsort

namespace {

using namespace famsort;

const char *kUsage =
    "famsort [--region gensort] [--output famsort] [--dram-cap BYTES] [--bucket ENTRIES]\n"
    "        [--chunk RECORDS] [--read get|gather] [--run-buffer ENTRIES] [--keep]\n"
    "        [--generate N [--seed S]]\n"
    "  sorts the records gen_sort --keep left in the FAM region --region (items records,\n"
    "  sort_info) with FAMSort under a DRAM cap per PE (default 16 MiB); writes the item\n"
    "  sorted_index (record indices in key order) to the region --output, destroyed at the end\n"
    "  unless --keep. --bucket: entries a trie bucket holds before it bursts (default 8192);\n"
    "  --chunk: records per read (default 8192); --read gather reads only each record's key\n"
    "  and index (strided gather) instead of whole records; --run-buffer: entries per run\n"
    "  buffer in a merge at most (default: the budget shared among the runs); --generate N:\n"
    "  first write N records of seed S (default 1) as gen_sort does, into --region (default\n"
    "  then famsort_input), which is destroyed at the end unless --keep";

std::string Mb(uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", bytes / 1048576.0);
    return text;
}

struct Outcome {
    double phase1 = 0, phase2 = 0;
    uint64_t spills = 0, tasks = 0;
};

// Reads sort_info and checks that it describes gen_sort's layout; returns N.
uint64_t OpenInput(Job &job, const std::string &region) {
    Fam_Descriptor *info = job.f->fam_lookup("sort_info", region.c_str());
    uint64_t words[8];
    job.f->fam_get_blocking(words, info, 0, sizeof words);
    delete info;
    if (words[0] != kInfoMagic || words[3] != kRecordBytes || words[4] != kKeyBytes ||
        words[2] == 0) {
        throw std::runtime_error("region \"" + region +
                                 "\": sort_info does not describe gen_sort records");
    }
    job.input = job.f->fam_lookup("records", region.c_str());
    if (job.input->get_size() < words[2] * kRecordBytes) {
        throw std::runtime_error("region \"" + region + "\": records is shorter than N");
    }
    job.key_print = words[6];
    return words[2];
}

Outcome Sort(Job &job, Fam_Region_Descriptor *region) {
    fam &f = *job.f;
    Outcome o;
    job.anon_base = AnonRss();
    f.fam_barrier_all();
    apps::Timer timer;
    SpillBlock(job);
    f.fam_barrier_all();
    o.phase1 = timer.Seconds();
    timer.Restart();
    uint64_t pieces = std::max<uint64_t>(1, f.fam_fetch_uint64(job.board, kPieces * 8));
    job.tasks = apps::SharedItem(f, job.pe, region, "tasks", pieces * sizeof(TaskRecord));
    job.sources = apps::SharedItem(f, job.pe, region, "sources", pieces * sizeof(Source));
    if (job.pe.first()) BuildTasks(job);
    f.fam_barrier_all();
    o.tasks = f.fam_fetch_uint64(job.board, kTaskCount * 8);
    RunTasks(job, o.tasks);
    f.fam_barrier_all();
    o.phase2 = timer.Seconds();
    o.spills = f.fam_fetch_uint64(job.board, kSpills * 8);
    return o;
}

// PE 0: the board's verdict, and the RESULT and CHECK lines; returns the exit status.
int Report(Job &job, const Outcome &o) {
    uint64_t words = kPeWords + kPeWordCount * job.pe.count;
    std::vector<uint64_t> board(words);
    job.f->fam_get_blocking(board.data(), job.board, 0, words * 8);
    uint64_t peak = 0, accounted = 0, anon = 0, base = 0, seams = 0;
    const uint64_t *last = nullptr;
    for (uint64_t p = 0; p < job.pe.count; ++p) {
        const uint64_t *pe = board.data() + kPeWords + kPeWordCount * p;
        peak = std::max(peak, pe[kPePeakRss]);
        accounted = std::max(accounted, pe[kPeAccounted]);
        anon = std::max(anon, pe[kPeAnon]);
        base = std::max(base, pe[kPeAnonBase]);
        if (pe[kPeHasOutput] == 0) continue;
        if (last != nullptr && std::memcmp(last, pe + kPeFirst, kEntryBytes) >= 0) ++seams;
        last = pe + kPeLast;
    }
    double seconds = o.phase1 + o.phase2;
    char text[640];
    std::snprintf(
        text, sizeof text,
        "model=%s pes=%lu records=%lu dram_cap_mb=%s peak_rss_mb=%s accounted_mb=%s "
        "anon_rss_mb=%s anon_base_mb=%s phase1_seconds=%.4f phase2_seconds=%.4f seconds=%.4f "
        "rate=%.4g unit=records/s spills=%lu tasks=%lu bucket=%lu chunk=%lu read=%s",
        apps::ModelOf(*job.f).c_str(), static_cast<unsigned long>(job.pe.count),
        static_cast<unsigned long>(job.records), Mb(job.budget->cap()).c_str(), Mb(peak).c_str(),
        Mb(accounted).c_str(), Mb(anon).c_str(), Mb(base).c_str(), o.phase1, o.phase2, seconds,
        seconds > 0 ? job.records / seconds : 0.0, static_cast<unsigned long>(o.spills),
        static_cast<unsigned long>(o.tasks), static_cast<unsigned long>(job.opt.bucket),
        static_cast<unsigned long>(job.opt.chunk), job.opt.gather ? "gather" : "get");
    apps::Result("famsort", text);
    bool passed = board[kErrors] == 0 && seams == 0 && board[kChecked] == job.records &&
                  board[kIndexSum] == 0 && board[kIndexXor] == 0 &&
                  board[kKeyPrint] == job.key_print;
    std::snprintf(text, sizeof text,
                  "checked=%lu errors=%lu seams=%lu permutation=%s key_fingerprint=%016lx "
                  "expected=%016lx",
                  static_cast<unsigned long>(board[kChecked]),
                  static_cast<unsigned long>(board[kErrors]), static_cast<unsigned long>(seams),
                  board[kIndexSum] == 0 && board[kIndexXor] == 0 ? "yes" : "no",
                  static_cast<unsigned long>(board[kKeyPrint]),
                  static_cast<unsigned long>(job.key_print));
    return apps::Check("famsort", passed, text);
}

// Every PE: its memory figures to the board.
void PostMemory(Job &job) {
    job.SampleAnon();
    uint64_t figures[3] = {apps::PeakRss(), job.budget->peak(), job.anon_peak};
    job.f->fam_put_blocking(&job.anon_base, job.board, job.PeWord(job.pe.rank, kPeAnonBase), 8);
    job.f->fam_put_blocking(figures, job.board, job.PeWord(job.pe.rank, kPePeakRss),
                            sizeof figures);
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Options opt;
    uint64_t generate = args.Count("generate", 0), seed = args.Count("seed", 1);
    opt.region = args.Text("region", generate > 0 ? "famsort_input" : "gensort");
    std::string output = args.Text("output", "famsort");
    opt.dram_cap = args.Count("dram-cap", 16 << 20);
    opt.bucket = args.Count("bucket", 8192);
    opt.chunk = args.Count("chunk", 8192);
    std::string read = args.Text("read", "get");
    opt.gather = read == "gather";
    opt.run_buffer = args.Count("run-buffer", 0);
    opt.keep = args.Flag("keep");
    if (opt.bucket < 16 || opt.bucket > (uint64_t{1} << 30) || opt.chunk == 0 ||
        opt.chunk > (uint64_t{1} << 24) || (read != "get" && !opt.gather) || output.empty() ||
        output == opt.region || generate > (uint64_t{1} << 40)) {
        std::fprintf(stderr,
                     "famsort: --bucket must be 16..2^30, --chunk 1..2^24, --read get or "
                     "gather, --output a region other than --region\n%s\n",
                     kUsage);
        return 2;
    }
    Job job;
    Budget budget(opt.dram_cap);
    job.opt = opt;
    job.budget = &budget;
    return apps::RunJob("famsort", [&](fam &f, const apps::Pe &pe) {
        Fam_Region_Descriptor *region = nullptr, *input_region = nullptr;
        job.f = &f;
        job.pe = pe;
        if (generate > 0) {
            uint64_t bytes = generate * kRecordBytes;
            input_region =
                apps::FreshRegion(f, job.pe, opt.region.c_str(), bytes + bytes / 16 + (4 << 20));
            GenerateInput(f, job.pe, input_region, generate, seed, opt.chunk);
        }
        job.records = OpenInput(job, opt.region);
        uint64_t n = job.records, pes = job.pe.count;
        uint64_t board_bytes = (kPeWords + kPeWordCount * pes) * 8;
        // Tasks and sources are at most one per spilled bucket, at most one per record; the
        // heaps are sparse, so room that is not written costs nothing.
        uint64_t size =
            n * (sizeof(Entry) + sizeof(DirEntry) + 8 + sizeof(TaskRecord) + sizeof(Source)) +
            pes * kMaxSpills * sizeof(SpillRecord) + board_bytes;
        region = apps::FreshRegion(f, job.pe, output.c_str(), size + size / 8 + (16 << 20));
        job.runs = apps::SharedItem(f, job.pe, region, "runs", n * sizeof(Entry));
        job.directory = apps::SharedItem(f, job.pe, region, "directory", n * sizeof(DirEntry));
        job.spill_table = apps::SharedItem(f, job.pe, region, "spill_table",
                                           pes * kMaxSpills * sizeof(SpillRecord));
        job.board = apps::SharedItem(f, job.pe, region, "board", board_bytes);
        job.sorted_index = apps::SharedItem(f, job.pe, region, "sorted_index", n * 8);
        Outcome outcome = Sort(job, region);
        CheckBlock(job);
        PostMemory(job);
        f.fam_barrier_all();
        int status = job.pe.first() ? Report(job, outcome) : 0;
        f.fam_barrier_all();
        if (job.pe.first()) {
            if (opt.keep) {
                std::printf(
                    "famsort: kept region \"%s\" (sorted_index, tasks, sources, runs, "
                    "directory)%s\n",
                    output.c_str(), input_region ? " and the generated input" : "");
            } else {
                f.fam_destroy_region(region);
                // The input only when this run generated it.
                if (input_region != nullptr) f.fam_destroy_region(input_region);
            }
        }
        for (Fam_Descriptor *d : {job.input, job.runs, job.directory, job.spill_table, job.tasks,
                                  job.sources, job.sorted_index, job.board}) {
            delete d;
        }
        delete region;
        delete input_region;
        return status;
    });
}
