// Intent-based placement (docs/intent.md): the mapping of hints and constraints onto memory
// servers (unit tests of meta/intent_placement.h), then every hint, constraint and refusal
// through the API on the embedded model with memory tiers and on a cluster of three kinds.
#include <fam/fam_c.h>

#include <filesystem>
#include <fstream>

#include "cluster_fixtures.h"
#include "common/error.h"
#include "common/memory_kind.h"
#include "meta/intent_placement.h"

namespace fampool_test {
namespace {

using fampool::ApplyIntentAttributes;
using fampool::ChooseByIntent;
using fampool::PlacementCandidate;
using fampool::RegionIntent;

// 0: DRAM, fast, node A, domain a; 1: DRAM, a little slower, node B, domain a; 2: persistent,
// node A, domain b; 3: far, node B, domain b.
std::vector<PlacementCandidate> FourServers() {
    auto server = [](uint64_t id, const char *kind, uint64_t bandwidth, uint64_t latency,
                     const char *host, const char *domain) {
        PlacementCandidate c;
        c.id = id;
        c.profile = fampool::MemoryProfile{kind, bandwidth, latency, 0, host, true};
        c.failure_domain = domain;
        c.free_bytes = id == 3 ? (1ull << 40) : (1ull << 30);
        return c;
    };
    return {server(0, "dram", 10'000'000'000, 100, "A", "a"),
            server(1, "dram", 10'000'000'000, 120, "B", "a"),
            server(2, "persistent", 2'000'000'000, 1000, "A", "b"),
            server(3, "far", 500'000'000, 5000, "B", "b")};
}

std::vector<uint64_t> Choose(RegionIntent intent, std::string *why = nullptr) {
    std::string ignored;
    return ChooseByIntent(intent, "r", FourServers(), why ? why : &ignored).ranked;
}

RegionIntent Hints(uint32_t hints, const char *host = "A") {
    RegionIntent intent;
    intent.hints = hints;
    intent.host = host;
    return intent;
}

int ErrorOf(const std::function<void()> &body, std::string *message) {
    try {
        body();
    } catch (const fampool::Failure &failure) {
        *message = failure.fam_error_msg();
        return failure.fam_error();
    }
    return 0;
}

TEST(IntentMapping, ConstraintsKeepOnlyTheServersTheyName) {
    RegionIntent far;
    far.kind = "far";
    EXPECT_EQ(Choose(far), (std::vector<uint64_t>{3}));
    RegionIntent named;
    named.servers = {1, 2};
    EXPECT_EQ(Choose(named), (std::vector<uint64_t>{1, 2}));
    RegionIntent domain;
    domain.failure_domain = "b";
    EXPECT_EQ(Choose(domain), (std::vector<uint64_t>{2, 3}));
    RegionIntent both = domain;
    both.kind = "persistent";
    std::string why;
    EXPECT_EQ(Choose(both, &why), (std::vector<uint64_t>{2}));
    EXPECT_NE(why.find("kind persistent: 2"), std::string::npos) << why;
}

TEST(IntentMapping, UnmetConstraintsAreRefusedNamingThem) {
    std::string message;
    RegionIntent kind;
    kind.kind = "far";
    auto no_far = FourServers();
    no_far.pop_back();
    EXPECT_EQ(ErrorOf([&] { ChooseByIntent(kind, "r", no_far, &message); }, &message),
              openfam::FAM_ERR_RESOURCE);
    EXPECT_NE(message.find("constraint kind far"), std::string::npos) << message;
    EXPECT_NE(message.find("2 (persistent, domain b)"), std::string::npos) << message;
    RegionIntent named;
    named.servers = {9};
    EXPECT_EQ(ErrorOf([&] { Choose(named); }, &message), openfam::FAM_ERR_RESOURCE);
    EXPECT_NE(message.find("constraint servers 9"), std::string::npos) << message;
    RegionIntent domain;
    domain.failure_domain = "z";
    EXPECT_EQ(ErrorOf([&] { Choose(domain); }, &message), openfam::FAM_ERR_RESOURCE);
    EXPECT_NE(message.find("failure domain \"z\""), std::string::npos) << message;
}

TEST(IntentMapping, UsageHintsNarrowAndRank) {
    // Latency: within 1.25x or 1 us of the lowest (100 ns): 0, 1 and 2 (1 us), lowest first,
    // and one server.
    std::string ignored;
    auto fastest = ChooseByIntent(Hints(FAM_HINT_LATENCY), "r", FourServers(), &ignored);
    EXPECT_EQ(fastest.ranked, (std::vector<uint64_t>{0, 1, 2}));
    EXPECT_EQ(fastest.span, 1u);
    // Near the PE: the servers of its node; none there: all kept.
    EXPECT_EQ(Choose(Hints(FAM_HINT_NEAR_PE, "B")), (std::vector<uint64_t>{1, 3}));
    std::string why;
    EXPECT_EQ(Choose(Hints(FAM_HINT_NEAR_PE, "C"), &why).size(), 4u);
    EXPECT_NE(why.find("no server on the PE's node C"), std::string::npos) << why;
    // Capacity: the far tier first.
    EXPECT_EQ(Choose(Hints(FAM_HINT_CAPACITY)).front(), 3u);
    // Bandwidth: 2 x 10 GB/s striped beats 1 x 10, 3 x 2 and 4 x 0.5.
    auto choice = ChooseByIntent(Hints(FAM_HINT_BANDWIDTH), "r", FourServers(), &ignored);
    EXPECT_EQ(choice.ranked, (std::vector<uint64_t>{0, 1}));
    EXPECT_EQ(choice.span, 2u);
}

TEST(IntentMapping, HintsCompose) {
    // Near node B, then the lowest latency there: 1 (3 is 40x slower).
    EXPECT_EQ(Choose(Hints(FAM_HINT_NEAR_PE | FAM_HINT_LATENCY, "B")), (std::vector<uint64_t>{1}));
    // Bandwidth within domain b: 2 alone (2 GB/s) beats 2 x 0.5 GB/s.
    RegionIntent intent = Hints(FAM_HINT_BANDWIDTH);
    intent.failure_domain = "b";
    EXPECT_EQ(Choose(intent), (std::vector<uint64_t>{2}));
}

TEST(IntentMapping, ResilienceHintsChooseMemoryTypeAndRedundancy) {
    auto apply = [](uint32_t hints, Fam_Region_Attributes attributes = {}) {
        std::string why;
        ApplyIntentAttributes(Hints(hints), "r", &attributes, &why);
        return attributes;
    };
    EXPECT_EQ(apply(FAM_HINT_PERSISTENT).memoryType, PERSISTENT);
    EXPECT_EQ(apply(FAM_HINT_ACROSS_JOBS).memoryType, PERSISTENT);
    EXPECT_EQ(apply(FAM_HINT_VOLATILE).memoryType, VOLATILE);
    EXPECT_EQ(apply(FAM_HINT_JOB).memoryType, VOLATILE);
    Fam_Region_Attributes survive = apply(FAM_HINT_SURVIVE_FAILURE);
    EXPECT_EQ(survive.memoryType, PERSISTENT);
    EXPECT_EQ(survive.redundancyLevel, RAID1);
    Fam_Region_Attributes volatile_copy = apply(FAM_HINT_SURVIVE_FAILURE | FAM_HINT_VOLATILE);
    EXPECT_EQ(volatile_copy.memoryType, VOLATILE);
    EXPECT_EQ(volatile_copy.redundancyLevel, RAID1);
    Fam_Region_Attributes raid5{};
    raid5.redundancyLevel = RAID5;
    EXPECT_EQ(apply(FAM_HINT_SURVIVE_FAILURE, raid5).redundancyLevel, RAID5);
    EXPECT_EQ(apply(FAM_HINT_BANDWIDTH).memoryType, MEMORY_TYPE_DEFAULT);
}

TEST(IntentMapping, ContradictionsAreRefusedNamingTheHints) {
    auto refuse = [](uint32_t hints, Fam_Region_Attributes attributes, const char *part) {
        std::string message, why;
        int error =
            ErrorOf([&] { ApplyIntentAttributes(Hints(hints), "r", &attributes, &why); }, &message);
        EXPECT_EQ(error, openfam::FAM_ERR_INVALID) << part;
        EXPECT_NE(message.find(part), std::string::npos) << message;
    };
    refuse(FAM_HINT_VOLATILE | FAM_HINT_PERSISTENT, {}, "volatile and persistent");
    refuse(FAM_HINT_JOB | FAM_HINT_ACROSS_JOBS, {}, "job and across-jobs");
    refuse(FAM_HINT_VOLATILE | FAM_HINT_ACROSS_JOBS, {}, "exclude each other");
    refuse(FAM_HINT_JOB | FAM_HINT_PERSISTENT, {}, "exclude each other");
    Fam_Region_Attributes volatile_type{};
    volatile_type.memoryType = VOLATILE;
    refuse(FAM_HINT_PERSISTENT, volatile_type, "memoryType is VOLATILE");
    Fam_Region_Attributes none{};
    none.redundancyLevel = NONE;
    refuse(FAM_HINT_SURVIVE_FAILURE, none, "redundancyLevel is NONE");
    refuse(1u << 30, {}, "unknown bits");
}

TEST(MemoryKinds, SpeedsParseWithTheirUnitsAndBadOnesAreRefused) {
    EXPECT_EQ(fampool::ParseBandwidth("b", "200mbit"), 25'000'000u);
    EXPECT_EQ(fampool::ParseBandwidth("b", "12.5GB/s"), 12'500'000'000u);
    EXPECT_EQ(fampool::ParseLatency("l", "2us"), 2000u);
    EXPECT_EQ(fampool::ParseLatency("l", "120ns"), 120u);
    std::string message;
    EXPECT_EQ(ErrorOf([] { fampool::ParseBandwidth("server 1 bandwidth", "fast"); }, &message),
              openfam::FAM_ERR_INVALID);
    EXPECT_NE(message.find("server 1 bandwidth: \"fast\" is not a bandwidth"), std::string::npos);
    EXPECT_EQ(ErrorOf([] { fampool::ParseLatency("l", "5 parsecs"); }, &message),
              openfam::FAM_ERR_INVALID);
    EXPECT_TRUE(fampool::IsMemoryKind("far"));
    EXPECT_FALSE(fampool::IsMemoryKind("hbm"));
    // A server measures its memory: a copy rate and a load latency, both plausible.
    TempDir dir;
    fampool::MemorySpeed speed = fampool::MeasureMemory(dir.path(), 4 << 20);
    EXPECT_GT(speed.bandwidth, 50'000'000u);
    EXPECT_GT(speed.latency_ns, 0u);
    EXPECT_LT(speed.latency_ns, 100'000u);
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // its file is gone
}

TEST(MemoryKinds, TheEmbeddedTiersAreCheckedWithTheFileAndKeyNamed) {
    TempDir dir;
    std::string config = dir.path() + "/tiers.yaml";
    std::ofstream(config) << "memory_tiers:\n  - {kind: hbm, dir: /tmp/x}\n";
    ScopedEnv env("FAMPOOL_CONFIG", config);
    openfam::fam f;
    EXPECT_FAM_ERROR(f.fam_initialize("default", nullptr), openfam::FAM_ERR_INVALID,
                     "tier 1 (memory server 1): kind \"hbm\" is not one of dram, persistent, far");
    std::ofstream(config) << "memory_tiers:\n  - {kind: far, dir: /tmp/x, speed: 3}\n";
    openfam::fam g;
    EXPECT_FAM_ERROR(g.fam_initialize("default", nullptr), openfam::FAM_ERR_INVALID,
                     "unknown key \"speed\"");
}

// ---- Through the API ----

Fam_Region_Intent_Attributes IntentOf(uint32_t hints, Fam_Memory_Kind kind = FAM_KIND_ANY) {
    Fam_Region_Intent_Attributes attributes{};
    attributes.intent.hints = hints;
    attributes.intent.kind = kind;
    return attributes;
}

// What a test checks of a placed region: its servers, attributes and reason.
struct Placed {
    std::vector<uint64_t> servers;
    Fam_Region_Attributes attributes{};
    Fam_Placement placement{};
};

class IntentApi {
  protected:
    static Placed Place(fam *f, const char *name, Fam_Region_Intent_Attributes attributes,
                        uint64_t size = 8 << 20) {
        std::unique_ptr<Fam_Region_Descriptor> region(
            f->fam_create_region_intent(name, size, 0777, &attributes));
        return Stat(f, region.get());
    }
    static Placed Stat(fam *f, Fam_Region_Descriptor *region) {
        Fam_Stat info{};
        Placed placed;
        f->fam_stat(region, &info, &placed.placement);
        placed.servers.assign(info.memory_servers, info.memory_servers + info.num_memservers);
        placed.attributes = info.region_attributes;
        return placed;
    }
};

// The embedded model with two tiers beside its default DRAM (server 0, measured): a persistent
// tier (server 1) and a far tier of 64 MiB (server 2), slow enough that DRAM wins every speed.
class EmbeddedIntentTest : public FamTest, public IntentApi {
  protected:
    void PrepareEnvironment() override {
        std::string config = home_dir() + "/tiers.yaml";
        std::ofstream(config) << "memory_tiers:\n"
                              << "  - {kind: persistent, dir: " << home_dir()
                              << "/pm, bandwidth: 200MB/s, latency: 20us}\n"
                              << "  - {kind: far, dir: " << home_dir()
                              << "/far, bandwidth: 100MB/s, latency: 50us, capacity: 64MiB}\n";
        SetEnv("FAMPOOL_CONFIG", config);
    }
};

TEST_F(EmbeddedIntentTest, KindConstraintPlacesOnTheTierAndDataRoundTrips) {
    Placed far = Place(fam(), "cold", IntentOf(0, FAM_KIND_FAR));
    EXPECT_EQ(far.servers, (std::vector<uint64_t>{2}));
    EXPECT_EQ(far.placement.intent.kind, FAM_KIND_FAR);
    EXPECT_NE(std::string(far.placement.reason).find("kind far: 2"), std::string::npos)
        << far.placement.reason;
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("cold"));
    auto item = Allocate("x", 1 << 20, region.get());
    std::vector<uint8_t> bytes = Pattern(1 << 20, 3);
    PutBytes(item.get(), 0, bytes);
    EXPECT_EQ(GetBytes(item.get(), 0, bytes.size()), bytes);
    EXPECT_FALSE(std::filesystem::is_empty(home_dir() + "/far/volatile"));
    Placed persistent = Place(fam(), "kept", IntentOf(0, FAM_KIND_PERSISTENT));
    EXPECT_EQ(persistent.servers, (std::vector<uint64_t>{1}));
    EXPECT_EQ(persistent.attributes.memoryType, PERSISTENT);  // the tier holds no other
}

TEST_F(EmbeddedIntentTest, EachHintPlacesAsDocumented) {
    EXPECT_EQ(Place(fam(), "lat", IntentOf(FAM_HINT_LATENCY)).servers, (std::vector<uint64_t>{0}));
    EXPECT_EQ(Place(fam(), "bw", IntentOf(FAM_HINT_BANDWIDTH)).servers, (std::vector<uint64_t>{0}));
    EXPECT_EQ(Place(fam(), "big", IntentOf(FAM_HINT_CAPACITY)).servers, (std::vector<uint64_t>{2}));
    Placed near = Place(fam(), "near", IntentOf(FAM_HINT_NEAR_PE | FAM_HINT_LATENCY));
    EXPECT_EQ(near.servers, (std::vector<uint64_t>{0}));
    EXPECT_NE(std::string(near.placement.reason).find("near-pe: 0, 2"), std::string::npos)
        << near.placement.reason;
    EXPECT_EQ(Place(fam(), "job", IntentOf(FAM_HINT_JOB)).attributes.memoryType, VOLATILE);
    Placed across = Place(fam(), "across", IntentOf(FAM_HINT_ACROSS_JOBS | FAM_HINT_LATENCY));
    EXPECT_EQ(across.attributes.memoryType, PERSISTENT);
    EXPECT_EQ(across.servers, (std::vector<uint64_t>{0}));
    EXPECT_EQ(Place(fam(), "vol", IntentOf(FAM_HINT_VOLATILE)).attributes.memoryType, VOLATILE);
    Placed persistent = Place(fam(), "pm", IntentOf(FAM_HINT_PERSISTENT | FAM_HINT_CAPACITY));
    EXPECT_EQ(persistent.attributes.memoryType, PERSISTENT);
    EXPECT_EQ(persistent.servers, (std::vector<uint64_t>{2}));  // far holds both types
}

TEST_F(EmbeddedIntentTest, ServerConstraintAndPlainRegions) {
    Fam_Region_Intent_Attributes named = IntentOf(0);
    named.intent.server_count = 1;
    named.intent.servers[0] = 1;
    named.attributes.memoryType = PERSISTENT;
    EXPECT_EQ(Place(fam(), "named", named).servers, (std::vector<uint64_t>{1}));
    // Without an intent, regions stay on the default heaps; fam_stat says so.
    auto plain = CreateRegion("plain", 8 << 20);
    Placed placed = Stat(fam(), plain.get());
    EXPECT_EQ(placed.servers, (std::vector<uint64_t>{0}));
    EXPECT_EQ(placed.placement.intent.hints, 0u);
    EXPECT_NE(std::string(placed.placement.reason).find("no intent"), std::string::npos);
}

TEST_F(EmbeddedIntentTest, EachRefusalNamesItsCause) {
    Fam_Region_Intent_Attributes domain = IntentOf(0);
    std::snprintf(domain.intent.failure_domain, sizeof domain.intent.failure_domain, "rack1");
    EXPECT_FAM_ERROR(Place(fam(), "d", domain), FAM_ERR_RESOURCE, "failure domain \"rack1\"");
    Fam_Region_Intent_Attributes named = IntentOf(0);
    named.intent.server_count = 1;
    named.intent.servers[0] = 7;
    EXPECT_FAM_ERROR(Place(fam(), "n", named), FAM_ERR_RESOURCE, "constraint servers 7");
    // The persistent tier holds no volatile regions.
    EXPECT_FAM_ERROR(Place(fam(), "k", IntentOf(FAM_HINT_VOLATILE, FAM_KIND_PERSISTENT)),
                     FAM_ERR_RESOURCE, "constraint kind persistent");
    EXPECT_FAM_ERROR(Place(fam(), "s", IntentOf(FAM_HINT_SURVIVE_FAILURE)), FAM_ERR_RESOURCE,
                     "keeps no redundancy");
    EXPECT_FAM_ERROR(Place(fam(), "c", IntentOf(FAM_HINT_VOLATILE | FAM_HINT_PERSISTENT)),
                     FAM_ERR_INVALID, "exclude each other");
    EXPECT_FAM_ERROR(Place(fam(), "f", IntentOf(0, FAM_KIND_FAR), 128 << 20), FAM_ERR_NO_SPACE,
                     "fewer have room");
    Fam_Region_Intent_Attributes many = IntentOf(0);
    many.intent.server_count = FAM_INTENT_MAX_SERVERS + 1;
    EXPECT_FAM_ERROR(Place(fam(), "m", many), FAM_ERR_INVALID, "FAM_INTENT_MAX_SERVERS");
    Fam_Region_Intent_Attributes bad_kind = IntentOf(0);
    const int nine = 9;  // what a C program may store; no C++ enumeration value
    std::memcpy(&bad_kind.intent.kind, &nine, sizeof nine);
    EXPECT_FAM_ERROR(Place(fam(), "b", bad_kind), FAM_ERR_INVALID, "not a Fam_Memory_Kind");
    Fam_Region_Intent_Attributes unterminated = IntentOf(0);
    std::memset(unterminated.intent.failure_domain, 'x', sizeof unterminated.intent.failure_domain);
    EXPECT_FAM_ERROR(Place(fam(), "u", unterminated), FAM_ERR_INVALID, "NUL-terminated");
    // Nothing was left behind by the refusals.
    EXPECT_FAM_ERROR(fam()->fam_lookup_region("f"), FAM_ERR_NOTFOUND, "fam_lookup_region");
}

TEST_F(EmbeddedIntentTest, TheIntentIsRecordedAndReadByLaterProcesses) {
    Place(fam(), "kept", IntentOf(FAM_HINT_PERSISTENT | FAM_HINT_CAPACITY));
    ReinitializeFam();
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("kept"));
    Placed placed = Stat(fam(), region.get());
    EXPECT_EQ(placed.placement.intent.hints, unsigned{FAM_HINT_PERSISTENT | FAM_HINT_CAPACITY});
    EXPECT_EQ(placed.servers, (std::vector<uint64_t>{2}));
    EXPECT_NE(std::string(placed.placement.reason).find("capacity: far tier"), std::string::npos)
        << placed.placement.reason;
}

TEST_F(EmbeddedIntentTest, TheCApiPlacesAndReportsTheSame) {
    c_fam *handle = c_fam_create();
    ASSERT_EQ(c_fam_initialize(handle, "default", nullptr), 0) << c_fam_error_msg();
    Fam_Region_Intent_Attributes attributes = IntentOf(0, FAM_KIND_FAR);
    c_fam_region_desc *region = c_fam_create_region_intent(handle, "c", 8 << 20, 0777, &attributes);
    ASSERT_NE(region, nullptr) << c_fam_error_msg();
    Fam_Stat info{};
    Fam_Placement placement{};
    EXPECT_EQ(c_fam_stat_region_placement(handle, region, &info, &placement), 0);
    EXPECT_EQ(info.memory_servers[0], 2u);
    EXPECT_EQ(placement.intent.kind, FAM_KIND_FAR);
    attributes.intent.hints = FAM_HINT_JOB | FAM_HINT_ACROSS_JOBS;
    EXPECT_EQ(c_fam_create_region_intent(handle, "d", 8 << 20, 0777, &attributes), nullptr);
    EXPECT_EQ(c_fam_error(), C_FAM_ERR_INVALID);
    c_fam_free_region_desc(region);
    c_fam_finalize(handle, "default");
    c_fam_delete(handle);
}

// A cluster of three kinds: 0 DRAM (10 Gbit/s, 1 us, domain a), 1 persistent memory only
// (8 Gbit/s, 5 us, domain a), 2 far (500 Mbit/s, 20 us, domain b, 64 MiB).
class ClusterIntentTest : public ClusterTest, public IntentApi {
  protected:
    const char *Spec() const override {
        return "3:4096:tcp:server0.kind=dram,server0.bandwidth=10gbit,server0.latency=1us,"
               "server0.failure_domain=a,server1.kind=persistent,server1.memory_type=persistent,"
               "server1.bandwidth=8gbit,server1.latency=5us,server1.failure_domain=a,"
               "server2.kind=far,server2.bandwidth=500mbit,server2.latency=20us,"
               "server2.failure_domain=b,server2.capacity=64MiB";
    }
};

TEST_F(ClusterIntentTest, HintsAndConstraintsMapOntoTheServersKinds) {
    EXPECT_EQ(Place(fam(), "far", IntentOf(0, FAM_KIND_FAR)).servers, (std::vector<uint64_t>{2}));
    EXPECT_EQ(Place(fam(), "lat", IntentOf(FAM_HINT_LATENCY)).servers, (std::vector<uint64_t>{0}));
    // Persistent and bandwidth-bound: 2 x 8 Gbit/s striped beats 1 x 10 Gbit/s.
    Placed fast = Place(fam(), "bw", IntentOf(FAM_HINT_BANDWIDTH | FAM_HINT_PERSISTENT));
    EXPECT_EQ(fast.servers, (std::vector<uint64_t>{0, 1}));
    EXPECT_NE(std::string(fast.placement.reason).find("2 x 1.00 GB/s striped = 2.00 GB/s"),
              std::string::npos)
        << fast.placement.reason;
    Fam_Region_Intent_Attributes domain = IntentOf(0);
    std::snprintf(domain.intent.failure_domain, sizeof domain.intent.failure_domain, "b");
    EXPECT_EQ(Place(fam(), "dom", domain).servers, (std::vector<uint64_t>{2}));
    // Every server is on this host: all near.
    Placed near = Place(fam(), "near", IntentOf(FAM_HINT_NEAR_PE));
    EXPECT_NE(std::string(near.placement.reason).find("near-pe: 0, 2"), std::string::npos)
        << near.placement.reason;
    // And the data path reaches what was placed.
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("bw"));
    auto item = Allocate("x", 1 << 20, region.get());
    std::vector<uint8_t> bytes = Pattern(1 << 20, 5);
    PutBytes(item.get(), 0, bytes);
    EXPECT_EQ(GetBytes(item.get(), 0, bytes.size()), bytes);
}

TEST_F(ClusterIntentTest, SurvivingAFailureIsRaid1OnPersistentMemoryAcrossDomains) {
    Placed safe = Place(fam(), "safe", IntentOf(FAM_HINT_SURVIVE_FAILURE | FAM_HINT_LATENCY));
    EXPECT_EQ(safe.attributes.redundancyLevel, RAID1);
    EXPECT_EQ(safe.attributes.memoryType, PERSISTENT);
    EXPECT_EQ(safe.servers, (std::vector<uint64_t>{0}));
    // The copy goes to another domain (b: server 2), which the hints did not choose.
    EXPECT_NE(std::string(safe.placement.reason).find("copies on 2"), std::string::npos)
        << safe.placement.reason;
    // Confined to the far server alone, a copy has nowhere to go.
    EXPECT_FAM_ERROR(Place(fam(), "lonely", IntentOf(FAM_HINT_SURVIVE_FAILURE, FAM_KIND_FAR)),
                     FAM_ERR_RESOURCE, "needs 2 memory servers");
    // Volatile memory on the persistent-only server: refused, naming the constraint.
    Fam_Region_Intent_Attributes named = IntentOf(FAM_HINT_VOLATILE);
    named.intent.server_count = 1;
    named.intent.servers[0] = 1;
    EXPECT_FAM_ERROR(Place(fam(), "vol", named), FAM_ERR_RESOURCE, "constraint servers 1");
    EXPECT_FAM_ERROR(Place(fam(), "big", IntentOf(0, FAM_KIND_FAR), 128 << 20), FAM_ERR_NO_SPACE,
                     "fewer have room");
}

}  // namespace
}  // namespace fampool_test

namespace fampool_test {
namespace {

TEST_F(ClusterIntentTest, AccessibilityCapacityAndResilienceHintsAndTheirRefusals) {
    // Capacity: the far server first; an interleaved region still spans what it may.
    Placed big = Place(fam(), "big", IntentOf(FAM_HINT_CAPACITY));
    EXPECT_EQ(big.servers, (std::vector<uint64_t>{0, 2}));
    EXPECT_NE(std::string(big.placement.reason).find("most free memory first: 2, 0"),
              std::string::npos)
        << big.placement.reason;
    EXPECT_EQ(Place(fam(), "job", IntentOf(FAM_HINT_JOB)).attributes.memoryType, VOLATILE);
    EXPECT_EQ(Place(fam(), "vol", IntentOf(FAM_HINT_VOLATILE)).attributes.memoryType, VOLATILE);
    Placed later = Place(fam(), "later", IntentOf(FAM_HINT_ACROSS_JOBS | FAM_HINT_LATENCY));
    EXPECT_EQ(later.attributes.memoryType, PERSISTENT);
    EXPECT_EQ(later.servers, (std::vector<uint64_t>{0}));
    Placed kept = Place(fam(), "kept", IntentOf(FAM_HINT_PERSISTENT, FAM_KIND_PERSISTENT));
    EXPECT_EQ(kept.servers, (std::vector<uint64_t>{1}));
    EXPECT_EQ(kept.attributes.memoryType, PERSISTENT);
    // Refusals over gRPC carry the same causes as in-process.
    EXPECT_FAM_ERROR(Place(fam(), "c", IntentOf(FAM_HINT_JOB | FAM_HINT_ACROSS_JOBS)),
                     FAM_ERR_INVALID, "exclude each other");
    Fam_Region_Intent_Attributes against = IntentOf(FAM_HINT_PERSISTENT);
    against.attributes.memoryType = VOLATILE;
    EXPECT_FAM_ERROR(Place(fam(), "a", against), FAM_ERR_INVALID, "memoryType is VOLATILE");
    Fam_Region_Intent_Attributes none = IntentOf(FAM_HINT_SURVIVE_FAILURE);
    none.attributes.redundancyLevel = NONE;
    EXPECT_FAM_ERROR(Place(fam(), "n", none), FAM_ERR_INVALID, "redundancyLevel is NONE");
    Fam_Region_Intent_Attributes named = IntentOf(0);
    named.intent.server_count = 1;
    named.intent.servers[0] = 5;
    EXPECT_FAM_ERROR(Place(fam(), "s", named), FAM_ERR_RESOURCE, "constraint servers 5");
    Fam_Region_Intent_Attributes domain = IntentOf(0);
    std::snprintf(domain.intent.failure_domain, sizeof domain.intent.failure_domain, "z");
    EXPECT_FAM_ERROR(Place(fam(), "d", domain), FAM_ERR_RESOURCE, "failure domain \"z\"");
}

}  // namespace
}  // namespace fampool_test
