// famsort --generate: the input written by famsort itself, in gen_sort's layout
// (apps/generators/README.md), so that one launch can generate, sort and clean up. Record i is
// a function of (seed, i): key = the top 10 bytes of Mix64(k + 2i), Mix64(k + 2i + 1) big-endian
// (k = Mix64(seed)), then i little-endian, then 82 capital letters from Mix64(~i ^ k).
// sort_info's fingerprint is the sum of the PEs' fam_add's into its word 6.
#include <algorithm>
#include <memory>

#include "famsort/famsort.h"

using namespace openfam;

namespace famsort {
namespace {

void MakeRecord(uint64_t key, uint64_t i, unsigned char *out) {
    uint64_t high = apps::Mix64(key + 2 * i), low = apps::Mix64(key + 2 * i + 1);
    for (int b = 0; b < 8; ++b) out[b] = static_cast<unsigned char>(high >> (56 - 8 * b));
    out[8] = static_cast<unsigned char>(low >> 56);
    out[9] = static_cast<unsigned char>(low >> 48);
    for (int b = 0; b < 8; ++b) out[kKeyBytes + b] = static_cast<unsigned char>(i >> (8 * b));
    uint64_t letters = apps::Mix64(~i ^ key);
    for (uint64_t b = kKeyBytes + 8; b < kRecordBytes; ++b) {
        uint64_t shift = (b - kKeyBytes) % 8 * 8;
        out[b] = static_cast<unsigned char>('A' + (letters >> shift) % 26);
    }
}

}  // namespace

void GenerateInput(fam &f, const apps::Pe &pe, Fam_Region_Descriptor *region, uint64_t records,
                   uint64_t seed, uint64_t chunk) {
    Fam_Descriptor *items = apps::SharedItem(f, pe, region, "records", records * kRecordBytes);
    Fam_Descriptor *info = apps::SharedItem(f, pe, region, "sort_info", 64);
    uint64_t key = apps::Mix64(seed), print = 0;
    uint64_t begin = pe.BlockBegin(records), end = pe.BlockEnd(records);
    std::unique_ptr<unsigned char[]> buffer(new unsigned char[chunk * kRecordBytes]);
    for (uint64_t first = begin; first < end; first += chunk) {
        uint64_t n = std::min(chunk, end - first);
        for (uint64_t k = 0; k < n; ++k) {
            MakeRecord(key, first + k, buffer.get() + k * kRecordBytes);
            print += KeyPrint(buffer.get() + k * kRecordBytes);
        }
        f.fam_put_blocking(buffer.get(), items, first * kRecordBytes, n * kRecordBytes);
    }
    f.fam_add(info, 6 * 8, print);
    if (pe.first()) {
        uint64_t words[6] = {kInfoMagic, 1, records, kRecordBytes, kKeyBytes, seed};
        f.fam_put_blocking(words, info, 0, sizeof words);
    }
    f.fam_quiet();
    f.fam_barrier_all();
    delete items;
    delete info;
}

}  // namespace famsort
