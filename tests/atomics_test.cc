// atomics_test.cc: every atomic of fam.h for every type it has, its alignment and range checks
// and its permission check.
#include <fam/fam.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kItemSize = 4096;
constexpr uint64_t kOffset = 128;  // aligned for every type, and not 0

// Values per type, chosen so that low < mid < high, the 64-bit ones do not fit 32 bits and
// the floating-point ones are exact in sums and differences.
template <typename T>
struct Values;
template <>
struct Values<int32_t> {
    static int32_t low() { return -70000; }
    static int32_t mid() { return 100000; }
    static int32_t high() { return 2000000000; }
};
template <>
struct Values<int64_t> {
    static int64_t low() { return -5000000000ll; }
    static int64_t mid() { return 7000000000ll; }
    static int64_t high() { return 9000000000000000000ll; }
};
template <>
struct Values<uint32_t> {
    static uint32_t low() { return 3u; }
    static uint32_t mid() { return 100000u; }
    static uint32_t high() { return 4000000000u; }
};
template <>
struct Values<uint64_t> {
    static uint64_t low() { return 3u; }
    static uint64_t mid() { return 7000000000ull; }
    static uint64_t high() { return 0xF000000000000000ull; }
};
template <>
struct Values<float> {
    static float low() { return -7.5f; }
    static float mid() { return 10.25f; }
    static float high() { return 3.0e9f; }
};
template <>
struct Values<double> {
    static double low() { return -7.5; }
    static double mid() { return 1099511627776.5; }
    static double high() { return 1.0e300; }
};

// fam_fetch_<type> for T, and its name.
template <typename T>
T FetchAs(openfam::fam *f, Fam_Descriptor *item, uint64_t offset) {
    if constexpr (std::is_same_v<T, int32_t>) return f->fam_fetch_int32(item, offset);
    if constexpr (std::is_same_v<T, int64_t>) return f->fam_fetch_int64(item, offset);
    if constexpr (std::is_same_v<T, uint32_t>) return f->fam_fetch_uint32(item, offset);
    if constexpr (std::is_same_v<T, uint64_t>) return f->fam_fetch_uint64(item, offset);
    if constexpr (std::is_same_v<T, float>) return f->fam_fetch_float(item, offset);
    if constexpr (std::is_same_v<T, double>) return f->fam_fetch_double(item, offset);
    if constexpr (std::is_same_v<T, int128_t>) return f->fam_fetch_int128(item, offset);
}

template <typename T>
const char *FetchName() {
    if constexpr (std::is_same_v<T, int32_t>) return "fam_fetch_int32";
    if constexpr (std::is_same_v<T, int64_t>) return "fam_fetch_int64";
    if constexpr (std::is_same_v<T, uint32_t>) return "fam_fetch_uint32";
    if constexpr (std::is_same_v<T, uint64_t>) return "fam_fetch_uint64";
    if constexpr (std::is_same_v<T, float>) return "fam_fetch_float";
    if constexpr (std::is_same_v<T, double>) return "fam_fetch_double";
    if constexpr (std::is_same_v<T, int128_t>) return "fam_fetch_int128";
}

struct TypeNames {
    template <typename T>
    static std::string GetName(int) {
        if constexpr (std::is_same_v<T, int32_t>) return "int32";
        if constexpr (std::is_same_v<T, int64_t>) return "int64";
        if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
        if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
        if constexpr (std::is_same_v<T, float>) return "float";
        if constexpr (std::is_same_v<T, double>) return "double";
        return "other";
    }
};

// A region "r" with a 4 KiB item "i" (read-write), plus, on request, a read-only item.
class AtomicsTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 1 << 20);
        item_ = Allocate("i", kItemSize, region_.get());
    }
    void TearDown() override {
        read_only_.reset();
        item_region_.reset();
        item_.reset();
        region_.reset();
        FamTest::TearDown();
    }

    // An item with permissions 0400 in a DATAITEM-level region, so its own bits apply.
    Fam_Descriptor *ReadOnlyItem() {
        if (!read_only_) {
            Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
            item_region_ = CreateRegion("per-item", 1 << 20, 0777, &attrs);
            read_only_ = Allocate("ro", kItemSize, item_region_.get(), 0400);
        }
        return read_only_.get();
    }

    template <typename T>
    T Fetch(uint64_t offset = kOffset) {
        return FetchAs<T>(fam(), item_.get(), offset);
    }

    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
    std::unique_ptr<Fam_Region_Descriptor> item_region_;
    std::unique_ptr<Fam_Descriptor> read_only_;
};

// ---------------------------------------------------------------------------------------------
// The six numeric types: set, fetch, add, subtract, min, max, swap and their fetching forms

template <typename T>
class NumericAtomicsTest : public AtomicsTest {
  protected:
    T low() { return Values<T>::low(); }
    T mid() { return Values<T>::mid(); }
    T high() { return Values<T>::high(); }
    // An offset aligned to half the type's size but not to its size.
    static constexpr uint64_t kMisaligned = kOffset + sizeof(T) / 2;
};

using NumericTypes = ::testing::Types<int32_t, int64_t, uint32_t, uint64_t, float, double>;
TYPED_TEST_SUITE(NumericAtomicsTest, NumericTypes, TypeNames);

TYPED_TEST(NumericAtomicsTest, FetchOfNewItemIsZero) {
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(0));
}

TYPED_TEST(NumericAtomicsTest, SetThenFetchReturnsValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->high());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->high());
}

TYPED_TEST(NumericAtomicsTest, SetStoresValueBytesSeenByGet) {
    TypeParam value = this->mid();
    this->fam()->fam_set(this->item_.get(), kOffset, value);
    std::vector<uint8_t> expected(sizeof(value));
    std::memcpy(expected.data(), &value, sizeof(value));
    EXPECT_EQ(this->GetBytes(this->item_.get(), kOffset, sizeof(value)), expected);
}

TYPED_TEST(NumericAtomicsTest, FetchReadsValuePut) {
    TypeParam value = this->low();
    std::vector<uint8_t> bytes(sizeof(value));
    std::memcpy(bytes.data(), &value, sizeof(value));
    this->PutBytes(this->item_.get(), kOffset, bytes);
    EXPECT_EQ(this->template Fetch<TypeParam>(), value);
}

TYPED_TEST(NumericAtomicsTest, SetTouchesOnlyItsOwnBytes) {
    this->PutBytes(this->item_.get(), kOffset - 8,
                   std::vector<uint8_t>(sizeof(TypeParam) + 16, 0xEE));
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    std::vector<uint8_t> before = this->GetBytes(this->item_.get(), kOffset - 8, 8);
    std::vector<uint8_t> after = this->GetBytes(this->item_.get(), kOffset + sizeof(TypeParam), 8);
    EXPECT_EQ(before, std::vector<uint8_t>(8, 0xEE));
    EXPECT_EQ(after, std::vector<uint8_t>(8, 0xEE));
}

TYPED_TEST(NumericAtomicsTest, AddAddsToStoredValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    this->fam()->fam_add(this->item_.get(), kOffset, this->low());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->mid() + this->low()));
}

TYPED_TEST(NumericAtomicsTest, SubtractSubtractsFromStoredValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    this->fam()->fam_subtract(this->item_.get(), kOffset, this->low());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->mid() - this->low()));
}

TYPED_TEST(NumericAtomicsTest, MinStoresSmallerValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    this->fam()->fam_min(this->item_.get(), kOffset, this->low());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->low());
}

TYPED_TEST(NumericAtomicsTest, MinKeepsStoredValueWhenItIsSmaller) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->low());
    this->fam()->fam_min(this->item_.get(), kOffset, this->high());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->low());
}

TYPED_TEST(NumericAtomicsTest, MaxStoresLargerValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    this->fam()->fam_max(this->item_.get(), kOffset, this->high());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->high());
}

TYPED_TEST(NumericAtomicsTest, MaxKeepsStoredValueWhenItIsLarger) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->high());
    this->fam()->fam_max(this->item_.get(), kOffset, this->low());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->high());
}

TYPED_TEST(NumericAtomicsTest, FetchAddReturnsOldValueAndAdds) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    EXPECT_EQ(this->fam()->fam_fetch_add(this->item_.get(), kOffset, this->low()), this->mid());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->mid() + this->low()));
}

TYPED_TEST(NumericAtomicsTest, FetchSubtractReturnsOldValueAndSubtracts) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    EXPECT_EQ(this->fam()->fam_fetch_subtract(this->item_.get(), kOffset, this->low()),
              this->mid());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->mid() - this->low()));
}

TYPED_TEST(NumericAtomicsTest, FetchMinReturnsOldValueAndStoresMinimum) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    EXPECT_EQ(this->fam()->fam_fetch_min(this->item_.get(), kOffset, this->low()), this->mid());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->low());
    EXPECT_EQ(this->fam()->fam_fetch_min(this->item_.get(), kOffset, this->high()), this->low());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->low());
}

TYPED_TEST(NumericAtomicsTest, FetchMaxReturnsOldValueAndStoresMaximum) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->mid());
    EXPECT_EQ(this->fam()->fam_fetch_max(this->item_.get(), kOffset, this->high()), this->mid());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->high());
    EXPECT_EQ(this->fam()->fam_fetch_max(this->item_.get(), kOffset, this->low()), this->high());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->high());
}

TYPED_TEST(NumericAtomicsTest, SwapReturnsOldValueAndStoresNew) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->low());
    EXPECT_EQ(this->fam()->fam_swap(this->item_.get(), kOffset, this->high()), this->low());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->high());
}

TYPED_TEST(NumericAtomicsTest, LastSlotOfItemIsUsable) {
    uint64_t last = kItemSize - sizeof(TypeParam);
    this->fam()->fam_set(this->item_.get(), last, this->mid());
    EXPECT_EQ(this->template Fetch<TypeParam>(last), this->mid());
}

TYPED_TEST(NumericAtomicsTest, MisalignedSetFailsAtQuietWithInvalid) {
    EXPECT_FAM_ERROR_AT_QUIET(
        this->fam(), this->fam()->fam_set(this->item_.get(), this->kMisaligned, this->mid()),
        FAM_ERR_INVALID, "fam_set");
}

TYPED_TEST(NumericAtomicsTest, MisalignedFetchThrowsInvalid) {
    EXPECT_FAM_ERROR(this->template Fetch<TypeParam>(this->kMisaligned), FAM_ERR_INVALID,
                     FetchName<TypeParam>());
}

TYPED_TEST(NumericAtomicsTest, MisalignedFetchAddThrowsInvalidAndChangesNothing) {
    EXPECT_FAM_ERROR(this->fam()->fam_fetch_add(this->item_.get(), this->kMisaligned, this->mid()),
                     FAM_ERR_INVALID, "fam_fetch_add");
    EXPECT_EQ(this->GetBytes(this->item_.get(), kOffset, 2 * sizeof(TypeParam)),
              std::vector<uint8_t>(2 * sizeof(TypeParam), 0));
}

TYPED_TEST(NumericAtomicsTest, MisalignedMinFailsAtQuietWithInvalid) {
    EXPECT_FAM_ERROR_AT_QUIET(
        this->fam(), this->fam()->fam_min(this->item_.get(), this->kMisaligned, this->low()),
        FAM_ERR_INVALID, "fam_min");
}

TYPED_TEST(NumericAtomicsTest, SetPastEndFailsAtQuietWithOutOfRange) {
    EXPECT_FAM_ERROR_AT_QUIET(this->fam(),
                              this->fam()->fam_set(this->item_.get(), kItemSize, this->mid()),
                              FAM_ERR_OUTOFRANGE, "fam_set");
}

TYPED_TEST(NumericAtomicsTest, FetchPastEndThrowsOutOfRange) {
    EXPECT_FAM_ERROR(this->template Fetch<TypeParam>(kItemSize), FAM_ERR_OUTOFRANGE,
                     FetchName<TypeParam>());
}

TYPED_TEST(NumericAtomicsTest, SwapPastEndThrowsOutOfRange) {
    EXPECT_FAM_ERROR(this->fam()->fam_swap(this->item_.get(), kItemSize * 2, this->mid()),
                     FAM_ERR_OUTOFRANGE, "fam_swap");
}

TYPED_TEST(NumericAtomicsTest, AddWithOffsetOverflowFailsAtQuietWithOutOfRange) {
    uint64_t wrapping = UINT64_MAX - sizeof(TypeParam) + 1;  // aligned; + size wraps to 0
    EXPECT_FAM_ERROR_AT_QUIET(this->fam(),
                              this->fam()->fam_add(this->item_.get(), wrapping, this->mid()),
                              FAM_ERR_OUTOFRANGE, "fam_add");
    EXPECT_EQ(this->template Fetch<TypeParam>(0), TypeParam(0));
}

TYPED_TEST(NumericAtomicsTest, SetOnReadOnlyItemFailsAtQuietWithNoPerm) {
    EXPECT_FAM_ERROR_AT_QUIET(this->fam(),
                              this->fam()->fam_set(this->ReadOnlyItem(), kOffset, this->mid()),
                              FAM_ERR_NOPERM, "fam_set");
}

TYPED_TEST(NumericAtomicsTest, AddOnReadOnlyItemFailsAtQuietWithNoPerm) {
    EXPECT_FAM_ERROR_AT_QUIET(this->fam(),
                              this->fam()->fam_add(this->ReadOnlyItem(), kOffset, this->mid()),
                              FAM_ERR_NOPERM, "fam_add");
}

TYPED_TEST(NumericAtomicsTest, FetchAddOnReadOnlyItemThrowsNoPerm) {
    EXPECT_FAM_ERROR(this->fam()->fam_fetch_add(this->ReadOnlyItem(), kOffset, this->mid()),
                     FAM_ERR_NOPERM, "fam_fetch_add");
}

TYPED_TEST(NumericAtomicsTest, SwapOnReadOnlyItemThrowsNoPerm) {
    EXPECT_FAM_ERROR(this->fam()->fam_swap(this->ReadOnlyItem(), kOffset, this->mid()),
                     FAM_ERR_NOPERM, "fam_swap");
}

TYPED_TEST(NumericAtomicsTest, FetchOnReadOnlyItemIsAllowed) {
    EXPECT_EQ(FetchAs<TypeParam>(this->fam(), this->ReadOnlyItem(), kOffset), TypeParam(0));
}

TYPED_TEST(NumericAtomicsTest, SetOnNullDescriptorThrowsNullptr) {
    EXPECT_FAM_ERROR(this->fam()->fam_set(nullptr, kOffset, this->mid()), FAM_ERR_NULLPTR,
                     "fam_set");
}

// ---------------------------------------------------------------------------------------------
// Bitwise: and, or, xor and their fetching forms (uint32, uint64)

template <typename T>
class BitwiseAtomicsTest : public AtomicsTest {
  protected:
    // Bits in both halves of a 64-bit word.
    static T ones() { return static_cast<T>(0xF0F0F0F0F0F0F0F0ull); }
    static T mask() { return static_cast<T>(0xFF00FF00FF00FF00ull); }
};

using BitwiseTypes = ::testing::Types<uint32_t, uint64_t>;
TYPED_TEST_SUITE(BitwiseAtomicsTest, BitwiseTypes, TypeNames);

TYPED_TEST(BitwiseAtomicsTest, AndKeepsOnlyCommonBits) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->ones());
    this->fam()->fam_and(this->item_.get(), kOffset, this->mask());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->ones() & this->mask()));
}

TYPED_TEST(BitwiseAtomicsTest, OrSetsBits) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->ones());
    this->fam()->fam_or(this->item_.get(), kOffset, this->mask());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->ones() | this->mask()));
}

TYPED_TEST(BitwiseAtomicsTest, XorFlipsBits) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->ones());
    this->fam()->fam_xor(this->item_.get(), kOffset, this->mask());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->ones() ^ this->mask()));
}

TYPED_TEST(BitwiseAtomicsTest, FetchAndReturnsOldValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->ones());
    EXPECT_EQ(this->fam()->fam_fetch_and(this->item_.get(), kOffset, this->mask()), this->ones());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->ones() & this->mask()));
}

TYPED_TEST(BitwiseAtomicsTest, FetchOrReturnsOldValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->ones());
    EXPECT_EQ(this->fam()->fam_fetch_or(this->item_.get(), kOffset, this->mask()), this->ones());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->ones() | this->mask()));
}

TYPED_TEST(BitwiseAtomicsTest, FetchXorReturnsOldValue) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->ones());
    EXPECT_EQ(this->fam()->fam_fetch_xor(this->item_.get(), kOffset, this->mask()), this->ones());
    EXPECT_EQ(this->template Fetch<TypeParam>(), TypeParam(this->ones() ^ this->mask()));
}

TYPED_TEST(BitwiseAtomicsTest, MisalignedXorFailsAtQuietWithInvalid) {
    EXPECT_FAM_ERROR_AT_QUIET(
        this->fam(),
        this->fam()->fam_xor(this->item_.get(), kOffset + sizeof(TypeParam) / 2, this->mask()),
        FAM_ERR_INVALID, "fam_xor");
}

TYPED_TEST(BitwiseAtomicsTest, OrPastEndFailsAtQuietWithOutOfRange) {
    EXPECT_FAM_ERROR_AT_QUIET(this->fam(),
                              this->fam()->fam_or(this->item_.get(), kItemSize, this->mask()),
                              FAM_ERR_OUTOFRANGE, "fam_or");
}

TYPED_TEST(BitwiseAtomicsTest, AndOnReadOnlyItemFailsAtQuietWithNoPerm) {
    EXPECT_FAM_ERROR_AT_QUIET(this->fam(),
                              this->fam()->fam_and(this->ReadOnlyItem(), kOffset, this->mask()),
                              FAM_ERR_NOPERM, "fam_and");
}

// ---------------------------------------------------------------------------------------------
// Compare and swap (int32, int64, uint32, uint64; int128 below)

template <typename T>
class CompareSwapTest : public AtomicsTest {
  protected:
    static T a() { return Values<T>::mid(); }
    static T b() { return Values<T>::high(); }
    static T c() { return Values<T>::low(); }
};

using CompareSwapTypes = ::testing::Types<int32_t, int64_t, uint32_t, uint64_t>;
TYPED_TEST_SUITE(CompareSwapTest, CompareSwapTypes, TypeNames);

TYPED_TEST(CompareSwapTest, StoresNewValueWhenExpectedMatches) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->a());
    EXPECT_EQ(this->fam()->fam_compare_swap(this->item_.get(), kOffset, this->a(), this->b()),
              this->a());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->b());
}

TYPED_TEST(CompareSwapTest, LeavesValueWhenExpectedDiffers) {
    this->fam()->fam_set(this->item_.get(), kOffset, this->a());
    EXPECT_EQ(this->fam()->fam_compare_swap(this->item_.get(), kOffset, this->c(), this->b()),
              this->a());
    EXPECT_EQ(this->template Fetch<TypeParam>(), this->a());
}

TYPED_TEST(CompareSwapTest, MisalignedThrowsInvalid) {
    EXPECT_FAM_ERROR(this->fam()->fam_compare_swap(
                         this->item_.get(), kOffset + sizeof(TypeParam) / 2, this->a(), this->b()),
                     FAM_ERR_INVALID, "fam_compare_swap");
}

TYPED_TEST(CompareSwapTest, PastEndThrowsOutOfRange) {
    EXPECT_FAM_ERROR(
        this->fam()->fam_compare_swap(this->item_.get(), kItemSize, this->a(), this->b()),
        FAM_ERR_OUTOFRANGE, "fam_compare_swap");
}

TYPED_TEST(CompareSwapTest, OnReadOnlyItemThrowsNoPerm) {
    EXPECT_FAM_ERROR(
        this->fam()->fam_compare_swap(this->ReadOnlyItem(), kOffset, TypeParam(0), this->b()),
        FAM_ERR_NOPERM, "fam_compare_swap");
}

// ---------------------------------------------------------------------------------------------
// 128-bit set, fetch and compare-and-swap, with values that use both 64-bit halves

int128_t Make128(uint64_t high, uint64_t low) {
    return static_cast<int128_t>((static_cast<unsigned __int128>(high) << 64) | low);
}

std::string Hex128(int128_t value) {
    char text[40];
    auto u = static_cast<unsigned __int128>(value);
    snprintf(text, sizeof(text), "0x%016llx%016llx", static_cast<unsigned long long>(u >> 64),
             static_cast<unsigned long long>(u));
    return text;
}

#define EXPECT_EQ_128(actual, expected)                                         \
    do {                                                                        \
        int128_t actual_ = (actual), expected_ = (expected);                    \
        EXPECT_TRUE(actual_ == expected_)                                       \
            << "got " << Hex128(actual_) << ", expected " << Hex128(expected_); \
    } while (0)

using Int128AtomicsTest = AtomicsTest;

TEST_F(Int128AtomicsTest, SetThenFetchKeepsBothHalves) {
    int128_t value = Make128(0x0123456789ABCDEFull, 0xFEDCBA9876543210ull);
    fam()->fam_set(item_.get(), kOffset, value);
    EXPECT_EQ_128(fam()->fam_fetch_int128(item_.get(), kOffset), value);
}

TEST_F(Int128AtomicsTest, SetThenFetchKeepsNegativeValue) {
    int128_t value = -Make128(0x1ull, 0x8000000000000001ull);
    fam()->fam_set(item_.get(), kOffset, value);
    EXPECT_EQ_128(fam()->fam_fetch_int128(item_.get(), kOffset), value);
}

TEST_F(Int128AtomicsTest, SetStoresSixteenLittleEndianBytes) {
    int128_t value = Make128(0x1112131415161718ull, 0x0102030405060708ull);
    fam()->fam_set(item_.get(), kOffset, value);
    std::vector<uint8_t> expected(16);
    std::memcpy(expected.data(), &value, 16);
    EXPECT_EQ(GetBytes(item_.get(), kOffset, 16), expected);
}

TEST_F(Int128AtomicsTest, CompareSwapStoresNewValueWhenExpectedMatches) {
    int128_t old_value = Make128(0xAAAAAAAAAAAAAAAAull, 0x5555555555555555ull);
    int128_t new_value = Make128(0x0F0F0F0F0F0F0F0Full, 0xF0F0F0F0F0F0F0F0ull);
    fam()->fam_set(item_.get(), kOffset, old_value);
    EXPECT_EQ_128(fam()->fam_compare_swap(item_.get(), kOffset, old_value, new_value), old_value);
    EXPECT_EQ_128(fam()->fam_fetch_int128(item_.get(), kOffset), new_value);
}

TEST_F(Int128AtomicsTest, CompareSwapFailsWhenOnlyLowHalfMatches) {
    int128_t stored = Make128(0xAAAAAAAAAAAAAAAAull, 0x5555555555555555ull);
    int128_t expected = Make128(0xBBBBBBBBBBBBBBBBull, 0x5555555555555555ull);
    int128_t new_value = Make128(1, 2);
    fam()->fam_set(item_.get(), kOffset, stored);
    EXPECT_EQ_128(fam()->fam_compare_swap(item_.get(), kOffset, expected, new_value), stored);
    EXPECT_EQ_128(fam()->fam_fetch_int128(item_.get(), kOffset), stored);
}

TEST_F(Int128AtomicsTest, CompareSwapFailsWhenOnlyHighHalfMatches) {
    int128_t stored = Make128(0xAAAAAAAAAAAAAAAAull, 0x5555555555555555ull);
    int128_t expected = Make128(0xAAAAAAAAAAAAAAAAull, 0x6666666666666666ull);
    int128_t new_value = Make128(1, 2);
    fam()->fam_set(item_.get(), kOffset, stored);
    EXPECT_EQ_128(fam()->fam_compare_swap(item_.get(), kOffset, expected, new_value), stored);
    EXPECT_EQ_128(fam()->fam_fetch_int128(item_.get(), kOffset), stored);
}

TEST_F(Int128AtomicsTest, OffsetAlignedTo8ButNot16IsRefused) {
    EXPECT_FAM_ERROR_AT_QUIET(fam(), fam()->fam_set(item_.get(), kOffset + 8, Make128(1, 1)),
                              FAM_ERR_INVALID, "fam_set");
    EXPECT_FAM_ERROR(fam()->fam_fetch_int128(item_.get(), kOffset + 8), FAM_ERR_INVALID,
                     "fam_fetch_int128");
    EXPECT_FAM_ERROR(
        fam()->fam_compare_swap(item_.get(), kOffset + 8, Make128(0, 0), Make128(1, 1)),
        FAM_ERR_INVALID, "fam_compare_swap");
}

TEST_F(Int128AtomicsTest, LastSlotOfItemIsUsable) {
    int128_t value = Make128(7, 9);
    fam()->fam_set(item_.get(), kItemSize - 16, value);
    EXPECT_EQ_128(fam()->fam_fetch_int128(item_.get(), kItemSize - 16), value);
}

TEST_F(Int128AtomicsTest, PastEndIsRefused) {
    EXPECT_FAM_ERROR_AT_QUIET(fam(), fam()->fam_set(item_.get(), kItemSize, Make128(1, 1)),
                              FAM_ERR_OUTOFRANGE, "fam_set");
    EXPECT_FAM_ERROR(fam()->fam_fetch_int128(item_.get(), kItemSize), FAM_ERR_OUTOFRANGE,
                     "fam_fetch_int128");
    EXPECT_FAM_ERROR(fam()->fam_compare_swap(item_.get(), kItemSize, Make128(0, 0), Make128(1, 1)),
                     FAM_ERR_OUTOFRANGE, "fam_compare_swap");
}

TEST_F(Int128AtomicsTest, CompareSwapOnReadOnlyItemThrowsNoPerm) {
    EXPECT_FAM_ERROR(fam()->fam_compare_swap(ReadOnlyItem(), kOffset, Make128(0, 0), Make128(1, 1)),
                     FAM_ERR_NOPERM, "fam_compare_swap");
}

TEST_F(Int128AtomicsTest, FetchOnReadOnlyItemIsAllowed) {
    EXPECT_EQ_128(fam()->fam_fetch_int128(ReadOnlyItem(), kOffset), Make128(0, 0));
}

}  // namespace
}  // namespace fampool_test
