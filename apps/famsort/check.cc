// The check of FAMSort's output, after the clock stops. Every PE reads its block of
// sorted_index and, for each index i, gathers the first 20 bytes of record i (key and stored
// index: an indexed fam_gather with element size 20 at element 5 * i). It counts as errors an
// index out of range, a record whose stored index is not i, and an entry (key, index) not
// above the one before it (so keys are non-decreasing and ties are in index order). It sums
// the key fingerprints (which must equal sort_info's) and the sum and xor of Mix64(i) minus
// those of Mix64 over its block of 0..N-1 (both zero over all PEs for a permutation). The
// first and last entries of each block go to the board, for PE 0 to check the seams.
#include <algorithm>
#include <memory>

#include "famsort/famsort.h"

using namespace openfam;

namespace famsort {
namespace {

constexpr uint64_t kHead = 20;  // bytes gathered per record: key and stored index

void PutEntry(Job &job, uint64_t word, const Entry &e) {
    uint64_t words[3] = {};
    std::memcpy(words, e.b, kEntryBytes);
    job.f->fam_put_blocking(words, job.board, job.PeWord(job.pe.rank, word), sizeof words);
}

}  // namespace

void CheckBlock(Job &job) {
    uint64_t n_total = job.records;
    uint64_t begin = job.pe.BlockBegin(n_total), end = job.pe.BlockEnd(n_total);
    uint64_t chunk = job.opt.chunk;
    std::unique_ptr<uint64_t[]> index(new uint64_t[chunk]), where(new uint64_t[chunk]);
    std::unique_ptr<unsigned char[]> heads(new unsigned char[chunk * kHead]);
    uint64_t bytes = chunk * (16 + kHead);
    job.budget->Take(bytes);

    uint64_t errors = 0, key_print = 0, sum = 0, xored = 0;
    Entry previous{};
    for (uint64_t first = begin; first < end; first += chunk) {
        uint64_t n = std::min(chunk, end - first);
        job.f->fam_get_blocking(index.get(), job.sorted_index, first * 8, n * 8);
        for (uint64_t k = 0; k < n; ++k) where[k] = index[k] < n_total ? index[k] * 5 : 0;
        job.f->fam_gather_blocking(heads.get(), job.input, n, where.get(), kHead);
        for (uint64_t k = 0; k < n; ++k) {
            const unsigned char *head = heads.get() + k * kHead;
            Entry e = Entry::FromRecord(head);
            if (index[k] >= n_total || e.Index() != index[k]) ++errors;
            if (first + k > begin && !(previous < e)) ++errors;
            if (first + k == begin) PutEntry(job, kPeFirst, e);
            if (first + k == end - 1) PutEntry(job, kPeLast, e);
            key_print += KeyPrint(head);
            sum += apps::Mix64(index[k]);
            xored ^= apps::Mix64(index[k]);
            previous = e;
        }
    }
    for (uint64_t i = begin; i < end; ++i) {
        sum -= apps::Mix64(i);
        xored ^= apps::Mix64(i);
    }
    job.budget->Give(bytes);
    uint64_t has_output = end > begin ? 1 : 0;
    job.f->fam_put_blocking(&has_output, job.board, job.PeWord(job.pe.rank, kPeHasOutput), 8);
    job.f->fam_add(job.board, kErrors * 8, errors);
    job.f->fam_add(job.board, kKeyPrint * 8, key_print);
    job.f->fam_add(job.board, kIndexSum * 8, sum);
    job.f->fam_xor(job.board, kIndexXor * 8, xored);
    job.f->fam_add(job.board, kChecked * 8, end - begin);
    job.f->fam_quiet();
}

}  // namespace famsort
