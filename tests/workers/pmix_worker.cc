// pmix_worker: one PE of the runtime tests (tests/pmix_test.cc), launched by mpirun (PMIx) or by
// a PMI2 process manager (tests/support/pmi2_launch.py, as srun --mpi=pmi2).
//
//   pmix_worker ok       every PE checks PE_ID, PE_COUNT and RUNTIME, writes its slice of a
//                        shared item (through a descriptor rebuilt from a Fam_Global_Descriptor
//                        that PE 0 publishes in FAM), adds 1 to a shared counter; then every PE
//                        checks all slices and PE 0 checks the counter and prints
//                        "pmix_worker: OK <n> PEs".
//   pmix_worker abort    PE 1 calls fam_abort(3); the others wait (at most 60 s) to be stopped.
//   pmix_worker single   run without a launcher: RUNTIME is NONE, one PE, barrier returns.
//   pmix_worker abort-alone  a job of one calls fam_abort(3); it must end with status 3.
//   pmix_worker burst R  a job whose PEs start at once (RunBurst): each allocates, writes and
//                        reads an item of its own in region R and counts itself; PE 0 checks
//                        the count, prints "pmix_worker: OK <n> PEs" and destroys R.
//
// Exit status: 0 when every check of this PE passed, 1 when one failed, 2 when a call threw.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

constexpr uint64_t kSliceSize = 64 * 1024;
constexpr const char *kRegion = "pmix_region";

int pe_id = -1;

#define CHECK(condition)                                                                          \
    do {                                                                                          \
        if (!(condition)) {                                                                       \
            fprintf(stderr, "pmix_worker: PE %d: check failed at line %d: %s\n", pe_id, __LINE__, \
                    #condition);                                                                  \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

uint8_t SliceByte(int pe, uint64_t i) {
    return static_cast<uint8_t>((i * 131 + static_cast<uint64_t>(pe) * 71 + (i >> 8)) & 0xFF);
}

// Reads an int option and frees the copy the library made.
int IntOption(fam &f, const char *name) {
    const int *value = static_cast<const int *>(f.fam_get_option(name));
    int v = value ? *value : -1;
    free(const_cast<int *>(value));
    return v;
}

std::string StringOption(fam &f, const char *name) {
    const char *value = static_cast<const char *>(f.fam_get_option(name));
    std::string s = value ? value : "(null)";
    free(const_cast<char *>(value));
    return s;
}

int RunOk(fam &f, int pe_count) {
    const uint64_t total = kSliceSize * pe_count;
    if (pe_id == 0) {
        std::unique_ptr<Fam_Region_Descriptor> region(
            f.fam_create_region(kRegion, 16 << 20, 0700, nullptr));
        std::unique_ptr<Fam_Descriptor> data(f.fam_allocate("data", total, 0600, region.get()));
        std::unique_ptr<Fam_Descriptor> counter(f.fam_allocate("counter", 64, 0600, region.get()));
        // Publish the item's global descriptor, two integers, in a well-known item.
        std::unique_ptr<Fam_Descriptor> gd_item(f.fam_allocate("gd", 16, 0600, region.get()));
        Fam_Global_Descriptor gd = data->get_global_descriptor();
        uint64_t words[2] = {gd.regionId, gd.offset};
        f.fam_put_blocking(words, gd_item.get(), 0, sizeof words);
    }
    f.fam_barrier_all();

    // Every PE: the data item by name and by the published global descriptor.
    std::unique_ptr<Fam_Descriptor> gd_item(f.fam_lookup("gd", kRegion));
    uint64_t words[2] = {0, 0};
    f.fam_get_blocking(words, gd_item.get(), 0, sizeof words);
    Fam_Global_Descriptor gd{words[0], words[1]};
    std::unique_ptr<Fam_Descriptor> by_name(f.fam_lookup("data", kRegion));
    CHECK(by_name->get_size() == total);
    Fam_Global_Descriptor named_gd = by_name->get_global_descriptor();
    CHECK(named_gd.regionId == gd.regionId && named_gd.offset == gd.offset);
    std::unique_ptr<Fam_Descriptor> by_gd(new Fam_Descriptor(gd));

    std::vector<uint8_t> slice(kSliceSize);
    for (uint64_t i = 0; i < kSliceSize; i++) slice[i] = SliceByte(pe_id, i);
    // First half through the rebuilt descriptor, second half through the looked-up one.
    const uint64_t half = kSliceSize / 2;
    const uint64_t base = kSliceSize * pe_id;
    f.fam_put_blocking(slice.data(), by_gd.get(), base, half);
    f.fam_put_blocking(slice.data() + half, by_name.get(), base + half, kSliceSize - half);
    CHECK(by_gd->get_size() == total);

    std::unique_ptr<Fam_Descriptor> counter(f.fam_lookup("counter", kRegion));
    uint64_t before = f.fam_fetch_add(counter.get(), 0, uint64_t{1});
    CHECK(before < static_cast<uint64_t>(pe_count));
    f.fam_barrier_all();

    // Every PE checks every slice, read through the rebuilt descriptor.
    std::vector<uint8_t> all(total);
    f.fam_get_blocking(all.data(), by_gd.get(), 0, total);
    for (int pe = 0; pe < pe_count; pe++) {
        for (uint64_t i = 0; i < kSliceSize; i++) {
            if (all[kSliceSize * pe + i] != SliceByte(pe, i)) {
                fprintf(stderr, "pmix_worker: PE %d: slice of PE %d wrong at byte %" PRIu64 "\n",
                        pe_id, pe, i);
                return 1;
            }
        }
    }
    if (pe_id == 0) {
        uint64_t count = f.fam_fetch_uint64(counter.get(), 0);
        if (count != static_cast<uint64_t>(pe_count)) {
            fprintf(stderr, "pmix_worker: PE 0: counter is %" PRIu64 ", expected %d\n", count,
                    pe_count);
            return 1;
        }
        printf("pmix_worker: OK %d PEs\n", pe_count);
        fflush(stdout);
    }
    f.fam_barrier_all();
    return 0;
}

int RunAbort(fam &f) {
    f.fam_barrier_all();
    if (pe_id == 1) {
        f.fam_abort(3);
        printf("pmix_worker: PE 1: fam_abort returned\n");
        fflush(stdout);
        return 1;
    }
    // fam_abort must stop this PE long before this loop ends.
    for (int i = 0; i < 600; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    printf("pmix_worker: PE %d survived fam_abort\n", pe_id);
    fflush(stdout);
    return 0;
}

// A job whose PEs all start at once: PE 0 creates region `name`, every PE allocates an item of
// its own, writes and reads it back and adds 1 to a shared counter; PE 0 checks the count,
// prints "pmix_worker: OK <n> PEs" and destroys the region, so that the next job can run.
int RunBurst(fam &f, int pe_count, const std::string &name) {
    if (pe_id == 0) {
        std::unique_ptr<Fam_Region_Descriptor> region(
            f.fam_create_region(name.c_str(), 16 << 20, 0700, nullptr));
        delete f.fam_allocate("counter", 64, 0600, region.get());
    }
    f.fam_barrier_all();
    std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(name.c_str()));
    std::unique_ptr<Fam_Descriptor> mine(f.fam_allocate(64, 0600, region.get()));
    uint64_t written = 1000 + pe_id, read = 0;
    f.fam_put_blocking(&written, mine.get(), 0, sizeof written);
    f.fam_get_blocking(&read, mine.get(), 0, sizeof read);
    CHECK(read == written);
    std::unique_ptr<Fam_Descriptor> counter(f.fam_lookup("counter", name.c_str()));
    f.fam_add(counter.get(), 0, uint64_t{1});
    f.fam_quiet();
    f.fam_barrier_all();
    if (pe_id == 0) {
        uint64_t count = f.fam_fetch_uint64(counter.get(), 0);
        CHECK(count == static_cast<uint64_t>(pe_count));
        printf("pmix_worker: OK %d PEs\n", pe_count);
        fflush(stdout);
        mine.reset();
        counter.reset();
        f.fam_destroy_region(region.get());
    }
    return 0;
}

// A job of one calls fam_abort(3): the process must end with status 3.
int RunAbortAlone(fam &f) {
    f.fam_abort(3);
    printf("pmix_worker: fam_abort returned\n");
    return 1;
}

int RunSingle(fam &f) {
    f.fam_barrier_all();  // one PE: returns at once
    std::unique_ptr<Fam_Region_Descriptor> region(
        f.fam_create_region(kRegion, 1 << 20, 0700, nullptr));
    std::unique_ptr<Fam_Descriptor> item(f.fam_allocate("data", 64, 0600, region.get()));
    CHECK(f.fam_fetch_add(item.get(), 0, uint64_t{1}) == 0);
    printf("pmix_worker: OK 1 PE\n");
    fflush(stdout);
    return 0;
}

int Run(const std::string &mode, const std::string &region) {
    fam f;
    f.fam_initialize("default", nullptr);
    pe_id = IntOption(f, "PE_ID");
    int pe_count = IntOption(f, "PE_COUNT");
    std::string runtime = StringOption(f, "RUNTIME");
    // Launched by mpirun (PMIx) or by a PMI2 process manager (srun --mpi=pmi2, pmi2_launch).
    const char *pmix_rank = getenv("PMIX_RANK");
    const char *pmi2_rank = getenv("PMI_FD") ? getenv("PMI_RANK") : nullptr;
    int rc = 0;
    if (mode == "single") {
        CHECK(pmix_rank == nullptr && pmi2_rank == nullptr);
        CHECK(runtime == "NONE");
        CHECK(pe_id == 0);
        CHECK(pe_count == 1);
        rc = RunSingle(f);
    } else if (mode == "abort-alone") {
        CHECK(pe_count == 1);
        rc = RunAbortAlone(f);
    } else {
        CHECK(pmix_rank != nullptr || pmi2_rank != nullptr);
        CHECK(runtime == (pmix_rank ? "PMIX" : "PMI2"));
        CHECK(pe_id == atoi(pmix_rank ? pmix_rank : pmi2_rank));
        const char *size = getenv(pmix_rank ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE");
        CHECK(size == nullptr || pe_count == atoi(size));
        CHECK(pe_count >= 2);
        rc = mode == "ok"      ? RunOk(f, pe_count)
             : mode == "burst" ? RunBurst(f, pe_count, region)
                               : RunAbort(f);
    }
    f.fam_finalize("default");
    return rc;
}

}  // namespace

int main(int argc, char **argv) {
    std::string mode = argc > 1 ? argv[1] : "ok";
    if (mode != "ok" && mode != "abort" && mode != "single" && mode != "abort-alone" &&
        !(mode == "burst" && argc > 2)) {
        fprintf(stderr, "usage: pmix_worker ok|abort|single|abort-alone|burst REGION\n");
        return 2;
    }
    try {
        return Run(mode, argc > 2 ? argv[2] : "");
    } catch (const Fam_Exception &e) {
        fprintf(stderr, "pmix_worker: PE %d: Fam_Exception %d: %s\n", pe_id, e.fam_error(),
                e.what());
    } catch (const std::exception &e) {
        fprintf(stderr, "pmix_worker: PE %d: exception: %s\n", pe_id, e.what());
    }
    return 2;
}
