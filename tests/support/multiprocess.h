// What the multi-process tests share (multiprocess_test.cc: sharing and atomics;
// process_lifetime_test.cc: regions that outlive their writer, many processes starting at once,
// a process killed while allocating): pattern helpers, waiting for forked children, and a
// fixture that forks before it makes a fam object.
#ifndef FAMPOOL_TESTS_SUPPORT_MULTIPROCESS_H_
#define FAMPOOL_TESTS_SUPPORT_MULTIPROCESS_H_

#include <fam/fam.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process_util.h"
#include "test_support.h"

namespace fampool_test {

// Bytes [offset, offset + n) of the deterministic pattern with `seed`.
inline std::vector<uint8_t> PatternAt(uint64_t offset, uint64_t n, uint32_t seed) {
    std::vector<uint8_t> bytes(n);
    for (uint64_t i = 0; i < n; i++) bytes[i] = PatternByte(offset + i, seed);
    return bytes;
}

// Index of the first byte of `got` that differs from the pattern at `offset`, or -1.
inline int64_t FirstPatternMismatch(const std::vector<uint8_t> &got, uint64_t offset,
                                    uint32_t seed) {
    for (uint64_t i = 0; i < got.size(); i++) {
        if (got[i] != PatternByte(offset + i, seed)) return static_cast<int64_t>(i);
    }
    return -1;
}

::testing::AssertionResult MatchesPattern(const std::vector<uint8_t> &got, uint64_t offset,
                                          uint32_t seed) {
    int64_t bad = FirstPatternMismatch(got, offset, seed);
    if (bad < 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "byte " << (offset + bad) << " is " << int(got[bad])
                                         << ", pattern " << int(PatternByte(offset + bad, seed));
}

// Writes the pattern over [0, size) of an item in 1 MiB pieces.
inline void PutPattern(openfam::fam *f, Fam_Descriptor *item, uint64_t size, uint32_t seed) {
    constexpr uint64_t kPiece = 1 << 20;
    for (uint64_t off = 0; off < size; off += kPiece) {
        uint64_t n = std::min(kPiece, size - off);
        std::vector<uint8_t> bytes = PatternAt(off, n, seed);
        f->fam_put_blocking(bytes.data(), item, off, n);
    }
}

// Reads [0, size) back in 1 MiB pieces; returns the first offset that does not match the
// pattern, or -1.
inline int64_t CheckPattern(openfam::fam *f, Fam_Descriptor *item, uint64_t size, uint32_t seed) {
    constexpr uint64_t kPiece = 1 << 20;
    std::vector<uint8_t> bytes;
    for (uint64_t off = 0; off < size; off += kPiece) {
        uint64_t n = std::min(kPiece, size - off);
        bytes.assign(n, 0);
        f->fam_get_blocking(bytes.data(), item, off, n);
        int64_t bad = FirstPatternMismatch(bytes, off, seed);
        if (bad >= 0) {
            fprintf(stderr, "pattern %u: byte %" PRIu64 " is %d, expected %d\n", seed, off + bad,
                    bytes[bad], PatternByte(off + bad, seed));
            return static_cast<int64_t>(off + bad);
        }
    }
    return -1;
}

inline Fam_Options ThreadMultipleOptions() {
    static char kModel[] = "FAM_THREAD_MULTIPLE";
    Fam_Options options = EmptyOptions();
    options.famThreadModel = kModel;
    return options;
}

// Largest file size under `dir` (0 when there is none).
inline uint64_t LargestFile(const std::string &dir) {
    uint64_t largest = 0;
    for (const FileEntry &f : ListFiles(dir)) largest = std::max(largest, f.size);
    return largest;
}

// Waits for all children against one deadline; returns their results in order.
inline std::vector<int> WaitAll(std::vector<std::unique_ptr<ForkedChild>> &children,
                                double timeout_s) {
    auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                             std::chrono::duration<double>(timeout_s));
    std::vector<int> results;
    for (auto &child : children) results.push_back(child->WaitUntil(deadline));
    return results;
}

// The fixture gives each test fresh directories but no fam object: a test creates its own
// (InitializeFam) only after it has forked its children.
class MultiProcessTest : public FamTest {
  protected:
    bool AutoInitialize() const override { return false; }
};

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_MULTIPROCESS_H_
