// atomics.cc: atomic updates of single values in FAM.
//
// Atomics act on one value at an offset aligned to its size, and are atomic among all PEs and
// threads that touch the same location through them. Non-fetching forms (fam_set, fam_add,
// fam_subtract, fam_min, fam_max, fam_and, fam_or, fam_xor) only update, and report their
// errors at the next fam_quiet; fetching forms (fam_fetch_<type>, fam_fetch_add, ...,
// fam_swap, fam_compare_swap) return the value found and throw at once.
// The operand's C++ type picks the overload, so write the literal's type explicitly
// (uint64_t{5}, 2.25, int32_t{7}).
//
// The last part hands out tickets from one shared counter to four threads; every ticket is
// different because fam_fetch_add is atomic. Threads sharing one fam object need the thread
// model FAM_THREAD_MULTIPLE, which is requested through Fam_Options.
//
// Run it alone: ./atomics. It exits 0 when every result is the one the API promises.
#include <fam/fam.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "example_atomics";
constexpr uint64_t kMiB = 1024 * 1024;

// Where each value lives in the item (each offset aligned to its type's size).
constexpr uint64_t kCounter = 0;   // uint64
constexpr uint64_t kLevel = 8;     // int64
constexpr uint64_t kFlags = 16;    // uint32
constexpr uint64_t kSmall = 20;    // int32
constexpr uint64_t kAmount = 24;   // double
constexpr uint64_t kVersion = 32;  // uint64
constexpr uint64_t kWide = 48;     // int128
constexpr uint64_t kTickets = 64;  // uint64

void expect(bool ok, const char *what) {
    if (!ok) throw std::runtime_error(what);
}

void destroy_if_exists(fam &my_fam, const char *name) {
    try {
        Fam_Region_Descriptor *stale = my_fam.fam_lookup_region(name);
        my_fam.fam_destroy_region(stale);
        delete stale;
        std::printf("  destroyed region \"%s\" left by an earlier run\n", name);
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
    }
}

void arithmetic(fam &my_fam, Fam_Descriptor *item) {
    my_fam.fam_set(item, kCounter, uint64_t{100});
    my_fam.fam_add(item, kCounter, uint64_t{5});
    uint64_t before = my_fam.fam_fetch_add(item, kCounter, uint64_t{10});
    my_fam.fam_subtract(item, kCounter, uint64_t{15});
    uint64_t now = my_fam.fam_fetch_uint64(item, kCounter);
    expect(before == 105 && now == 100, "uint64 set/add/fetch_add/subtract");
    std::printf(
        "atomics: uint64 set 100, add 5, fetch_add 10 (returned %llu), subtract 15 -> "
        "%llu\n",
        static_cast<unsigned long long>(before), static_cast<unsigned long long>(now));

    my_fam.fam_set(item, kAmount, 1.5);
    my_fam.fam_add(item, kAmount, 2.25);
    double amount = my_fam.fam_fetch_add(item, kAmount, -0.75);
    expect(amount == 3.75 && my_fam.fam_fetch_double(item, kAmount) == 3.0, "double add");
    std::printf("atomics: double set 1.5, add 2.25, fetch_add -0.75 (returned %.2f) -> %.2f\n",
                amount, my_fam.fam_fetch_double(item, kAmount));
}

void min_max_and_bits(fam &my_fam, Fam_Descriptor *item) {
    my_fam.fam_set(item, kLevel, int64_t{50});
    my_fam.fam_min(item, kLevel, int64_t{20});  // 20
    my_fam.fam_max(item, kLevel, int64_t{70});  // 70
    int64_t seen = my_fam.fam_fetch_max(item, kLevel, int64_t{60});
    expect(seen == 70 && my_fam.fam_fetch_int64(item, kLevel) == 70, "int64 min/max");
    std::printf("atomics: int64 set 50, min 20, max 70, fetch_max 60 (returned %lld) -> %lld\n",
                static_cast<long long>(seen),
                static_cast<long long>(my_fam.fam_fetch_int64(item, kLevel)));

    my_fam.fam_set(item, kFlags, uint32_t{0b1100});
    my_fam.fam_and(item, kFlags, uint32_t{0b1010});                       // 1000
    my_fam.fam_or(item, kFlags, uint32_t{0b0001});                        // 1001
    uint32_t old = my_fam.fam_fetch_xor(item, kFlags, uint32_t{0b1111});  // 0110
    uint32_t flags = my_fam.fam_fetch_uint32(item, kFlags);
    expect(old == 0b1001 && flags == 0b0110, "uint32 and/or/xor");
    std::printf(
        "atomics: uint32 flags 1100 and 1010, or 0001, fetch_xor 1111 (returned %x) -> "
        "%x (hex)\n",
        old, flags);

    my_fam.fam_set(item, kSmall, int32_t{7});
    int32_t swapped_out = my_fam.fam_swap(item, kSmall, int32_t{-7});
    expect(swapped_out == 7 && my_fam.fam_fetch_int32(item, kSmall) == -7, "int32 swap");
    std::printf("atomics: int32 swap 7 for -7 (returned %d)\n", swapped_out);
}

// Compare-and-swap: the update happens only if the value is still the one expected. This is
// how an optimistic update (read, compute, write if nobody interfered) is built.
void compare_swap(fam &my_fam, Fam_Descriptor *item) {
    my_fam.fam_set(item, kVersion, uint64_t{1});
    uint64_t found = my_fam.fam_compare_swap(item, kVersion, uint64_t{1}, uint64_t{2});
    expect(found == 1 && my_fam.fam_fetch_uint64(item, kVersion) == 2, "CAS that should win");
    found = my_fam.fam_compare_swap(item, kVersion, uint64_t{1}, uint64_t{3});
    expect(found == 2 && my_fam.fam_fetch_uint64(item, kVersion) == 2, "CAS that should lose");
    std::printf("atomics: compare_swap 1->2 won; a second 1->3 lost (found %llu, value kept)\n",
                static_cast<unsigned long long>(found));

    // 128-bit values: two 64-bit halves updated together.
    int128_t wide = (static_cast<int128_t>(0x0123456789abcdefLL) << 64) | 0x1111;
    my_fam.fam_set(item, kWide, wide);
    int128_t next = wide + 1;
    int128_t prior = my_fam.fam_compare_swap(item, kWide, wide, next);
    expect(prior == wide && my_fam.fam_fetch_int128(item, kWide) == next, "int128 CAS");
    std::printf("atomics: int128 compare_swap of a 128-bit value succeeded\n");

    // A non-fetching atomic reports its errors at the next fam_quiet, as OpenFAM programs
    // expect (fetching ones throw at once).
    my_fam.fam_add(item, kCounter + 4, uint64_t{1});  // not aligned to 8 bytes
    try {
        my_fam.fam_quiet();
        throw std::runtime_error("a misaligned atomic was not refused");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_ERR_INVALID, "misaligned atomic: wrong error code");
        std::printf("atomics: uint64 add at offset 4 refused as expected: %s\n", e.what());
    }
}

// Four threads take tickets from one counter; atomicity makes every ticket unique.
void tickets(fam &my_fam, Fam_Descriptor *item) {
    constexpr int kThreads = 4;
    constexpr int kPerThread = 5000;
    my_fam.fam_set(item, kTickets, uint64_t{0});
    std::vector<std::vector<uint64_t>> taken(kThreads);
    std::vector<std::exception_ptr> failure(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            try {
                for (int i = 0; i < kPerThread; ++i)
                    taken[t].push_back(my_fam.fam_fetch_add(item, kTickets, uint64_t{1}));
            } catch (...) {
                failure[t] = std::current_exception();  // rethrown by the main thread
            }
        });
    }
    for (std::thread &thread : threads) thread.join();
    for (const std::exception_ptr &f : failure)
        if (f) std::rethrow_exception(f);

    std::vector<uint64_t> all;
    for (const auto &mine : taken) all.insert(all.end(), mine.begin(), mine.end());
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) expect(all[i] == i, "two threads got one ticket");
    uint64_t total = my_fam.fam_fetch_uint64(item, kTickets);
    expect(total == kThreads * kPerThread, "ticket counter lost increments");
    std::printf("atomics: %d threads took %d tickets each: all %llu distinct, counter = %llu\n",
                kThreads, kPerThread, static_cast<unsigned long long>(all.size()),
                static_cast<unsigned long long>(total));
}

void run(fam &my_fam) {
    destroy_if_exists(my_fam, kRegionName);
    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, kMiB, 0700, nullptr);
    Fam_Descriptor *item = my_fam.fam_allocate("values", 4096, 0600, region);

    arithmetic(my_fam, item);
    min_max_and_bits(my_fam, item);
    compare_swap(my_fam, item);
    tickets(my_fam, item);

    my_fam.fam_deallocate(item);
    delete item;
    my_fam.fam_destroy_region(region);
    delete region;
}

}  // namespace

int main() {
    fam my_fam;
    try {
        // Every field left NULL takes its configured default; only the thread model is set.
        char thread_model[] = "FAM_THREAD_MULTIPLE";
        Fam_Options options{};
        options.famThreadModel = thread_model;
        my_fam.fam_initialize("default", &options);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("atomics: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "atomics: FAILED: %s (Fam_Error %d)\n", e.what(), e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "atomics: FAILED: %s\n", e.what());
    }
    return 1;
}
