// data_path_test.cc: get and put (blocking and non-blocking), gather and scatter (strided and
// indexed), fam_fence, fam_quiet and fam_progress.
#include <fam/fam.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kItemSize = 8 * kMiB;
constexpr uint64_t kSmallSize = 4096;

// A region "r" with an 8 MiB item "i" and a 4 KiB item "small", both zero.
class DataPathTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 64 * kMiB);
        item_ = Allocate("i", kItemSize, region_.get());
        small_ = Allocate("small", kSmallSize, region_.get());
    }
    void TearDown() override {
        small_.reset();
        item_.reset();
        region_.reset();
        FamTest::TearDown();
    }

    // Fills the small item with `byte`.
    void FillSmall(uint8_t byte) {
        PutBytes(small_.get(), 0, std::vector<uint8_t>(kSmallSize, byte));
    }

    // The error of a non-blocking call that is reported either by the call or by the next
    // fam_quiet (docs/semantics.md allows both), checked to be `expected` and to name `call`.
    ::testing::AssertionResult FailsAtCallOrQuiet(const std::function<void()> &call, int expected,
                                                  const char *call_name) {
        CaughtError at_call = CatchFamError(call);
        CaughtError at_quiet = CatchFamError([&] { fam()->fam_quiet(); });
        if (at_call.thrown) {
            if (at_quiet.thrown) {
                return ::testing::AssertionFailure()
                       << "the call threw " << FamErrorName(at_call.code)
                       << " and the next fam_quiet threw again: " << at_quiet.message;
            }
            return IsFamError(at_call, expected, {call_name});
        }
        return IsFamError(at_quiet, expected, {call_name, "fam_quiet"});
    }

    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
    std::unique_ptr<Fam_Descriptor> small_;
};

// ---------------------------------------------------------------------------------------------
// Blocking get and put

class PutGetSizeTest : public DataPathTest, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(PutGetSizeTest, BlockingPutThenGetRoundTrips) {
    uint64_t size = GetParam();
    std::vector<uint8_t> data = Pattern(size, static_cast<uint32_t>(size));
    fam()->fam_put_blocking(data.data(), item_.get(), 0, size);
    std::vector<uint8_t> back(size, 0);
    fam()->fam_get_blocking(back.data(), item_.get(), 0, size);
    EXPECT_EQ(back, data);
}

TEST_P(PutGetSizeTest, BlockingPutAtEndOfItemRoundTrips) {
    uint64_t size = GetParam();
    std::vector<uint8_t> data = Pattern(size, 77);
    PutBytes(item_.get(), kItemSize - size, data);
    EXPECT_EQ(GetBytes(item_.get(), kItemSize - size, size), data);
}

INSTANTIATE_TEST_SUITE_P(Sizes, PutGetSizeTest, ::testing::Values(1, 7, 64, 4095, 65537, 4 * kMiB),
                         [](const ::testing::TestParamInfo<uint64_t> &info) {
                             return std::to_string(info.param) + "Bytes";
                         });

class UnalignedOffsetTest : public DataPathTest, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(UnalignedOffsetTest, PutAtUnalignedOffsetRoundTrips) {
    uint64_t offset = GetParam();
    std::vector<uint8_t> data = Pattern(13, 5);
    PutBytes(item_.get(), offset, data);
    EXPECT_EQ(GetBytes(item_.get(), offset, 13), data);
}

TEST_P(UnalignedOffsetTest, PutAtUnalignedOffsetLeavesNeighboursAlone) {
    uint64_t offset = GetParam();
    PutBytes(item_.get(), offset - 1, std::vector<uint8_t>(15, 0xEE));
    PutBytes(item_.get(), offset, Pattern(13, 6));
    std::vector<uint8_t> around = GetBytes(item_.get(), offset - 1, 15);
    EXPECT_EQ(around.front(), 0xEE);
    EXPECT_EQ(around.back(), 0xEE);
}

INSTANTIATE_TEST_SUITE_P(Offsets, UnalignedOffsetTest, ::testing::Values(1, 3, 63, 4095, 4097),
                         [](const ::testing::TestParamInfo<uint64_t> &info) {
                             return "Offset" + std::to_string(info.param);
                         });

// Copies between a mapped heap and the caller's buffer take another path from 2 KiB to 1 MiB
// (common/atomic_apply.cc, CopyFamBytes): every byte arrives whatever the alignment of either
// side, at the sizes around its bounds.
TEST_F(DataPathTest, PutsAndGetsAtAnyAlignmentArriveByteForByte) {
    std::vector<char> source(kMiB + 64), target(kMiB + 64);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>(i * 37 + (i >> 9));
    for (uint64_t size : {uint64_t{2047}, uint64_t{2048}, 4 * kKiB + 7, 64 * kKiB + 3, kMiB - 1}) {
        for (size_t shift : {0, 3, 16}) {
            for (uint64_t at : {uint64_t{0}, uint64_t{5}}) {
                fam()->fam_put_blocking(source.data() + shift, item_.get(), at, size);
                std::fill(target.begin(), target.end(), 0);
                fam()->fam_get_blocking(target.data() + (shift + 1) % 17, item_.get(), at, size);
                ASSERT_EQ(
                    std::memcmp(target.data() + (shift + 1) % 17, source.data() + shift, size), 0)
                    << size << " bytes, buffer shifted by " << shift << ", item offset " << at;
            }
        }
    }
}

TEST_F(DataPathTest, GetSeesOnlyWhatWasPutAtThatOffset) {
    PutBytes(item_.get(), 1000, Pattern(100, 1));
    std::vector<uint8_t> expected(300, 0);
    std::vector<uint8_t> pattern = Pattern(100, 1);
    std::copy(pattern.begin(), pattern.end(), expected.begin() + 100);
    EXPECT_EQ(GetBytes(item_.get(), 900, 300), expected);
}

TEST_F(DataPathTest, PutOfLastByteSucceeds) {
    PutBytes(small_.get(), kSmallSize - 1, {0x5A});
    EXPECT_EQ(GetBytes(small_.get(), kSmallSize - 1, 1), std::vector<uint8_t>{0x5A});
}

TEST_F(DataPathTest, PutPastEndThrowsOutOfRangeAndWritesNothing) {
    FillSmall(0xAB);
    std::vector<uint8_t> data(16, 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), small_.get(), kSmallSize - 6, 16),
                     FAM_ERR_OUTOFRANGE, "fam_put_blocking");
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0xAB));
}

TEST_F(DataPathTest, PutAtOffsetEqualToSizeThrowsOutOfRange) {
    uint8_t byte = 1;
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(&byte, small_.get(), kSmallSize, 1),
                     FAM_ERR_OUTOFRANGE, "fam_put_blocking");
}

TEST_F(DataPathTest, GetPastEndThrowsOutOfRange) {
    std::vector<uint8_t> buffer(16);
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(buffer.data(), small_.get(), kSmallSize - 8, 16),
                     FAM_ERR_OUTOFRANGE, "fam_get_blocking");
}

TEST_F(DataPathTest, PutWithOffsetOverflowThrowsOutOfRangeAndWritesNothing) {
    FillSmall(0xAB);
    std::vector<uint8_t> data(8, 0xCD);
    // UINT64_MAX - 3 + 8 wraps to 4: a careless check would write bytes 0..3.
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), small_.get(), UINT64_MAX - 3, 8),
                     FAM_ERR_OUTOFRANGE, "fam_put_blocking");
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0xAB));
}

TEST_F(DataPathTest, GetWithOffsetOverflowThrowsOutOfRange) {
    std::vector<uint8_t> buffer(8);
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(buffer.data(), small_.get(), UINT64_MAX - 3, 8),
                     FAM_ERR_OUTOFRANGE, "fam_get_blocking");
}

TEST_F(DataPathTest, PutWithHugeLengthThrowsOutOfRange) {
    std::vector<uint8_t> data(16, 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), small_.get(), 16, UINT64_MAX - 8),
                     FAM_ERR_OUTOFRANGE, "fam_put_blocking");
}

TEST_F(DataPathTest, PutFromNullBufferThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(nullptr, small_.get(), 0, 8), FAM_ERR_NULLPTR,
                     "fam_put_blocking");
}

TEST_F(DataPathTest, GetIntoNullBufferThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(nullptr, small_.get(), 0, 8), FAM_ERR_NULLPTR,
                     "fam_get_blocking");
}

TEST_F(DataPathTest, PutToNullDescriptorThrowsNullptr) {
    uint8_t buffer[8] = {};
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(buffer, nullptr, 0, sizeof(buffer)), FAM_ERR_NULLPTR,
                     "fam_put_blocking");
}

TEST_F(DataPathTest, GetFromNullDescriptorThrowsNullptr) {
    uint8_t buffer[8] = {};
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(buffer, nullptr, 0, sizeof(buffer)), FAM_ERR_NULLPTR,
                     "fam_get_blocking");
}

TEST_F(DataPathTest, PutOfZeroBytesIsANoOp) {
    FillSmall(0xAB);
    EXPECT_NO_THROW(fam()->fam_put_blocking(nullptr, small_.get(), 0, 0));
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0xAB));
}

TEST_F(DataPathTest, GetOfZeroBytesIsANoOp) {
    uint8_t buffer[4] = {1, 2, 3, 4};
    EXPECT_NO_THROW(fam()->fam_get_blocking(buffer, small_.get(), 0, 0));
    EXPECT_EQ(buffer[0], 1);
    EXPECT_EQ(buffer[3], 4);
}

// ---------------------------------------------------------------------------------------------
// Non-blocking get and put, fam_quiet, fam_progress, fam_fence

TEST_F(DataPathTest, NonBlockingPutIsVisibleAfterQuiet) {
    std::vector<uint8_t> data = Pattern(kMiB, 31);
    fam()->fam_put_nonblocking(data.data(), item_.get(), 4096, data.size());
    fam()->fam_quiet();
    EXPECT_EQ(GetBytes(item_.get(), 4096, kMiB), data);
}

TEST_F(DataPathTest, NonBlockingGetFillsBufferByQuiet) {
    PutBytes(item_.get(), 512, Pattern(kMiB, 32));
    std::vector<uint8_t> buffer(kMiB, 0);
    fam()->fam_get_nonblocking(buffer.data(), item_.get(), 512, buffer.size());
    fam()->fam_quiet();
    EXPECT_EQ(buffer, Pattern(kMiB, 32));
}

TEST_F(DataPathTest, ManyNonBlockingPutsAllLandByQuiet) {
    constexpr int kCount = 256;
    std::vector<std::vector<uint8_t>> chunks;
    for (int i = 0; i < kCount; ++i) chunks.push_back(Pattern(4 * kKiB, 100 + i));
    for (int i = 0; i < kCount; ++i) {
        fam()->fam_put_nonblocking(chunks[i].data(), item_.get(), i * 4 * kKiB, 4 * kKiB);
    }
    fam()->fam_quiet();
    for (int i = 0; i < kCount; ++i) {
        ASSERT_EQ(GetBytes(item_.get(), i * 4 * kKiB, 4 * kKiB), chunks[i]) << "chunk " << i;
    }
}

TEST_F(DataPathTest, ProgressIsZeroWithNothingPosted) { EXPECT_EQ(fam()->fam_progress(), 0u); }

TEST_F(DataPathTest, ProgressCountsPendingOperationsUntilQuiet) {
    // 64 puts of 4 MiB (256 MiB of copying into fresh pages) take tens of milliseconds at
    // least; posting them takes far less, so some are pending right after the last one is
    // posted -- unless the "non-blocking" calls do their work before returning.
    constexpr int kCount = 64;
    constexpr uint64_t kChunk = 4 * kMiB;
    std::unique_ptr<Fam_Region_Descriptor> big_region = CreateRegion("big", 320 * kMiB);
    std::unique_ptr<Fam_Descriptor> big = Allocate("big", kCount * kChunk, big_region.get());
    std::vector<uint8_t> source = Pattern(kChunk, 41);
    for (int i = 0; i < kCount; ++i) {
        fam()->fam_put_nonblocking(source.data(), big.get(), i * kChunk, kChunk);
    }
    uint64_t pending = fam()->fam_progress();
    EXPECT_GT(pending, 0u) << "every non-blocking put had completed before fam_progress";
    EXPECT_LE(pending, static_cast<uint64_t>(kCount));
    fam()->fam_quiet();
    EXPECT_EQ(fam()->fam_progress(), 0u);
    for (int i = 0; i < kCount; ++i) {
        ASSERT_EQ(GetBytes(big.get(), i * kChunk, 4096),
                  std::vector<uint8_t>(source.begin(), source.begin() + 4096))
            << "chunk " << i;
        ASSERT_EQ(GetBytes(big.get(), (i + 1) * kChunk - 4096, 4096),
                  std::vector<uint8_t>(source.end() - 4096, source.end()))
            << "chunk " << i;
    }
}

TEST_F(DataPathTest, NonBlockingPutPastEndReportsOutOfRange) {
    FillSmall(0xAB);
    std::vector<uint8_t> data(16, 0xCD);
    EXPECT_TRUE(FailsAtCallOrQuiet(
        [&] { fam()->fam_put_nonblocking(data.data(), small_.get(), kSmallSize - 6, 16); },
        FAM_ERR_OUTOFRANGE, "fam_put_nonblocking"));
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0xAB));
}

TEST_F(DataPathTest, NonBlockingGetPastEndReportsOutOfRange) {
    std::vector<uint8_t> buffer(16);
    EXPECT_TRUE(FailsAtCallOrQuiet(
        [&] { fam()->fam_get_nonblocking(buffer.data(), small_.get(), kSmallSize - 6, 16); },
        FAM_ERR_OUTOFRANGE, "fam_get_nonblocking"));
}

TEST_F(DataPathTest, NonBlockingPutFromNullBufferThrowsNullptr) {
    EXPECT_TRUE(FailsAtCallOrQuiet([&] { fam()->fam_put_nonblocking(nullptr, small_.get(), 0, 8); },
                                   FAM_ERR_NULLPTR, "fam_put_nonblocking"));
}

TEST_F(DataPathTest, OperationsWorkAfterAReportedNonBlockingError) {
    std::vector<uint8_t> data(16, 0xCD);
    CatchFamError([&] { fam()->fam_put_nonblocking(data.data(), small_.get(), kSmallSize, 16); });
    CatchFamError([&] { fam()->fam_quiet(); });
    std::vector<uint8_t> good = Pattern(64, 3);
    fam()->fam_put_nonblocking(good.data(), small_.get(), 0, good.size());
    EXPECT_NO_THROW(fam()->fam_quiet());
    EXPECT_EQ(GetBytes(small_.get(), 0, 64), good);
}

TEST_F(DataPathTest, FenceOrdersNonBlockingPutsToTheSameBytes) {
    // A large put, a fence, then a small put over its first bytes: the small one must win
    // although it would finish first if the two ran unordered.
    std::vector<uint8_t> big(4 * kMiB), small(64);
    for (int round = 0; round < 8; ++round) {
        uint8_t a = static_cast<uint8_t>(0x10 + round), b = static_cast<uint8_t>(0x80 + round);
        std::fill(big.begin(), big.end(), a);
        std::fill(small.begin(), small.end(), b);
        fam()->fam_put_nonblocking(big.data(), item_.get(), 0, big.size());
        fam()->fam_fence();
        fam()->fam_put_nonblocking(small.data(), item_.get(), 0, small.size());
        fam()->fam_quiet();
        std::vector<uint8_t> head = GetBytes(item_.get(), 0, 128);
        ASSERT_EQ(std::vector<uint8_t>(head.begin(), head.begin() + 64), small)
            << "round " << round << ": the put before the fence landed last";
        ASSERT_EQ(std::vector<uint8_t>(head.begin() + 64, head.end()), std::vector<uint8_t>(64, a))
            << "round " << round;
    }
}

TEST_F(DataPathTest, FenceWithNothingPendingReturns) {
    EXPECT_NO_THROW(fam()->fam_fence());
    EXPECT_EQ(fam()->fam_progress(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Gather and scatter, for element sizes 1, 8 and 24

enum class Form { kStrided, kIndexed };

constexpr uint64_t kFirst = 2, kStride = 3;
const std::vector<uint64_t> kIndices = {7, 0, 3, 12, 5};

// Where element i of the call lands, in elements.
std::vector<uint64_t> ElementPositions(Form form) {
    if (form == Form::kIndexed) return kIndices;
    std::vector<uint64_t> positions;
    for (uint64_t i = 0; i < kIndices.size(); ++i) positions.push_back(kFirst + i * kStride);
    return positions;
}

class GatherScatterTest : public DataPathTest, public ::testing::WithParamInterface<uint64_t> {
  protected:
    uint64_t esize() const { return GetParam(); }

    void Scatter(Form form, bool blocking, void *local) {
        std::vector<uint64_t> index = kIndices;
        uint64_t n = index.size();
        if (form == Form::kStrided && blocking) {
            fam()->fam_scatter_blocking(local, small_.get(), n, kFirst, kStride, esize());
        } else if (form == Form::kStrided) {
            fam()->fam_scatter_nonblocking(local, small_.get(), n, kFirst, kStride, esize());
            fam()->fam_quiet();
        } else if (blocking) {
            fam()->fam_scatter_blocking(local, small_.get(), n, index.data(), esize());
        } else {
            fam()->fam_scatter_nonblocking(local, small_.get(), n, index.data(), esize());
            fam()->fam_quiet();
        }
    }

    void Gather(Form form, bool blocking, void *local) {
        std::vector<uint64_t> index = kIndices;
        uint64_t n = index.size();
        if (form == Form::kStrided && blocking) {
            fam()->fam_gather_blocking(local, small_.get(), n, kFirst, kStride, esize());
        } else if (form == Form::kStrided) {
            fam()->fam_gather_nonblocking(local, small_.get(), n, kFirst, kStride, esize());
            fam()->fam_quiet();
        } else if (blocking) {
            fam()->fam_gather_blocking(local, small_.get(), n, index.data(), esize());
        } else {
            fam()->fam_gather_nonblocking(local, small_.get(), n, index.data(), esize());
            fam()->fam_quiet();
        }
    }

    // Scatters distinct elements and checks every byte of the item: elements where they
    // belong, zero elsewhere.
    void CheckScatter(Form form, bool blocking) {
        std::vector<uint64_t> positions = ElementPositions(form);
        std::vector<uint8_t> local = Pattern(positions.size() * esize(), 60);
        Scatter(form, blocking, local.data());
        std::vector<uint8_t> expected(kSmallSize, 0);
        for (size_t i = 0; i < positions.size(); ++i) {
            std::memcpy(&expected[positions[i] * esize()], &local[i * esize()], esize());
        }
        EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), expected);
    }

    // Gathers from a patterned item and checks each element.
    void CheckGather(Form form, bool blocking) {
        std::vector<uint8_t> contents = Pattern(kSmallSize, 61);
        PutBytes(small_.get(), 0, contents);
        std::vector<uint64_t> positions = ElementPositions(form);
        std::vector<uint8_t> local(positions.size() * esize(), 0);
        Gather(form, blocking, local.data());
        for (size_t i = 0; i < positions.size(); ++i) {
            std::vector<uint8_t> got(local.begin() + i * esize(),
                                     local.begin() + (i + 1) * esize());
            std::vector<uint8_t> want(contents.begin() + positions[i] * esize(),
                                      contents.begin() + (positions[i] + 1) * esize());
            EXPECT_EQ(got, want) << "element " << i;
        }
    }
};

TEST_P(GatherScatterTest, ScatterStridedBlockingPlacesEachElement) {
    CheckScatter(Form::kStrided, true);
}
TEST_P(GatherScatterTest, ScatterStridedNonBlockingPlacesEachElementByQuiet) {
    CheckScatter(Form::kStrided, false);
}
TEST_P(GatherScatterTest, ScatterIndexedBlockingPlacesEachElement) {
    CheckScatter(Form::kIndexed, true);
}
TEST_P(GatherScatterTest, ScatterIndexedNonBlockingPlacesEachElementByQuiet) {
    CheckScatter(Form::kIndexed, false);
}
TEST_P(GatherScatterTest, GatherStridedBlockingReadsEachElement) {
    CheckGather(Form::kStrided, true);
}
TEST_P(GatherScatterTest, GatherStridedNonBlockingReadsEachElementByQuiet) {
    CheckGather(Form::kStrided, false);
}
TEST_P(GatherScatterTest, GatherIndexedBlockingReadsEachElement) {
    CheckGather(Form::kIndexed, true);
}
TEST_P(GatherScatterTest, GatherIndexedNonBlockingReadsEachElementByQuiet) {
    CheckGather(Form::kIndexed, false);
}

TEST_P(GatherScatterTest, ScatterThenGatherWithSameIndicesRoundTrips) {
    std::vector<uint64_t> index = {9, 1, 30, 4};
    std::vector<uint8_t> local = Pattern(index.size() * esize(), 62), back(local.size(), 0);
    fam()->fam_scatter_blocking(local.data(), small_.get(), index.size(), index.data(), esize());
    fam()->fam_gather_blocking(back.data(), small_.get(), index.size(), index.data(), esize());
    EXPECT_EQ(back, local);
}

TEST_P(GatherScatterTest, ScatterIndexedLastElementOfItemFits) {
    uint64_t last = kSmallSize / esize() - 1;
    std::vector<uint8_t> local = Pattern(esize(), 63);
    fam()->fam_scatter_blocking(local.data(), small_.get(), 1, &last, esize());
    EXPECT_EQ(GetBytes(small_.get(), last * esize(), esize()), local);
}

TEST_P(GatherScatterTest, ScatterIndexedElementPastEndThrowsOutOfRangeAndWritesNothing) {
    std::vector<uint64_t> index = {0, 1, kSmallSize / esize() + 1};
    std::vector<uint8_t> local(index.size() * esize(), 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), index.size(),
                                                 index.data(), esize()),
                     FAM_ERR_OUTOFRANGE, "fam_scatter_blocking");
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0));
}

TEST_P(GatherScatterTest, ScatterStridedElementPastEndThrowsOutOfRangeAndWritesNothing) {
    uint64_t stride = kSmallSize / esize() / 3 + 1;  // the fourth element lies past the end
    std::vector<uint8_t> local(4 * esize(), 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), 4, 0, stride, esize()),
                     FAM_ERR_OUTOFRANGE, "fam_scatter_blocking");
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0));
}

TEST_P(GatherScatterTest, GatherIndexedElementPastEndThrowsOutOfRange) {
    std::vector<uint64_t> index = {0, kSmallSize / esize()};
    std::vector<uint8_t> local(index.size() * esize());
    EXPECT_FAM_ERROR(
        fam()->fam_gather_blocking(local.data(), small_.get(), index.size(), index.data(), esize()),
        FAM_ERR_OUTOFRANGE, "fam_gather_blocking");
}

TEST_P(GatherScatterTest, GatherStridedElementPastEndThrowsOutOfRange) {
    std::vector<uint8_t> local(2 * esize());
    EXPECT_FAM_ERROR(fam()->fam_gather_blocking(local.data(), small_.get(), 2,
                                                kSmallSize / esize() - 1, 1, esize()),
                     FAM_ERR_OUTOFRANGE, "fam_gather_blocking");
}

TEST_P(GatherScatterTest, ScatterNonBlockingElementPastEndReportsOutOfRange) {
    std::vector<uint64_t> index = {kSmallSize / esize()};
    std::vector<uint8_t> local(esize(), 0xCD);
    EXPECT_TRUE(FailsAtCallOrQuiet(
        [&] {
            fam()->fam_scatter_nonblocking(local.data(), small_.get(), 1, index.data(), esize());
        },
        FAM_ERR_OUTOFRANGE, "fam_scatter_nonblocking"));
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0));
}

TEST_P(GatherScatterTest, GatherNonBlockingElementPastEndReportsOutOfRange) {
    std::vector<uint8_t> local(esize());
    EXPECT_TRUE(FailsAtCallOrQuiet(
        [&] {
            fam()->fam_gather_nonblocking(local.data(), small_.get(), 1, kSmallSize / esize(), 1,
                                          esize());
        },
        FAM_ERR_OUTOFRANGE, "fam_gather_nonblocking"));
}

INSTANTIATE_TEST_SUITE_P(ElementSizes, GatherScatterTest, ::testing::Values(1, 8, 24),
                         [](const ::testing::TestParamInfo<uint64_t> &info) {
                             return "Element" + std::to_string(info.param) + "Bytes";
                         });

TEST_F(DataPathTest, ScatterStridedOffsetOverflowThrowsOutOfRangeAndWritesNothing) {
    // Element 1 is at (0 + 1 * 2^61) * 8 = 2^64, which wraps to offset 0.
    std::vector<uint8_t> local(16, 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), 2, 0, 1ull << 61, 8),
                     FAM_ERR_OUTOFRANGE, "fam_scatter_blocking");
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0));
}

TEST_F(DataPathTest, ScatterIndexedOffsetOverflowThrowsOutOfRangeAndWritesNothing) {
    uint64_t index[1] = {1ull << 61};  // * 8 wraps to offset 0
    std::vector<uint8_t> local(8, 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), 1, index, 8),
                     FAM_ERR_OUTOFRANGE, "fam_scatter_blocking");
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0));
}

TEST_F(DataPathTest, ScatterWithNullIndexThrowsNullptr) {
    std::vector<uint8_t> local(16);
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), 2,
                                                 static_cast<uint64_t *>(nullptr), 8),
                     FAM_ERR_NULLPTR, "fam_scatter_blocking");
}

TEST_F(DataPathTest, GatherWithNullIndexThrowsNullptr) {
    std::vector<uint8_t> local(16);
    EXPECT_FAM_ERROR(fam()->fam_gather_blocking(local.data(), small_.get(), 2,
                                                static_cast<uint64_t *>(nullptr), 8),
                     FAM_ERR_NULLPTR, "fam_gather_blocking");
}

TEST_F(DataPathTest, ScatterFromNullBufferThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(nullptr, small_.get(), 2, 0, 1, 8),
                     FAM_ERR_NULLPTR, "fam_scatter_blocking");
}

TEST_F(DataPathTest, ScatterStridedElementSizeZeroThrowsInvalid) {
    std::vector<uint8_t> local(16);
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), 2, 0, 1, 0),
                     FAM_ERR_INVALID, "fam_scatter_blocking");
}

TEST_F(DataPathTest, ScatterIndexedElementSizeZeroThrowsInvalid) {
    std::vector<uint8_t> local(16);
    uint64_t index[2] = {0, 1};
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(local.data(), small_.get(), 2, index, 0),
                     FAM_ERR_INVALID, "fam_scatter_blocking");
}

TEST_F(DataPathTest, GatherStridedElementSizeZeroThrowsInvalid) {
    std::vector<uint8_t> local(16);
    EXPECT_FAM_ERROR(fam()->fam_gather_blocking(local.data(), small_.get(), 2, 0, 1, 0),
                     FAM_ERR_INVALID, "fam_gather_blocking");
}

TEST_F(DataPathTest, GatherIndexedElementSizeZeroThrowsInvalid) {
    std::vector<uint8_t> local(16);
    uint64_t index[2] = {0, 1};
    EXPECT_FAM_ERROR(fam()->fam_gather_blocking(local.data(), small_.get(), 2, index, 0),
                     FAM_ERR_INVALID, "fam_gather_blocking");
}

TEST_F(DataPathTest, ScatterOfZeroElementsIsANoOp) {
    FillSmall(0xAB);
    std::vector<uint8_t> local(8, 0xCD);
    uint64_t index[1] = {0};
    EXPECT_NO_THROW(fam()->fam_scatter_blocking(local.data(), small_.get(), 0, 0, 1, 8));
    EXPECT_NO_THROW(fam()->fam_scatter_blocking(local.data(), small_.get(), 0, index, 8));
    EXPECT_EQ(GetBytes(small_.get(), 0, kSmallSize), std::vector<uint8_t>(kSmallSize, 0xAB));
}

TEST_F(DataPathTest, GatherOfZeroElementsIsANoOp) {
    std::vector<uint8_t> local(8, 0xCD);
    uint64_t index[1] = {0};
    EXPECT_NO_THROW(fam()->fam_gather_blocking(local.data(), small_.get(), 0, 0, 1, 8));
    EXPECT_NO_THROW(fam()->fam_gather_blocking(local.data(), small_.get(), 0, index, 8));
    EXPECT_EQ(local, std::vector<uint8_t>(8, 0xCD));
}

}  // namespace
}  // namespace fampool_test
