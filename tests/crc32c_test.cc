// crc32c_test.cc: CRC-32C (common/crc32c.h), the checksum of backups, against the published
// check values (RFC 3720, appendix B.4), in one call and in pieces, at every alignment.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace fampool_test {
namespace {

using fampool::Crc32c;

uint32_t Of(const std::vector<uint8_t> &bytes) { return Crc32c(0, bytes.data(), bytes.size()); }

TEST(Crc32cTest, CheckValueOfTheDigits) {
    const char *digits = "123456789";
    EXPECT_EQ(Crc32c(0, digits, std::strlen(digits)), 0xE3069283u);
}

TEST(Crc32cTest, EmptyInputIsZero) { EXPECT_EQ(Crc32c(0, nullptr, 0), 0u); }

TEST(Crc32cTest, Rfc3720Vectors) {
    EXPECT_EQ(Of(std::vector<uint8_t>(32, 0x00)), 0x8A9136AAu);
    EXPECT_EQ(Of(std::vector<uint8_t>(32, 0xFF)), 0x62A8AB43u);
    std::vector<uint8_t> up(32), down(32);
    for (int i = 0; i < 32; ++i) {
        up[i] = static_cast<uint8_t>(i);
        down[i] = static_cast<uint8_t>(31 - i);
    }
    EXPECT_EQ(Of(up), 0x46DD794Eu);
    EXPECT_EQ(Of(down), 0x113FDB5Cu);
}

TEST(Crc32cTest, PiecesGiveTheChecksumOfTheWhole) {
    std::vector<uint8_t> data(100000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 7));
    uint32_t whole = Of(data);
    for (size_t cut : {1ul, 7ul, 8ul, 4095ul, 65536ul, 99999ul}) {
        uint32_t crc = Crc32c(0, data.data(), cut);
        crc = Crc32c(crc, data.data() + cut, data.size() - cut);
        EXPECT_EQ(crc, whole) << "cut at " << cut;
    }
}

TEST(Crc32cTest, AlignmentOfTheBufferDoesNotMatter) {
    std::vector<uint8_t> buffer(1024 + 16);
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i ^ 0x5A);
    std::vector<uint8_t> copy(buffer.begin() + 3, buffer.begin() + 3 + 1000);
    uint32_t expected = Of(copy);
    for (size_t shift = 0; shift < 16; ++shift) {
        std::vector<uint8_t> moved(buffer.size());
        std::memcpy(moved.data() + shift, copy.data(), copy.size());
        EXPECT_EQ(Crc32c(0, moved.data() + shift, copy.size()), expected) << "shift " << shift;
    }
}

}  // namespace
}  // namespace fampool_test
