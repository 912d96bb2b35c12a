// workflow: the HPC workflow of seed 002 (ingest, analysis, in-memory store, archive) as three
// separate jobs that share nothing but FAM: no file passes between them, only region and item
// names.
//
//   --stage ingest    writes N sensor readings (doubles, a function of --seed) into the item
//                     "readings" of a PERSISTENT region, and a "manifest" saying what it wrote.
//   --stage analyse   a later job finds region and items by name, computes count, sum, min,
//                     max, mean and a histogram in parallel over its PEs into the item "stats",
//                     and backs "readings" up to the archive ("workflow-<region>").
//   --stage restore   a third job restores the backup into a new item of the region
//                     "<region>-restore", recomputes the statistics from that copy and checks
//                     them against the stored ones and against the series regenerated from the
//                     seed (every value compared bit for bit as well).
//   --stage clean     deletes the backup and destroys both regions.
//   --stage all       the four in one process, for convenience only.
//
// Each stage prints RESULT lines (timing, bandwidth) and one CHECK line, and exits 0 only when
// its check passed. README.md shows the three launches and the layout of the items.
#include <fam/fam.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "appkit/app.h"
#include "workflow/stats.h"

using namespace openfam;

namespace {

const char *kUsage =
    "workflow --stage ingest|analyse|restore|clean|all [--region NAME] [--values N] [--seed S]\n"
    "         [--bins B]\n"
    "  ingest N sensor readings (default 1048576, seed 1) into the persistent FAM region NAME\n"
    "  (default \"workflow\"); analyse them in a later job (B histogram bins, default 32)\n"
    "  and back them up; restore the backup in a third job and check it; clean up";

// "WFMANIF1" read as a little-endian word: the first word of the manifest.
constexpr uint64_t kManifestMagic = 0x3146494e414d4657ull;
constexpr uint64_t kMiB = 1 << 20;

// Words of the "manifest" item.
enum Manifest : uint64_t {
    kMagic = 0,
    kVersion,
    kValues,
    kSeed,
    kIngestPes,
    kIngestTime,
    kAnalysed,
    kBins,
    kWords
};

struct Job {
    fam *f = nullptr;
    apps::Pe pe;
    std::string region, restore_region, backup;
    uint64_t values = 1 << 20, seed = 1, bins = 32;
};

// A problem the user can fix (a stage run out of order): every PE meets it alike.
struct StageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

Fam_Region_Descriptor *FindRegion(Job &job, const std::string &name, const char *hint) {
    try {
        return job.f->fam_lookup_region(name.c_str());
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
        throw StageError("region \"" + name + "\" not found: " + hint);
    }
}

Fam_Descriptor *FindItem(Job &job, const std::string &region, const char *name, const char *hint) {
    try {
        return job.f->fam_lookup(name, region.c_str());
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
        throw StageError(std::string("item \"") + name + "\" of region \"" + region +
                         "\" not found: " + hint);
    }
}

// The item `name` of `region`, allocated by PE 0 unless an earlier job left it there.
Fam_Descriptor *OpenOrAllocate(Job &job, Fam_Region_Descriptor *region, const char *name,
                               uint64_t size) {
    Fam_Descriptor *item = nullptr;
    if (job.pe.first()) {
        try {
            item = job.f->fam_lookup(name, region->get_name());
        } catch (const Fam_Exception &e) {
            if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
            item = job.f->fam_allocate(name, size, 0600, region);
        }
    }
    job.f->fam_barrier_all();
    if (!job.pe.first()) item = job.f->fam_lookup(name, region->get_name());
    return item;
}

// The sum over the PEs of `value`, through word 0 of `board` (which must hold 0, and holds 0
// again afterwards). Collective.
uint64_t SumOverPes(Job &job, Fam_Descriptor *board, uint64_t value) {
    fam &f = *job.f;
    f.fam_add(board, 0, value);
    f.fam_quiet();
    f.fam_barrier_all();
    uint64_t total = f.fam_fetch_uint64(board, 0);
    f.fam_barrier_all();
    if (job.pe.first()) f.fam_set(board, 0, uint64_t{0});
    f.fam_quiet();
    f.fam_barrier_all();
    return total;
}

// Reads values from an item in FAM, counting (on the first pass) those that differ from the
// series of `seed`.
struct FamSource {
    fam *f;
    Fam_Descriptor *item;
    uint64_t seed;
    uint64_t mismatches = 0;

    void operator()(uint64_t first, uint64_t count, double *out, int pass) {
        f->fam_get_blocking(out, item, first * 8, count * 8);
        if (pass != 1) return;
        for (uint64_t k = 0; k < count; ++k) {
            double want = workflow::Reading(seed, first + k);
            mismatches += std::memcmp(&want, out + k, 8) != 0;
        }
    }
};

std::string Common(const Job &job, const char *stage) {
    return std::string("stage=") + stage + " model=" + apps::ModelOf(*job.f) +
           " pes=" + std::to_string(job.pe.count) + " region=" + job.region +
           " values=" + std::to_string(job.values);
}

std::string Timing(uint64_t bytes, double seconds) {
    char text[160];
    std::snprintf(text, sizeof text,
                  " bytes=%lu seconds=%.4f rate=%.4g unit=values/s bandwidth=%.1f "
                  "bandwidth_unit=MB/s",
                  static_cast<unsigned long>(bytes), seconds,
                  seconds > 0 ? bytes / 8 / seconds : 0.0,
                  seconds > 0 ? bytes / seconds / 1e6 : 0.0);
    return text;
}

// The manifest an ingest job wrote; the job's values and seed become those it names.
void ReadManifest(Job &job, Fam_Descriptor *manifest) {
    uint64_t words[kWords];
    job.f->fam_get_blocking(words, manifest, 0, sizeof words);
    if (words[kMagic] != kManifestMagic) {
        throw StageError("the manifest of region \"" + job.region +
                         "\" is incomplete: the ingest job did not finish; run it again");
    }
    job.values = words[kValues];
    job.seed = words[kSeed];
}

int Ingest(Job &job) {
    fam &f = *job.f;
    uint64_t bytes = job.values * 8;
    Fam_Region_Attributes attributes{};
    attributes.memoryType = PERSISTENT;
    Fam_Region_Descriptor *region = apps::FreshRegion(f, job.pe, job.region.c_str(),
                                                      bytes + bytes / 16 + 4 * kMiB, &attributes);
    Fam_Descriptor *readings = apps::SharedItem(f, job.pe, region, "readings", bytes);
    Fam_Descriptor *manifest = apps::SharedItem(f, job.pe, region, "manifest", kWords * 8);
    Fam_Descriptor *board = apps::SharedItem(f, job.pe, region, "board", 64);

    apps::Timer timer;
    uint64_t begin = job.pe.BlockBegin(job.values), end = job.pe.BlockEnd(job.values);
    std::vector<double> chunk(workflow::kChunkValues);
    for (uint64_t first = begin; first < end; first += workflow::kChunkValues) {
        uint64_t n = std::min(workflow::kChunkValues, end - first);
        for (uint64_t k = 0; k < n; ++k) chunk[k] = workflow::Reading(job.seed, first + k);
        f.fam_put_blocking(chunk.data(), readings, first * 8, n * 8);
    }
    f.fam_barrier_all();
    double seconds = timer.Seconds();

    // Check: this PE's block reads back as written, and the region is persistent.
    FamSource source{&f, readings, job.seed};
    for (uint64_t first = begin; first < end; first += workflow::kChunkValues) {
        source(first, std::min(workflow::kChunkValues, end - first), chunk.data(), 1);
    }
    uint64_t mismatches = SumOverPes(job, board, source.mismatches);
    Fam_Stat stat{};
    f.fam_stat(region, &stat);
    bool persistent = stat.region_attributes.memoryType == PERSISTENT;
    int status = mismatches == 0 && persistent ? 0 : 1;
    if (job.pe.first()) {
        // Written last: a manifest with its magic means the ingest finished.
        uint64_t words[kWords] = {kManifestMagic,
                                  1,
                                  job.values,
                                  job.seed,
                                  job.pe.count,
                                  static_cast<uint64_t>(std::time(nullptr)),
                                  0,
                                  0};
        f.fam_put_blocking(words, manifest, 0, sizeof words);
        apps::Result("workflow", Common(job, "ingest") + Timing(bytes, seconds));
        apps::Check("workflow", status == 0,
                    "stage=ingest mismatches=" + std::to_string(mismatches) +
                        " persistent=" + (persistent ? "yes" : "no"));
    }
    f.fam_barrier_all();
    for (Fam_Descriptor *item : {readings, manifest, board}) delete item;
    delete region;
    return status;
}

int Analyse(Job &job) {
    fam &f = *job.f;
    const char *hint = "run --stage ingest first";
    Fam_Region_Descriptor *region = FindRegion(job, job.region, hint);
    Fam_Descriptor *manifest = FindItem(job, job.region, "manifest", hint);
    ReadManifest(job, manifest);
    Fam_Descriptor *readings = FindItem(job, job.region, "readings", hint);
    Fam_Descriptor *board = FindItem(job, job.region, "board", hint);
    Fam_Descriptor *stats = OpenOrAllocate(job, region, "stats", workflow::kStatsWords * 8);

    apps::Timer timer;
    FamSource source{&f, readings, job.seed};
    workflow::Stats s = workflow::Compute(f, job.pe, stats, job.values, job.bins, std::ref(source));
    double analyse_seconds = timer.Seconds();
    uint64_t mismatches = SumOverPes(job, board, source.mismatches);

    // The archive copy: PE 0 backs the item up while the others wait.
    uint64_t listed = 0;
    double backup_seconds = 0;
    if (job.pe.first()) {
        try {
            f.fam_delete_backup_wait(f.fam_delete_backup(job.backup.c_str()));
            std::printf("workflow: replaced backup \"%s\" of an earlier analysis\n",
                        job.backup.c_str());
        } catch (const Fam_Exception &e) {
            if (e.fam_error() != FAM_BACKUP_NOTFOUND) throw;
        }
        timer.Restart();
        Fam_Backup_Options options{};
        f.fam_backup_wait(f.fam_backup(readings, job.backup.c_str(), &options));
        backup_seconds = timer.Seconds();
        char *listing = f.fam_list_backup(job.backup.c_str());
        listed = std::strstr(listing, job.backup.c_str()) != nullptr;
        std::free(listing);
        uint64_t done[2] = {1, job.bins};
        f.fam_put_blocking(done, manifest, kAnalysed * 8, sizeof done);
    }
    listed = SumOverPes(job, board, listed);

    uint64_t histogram_total = 0;
    for (uint64_t c : s.histogram) histogram_total += c;
    bool passed = mismatches == 0 && s.count == job.values && histogram_total == s.count &&
                  s.min <= s.mean && s.mean <= s.max && listed == 1;
    if (job.pe.first()) {
        uint64_t bytes = job.values * 8;
        apps::Result("workflow", Common(job, "analyse") + Timing(2 * bytes, analyse_seconds) + " " +
                                     workflow::Describe(s));
        apps::Result("workflow", Common(job, "backup") + Timing(bytes, backup_seconds) +
                                     " backup=" + job.backup);
        apps::Check("workflow", passed,
                    "stage=analyse mismatches=" + std::to_string(mismatches) +
                        " histogram_total=" + std::to_string(histogram_total) +
                        " backup_listed=" + (listed == 1 ? "yes" : "no"));
    }
    f.fam_barrier_all();
    for (Fam_Descriptor *item : {manifest, readings, board, stats}) delete item;
    delete region;
    return passed ? 0 : 1;
}

int Restore(Job &job) {
    fam &f = *job.f;
    Fam_Region_Descriptor *region = FindRegion(job, job.region, "run --stage ingest first");
    Fam_Descriptor *manifest = FindItem(job, job.region, "manifest", "run --stage ingest first");
    ReadManifest(job, manifest);
    Fam_Descriptor *stored_item = FindItem(job, job.region, "stats", "run --stage analyse first");
    workflow::Stats stored;
    if (!workflow::Load(f, stored_item, &stored)) {
        throw StageError("the item \"stats\" holds no statistics: run --stage analyse again");
    }
    uint64_t bytes = job.values * 8;
    Fam_Region_Descriptor *copy_region =
        apps::FreshRegion(f, job.pe, job.restore_region.c_str(), bytes + bytes / 16 + 4 * kMiB);
    Fam_Descriptor *board = apps::SharedItem(f, job.pe, copy_region, "board", 64);

    // PE 0 restores into an item the restore allocates; the others look it up.
    apps::Timer timer;
    Fam_Descriptor *copy = nullptr;
    if (job.pe.first()) {
        try {
            f.fam_restore_wait(
                f.fam_restore(job.backup.c_str(), copy_region, "readings", 0600, &copy));
        } catch (const Fam_Exception &e) {
            if (e.fam_error() != FAM_BACKUP_NOTFOUND) throw;
            std::fprintf(stderr, "workflow: backup \"%s\" not found: run --stage analyse first\n",
                         job.backup.c_str());
            f.fam_abort(1);
        }
    }
    f.fam_barrier_all();
    double restore_seconds = timer.Seconds();
    if (!job.pe.first()) copy = f.fam_lookup("readings", job.restore_region.c_str());

    Fam_Descriptor *restored_item =
        apps::SharedItem(f, job.pe, copy_region, "stats", workflow::kStatsWords * 8);
    Fam_Descriptor *expected_item =
        apps::SharedItem(f, job.pe, copy_region, "expected", workflow::kStatsWords * 8);
    timer.Restart();
    FamSource source{&f, copy, job.seed};
    workflow::Stats restored =
        workflow::Compute(f, job.pe, restored_item, job.values, stored.bins, std::ref(source));
    double analyse_seconds = timer.Seconds();
    uint64_t seed = job.seed;
    workflow::Stats expected =
        workflow::Compute(f, job.pe, expected_item, job.values, stored.bins,
                          [seed](uint64_t first, uint64_t count, double *out, int) {
                              for (uint64_t k = 0; k < count; ++k)
                                  out[k] = workflow::Reading(seed, first + k);
                          });
    uint64_t mismatches = SumOverPes(job, board, source.mismatches);

    std::string against_stored = workflow::Differences(stored, restored);
    std::string against_seed = workflow::Differences(expected, restored);
    bool passed = mismatches == 0 && copy->get_size() >= bytes && against_stored.empty() &&
                  against_seed.empty() && restored.count == job.values;
    if (job.pe.first()) {
        apps::Result("workflow", Common(job, "restore") + Timing(bytes, restore_seconds) +
                                     " backup=" + job.backup + " into=" + job.restore_region);
        apps::Result("workflow", Common(job, "reanalyse") + Timing(2 * bytes, analyse_seconds) +
                                     " " + workflow::Describe(restored));
        apps::Check(
            "workflow", passed,
            "stage=restore mismatches=" + std::to_string(mismatches) +
                " stored_vs_restored=" + (against_stored.empty() ? "same" : against_stored) +
                " seed_vs_restored=" + (against_seed.empty() ? "same" : against_seed) +
                " analysed_by_pes=" + std::to_string(stored.pes));
    }
    f.fam_barrier_all();
    for (Fam_Descriptor *item :
         {manifest, stored_item, board, copy, restored_item, expected_item}) {
        delete item;
    }
    delete copy_region;
    delete region;
    return passed ? 0 : 1;
}

// "destroyed" or "absent".
std::string DestroyRegion(Job &job, const std::string &name) {
    try {
        Fam_Region_Descriptor *region = job.f->fam_lookup_region(name.c_str());
        job.f->fam_destroy_region(region);
        delete region;
        return "destroyed";
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
        return "absent";
    }
}

bool RegionGone(Job &job, const std::string &name) {
    try {
        delete job.f->fam_lookup_region(name.c_str());
        return false;
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
        return true;
    }
}

int Clean(Job &job) {
    fam &f = *job.f;
    apps::Timer timer;
    std::string backup = "absent", data = "absent", copy = "absent";
    if (job.pe.first()) {
        try {
            f.fam_delete_backup_wait(f.fam_delete_backup(job.backup.c_str()));
            backup = "deleted";
        } catch (const Fam_Exception &e) {
            if (e.fam_error() != FAM_BACKUP_NOTFOUND) throw;
        }
        data = DestroyRegion(job, job.region);
        copy = DestroyRegion(job, job.restore_region);
    }
    f.fam_barrier_all();
    double seconds = timer.Seconds();
    // Every PE sees the names released.
    bool backup_gone = false;
    try {
        std::free(f.fam_list_backup(job.backup.c_str()));
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_BACKUP_NOTFOUND) throw;
        backup_gone = true;
    }
    bool passed = backup_gone && RegionGone(job, job.region) && RegionGone(job, job.restore_region);
    if (job.pe.first()) {
        char timing[64];
        std::snprintf(timing, sizeof timing, " seconds=%.4f", seconds);
        apps::Result("workflow", std::string("stage=clean model=") + apps::ModelOf(f) +
                                     " pes=" + std::to_string(job.pe.count) + timing);
        apps::Check("workflow", passed,
                    "stage=clean backup=" + backup + " region=" + data + " restore_region=" + copy);
    }
    f.fam_barrier_all();
    return passed ? 0 : 1;
}

int RunStage(Job &job, const std::string &stage) {
    if (stage == "ingest") return Ingest(job);
    if (stage == "analyse") return Analyse(job);
    if (stage == "restore") return Restore(job);
    if (stage == "clean") return Clean(job);
    // "all": the three jobs in one process, then the clean-up whatever happened.
    int status = 0;
    for (const char *step : {"ingest", "analyse", "restore"}) {
        status = RunStage(job, step);
        if (status != 0) break;
    }
    return Clean(job) | status;
}

}  // namespace

int main(int argc, char **argv) {
    apps::Args args(argc, argv, kUsage);
    Job job;
    std::string stage = args.Text("stage", "");
    job.region = args.Text("region", "workflow");
    job.values = args.Count("values", job.values);
    job.seed = args.Count("seed", job.seed);
    job.bins = args.Count("bins", job.bins);
    bool known = stage == "ingest" || stage == "analyse" || stage == "restore" ||
                 stage == "clean" || stage == "all";
    if (!known || job.region.empty() || job.values == 0 || job.values > (uint64_t{1} << 37) ||
        job.bins == 0 || job.bins > workflow::kMaxBins) {
        std::fprintf(stderr,
                     "workflow: --stage is required; --values must be 1..2^37, --bins 1..%lu\n%s\n",
                     static_cast<unsigned long>(workflow::kMaxBins), kUsage);
        return 2;
    }
    job.restore_region = job.region + "-restore";
    job.backup = "workflow-" + job.region;
    return apps::RunJob("workflow", [&](fam &f, const apps::Pe &pe) {
        job.f = &f;
        job.pe = pe;
        try {
            return RunStage(job, stage);
        } catch (const StageError &e) {
            // Every PE finds the input missing: a clean failure, no abort.
            if (job.pe.first()) {
                apps::Check("workflow", false, "stage=" + stage + " error=missing-input");
            }
            std::fprintf(stderr, "workflow: %s\n", e.what());
            return 1;
        }
    });
}
