// lifecycle_test.cc: fam_initialize / fam_finalize, options, fam_barrier_all and fam_abort.
#include <fam/fam.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kRegionSize = 1ull << 20;

// ---------------------------------------------------------------------------------------------
// Initialize and finalize

using LifecycleTest = FamTest;

// Tests that build their own fam objects (and sometimes their own environment first).
class UninitializedTest : public FamTest {
  protected:
    bool AutoInitialize() const override { return false; }
};

TEST_F(UninitializedTest, InitializeThenFinalizeSucceeds) {
    openfam::fam f;
    EXPECT_NO_THROW(f.fam_initialize("default", nullptr));
    EXPECT_NO_THROW(f.fam_finalize("default"));
}

TEST_F(UninitializedTest, InitializeWithEmptyOptionsSucceeds) {
    Fam_Options options = EmptyOptions();
    openfam::fam f;
    ASSERT_NO_THROW(f.fam_initialize("default", &options));
    std::unique_ptr<Fam_Region_Descriptor> region(
        f.fam_create_region("r", kRegionSize, 0777, nullptr));
    EXPECT_EQ(region->get_size(), kRegionSize);
    f.fam_finalize("default");
}

TEST_F(LifecycleTest, InitializedFamCreatesRegions) {
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("r", kRegionSize, 0777, nullptr));
    ASSERT_NE(region, nullptr);
    EXPECT_STREQ(region->get_name(), "r");
}

TEST_F(LifecycleTest, SecondInitializeThrowsInvalidOp) {
    EXPECT_FAM_ERROR(fam()->fam_initialize("default", nullptr), FAM_ERR_INVALIDOP,
                     "fam_initialize");
}

TEST_F(LifecycleTest, InitializeAfterFinalizeOnSameObjectThrowsInvalidOp) {
    fam()->fam_finalize("default");
    EXPECT_FAM_ERROR(fam()->fam_initialize("default", nullptr), FAM_ERR_INVALIDOP,
                     "fam_initialize");
}

TEST_F(LifecycleTest, FinalizeAgainReturns) {
    // OpenFAM programs finalize again in their error and clean-up paths.
    fam()->fam_finalize("default");
    EXPECT_NO_THROW(fam()->fam_finalize("default"));
    EXPECT_NO_THROW(fam()->fam_finalize(nullptr));
    EXPECT_FAM_ERROR(fam()->fam_barrier_all(), FAM_ERR_INVALIDOP, "fam_barrier_all");
}

TEST_F(LifecycleTest, NewObjectAfterFinalizeSeesEarlierRegions) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("kept", kRegionSize);
    ReinitializeFam();
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("kept"));
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->get_size(), kRegionSize);
}

TEST_F(LifecycleTest, FinalizeCompletesOutstandingNonBlockingPuts) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 8ull << 20);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4ull << 20, region.get());
    std::vector<uint8_t> data = Pattern(4ull << 20, 7);
    fam()->fam_put_nonblocking(data.data(), item.get(), 0, data.size());
    FinalizeFam();
    InitializeFam();
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("i", "r"));
    EXPECT_EQ(GetBytes(again.get(), 0, data.size()), data);
}

TEST_F(LifecycleTest, TwoFamObjectsInOneProcessShareRegions) {
    ScopedFam other;
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("shared", kRegionSize);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region.get());
    PutBytes(item.get(), 0, Pattern(4096, 3));
    std::unique_ptr<Fam_Descriptor> seen(other->fam_lookup("i", "shared"));
    std::vector<uint8_t> bytes(4096);
    other->fam_get_blocking(bytes.data(), seen.get(), 0, bytes.size());
    EXPECT_EQ(bytes, Pattern(4096, 3));
}

// ---------------------------------------------------------------------------------------------
// Every group of calls refuses to run before fam_initialize and after fam_finalize.

struct NamedCall {
    const char *label;  // test name suffix
    const char *call;   // what the exception message must name
    std::function<void(openfam::fam *, Fam_Region_Descriptor *, Fam_Descriptor *)> invoke;
};

std::string NamedCallLabel(const ::testing::TestParamInfo<NamedCall> &info) {
    return info.param.label;
}

const std::vector<NamedCall> &EveryGroupOfCalls() {
    using R = Fam_Region_Descriptor *;
    using D = Fam_Descriptor *;
    using F = openfam::fam *;
    static const std::vector<NamedCall> calls = {
        {"CreateRegion", "fam_create_region",
         [](F f, R, D) { delete f->fam_create_region("new", kRegionSize, 0777, nullptr); }},
        {"LookupRegion", "fam_lookup_region", [](F f, R, D) { delete f->fam_lookup_region("r"); }},
        {"DestroyRegion", "fam_destroy_region", [](F f, R r, D) { f->fam_destroy_region(r); }},
        {"ResizeRegion", "fam_resize_region",
         [](F f, R r, D) { f->fam_resize_region(r, 2 * kRegionSize); }},
        {"StatRegion", "fam_stat",
         [](F f, R r, D) {
             Fam_Stat stat;
             f->fam_stat(r, &stat);
         }},
        {"ChangeRegionPermissions", "fam_change_permissions",
         [](F f, R r, D) { f->fam_change_permissions(r, 0700); }},
        {"AllocateNamed", "fam_allocate",
         [](F f, R r, D) { delete f->fam_allocate("new", 64, 0777, r); }},
        {"AllocateUnnamed", "fam_allocate",
         [](F f, R r, D) { delete f->fam_allocate(64, 0777, r); }},
        {"Lookup", "fam_lookup", [](F f, R, D) { delete f->fam_lookup("i", "r"); }},
        {"Deallocate", "fam_deallocate", [](F f, R, D d) { f->fam_deallocate(d); }},
        {"Close", "fam_close", [](F f, R, D d) { f->fam_close(d); }},
        {"StatItem", "fam_stat",
         [](F f, R, D d) {
             Fam_Stat stat;
             f->fam_stat(d, &stat);
         }},
        {"GetBlocking", "fam_get_blocking",
         [](F f, R, D d) {
             char buffer[8];
             f->fam_get_blocking(buffer, d, 0, sizeof(buffer));
         }},
        {"PutBlocking", "fam_put_blocking",
         [](F f, R, D d) {
             char buffer[8] = {1};
             f->fam_put_blocking(buffer, d, 0, sizeof(buffer));
         }},
        {"GetNonBlocking", "fam_get_nonblocking",
         [](F f, R, D d) {
             static char buffer[8];
             f->fam_get_nonblocking(buffer, d, 0, sizeof(buffer));
         }},
        {"PutNonBlocking", "fam_put_nonblocking",
         [](F f, R, D d) {
             static char buffer[8] = {1};
             f->fam_put_nonblocking(buffer, d, 0, sizeof(buffer));
         }},
        {"GatherStrided", "fam_gather_blocking",
         [](F f, R, D d) {
             uint64_t buffer[4];
             f->fam_gather_blocking(buffer, d, 4, 0, 2, sizeof(uint64_t));
         }},
        {"ScatterIndexed", "fam_scatter_blocking",
         [](F f, R, D d) {
             uint64_t buffer[2] = {1, 2};
             uint64_t index[2] = {3, 1};
             f->fam_scatter_blocking(buffer, d, 2, index, sizeof(uint64_t));
         }},
        {"Copy", "fam_copy", [](F f, R, D d) { f->fam_copy_wait(f->fam_copy(d, 0, d, 64, 64)); }},
        {"Backup", "fam_backup",
         [](F f, R, D d) { f->fam_backup_wait(f->fam_backup(d, "b", nullptr)); }},
        {"Restore", "fam_restore",
         [](F f, R, D d) { f->fam_restore_wait(f->fam_restore("b", d)); }},
        {"ListBackup", "fam_list_backup", [](F f, R, D) { free(f->fam_list_backup("*")); }},
        {"DeleteBackup", "fam_delete_backup",
         [](F f, R, D) { f->fam_delete_backup_wait(f->fam_delete_backup("b")); }},
        {"Map", "fam_map", [](F f, R, D d) { f->fam_map(d); }},
        {"SetInt64", "fam_set", [](F f, R, D d) { f->fam_set(d, 0, int64_t{5}); }},
        {"FetchInt64", "fam_fetch_int64", [](F f, R, D d) { f->fam_fetch_int64(d, 0); }},
        {"FetchAddUint64", "fam_fetch_add",
         [](F f, R, D d) { f->fam_fetch_add(d, 0, uint64_t{1}); }},
        {"CompareSwapInt128", "fam_compare_swap",
         [](F f, R, D d) { f->fam_compare_swap(d, 0, int128_t{0}, int128_t{1}); }},
        {"XorUint32", "fam_xor", [](F f, R, D d) { f->fam_xor(d, 0, uint32_t{1}); }},
        {"Fence", "fam_fence", [](F f, R, D) { f->fam_fence(); }},
        {"Quiet", "fam_quiet", [](F f, R, D) { f->fam_quiet(); }},
        {"Progress", "fam_progress", [](F f, R, D) { f->fam_progress(); }},
        {"ContextOpen", "fam_context_open",
         [](F f, R, D) { f->fam_context_close(f->fam_context_open()); }},
        {"BarrierAll", "fam_barrier_all", [](F f, R, D) { f->fam_barrier_all(); }},
        {"ListOptions", "fam_list_options", [](F f, R, D) { f->fam_list_options(); }},
        {"GetOption", "fam_get_option",
         [](F f, R, D) { free(const_cast<void *>(f->fam_get_option("VERSION"))); }},
    };
    return calls;
}

// Every call above, and fam_finalize, which an object that was never initialized refuses (a
// finalized one takes it again: LifecycleTest.FinalizeAgainReturns).
const std::vector<NamedCall> &EveryGroupOfCallsAndFinalize() {
    using F = openfam::fam *;
    using R = Fam_Region_Descriptor *;
    using D = Fam_Descriptor *;
    static const std::vector<NamedCall> calls = [] {
        std::vector<NamedCall> all = EveryGroupOfCalls();
        all.push_back({"Finalize", "fam_finalize", [](F f, R, D) { f->fam_finalize("default"); }});
        return all;
    }();
    return calls;
}

// Descriptors of a live region "r" and item "i", made by the fixture's fam.
class CallOnUnusableFamTest : public FamTest, public ::testing::WithParamInterface<NamedCall> {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", kRegionSize);
        item_ = Allocate("i", 4096, region_.get());
    }
    void TearDown() override {
        item_.reset();
        region_.reset();
        FamTest::TearDown();
    }
    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
};

using CallAfterFinalizeTest = CallOnUnusableFamTest;
using CallBeforeInitializeTest = CallOnUnusableFamTest;

TEST_P(CallAfterFinalizeTest, ThrowsInvalidOp) {
    FinalizeFam();
    const NamedCall &call = GetParam();
    EXPECT_FAM_ERROR(call.invoke(fam(), region_.get(), item_.get()), FAM_ERR_INVALIDOP, call.call);
}

TEST_P(CallBeforeInitializeTest, ThrowsInvalidOp) {
    openfam::fam uninitialized;
    const NamedCall &call = GetParam();
    EXPECT_FAM_ERROR(call.invoke(&uninitialized, region_.get(), item_.get()), FAM_ERR_INVALIDOP,
                     call.call);
}

INSTANTIATE_TEST_SUITE_P(EveryGroup, CallAfterFinalizeTest,
                         ::testing::ValuesIn(EveryGroupOfCalls()), NamedCallLabel);
INSTANTIATE_TEST_SUITE_P(EveryGroup, CallBeforeInitializeTest,
                         ::testing::ValuesIn(EveryGroupOfCallsAndFinalize()), NamedCallLabel);

TEST_F(LifecycleTest, RegionCreatedBeforeFinalizeSurvivesFailedCallsAfterIt) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kRegionSize);
    FinalizeFam();
    EXPECT_FAM_ERROR(fam()->fam_destroy_region(region.get()), FAM_ERR_INVALIDOP,
                     "fam_destroy_region");
    InitializeFam();
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("r"));
    EXPECT_EQ(found->get_size(), kRegionSize);
}

// ---------------------------------------------------------------------------------------------
// fam_list_options and fam_get_option

// The option names up to the NULL terminator (at most 1000, so a missing terminator fails
// instead of running off the end... as long as the memory after the list is readable).
std::vector<std::string> ListedOptions(openfam::fam *f, bool *terminated) {
    const char **list = f->fam_list_options();
    std::vector<std::string> names;
    *terminated = false;
    if (list == nullptr) return names;
    for (int i = 0; i < 1000; ++i) {
        if (list[i] == nullptr) {
            *terminated = true;
            break;
        }
        names.emplace_back(list[i]);
    }
    return names;
}

TEST_F(LifecycleTest, ListOptionsIsNullTerminated) {
    bool terminated = false;
    std::vector<std::string> names = ListedOptions(fam(), &terminated);
    EXPECT_TRUE(terminated);
    EXPECT_GE(names.size(), std::size(kDocumentedOptions));
}

TEST_F(LifecycleTest, ListOptionsContainsEveryDocumentedName) {
    bool terminated = false;
    std::vector<std::string> names = ListedOptions(fam(), &terminated);
    std::set<std::string> listed(names.begin(), names.end());
    for (const char *name : kDocumentedOptions) {
        EXPECT_EQ(listed.count(name), 1u) << "fam_list_options lacks " << name;
    }
}

TEST_F(LifecycleTest, ListOptionsHasNoDuplicates) {
    bool terminated = false;
    std::vector<std::string> names = ListedOptions(fam(), &terminated);
    std::set<std::string> listed(names.begin(), names.end());
    EXPECT_EQ(listed.size(), names.size());
}

bool IsIntOption(const std::string &name) { return name == "PE_COUNT" || name == "PE_ID"; }
bool IsStringOption(const std::string &name) {
    return !IsIntOption(name) && name != "LOC_BUF_ADDR" && name != "LOC_BUF_SIZE";
}

TEST_F(LifecycleTest, GetOptionAnswersEveryListedOption) {
    bool terminated = false;
    for (const std::string &name : ListedOptions(fam(), &terminated)) {
        const void *value = nullptr;
        EXPECT_NO_THROW(value = fam()->fam_get_option(name.c_str())) << name;
        EXPECT_NE(value, nullptr) << name;
        free(const_cast<void *>(value));
    }
}

TEST_F(LifecycleTest, GetOptionReturnsANewCopyEachCall) {
    bool terminated = false;
    for (const std::string &name : ListedOptions(fam(), &terminated)) {
        if (!IsStringOption(name)) continue;
        char *first = static_cast<char *>(const_cast<void *>(fam()->fam_get_option(name.c_str())));
        char *second = static_cast<char *>(const_cast<void *>(fam()->fam_get_option(name.c_str())));
        ASSERT_NE(first, nullptr) << name;
        ASSERT_NE(second, nullptr) << name;
        EXPECT_NE(first, second) << name << ": both calls returned the same pointer";
        std::string original = second;
        // The caller owns its copy: writing into it changes no other copy.
        if (first[0] != '\0') first[0] = first[0] == 'x' ? 'y' : 'x';
        char *third = static_cast<char *>(const_cast<void *>(fam()->fam_get_option(name.c_str())));
        EXPECT_EQ(original, third) << name;
        free(first);
        free(second);
        free(third);
    }
}

TEST_F(LifecycleTest, GetOptionPeIdIsIntZeroUnderRuntimeNone) {
    int *value = static_cast<int *>(const_cast<void *>(fam()->fam_get_option("PE_ID")));
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(*value, 0);
    free(value);
}

TEST_F(LifecycleTest, GetOptionPeCountIsIntOneUnderRuntimeNone) {
    int *value = static_cast<int *>(const_cast<void *>(fam()->fam_get_option("PE_COUNT")));
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(*value, 1);
    free(value);
}

TEST_F(LifecycleTest, GetOptionVersionIsNonEmptyString) {
    char *value = static_cast<char *>(const_cast<void *>(fam()->fam_get_option("VERSION")));
    ASSERT_NE(value, nullptr);
    EXPECT_GT(strlen(value), 0u);
    free(value);
}

// Options whose value without configuration is documented (shared/API.md, docs/semantics.md).
struct DefaultOption {
    const char *name;
    const char *value;
};

class OptionDefaultTest : public FamTest, public ::testing::WithParamInterface<DefaultOption> {};

TEST_P(OptionDefaultTest, ReadsDocumentedDefault) {
    const char *name = GetParam().name;
    std::string expected = GetParam().value;
    // On a cluster, the cluster file (FAMPOOL_CONFIG) names the model and the provider.
    if (cluster() && expected == "shared_memory") expected = "memory_server";
    TestClusterSpec spec;
    if (cluster() && expected == "sockets" && TestClusterSpec::FromEnvironment(&spec)) {
        expected = spec.provider;
    }
    char *value = static_cast<char *>(const_cast<void *>(fam()->fam_get_option(name)));
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(value, expected) << name;
    free(value);
}

INSTANTIATE_TEST_SUITE_P(
    WithoutConfiguration, OptionDefaultTest,
    ::testing::Values(DefaultOption{"RUNTIME", "NONE"},
                      DefaultOption{"OPENFAM_MODEL", "shared_memory"},
                      DefaultOption{"DEFAULT_REGION_NAME", "Default"},
                      DefaultOption{"FAM_THREAD_MODEL", "FAM_THREAD_SERIALIZE"},
                      DefaultOption{"FAM_CONTEXT_MODEL", "FAM_CONTEXT_DEFAULT"},
                      DefaultOption{"FAM_DEFAULT_MEMORY_TYPE", "volatile"},
                      DefaultOption{"LIBFABRIC_PROVIDER", "sockets"},
                      DefaultOption{"CIS_INTERFACE_TYPE", "rpc"}),
    [](const ::testing::TestParamInfo<DefaultOption> &info) {
        return std::string(info.param.name);
    });

TEST_F(LifecycleTest, GetOptionUnknownNameThrowsNotFound) {
    EXPECT_FAM_ERROR(fam()->fam_get_option("NO_SUCH_OPTION"), FAM_ERR_NOTFOUND, "fam_get_option");
}

TEST_F(LifecycleTest, GetOptionNullNameThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_get_option(nullptr), FAM_ERR_NULLPTR, "fam_get_option");
}

// ---------------------------------------------------------------------------------------------
// Fam_Options given to fam_initialize

std::string ReadStringOption(openfam::fam *f, const char *name) {
    char *value = static_cast<char *>(const_cast<void *>(f->fam_get_option(name)));
    std::string text = value ? value : "(null)";
    free(value);
    return text;
}

// The configuration file ($FAMPOOL_CONFIG): a misspelt key is an error naming it, never a
// setting silently not taken; OpenFAM's keys fampool does not need are accepted.
std::string ConfigWith(const std::string &dir, const std::string &extra) {
    std::string text = "openfam_model: shared_memory\n";
    if (const char *current = getenv("FAMPOOL_CONFIG")) {  // a test cluster's file: keep it
        std::ifstream in(current);
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::string path = dir + "/fam_pe_config.yaml";
    std::ofstream(path) << text << extra;
    return path;
}

TEST_F(UninitializedTest, ConfigurationFileWithUnknownKeyFailsNamingKeyAndFile) {
    fampool_test::TempDir dir;
    std::string path = ConfigWith(dir.path(), "FamThreadMode: FAM_THREAD_MULTIPLE\n");
    SetEnv("FAMPOOL_CONFIG", path);
    openfam::fam f;
    CaughtError caught = CatchFamError([&] { f.fam_initialize("default", nullptr); });
    EXPECT_EQ(caught.code, FAM_ERR_INVALID) << caught.message;
    EXPECT_NE(caught.message.find("\"FamThreadMode\""), std::string::npos) << caught.message;
    EXPECT_NE(caught.message.find(path), std::string::npos) << caught.message;
}

TEST_F(UninitializedTest, ConfigurationFileWithOpenFamKeysFampoolDoesNotNeedIsAccepted) {
    fampool_test::TempDir dir;
    SetEnv("FAMPOOL_CONFIG", ConfigWith(dir.path(),
                                        "rpc_framework_type: grpc\n"
                                        "resource_release: enable\n"));
    openfam::fam f;
    EXPECT_NO_THROW(f.fam_initialize("default", nullptr));
    EXPECT_NO_THROW(f.fam_finalize("default"));
}

TEST_F(UninitializedTest, OptionSetInFamOptionsIsReadBack) {
    Fam_Options options = EmptyOptions();
    options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
    ScopedFam f(&options);
    EXPECT_EQ(ReadStringOption(f.get(), "FAM_THREAD_MODEL"), "FAM_THREAD_MULTIPLE");
}

TEST_F(UninitializedTest, NullFieldsBesideASetOneTakeDefaults) {
    Fam_Options options = EmptyOptions();
    options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
    ScopedFam f(&options);
    EXPECT_EQ(ReadStringOption(f.get(), "DEFAULT_REGION_NAME"), "Default");
    EXPECT_EQ(ReadStringOption(f.get(), "RUNTIME"), "NONE");
    EXPECT_EQ(ReadStringOption(f.get(), "FAM_DEFAULT_MEMORY_TYPE"), "volatile");
}

TEST_F(UninitializedTest, DefaultRegionNameOptionNamesTheRegionOfNullAllocations) {
    Fam_Options options = EmptyOptions();
    options.defaultRegionName = const_cast<char *>("Mine");
    ScopedFam f(&options);
    std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("x", 4096, 0600, nullptr));
    std::unique_ptr<Fam_Descriptor> found(f->fam_lookup("x", "Mine"));
    EXPECT_EQ(found->get_size(), 4096u);
    EXPECT_FAM_ERROR(delete f->fam_lookup_region("Default"), FAM_ERR_NOTFOUND, "fam_lookup_region");
}

TEST_F(UninitializedTest, DefaultMemoryTypeOptionPersistentMakesPersistentRegions) {
    Fam_Options options = EmptyOptions();
    options.fam_default_memory_type = const_cast<char *>("persistent");
    ScopedFam f(&options);
    std::unique_ptr<Fam_Region_Descriptor> region(
        f->fam_create_region("r", kRegionSize, 0777, nullptr));
    EXPECT_EQ(region->get_memoryType(), PERSISTENT);
    Fam_Stat stat{};
    f->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.region_attributes.memoryType, PERSISTENT);
}

TEST_F(UninitializedTest, RuntimeNoneGivenExplicitlyIsAccepted) {
    Fam_Options options = EmptyOptions();
    options.runtime = const_cast<char *>("NONE");
    ScopedFam f(&options);
    EXPECT_EQ(ReadStringOption(f.get(), "RUNTIME"), "NONE");
}

TEST_F(UninitializedTest, SharedMemoryModelGivenExplicitlyIsAccepted) {
    Fam_Options options = EmptyOptions();
    options.openFamModel = const_cast<char *>("shared_memory");
    ScopedFam f(&options);
    EXPECT_EQ(ReadStringOption(f.get(), "OPENFAM_MODEL"), "shared_memory");
}

struct BadOption {
    const char *label;
    char *Fam_Options::*field;
};

class BadOptionValueTest : public UninitializedTest,
                           public ::testing::WithParamInterface<BadOption> {};

TEST_P(BadOptionValueTest, InitializeThrowsInvalid) {
    Fam_Options options = EmptyOptions();
    options.*(GetParam().field) = const_cast<char *>("foo");
    openfam::fam f;
    EXPECT_FAM_ERROR(f.fam_initialize("default", &options), FAM_ERR_INVALID, "fam_initialize");
}

INSTANTIATE_TEST_SUITE_P(
    UnknownValue, BadOptionValueTest,
    ::testing::Values(BadOption{"openFamModel", &Fam_Options::openFamModel},
                      BadOption{"runtime", &Fam_Options::runtime},
                      BadOption{"famThreadModel", &Fam_Options::famThreadModel},
                      BadOption{"famContextModel", &Fam_Options::famContextModel},
                      BadOption{"cisInterfaceType", &Fam_Options::cisInterfaceType},
                      BadOption{"fam_default_memory_type", &Fam_Options::fam_default_memory_type}),
    [](const ::testing::TestParamInfo<BadOption> &info) { return std::string(info.param.label); });

TEST_F(UninitializedTest, InterleaveSizeNotPowerOfTwoThrowsNotPwrTwo) {
    SetEnv("FAMPOOL_INTERLEAVE_SIZE", "3");
    openfam::fam f;
    EXPECT_FAM_ERROR(f.fam_initialize("default", nullptr), FAM_ERR_NOT_PWR_TWO, "fam_initialize");
}

TEST_F(UninitializedTest, InterleaveSizePowerOfTwoIsAccepted) {
    SetEnv("FAMPOOL_INTERLEAVE_SIZE", "4096");
    ScopedFam f;
    std::unique_ptr<Fam_Region_Descriptor> region(
        f->fam_create_region("r", kRegionSize, 0777, nullptr));
    std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("i", 3 * 4096, 0600, region.get()));
    std::vector<uint8_t> data = Pattern(3 * 4096, 11), back(3 * 4096);
    f->fam_put_blocking(data.data(), item.get(), 0, data.size());
    f->fam_get_blocking(back.data(), item.get(), 0, back.size());
    EXPECT_EQ(back, data);
}

// ---------------------------------------------------------------------------------------------
// fam_barrier_all and fam_abort with one PE

TEST_F(LifecycleTest, BarrierAllReturnsUnderRuntimeNone) {
    EXPECT_NO_THROW(fam()->fam_barrier_all());
    EXPECT_NO_THROW(fam()->fam_barrier_all());
}

TEST_F(LifecycleTest, AbortEndsTheProcessWithItsStatus) {
    int status = RunInCleanChild(
        []() -> int {
            ScopedFam f;
            f->fam_abort(7);
            return 99;  // fam_abort returned
        },
        30);
    EXPECT_EQ(status, 7);
}

}  // namespace
}  // namespace fampool_test
