#include "common/crc32c.h"

#include <nmmintrin.h>

#include <array>
#include <cstring>

namespace fampool {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // reflected Castagnoli polynomial

std::array<uint32_t, 256> MakeTable() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
        table[i] = c;
    }
    return table;
}

uint32_t Software(uint32_t crc, const unsigned char *p, size_t n) {
    static const std::array<uint32_t, 256> table = MakeTable();
    for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

__attribute__((target("sse4.2"))) uint32_t Hardware(uint32_t crc, const unsigned char *p,
                                                    size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = static_cast<uint32_t>(c);
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

}  // namespace

uint32_t Crc32c(uint32_t crc, const void *data, size_t length) {
    static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
    auto *p = static_cast<const unsigned char *>(data);
    crc = ~crc;
    crc = has_sse42 ? Hardware(crc, p, length) : Software(crc, p, length);
    return ~crc;
}

}  // namespace fampool
