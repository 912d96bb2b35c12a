// openfam_style: a program written the way OpenFAM's examples and tests use the API, run by
// openfam_compat_test on every model configuration. It relies on what OpenFAM programs rely on:
//
// - the option list from fam_list_options is freed with one free(), option values too;
// - non-blocking calls and non-fetching atomics are issued outside any try block, and their
//   errors (an offset past the end, no permission) come from the next fam_quiet;
// - unnamed items are allocated with the name "";
// - a small region (8 MiB, 96 KiB) takes items up to its free size, whatever the cluster;
// - a descriptor is unusable after fam_close; fam_finalize may be called twice.
//
//   openfam_style NAME   (NAME_pe<PE_ID>: a prefix for its regions, so that runs and PEs do not
//                         collide)
//
// Prints "PASS <step>" for each step and "FAIL <step>: <why>" for a step that went wrong.
// Exit status: 0 when every step passed, 1 otherwise, 2 when fam_initialize threw.
#include <fam/fam.h>
#include <fam/fam_exception.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace openfam;

namespace {

int failures = 0;

void Check(bool ok, const char *step, const std::string &why = "") {
    if (ok) {
        std::printf("PASS %s\n", step);
    } else {
        std::printf("FAIL %s: %s\n", step, why.c_str());
        ++failures;
    }
}

// The Fam_Error a call threw (FAM_NO_ERROR when none) and its message.
struct Outcome {
    int error = FAM_NO_ERROR;
    std::string message;
};

template <typename Body>
Outcome Run(Body body) {
    Outcome outcome;
    try {
        body();
    } catch (Fam_Exception &e) {
        outcome.error = e.fam_error();
        outcome.message = e.fam_error_msg();
    }
    return outcome;
}

bool Names(const Outcome &outcome, int error, const char *call) {
    return outcome.error == error && outcome.message.find(call) != std::string::npos;
}

std::string Describe(const Outcome &outcome) {
    return "error " + std::to_string(outcome.error) + ": " + outcome.message;
}

void Options(fam &f) {
    const char **options = f.fam_list_options();
    int count = 0;
    bool has_runtime = false;
    for (; options[count]; ++count) has_runtime |= std::strcmp(options[count], "RUNTIME") == 0;
    Check(count >= 17 && std::strcmp(options[0], "VERSION") == 0 && has_runtime, "list_options");
    free(options);  // as OpenFAM programs do: one block
    for (const char *name : {"VERSION", "OPENFAM_MODEL", "RUNTIME", "LIBFABRIC_PROVIDER"}) {
        char *value = (char *)f.fam_get_option(const_cast<char *>(name));
        Check(value && *value, "get_option", name);
        free(value);
    }
    int *pe_count = (int *)f.fam_get_option(const_cast<char *>("PE_COUNT"));
    Check(pe_count && *pe_count >= 1, "get_option_pe_count");
    free(pe_count);
}

// An 8 MiB region holds a 4 MiB unnamed item, one of 2 MiB and one of 1 MiB; a 96 KiB region, an
// item of 48 KiB.
void SmallRegions(fam &f, const std::string &prefix) {
    Fam_Region_Descriptor *region =
        f.fam_create_region((prefix + "_small").c_str(), 8 << 20, 0777, nullptr);
    Fam_Descriptor *half = nullptr, *quarters[2] = {};
    Outcome placed = Run([&] {
        half = f.fam_allocate("", 4 << 20, 0777, region);
        quarters[0] = f.fam_allocate("q0", 2 << 20, 0777, region);
        quarters[1] = f.fam_allocate("", 1 << 20, 0777, region);
    });
    Check(placed.error == FAM_NO_ERROR, "small_region_items", Describe(placed));
    if (half) {
        std::vector<uint64_t> out(512 << 10), in(512 << 10);
        for (size_t i = 0; i < out.size(); ++i) out[i] = i * 2654435761u;
        f.fam_put_nonblocking(out.data(), half, 0, out.size() * 8);
        f.fam_quiet();
        f.fam_get_blocking(in.data(), half, 0, in.size() * 8);
        Check(in == out, "unnamed_item_round_trip");
    }
    delete half;
    delete quarters[0];
    delete quarters[1];
    f.fam_destroy_region(region);
    delete region;

    Fam_Region_Descriptor *tiny =
        f.fam_create_region((prefix + "_tiny").c_str(), 96 << 10, 0777, nullptr);
    Fam_Descriptor *item = nullptr;
    Outcome fit = Run([&] { item = f.fam_allocate("", 48 << 10, 0777, tiny); });
    Check(fit.error == FAM_NO_ERROR, "tiny_region_item", Describe(fit));
    delete item;
    f.fam_destroy_region(tiny);
    delete tiny;
}

// Errors of non-blocking calls and non-fetching atomics, issued as OpenFAM programs issue them:
// outside any try block.
void ErrorsAtQuiet(fam &f, const std::string &prefix) {
    Fam_Region_Descriptor *region =
        f.fam_create_region((prefix + "_errors").c_str(), 1 << 20, 0777, nullptr);
    Fam_Descriptor *item = f.fam_allocate("i", 1024, 0777, region);
    char buffer[8192] = {};
    f.fam_put_nonblocking(buffer, item, 2048, 64);  // past the end of the 1 KiB item
    Outcome quiet = Run([&] { f.fam_quiet(); });
    Check(Names(quiet, FAM_ERR_OUTOFRANGE, "fam_put_nonblocking"), "put_nonblocking_at_quiet",
          Describe(quiet));
    f.fam_get_nonblocking(buffer, item, 0, sizeof buffer);  // longer than the item
    quiet = Run([&] { f.fam_quiet(); });
    Check(Names(quiet, FAM_ERR_OUTOFRANGE, "fam_get_nonblocking"), "get_nonblocking_at_quiet",
          Describe(quiet));
    f.fam_add(item, 3, uint64_t{1});  // misaligned
    quiet = Run([&] { f.fam_quiet(); });
    Check(Names(quiet, FAM_ERR_INVALID, "fam_add"), "atomic_at_quiet", Describe(quiet));
    f.fam_change_permissions(region, 0400);
    Fam_Descriptor *read_only = f.fam_lookup("i", (prefix + "_errors").c_str());
    f.fam_scatter_nonblocking(buffer, read_only, 4, 0, 2, 8);
    quiet = Run([&] { f.fam_quiet(); });
    Check(Names(quiet, FAM_ERR_NOPERM, "fam_scatter_nonblocking"), "scatter_at_quiet",
          Describe(quiet));
    quiet = Run([&] { f.fam_quiet(); });
    Check(quiet.error == FAM_NO_ERROR, "quiet_clears_errors", Describe(quiet));
    delete read_only;
    f.fam_change_permissions(region, 0700);

    // A closed descriptor is done with.
    f.fam_close(item);
    Outcome closed = Run([&] { f.fam_put_blocking(buffer, item, 0, 8); });
    Check(Names(closed, FAM_ERR_INVALID, "fam_close"), "put_after_close", Describe(closed));
    delete item;
    f.fam_destroy_region(region);
    delete region;
}

}  // namespace

int main(int argc, char **argv) {
    std::string prefix = argc > 1 ? argv[1] : "openfam_style";
    fam *f = new fam();
    Fam_Options options;
    std::memset(&options, 0, sizeof options);  // every value from configuration
    try {
        f->fam_initialize("default", &options);
    } catch (Fam_Exception &e) {
        std::printf("FAIL initialize: %s\n", e.fam_error_msg());
        return 2;
    }
    int *pe_id = (int *)f->fam_get_option(const_cast<char *>("PE_ID"));
    prefix += "_pe" + std::to_string(*pe_id);  // the PEs of a job keep to regions of their own
    free(pe_id);
    Outcome steps = Run([&] {
        Options(*f);
        SmallRegions(*f, prefix);
        ErrorsAtQuiet(*f, prefix);
    });
    Check(steps.error == FAM_NO_ERROR, "no_unexpected_error", Describe(steps));
    f->fam_finalize("default");
    Outcome again = Run([&] { f->fam_finalize("default"); });
    Check(again.error == FAM_NO_ERROR, "finalize_twice", Describe(again));
    delete f;
    return failures ? 1 : 0;
}
