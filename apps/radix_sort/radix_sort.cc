#include "radix_sort/radix_sort.h"

#include <shmem.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace radix {

const char *kCommonUsage =
    "  --keys N         keys to sort over all PEs (default 1048576)\n"
    "  --seed S         seed of the keys: key i is Mix64(Mix64(S) + i) (default 1)\n"
    "  --key-bits K     bits per key, 1 to 64; keys are masked to them (default 64)\n"
    "  --digit-bits D   bits sorted per pass, 1 to 16 (default 8: 8 passes over 64-bit keys)\n"
    "  --help           this text";

namespace {

// A zero-filled block of the symmetric heap (collective); ends the job when it is full.
template <typename T>
T *SymmetricArray(const apps::Pe &pe, uint64_t count, const char *what) {
    uint64_t bytes = std::max<uint64_t>(count, 1) * sizeof(T);
    void *memory = shmem_malloc(bytes);
    if (memory == nullptr) {
        Fail(pe, std::string("shmem_malloc of ") + std::to_string(bytes) + " bytes for the " +
                     what +
                     " failed: the symmetric heap is too small (set "
                     "SHMEM_SYMMETRIC_HEAP_SIZE, e.g. -x SHMEM_SYMMETRIC_HEAP_SIZE=2G)");
    }
    std::memset(memory, 0, bytes);
    return static_cast<T *>(memory);
}

// A pSync array for the OpenSHMEM 1.4 collectives, ready once every PE has passed a barrier.
long *SyncArray(const apps::Pe &pe, uint64_t size) {
    long *sync = SymmetricArray<long>(pe, size, "collective's pSync");
    std::fill(sync, sync + size, SHMEM_SYNC_VALUE);
    return sync;
}

// Histogram of the digit at `shift` over `n` keys.
void Histogram(const uint64_t *keys, uint64_t n, unsigned shift, uint64_t mask,
               uint64_t *histogram) {
    std::fill(histogram, histogram + mask + 1, 0);
    for (uint64_t i = 0; i < n; ++i) ++histogram[(keys[i] >> shift) & mask];
}

// Stable counting sort by the digit at `shift`: `offsets` receives the local prefix of
// `histogram` (where each digit's keys start) and `in` is scattered to `out` in digit order,
// keys of one digit in their order in `in`.
void Rank(const uint64_t *in, uint64_t n, unsigned shift, uint64_t mask, const uint64_t *histogram,
          uint64_t *offsets, uint64_t *out) {
    uint64_t sum = 0;
    for (uint64_t d = 0; d <= mask; ++d) {
        offsets[d] = sum;
        sum += histogram[d];
    }
    for (uint64_t i = 0; i < n; ++i) out[offsets[(in[i] >> shift) & mask]++] = in[i];
}

}  // namespace

Config ConfigOf(const apps::Args &args) {
    Config config;
    config.keys = args.Count("keys", config.keys);
    config.seed = args.Count("seed", config.seed);
    uint64_t key_bits = args.Count("key-bits", config.key_bits);
    uint64_t digit_bits = args.Count("digit-bits", config.digit_bits);
    const char *problem = nullptr;
    if (config.keys == 0) problem = "--keys must be at least 1";
    if (key_bits < 1 || key_bits > 64) problem = "--key-bits must be 1 to 64";
    if (digit_bits < 1 || digit_bits > 16) problem = "--digit-bits must be 1 to 16";
    if (problem != nullptr) {
        std::fprintf(stderr, "radix_sort: %s\n", problem);
        std::exit(2);
    }
    config.key_bits = static_cast<unsigned>(key_bits);
    config.digit_bits = static_cast<unsigned>(std::min(digit_bits, key_bits));
    return config;
}

uint64_t KeyAt(const Config &config, uint64_t index) {
    uint64_t key = apps::Mix64(apps::Mix64(config.seed) + index);
    return config.key_bits == 64 ? key : key & ((uint64_t{1} << config.key_bits) - 1);
}

apps::Pe ShmemPe() {
    apps::Pe pe;
    pe.rank = static_cast<uint64_t>(shmem_my_pe());
    pe.count = static_cast<uint64_t>(shmem_n_pes());
    return pe;
}

void Fail(const apps::Pe &pe, const std::string &message) {
    std::fprintf(stderr, "radix_sort: PE %" PRIu64 ": %s\n", pe.rank, message.c_str());
    std::fflush(stderr);
    shmem_global_exit(1);
    std::exit(1);  // shmem_global_exit does not return; this tells the compiler so
}

const char *PhaseName(int phase) {
    static const char *const kNames[kPhases] = {
        "input",         "local_histogram", "local_rank",  "global_histogram",
        "global_prefix", "global_rank",     "send_counts", "displacements",
        "key_exchange",  "recv_histogram",  "recv_rank",   "output"};
    return kNames[phase];
}

Sorter::Sorter(const Config &config, const apps::Pe &pe, Exchange *exchange)
    : config_(config),
      pe_(pe),
      exchange_(exchange),
      count_(pe.BlockEnd(config.keys) - pe.BlockBegin(config.keys)) {
    // shmem_malloc is collective: every PE asks for the largest block.
    uint64_t largest = (config.keys + pe.count - 1) / pe.count;
    keys_ = SymmetricArray<uint64_t>(pe, largest, "keys");
    send_ = SymmetricArray<uint64_t>(pe, largest, "send buffer");
    recv_ = SymmetricArray<uint64_t>(pe, largest, "receive buffer");
    local_ = SymmetricArray<uint64_t>(pe, config.Buckets(), "local histogram");
    uint64_t buckets = config.Buckets();
    matrix_.resize(buckets * pe.count);
    prefix_.resize(buckets * pe.count);
    bucket_rank_.resize(buckets);
    row_.resize(pe.count);
    counts_.resize(pe.count * pe.count);
    send_offset_.resize(pe.count);
    remote_offset_.resize(pe.count);
    histogram_.resize(buckets);
    offsets_.resize(buckets);
}

Sorter::~Sorter() {
    shmem_barrier_all();  // no PE may still be putting into a buffer freed here
    shmem_free(local_);
    shmem_free(recv_);
    shmem_free(send_);
    shmem_free(keys_);
}

void Sorter::Sort(PhaseTimes *times) {
    for (unsigned pass = 0; pass < config_.Passes(); ++pass) {
        Pass(pass * config_.digit_bits, times);
    }
}

void Sorter::Pass(unsigned shift, PhaseTimes *times) {
    const uint64_t mask = config_.Buckets() - 1;
    const uint64_t buckets = config_.Buckets();
    const uint64_t npes = pe_.count;
    const uint64_t me = pe_.rank;
    apps::Timer timer;
    auto lap = [&](Phase phase) {
        times->seconds[phase] += timer.Seconds();
        timer.Restart();
    };

    Histogram(keys_, count_, shift, mask, local_);
    lap(kLocalHistogram);

    Rank(keys_, count_, shift, mask, local_, offsets_.data(), send_);
    lap(kLocalRank);

    exchange_->GlobalHistogram(local_, &matrix_);
    lap(kGlobalHistogram);

    // Keys are ordered by digit first, then by PE (a stable sort keeps PE order among equal
    // digits), so a bucket's global start is the prefix over (digit, PE) in that order.
    uint64_t sum = 0;
    for (uint64_t i = 0; i < buckets * npes; ++i) {
        prefix_[i] = sum;
        sum += matrix_[i];
    }
    lap(kGlobalPrefix);

    // Key j of this PE's bucket d has global rank bucket_rank_[d] + j; the ranks only grow
    // along the send buffer, so a rank per bucket says it all.
    for (uint64_t d = 0; d < buckets; ++d) bucket_rank_[d] = prefix_[d * npes + me];
    lap(kGlobalRank);

    // A key goes to the PE whose block holds its global rank.
    std::fill(row_.begin(), row_.end(), 0);
    uint64_t target = 0;
    for (uint64_t d = 0; d < buckets; ++d) {
        uint64_t rank = bucket_rank_[d];
        uint64_t left = local_[d];
        while (left > 0) {
            while (BlockStart(config_.keys, target + 1, npes) <= rank) ++target;
            uint64_t take = std::min(left, BlockStart(config_.keys, target + 1, npes) - rank);
            row_[target] += take;
            rank += take;
            left -= take;
        }
    }
    exchange_->SendCounts(row_, &counts_);
    lap(kSendCounts);

    // The run for PE q starts at send_offset_[q] here and lands after the runs of the PEs
    // before this one at q; what this PE receives must fill its block exactly.
    uint64_t received = 0;
    for (uint64_t q = 0, offset = 0; q < npes; ++q) {
        send_offset_[q] = offset;
        offset += row_[q];
        remote_offset_[q] = 0;
        for (uint64_t p = 0; p < me; ++p) remote_offset_[q] += counts_[p * npes + q];
        received += counts_[q * npes + me];
    }
    if (received != count_) {
        Fail(pe_, "send counts add up to " + std::to_string(received) + " keys for this PE's " +
                      std::to_string(count_));
    }
    lap(kDisplacements);

    // Start with the next PE so that all PEs do not write to PE 0 first.
    for (uint64_t i = 1; i <= npes; ++i) {
        uint64_t q = (me + i) % npes;
        if (row_[q] == 0) continue;
        shmem_put64(recv_ + remote_offset_[q], send_ + send_offset_[q], row_[q],
                    static_cast<int>(q));
    }
    shmem_barrier_all();  // completes every PE's puts
    lap(kKeyExchange);

    // The receive buffer holds the runs in PE order, each in digit order: a stable sort by
    // digit puts the block in global rank order, the order the next pass needs.
    Histogram(recv_, count_, shift, mask, histogram_.data());
    lap(kRecvHistogram);

    Rank(recv_, count_, shift, mask, histogram_.data(), offsets_.data(), keys_);
    lap(kRecvRank);
}

BlockCheck CheckBlock(const Config &config, const apps::Pe &pe, const std::vector<uint64_t> &out) {
    BlockCheck check;
    for (uint64_t i = pe.BlockBegin(config.keys); i < pe.BlockEnd(config.keys); ++i) {
        uint64_t key = KeyAt(config, i);
        check.in_sum += key;
        check.in_xor ^= apps::Mix64(key);
    }
    for (uint64_t i = 0; i < out.size(); ++i) {
        check.out_sum += out[i];
        check.out_xor ^= apps::Mix64(out[i]);
        if (i > 0 && out[i] < out[i - 1]) ++check.descents;
    }
    check.count = out.size();
    if (!out.empty()) {
        check.first = out.front();
        check.last = out.back();
    }
    return check;
}

int Judge(const Config &config, const apps::Pe &pe, const BlockCheck &total,
          const std::vector<BlockCheck> &blocks) {
    uint64_t count = 0, boundary_descents = 0;
    bool seen = false;
    uint64_t previous_last = 0;
    for (const BlockCheck &block : blocks) {
        count += block.count;
        if (block.count == 0) continue;
        if (seen && block.first < previous_last) ++boundary_descents;
        previous_last = block.last;
        seen = true;
    }
    bool passed = count == config.keys && total.in_sum == total.out_sum &&
                  total.in_xor == total.out_xor && total.descents == 0 && boundary_descents == 0;
    char detail[256];
    std::snprintf(detail, sizeof detail,
                  "keys=%" PRIu64 " descents=%" PRIu64 " boundary_descents=%" PRIu64
                  " sum=%s xor_mix64=%s",
                  count, total.descents, boundary_descents,
                  total.in_sum == total.out_sum ? "equal" : "DIFFERENT",
                  total.in_xor == total.out_xor ? "equal" : "DIFFERENT");
    if (pe.first()) return apps::Check(kApp, passed, detail);
    return passed ? 0 : 1;
}

std::vector<BlockCheck> CollectChecks(const BlockCheck &mine, BlockCheck *total) {
    apps::Pe pe = ShmemPe();
    constexpr uint64_t kWords = 8;  // the fields of a BlockCheck
    uint64_t *source = SymmetricArray<uint64_t>(pe, kWords, "check");
    uint64_t *target = SymmetricArray<uint64_t>(pe, kWords * pe.count, "checks");
    long *sync = SyncArray(pe, SHMEM_COLLECT_SYNC_SIZE);
    const uint64_t words[kWords] = {mine.in_sum,   mine.in_xor, mine.out_sum, mine.out_xor,
                                    mine.descents, mine.count,  mine.first,   mine.last};
    std::copy(words, words + kWords, source);
    shmem_barrier_all();
    shmem_fcollect64(target, source, kWords, 0, 0, static_cast<int>(pe.count), sync);
    std::vector<BlockCheck> blocks(pe.count);
    for (uint64_t p = 0; p < pe.count; ++p) {
        const uint64_t *from = target + p * kWords;
        blocks[p] = {from[0], from[1], from[2], from[3], from[4], from[5], from[6], from[7]};
    }
    shmem_barrier_all();
    shmem_free(sync);
    shmem_free(target);
    shmem_free(source);
    *total = BlockCheck();
    for (const BlockCheck &block : blocks) {
        total->in_sum += block.in_sum;
        total->in_xor ^= block.in_xor;
        total->out_sum += block.out_sum;
        total->out_xor ^= block.out_xor;
        total->descents += block.descents;
    }
    return blocks;
}

void Report(const char *variant, const std::string &model, const Config &config, const apps::Pe &pe,
            const PhaseTimes &times, double total_seconds) {
    constexpr int kValues = kPhases + 1;
    double *source = SymmetricArray<double>(pe, kValues, "timings");
    double *slowest = SymmetricArray<double>(pe, kValues, "timings");
    double *work = SymmetricArray<double>(
        pe, std::max<uint64_t>(kValues / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE), "pWrk");
    long *sync = SyncArray(pe, SHMEM_REDUCE_SYNC_SIZE);
    std::copy(times.seconds, times.seconds + kPhases, source);
    source[kPhases] = total_seconds;
    shmem_barrier_all();
    shmem_double_max_to_all(slowest, source, kValues, 0, 0, static_cast<int>(pe.count), work, sync);
    if (pe.first()) {
        char common[160];
        std::snprintf(common, sizeof common, "variant=%s model=%s pes=%" PRIu64 " keys=%" PRIu64,
                      variant, model.c_str(), pe.count, config.keys);
        char line[320];
        for (int phase = 0; phase < kPhases; ++phase) {
            std::snprintf(line, sizeof line, "%s phase=%s seconds=%.6f", common, PhaseName(phase),
                          slowest[phase]);
            apps::Result(kApp, line);
        }
        double seconds = slowest[kPhases];
        std::snprintf(line, sizeof line,
                      "%s phase=total key_bits=%u digit_bits=%u passes=%u seconds=%.6f "
                      "rate=%.4g unit=keys/s peak_rss_mb=%.1f",
                      common, config.key_bits, config.digit_bits, config.Passes(), seconds,
                      seconds > 0 ? config.keys / seconds : 0.0, apps::PeakRss() / 1048576.0);
        apps::Result(kApp, line);
    }
    shmem_barrier_all();
    shmem_free(sync);
    shmem_free(work);
    shmem_free(slowest);
    shmem_free(source);
}

}  // namespace radix
