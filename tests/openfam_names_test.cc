// openfam_names_test.cc: OpenFAM 3.2's names as OpenFAM programs write them. Every type,
// enumerator and int128_t is named openfam::... (no using-directive in this file), and the
// descriptor members OpenFAM 3.2 declares are called: get_memserver_id, set_permissionLevel,
// get_keys and the cached-copy setters (which change the descriptor's getters, never the item
// or what fampool does), and the layout setters fampool refuses. Runs on the embedded model and,
// through CTest, on 3 memory servers. tests/install builds a program of the same kind against
// the installed headers.
#include <fam/fam.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "test_support.h"

namespace openfam_names {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

class OpenFamNamesTest : public fampool_test::FamTest {};

TEST_F(OpenFamNamesTest, QualifiedTypesEnumeratorsAndInt128) {
    openfam::Fam_Region_Attributes attributes;
    std::memset(&attributes, 0, sizeof attributes);
    attributes.redundancyLevel = openfam::NONE;
    attributes.memoryType = openfam::VOLATILE;
    attributes.interleaveEnable = openfam::DISABLE;
    attributes.permissionLevel = openfam::DATAITEM;
    std::unique_ptr<openfam::Fam_Region_Descriptor> region(
        fam()->fam_create_region("names", 4 * kMiB, S_IRWXU | S_IRGRP | S_IXGRP, &attributes));
    EXPECT_EQ(region->get_permissionLevel(), openfam::DATAITEM);
    EXPECT_EQ(region->get_memoryType(), openfam::VOLATILE);
    std::unique_ptr<openfam::Fam_Descriptor> item(
        fam()->fam_allocate("counter", 64, S_IRUSR | S_IWUSR, region.get()));
    openfam::Fam_Descriptor_Status status =
        static_cast<openfam::Fam_Descriptor_Status>(item->get_desc_status());
    EXPECT_EQ(status, openfam::DESC_INIT_DONE);

    openfam::int128_t zero = 0, big = static_cast<openfam::int128_t>(1) << 100;
    fam()->fam_set(item.get(), 0, zero);
    EXPECT_TRUE(fam()->fam_compare_swap(item.get(), 0, zero, big) == zero);
    EXPECT_TRUE(fam()->fam_fetch_int128(item.get(), 0) == big);

    openfam::Fam_Stat info;
    fam()->fam_stat(item.get(), &info);
    EXPECT_EQ(info.size, 64u);
    EXPECT_EQ(info.perm & 0777, static_cast<mode_t>(S_IRUSR | S_IWUSR));
    EXPECT_EQ(info.region_attributes.permissionLevel, openfam::DATAITEM);
    openfam::Fam_Global_Descriptor global = item->get_global_descriptor();
    openfam::Fam_Descriptor by_global(global, 64);
    EXPECT_TRUE(fam()->fam_fetch_int128(&by_global, 0) == big);
    fam()->fam_deallocate(item.get());
    fam()->fam_destroy_region(region.get());
}

TEST_F(OpenFamNamesTest, MemoryServerIdsOfRegionAndItem) {
    auto region = CreateRegion("servers", 4 * kMiB);
    auto item = Allocate("x", 4096, region.get());
    ASSERT_GE(region->get_used_memsrv_cnt(), 1u);
    EXPECT_EQ(region->get_memserver_id(), region->get_memserver_ids()[0]);
    bool listed = false;
    for (uint64_t i = 0; i < region->get_used_memsrv_cnt(); ++i) {
        listed |= region->get_memserver_ids()[i] == item->get_first_memserver_id();
    }
    EXPECT_TRUE(listed) << "the item's first server is one of its region's";
    EXPECT_EQ(item->get_first_memserver_id(), item->get_memserver_ids()[0]);
    EXPECT_EQ(item->get_permissionLevel(), openfam::REGION);
}

TEST_F(OpenFamNamesTest, KeysAndAddressesAreTheGrantedOnes) {
    auto region = CreateRegion("keys", 4 * kMiB);
    auto item = Allocate("x", 4096, region.get());
    uint64_t *keys = item->get_keys();
    uint64_t *bases = item->get_base_address_list();
    if (!cluster()) {
        EXPECT_EQ(keys, nullptr) << "the embedded model grants no fabric keys";
        EXPECT_EQ(bases, nullptr);
        return;
    }
    ASSERT_NE(keys, nullptr);
    ASSERT_NE(bases, nullptr);
    for (uint64_t i = 0; i < item->get_used_memsrv_cnt(); ++i) {
        EXPECT_NE(keys[i], 0u) << "server " << item->get_memserver_ids()[i];
    }
}

// OpenFAM's setters change the descriptor's own copy: the getters say what was set, the item
// and region keep theirs (fam_stat asks the metadata service), and the data path is unchanged.
TEST_F(OpenFamNamesTest, SettersChangeTheDescriptorsCopyOnly) {
    auto region = CreateRegion("copy", 4 * kMiB, 0700);
    auto item = Allocate("x", 4096, region.get(), 0600);
    char name[] = "renamed";
    item->set_perm(0444);
    item->set_name(name);
    item->set_uid(12345);
    item->set_gid(54321);
    item->set_permissionLevel(openfam::DATAITEM);
    int marker = 0;
    item->set_context(&marker);
    EXPECT_EQ(item->get_perm(), 0444u);
    EXPECT_STREQ(item->get_name(), "renamed");
    EXPECT_EQ(item->get_uid(), 12345u);
    EXPECT_EQ(item->get_gid(), 54321u);
    EXPECT_EQ(item->get_permissionLevel(), openfam::DATAITEM);
    EXPECT_EQ(item->get_context(), &marker);
    openfam::Fam_Stat info;
    fam()->fam_stat(item.get(), &info);
    EXPECT_EQ(info.perm & 0777, 0600u) << "the item keeps its mode";
    EXPECT_STREQ(info.name, "x");
    PutBytes(item.get(), 0, {1, 2, 3});  // still writable: the mode set on the copy is not used
    EXPECT_EQ(GetBytes(item.get(), 0, 3), (std::vector<uint8_t>{1, 2, 3}));

    region->set_permissionLevel(openfam::DATAITEM);
    region->set_redundancyLevel(openfam::RAID1);
    region->set_memoryType(openfam::PERSISTENT);
    region->set_interleaveEnable(openfam::ENABLE);
    region->set_perm(0711);
    EXPECT_EQ(region->get_permissionLevel(), openfam::DATAITEM);
    EXPECT_EQ(region->get_redundancyLevel(), openfam::RAID1);
    EXPECT_EQ(region->get_memoryType(), openfam::PERSISTENT);
    EXPECT_EQ(region->get_interleaveEnable(), openfam::ENABLE);
    EXPECT_EQ(region->get_perm(), 0711u);
    fam()->fam_stat(region.get(), &info);
    EXPECT_EQ(info.perm & 0777, 0700u);
    EXPECT_EQ(info.region_attributes.redundancyLevel, openfam::NONE);
    EXPECT_EQ(info.region_attributes.permissionLevel, openfam::REGION);
    auto again = Allocate("y", 4096, region.get());  // the region's own level still rules
    EXPECT_EQ(again->get_permissionLevel(), openfam::REGION);
}

TEST_F(OpenFamNamesTest, LayoutSettersAreRefusedByName) {
    auto region = CreateRegion("layout", 4 * kMiB);
    auto item = Allocate("x", 4096, region.get());
    uint64_t values[2] = {1, 2};
    struct Case {
        const char *call;
        std::function<void()> body;
    } cases[] = {
        {"bind_keys", [&] { item->bind_keys(values, 1); }},
        {"set_base_address_list", [&] { item->set_base_address_list(values, 1); }},
        {"set_interleave_size", [&] { item->set_interleave_size(4096); }},
        {"set_used_memsrv_cnt", [&] { item->set_used_memsrv_cnt(2); }},
        {"set_memserver_ids", [&] { item->set_memserver_ids(values); }},
    };
    for (const Case &c : cases) {
        try {
            c.body();
            ADD_FAILURE() << c.call << " was accepted";
        } catch (openfam::Fam_Exception &e) {
            EXPECT_EQ(e.fam_error(), openfam::FAM_ERR_INVALIDOP) << c.call;
            EXPECT_NE(std::string(e.fam_error_msg()).find(c.call), std::string::npos)
                << e.fam_error_msg();
        }
    }
    PutBytes(item.get(), 0, {7});
    EXPECT_EQ(GetBytes(item.get(), 0, 1), (std::vector<uint8_t>{7}));
}

TEST_F(OpenFamNamesTest, StatusSetAsAnInt) {
    auto region = CreateRegion("status", 4 * kMiB);
    auto item = Allocate("x", 4096, region.get());
    item->set_desc_status(static_cast<int>(openfam::DESC_INIT_DONE_BUT_KEY_NOT_VALID));
    EXPECT_EQ(item->get_desc_status(), openfam::DESC_INIT_DONE_BUT_KEY_NOT_VALID);
    region->set_desc_status(static_cast<int>(openfam::DESC_INIT_DONE));
    EXPECT_EQ(region->get_desc_status(), openfam::DESC_INIT_DONE);
}

}  // namespace
}  // namespace openfam_names
