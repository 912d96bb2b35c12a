// Fuzz target: the C API (fam/fam_c.h) called with random arguments on the embedded model:
// region and item life, permissions, names, sizes and offsets out of range, transfers,
// gather/scatter, atomics of every width at any alignment, copy, backup and restore, map, on
// descriptors of live, destroyed and deallocated objects. Every call must return (an error
// code and a message, or success), never crash or corrupt; after each input every region is
// destroyed. Local buffers are the harness's own and sized for each call: the API cannot check
// a pointer, so it is not given a wrong one.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "fam/fam_c.h"
#include "fuzz_support.h"

namespace fampool::fuzz {
namespace {

constexpr size_t kLocal = 64 << 10;  // the local buffer every transfer uses
constexpr size_t kRegions = 4, kItems = 8;

c_fam *fam = nullptr;
ScratchDir *home = nullptr;

struct State {
    c_fam_region_desc *regions[kRegions] = {};
    c_fam_desc *items[kItems] = {};
    std::set<std::string> names;  // regions this input may have created
    std::vector<char> local = std::vector<char>(kLocal);
    std::vector<uint64_t> indexes;  // of the last index gather/scatter (read until quiet)
};

std::string Name(Input &input) {
    static const char *kNames[] = {"a", "b", "c", "", "a/b", "very-long-name-of-a-region"};
    uint8_t pick = input.Byte();
    if (pick < 0xf0) return kNames[pick % std::size(kNames)];
    std::string_view chunk = input.Chunk();
    return std::string(chunk.substr(0, chunk.find('\0')));
}

c_fam_region_desc *&RegionSlot(State &s, Input &input) {
    return s.regions[input.Byte() % kRegions];
}
c_fam_desc *&ItemSlot(State &s, Input &input) { return s.items[input.Byte() % kItems]; }

void ReplaceItem(c_fam_desc *&slot, c_fam_desc *item) {
    c_fam_free_desc(slot);
    slot = item;
}

void ReplaceRegion(c_fam_region_desc *&slot, c_fam_region_desc *region) {
    c_fam_free_region_desc(slot);
    slot = region;
}

// One call with arguments drawn from the input.
void Step(State &s, Input &input) {
    uint8_t op = input.Byte() % 24;
    mode_t perm = static_cast<mode_t>(input.Number(2) & 0777);
    switch (op) {
        case 0: {
            Fam_Region_Attributes attributes{};
            attributes.redundancyLevel = static_cast<Fam_Redundancy_Level>(input.Byte() % 5);
            attributes.memoryType = static_cast<Fam_Memory_Type>(input.Byte() % 4);
            attributes.interleaveEnable = static_cast<Fam_Interleave_Enable>(input.Byte() % 4);
            attributes.permissionLevel = static_cast<Fam_Permission_Level>(input.Byte() % 4);
            std::string name = Name(input);
            s.names.insert(name);
            ReplaceRegion(RegionSlot(s, input),
                          c_fam_create_region(fam, name.c_str(), input.Below(8 << 20), perm,
                                              input.Byte() & 1 ? &attributes : nullptr));
            break;
        }
        case 1:
            ReplaceRegion(RegionSlot(s, input), c_fam_lookup_region(fam, Name(input).c_str()));
            break;
        case 2:
            c_fam_destroy_region(fam, RegionSlot(s, input));
            break;
        case 3:
            c_fam_resize_region(fam, RegionSlot(s, input), input.Below(16 << 20));
            break;
        case 4: {
            Fam_Stat info;
            c_fam_stat_region(fam, RegionSlot(s, input), &info);
            break;
        }
        case 5:
            c_fam_change_permissions_region(fam, RegionSlot(s, input), perm);
            break;
        case 6: {
            c_fam_region_desc *region = RegionSlot(s, input);
            ReplaceItem(ItemSlot(s, input),
                        c_fam_allocate(fam, input.Below(1 << 20), perm, region));
            break;
        }
        case 7: {
            c_fam_region_desc *region = RegionSlot(s, input);
            std::string name = Name(input);
            ReplaceItem(
                ItemSlot(s, input),
                c_fam_allocate_named(fam, name.c_str(), input.Below(1 << 20), perm, region));
            break;
        }
        case 8: {
            std::string item = Name(input), region = Name(input);
            ReplaceItem(ItemSlot(s, input), c_fam_lookup(fam, item.c_str(), region.c_str()));
            break;
        }
        case 9:
            c_fam_deallocate(fam, ItemSlot(s, input));
            break;
        case 10: {
            Fam_Stat info;
            c_fam_stat_data(fam, ItemSlot(s, input), &info);
            break;
        }
        case 11:
            c_fam_change_permissions_data(fam, ItemSlot(s, input), perm);
            break;
        case 12:
        case 13: {
            c_fam_desc *item = ItemSlot(s, input);
            uint64_t offset = input.Below(2 << 20);
            size_t n = input.Below(kLocal);
            bool blocking = input.Byte() & 1;
            if (op == 12) {
                blocking ? c_fam_get_blocking(fam, s.local.data(), item, offset, n)
                         : c_fam_get_nonblocking(fam, s.local.data(), item, offset, n);
            } else {
                blocking ? c_fam_put_blocking(fam, s.local.data(), item, offset, n)
                         : c_fam_put_nonblocking(fam, s.local.data(), item, offset, n);
            }
            break;
        }
        case 14:
        case 15: {
            c_fam_desc *item = ItemSlot(s, input);
            uint64_t size = 1 + input.Below(63);
            uint64_t count = input.Below(kLocal / size);
            uint64_t first = input.Below(~uint64_t{0}), stride = input.Below(~uint64_t{0});
            uint8_t how = input.Byte() % 4;  // gather or scatter, blocking or not
            char *local = s.local.data();
            if (op == 14) {
                if (how == 0)
                    c_fam_gather_blocking_stride(fam, local, item, count, first, stride, size);
                if (how == 1)
                    c_fam_gather_nonblocking_stride(fam, local, item, count, first, stride, size);
                if (how == 2)
                    c_fam_scatter_blocking_stride(fam, local, item, count, first, stride, size);
                if (how == 3)
                    c_fam_scatter_nonblocking_stride(fam, local, item, count, first, stride, size);
            } else {
                c_fam_quiet(fam);  // the previous index array may still be read
                s.indexes.assign(count, 0);
                for (uint64_t &index : s.indexes) index = input.Below(~uint64_t{0});
                uint64_t *at = s.indexes.data();
                if (how == 0) c_fam_gather_blocking_index(fam, local, item, count, at, size);
                if (how == 1) c_fam_gather_nonblocking_index(fam, local, item, count, at, size);
                if (how == 2) c_fam_scatter_blocking_index(fam, local, item, count, at, size);
                if (how == 3) c_fam_scatter_nonblocking_index(fam, local, item, count, at, size);
            }
            break;
        }
        case 16: {
            c_fam_desc *item = ItemSlot(s, input);
            uint64_t offset = input.Below(2 << 20);
            uint64_t value = input.Number(8);
            switch (input.Byte() % 10) {
                case 0:
                    c_fam_set_int32(fam, item, offset, static_cast<int32_t>(value));
                    break;
                case 1:
                    c_fam_add_int64(fam, item, offset, static_cast<int64_t>(value));
                    break;
                case 2:
                    c_fam_subtract_uint32(fam, item, offset, static_cast<uint32_t>(value));
                    break;
                case 3:
                    c_fam_min_double(fam, item, offset, static_cast<double>(value));
                    break;
                case 4:
                    c_fam_max_float(fam, item, offset, static_cast<float>(value));
                    break;
                case 5:
                    c_fam_and_uint32(fam, item, offset, static_cast<uint32_t>(value));
                    break;
                case 6:
                    c_fam_fetch_add_uint64(fam, item, offset, value);
                    break;
                case 7:
                    c_fam_swap_uint64(fam, item, offset, value);
                    break;
                case 8:
                    c_fam_compare_swap_uint64(fam, item, offset, value, ~value);
                    break;
                default:
                    c_fam_fetch_int64(fam, item, offset);
                    break;
            }
            break;
        }
        case 17: {
            c_fam_desc *src = ItemSlot(s, input), *dest = ItemSlot(s, input);
            uint64_t from = input.Below(2 << 20), to = input.Below(2 << 20);
            void *wait = c_fam_copy(fam, src, from, dest, to, input.Below(2 << 20));
            if (wait) c_fam_copy_wait(fam, wait);
            break;
        }
        case 18: {
            std::string name = Name(input);
            c_fam_desc *item = ItemSlot(s, input);
            if (void *wait = c_fam_backup(fam, item, name.c_str(), nullptr)) {
                c_fam_backup_wait(fam, wait);
            }
            if (void *wait = c_fam_restore(fam, name.c_str(), ItemSlot(s, input))) {
                c_fam_restore_wait(fam, wait);
            }
            break;
        }
        case 19: {
            std::string backup = Name(input), item = Name(input);
            c_fam_region_desc *region = RegionSlot(s, input);
            c_fam_desc *restored = nullptr;
            if (void *wait = c_fam_restore_region(fam, backup.c_str(), region, item.c_str(), perm,
                                                  &restored)) {
                c_fam_restore_wait(fam, wait);
            }
            ReplaceItem(ItemSlot(s, input), restored);
            break;
        }
        case 20: {
            std::string name = Name(input);
            free(c_fam_list_backup(fam, input.Byte() & 1 ? "*" : name.c_str()));
            if (void *wait = c_fam_delete_backup(fam, name.c_str())) {
                c_fam_delete_backup_wait(fam, wait);
            }
            break;
        }
        case 21: {
            c_fam_desc *item = ItemSlot(s, input);
            if (void *mapped = c_fam_map(fam, item)) c_fam_unmap(fam, mapped, item);
            break;
        }
        case 22:
            input.Byte() & 1 ? c_fam_fence(fam) : c_fam_quiet(fam);
            break;
        default: {
            c_fam_desc *&slot = ItemSlot(s, input);
            if (input.Byte() & 1) c_fam_close(fam, slot);
            ReplaceItem(slot, nullptr);
            break;
        }
    }
    // Every failed call leaves a message naming what failed.
    if (c_fam_error() != 0 && std::strlen(c_fam_error_msg()) == 0) {
        std::fprintf(stderr, "fuzz: call %u failed (error %d) without a message\n", op,
                     c_fam_error());
        std::abort();
    }
}

void Clean(State &s) {
    c_fam_quiet(fam);
    for (c_fam_desc *&item : s.items) ReplaceItem(item, nullptr);
    for (c_fam_region_desc *&region : s.regions) ReplaceRegion(region, nullptr);
    for (const std::string &name : s.names) {
        if (c_fam_region_desc *region = c_fam_lookup_region(fam, name.c_str())) {
            if (c_fam_destroy_region(fam, region) != 0) {
                std::fprintf(stderr, "fuzz: region \"%s\" cannot be destroyed: %s\n", name.c_str(),
                             c_fam_error_msg());
                std::abort();
            }
            c_fam_free_region_desc(region);
        }
    }
    if (void *wait = c_fam_delete_backup(fam, "*")) c_fam_delete_backup_wait(fam, wait);
}

std::vector<std::string> Seeds() {
    // create region "a" (RAID none), allocate named "a" in it, put, get, atomics, gather,
    // copy to a second item, backup and restore, map, stat, destroy.
    const unsigned char script[] = {
        0,  0xff, 0x01, 1, 1,  1,    0,    0,    0,    0, 0x40,
        0,  0x10, 0,                                       // create "a", 1 MiB
        7,  0xff, 0x01, 0, 0,  0,    0x40, 0,    0x10, 0,  // allocate named "a" 4 KiB
        6,  0xff, 0x01, 0, 1,  0x40, 0,    0x10, 0,        // allocate item 1
        13, 0xff, 0x01, 0, 0,  0x40, 0,    0x10, 0,    1,  // put 4 KiB
        12, 0xff, 0x01, 0, 8,  0x40, 0,    0x08, 0,    0,  // get non-blocking
        16, 0xff, 0x01, 0, 64, 5,    0,    0,    0,    0, 0,
        0,  0,    6,                                          // fetch_add
        14, 0xff, 0x01, 0, 7,  16,   3,    2,    1,           // gather stride
        15, 0xff, 0x01, 0, 7,  4,    9,    1,    2,    3, 4,  // scatter index
        17, 0xff, 0x01, 0, 1,  0,    16,   64,                // copy
        18, 0xff, 0x01, 1, 0,  1,                             // backup "b", restore into 1
        21, 0xff, 0x01, 0,                                    // map
        10, 0xff, 0x01, 0,                                    // stat
        9,  0xff, 0x01, 1,                                    // deallocate
        22, 0,    0,    0,                                    // quiet
        2,  0xff, 0x01, 0,                                    // destroy
        16, 0xff, 0x01, 0, 64, 5,    0,    0,    0,    0, 0,
        0,  0,    6,  // atomic on a destroyed region
    };
    return {std::string(reinterpret_cast<const char *>(script), sizeof script)};
}

}  // namespace
}  // namespace fampool::fuzz

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    using namespace fampool::fuzz;
    WriteSeedsIfAsked(Seeds);
    home = &ProgramScratch("c-api");
    setenv("FAMPOOL_HOME", home->path().c_str(), 1);
    // The store's heap files too (by default in /dev/shm): the scratch directory goes at exit,
    // and heaps left in /dev/shm by a store that no longer exists are 1 GiB files nobody owns.
    setenv("FAMPOOL_SHM_DIR", home->path().c_str(), 1);
    unsetenv("FAMPOOL_CONFIG");
    unsetenv("OPENFAM_ROOT");
    fam = c_fam_create();
    if (c_fam_initialize(fam, "fuzz", nullptr) != 0) {
        std::fprintf(stderr, "fuzz: c_fam_initialize: %s\n", c_fam_error_msg());
        std::abort();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace fampool::fuzz;
    Input input(data, size);
    State state;
    for (int steps = 0; !input.empty() && steps < 64; ++steps) Step(state, input);
    Clean(state);
    return 0;
}
