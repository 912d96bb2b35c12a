// The get/put sweep the benchmarks that compare items share (transfer_bench striped,
// redundancy_bench): one pass over the first `total` bytes of an item in `size` transfers at
// successive offsets, blocking or non-blocking with one fam_quiet at the end, in GB/s (1e9
// bytes per second). Header-only, over the OpenFAM API.
#ifndef FAMPOOL_BENCH_FAM_SWEEP_H_
#define FAMPOOL_BENCH_FAM_SWEEP_H_

#include <fam/fam.h>

#include <chrono>
#include <cstdint>

namespace fam_sweep {

enum class Transfer { kGet, kPut, kGetNonBlocking, kPutNonBlocking };

inline const char *Name(Transfer t) {
    switch (t) {
        case Transfer::kGet:
            return "get";
        case Transfer::kPut:
            return "put";
        case Transfer::kGetNonBlocking:
            return "get_nonblocking";
        case Transfer::kPutNonBlocking:
            return "put_nonblocking";
    }
    return "?";
}

inline bool IsPut(Transfer t) { return t == Transfer::kPut || t == Transfer::kPutNonBlocking; }
inline bool IsBlocking(Transfer t) { return t == Transfer::kGet || t == Transfer::kPut; }

// `buffer` holds at least `total` bytes: transfer i moves buffer[i*size ...] to or from the
// item at offset i*size.
inline double Sweep(openfam::fam &f, openfam::Fam_Descriptor *item, char *buffer, uint64_t size,
                    uint64_t total, Transfer t) {
    auto start = std::chrono::steady_clock::now();
    for (uint64_t at = 0; at + size <= total; at += size) {
        switch (t) {
            case Transfer::kGet:
                f.fam_get_blocking(buffer + at, item, at, size);
                break;
            case Transfer::kPut:
                f.fam_put_blocking(buffer + at, item, at, size);
                break;
            case Transfer::kGetNonBlocking:
                f.fam_get_nonblocking(buffer + at, item, at, size);
                break;
            case Transfer::kPutNonBlocking:
                f.fam_put_nonblocking(buffer + at, item, at, size);
                break;
        }
    }
    if (!IsBlocking(t)) f.fam_quiet();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return static_cast<double>(total / size * size) / seconds / 1e9;
}

}  // namespace fam_sweep

#endif  // FAMPOOL_BENCH_FAM_SWEEP_H_
