// raid_worker: one PE of the redundancy tests (tests/redundancy_test.cc), a separate program
// (exec, not fork: a forked child must not share the parent's gRPC and libfabric state).
//
//   raid_worker write PE STATE_FILE
//     Rounds 1, 2, ...: writes item "peN" of region "raid" (all of it, in 256 KiB pieces, half
//     blocking and half non-blocking then fam_quiet) with the pattern of seed PE * 100000 +
//     round, reads it back and checks it, and only then stores the round in the state file's
//     slot for PE (its acknowledgement). Stops when the state file's stop word is set.
//   raid_worker atomics PE STATE_FILE ADDS
//     ADDS times: fam_fetch_add(1) on each of three words of item "words" of region
//     "atomics" (offsets 0, 4096, 8192); marks each fetched value in the state file (its
//     word's byte array) and fails when one was fetched before. Stores its progress (adds
//     done) in its slot.
//   raid_worker race PE STATE_FILE ROUNDS STRIPE
//     ROUNDS writes into item "shared" of region "raid5", all PEs at once, the bytes of each
//     its own (PE and round): even PEs whole stripes (STRIPE bytes of data each, aligned), odd
//     PEs pieces of 1 byte to 3/4 of a stripe at any offset, most across a unit's edge; half
//     blocking, half non-blocking then fam_quiet. Stores its progress (writes done) in its
//     slot. What the item holds after is for the test to check against its parity.
//
// The state file (made by the test, mapped by both): uint64 stop, uint64 progress[8], then
// the atomics' seen bytes. Exit status 0 on success, 1 on a mismatch, 2 on a fam error.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../support/raid_state.h"

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;

namespace {

using State = fampool_test::RaidState;
using fampool_test::RaidPatternByte;
using fampool_test::RaidSeedOf;

constexpr uint64_t kItemSize = fampool_test::kRaidItemSize, kPiece = 256 << 10;
constexpr uint64_t kWordOffsets[3] = {0, 4096, 8192};

int Write(fam &f, State *state, int pe) {
    std::unique_ptr<Fam_Descriptor> item(f.fam_lookup(("pe" + std::to_string(pe)).c_str(), "raid"));
    std::vector<uint8_t> bytes(kPiece), back(kItemSize);
    for (uint64_t round = 1; !state->stop.load(); ++round) {
        uint32_t seed = RaidSeedOf(pe, round);
        for (uint64_t off = 0; off < kItemSize; off += kPiece) {
            for (uint64_t i = 0; i < kPiece; ++i) bytes[i] = RaidPatternByte(off + i, seed);
            if ((off / kPiece) % 2) {
                f.fam_put_blocking(bytes.data(), item.get(), off, kPiece);
            } else {
                f.fam_put_nonblocking(bytes.data(), item.get(), off, kPiece);
                f.fam_quiet();
            }
        }
        f.fam_get_blocking(back.data(), item.get(), 0, kItemSize);
        for (uint64_t i = 0; i < kItemSize; ++i) {
            if (back[i] != RaidPatternByte(i, seed)) {
                std::fprintf(stderr, "raid_worker %d: round %llu: byte %llu is %d, wrote %d\n", pe,
                             static_cast<unsigned long long>(round),
                             static_cast<unsigned long long>(i), back[i], RaidPatternByte(i, seed));
                return 1;
            }
        }
        state->progress[pe].store(round);
    }
    return 0;
}

int Atomics(fam &f, State *state, int pe, uint64_t adds, uint64_t pes) {
    std::unique_ptr<Fam_Descriptor> words(f.fam_lookup("words", "atomics"));
    for (uint64_t i = 0; i < adds; ++i) {
        for (int w = 0; w < 3; ++w) {
            uint64_t old = f.fam_fetch_add(words.get(), kWordOffsets[w], uint64_t{1});
            if (old >= pes * adds || state->seen[w * pes * adds + old].fetch_add(1) != 0) {
                std::fprintf(stderr, "raid_worker %d: word %d gave %llu twice or out of range\n",
                             pe, w, static_cast<unsigned long long>(old));
                return 1;
            }
        }
        state->progress[pe].store(i + 1);
    }
    return 0;
}

// A small generator of PE `pe`'s choices, the same in every run.
class Choices {
  public:
    explicit Choices(int pe) : state_(0x853c49e6748fea9bull * (pe + 1)) {}
    uint64_t Below(uint64_t bound) {
        state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
        return (state_ >> 33) % bound;
    }

  private:
    uint64_t state_;
};

int Race(fam &f, State *state, int pe, uint64_t rounds, uint64_t stripe) {
    std::unique_ptr<Fam_Descriptor> item(f.fam_lookup("shared", "raid5"));
    const uint64_t size = item->get_size();
    const uint64_t stripes = size / stripe;
    Choices choose(pe);
    std::vector<uint8_t> bytes;
    for (uint64_t round = 1; round <= rounds; ++round) {
        uint64_t offset, length;
        if (pe % 2 == 0) {
            uint64_t first = choose.Below(stripes);
            offset = first * stripe;
            length = (1 + choose.Below(std::min<uint64_t>(4, stripes - first))) * stripe;
        } else {
            length = 1 + choose.Below(stripe * 3 / 4);
            offset = choose.Below(size - length + 1);
        }
        bytes.resize(length);
        uint32_t seed = RaidSeedOf(pe, round);
        for (uint64_t i = 0; i < length; ++i) bytes[i] = RaidPatternByte(offset + i, seed);
        if (round % 2) {
            f.fam_put_blocking(bytes.data(), item.get(), offset, length);
        } else {
            f.fam_put_nonblocking(bytes.data(), item.get(), offset, length);
            f.fam_quiet();
        }
        state->progress[pe].store(round);
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 4) {
        std::fprintf(stderr,
                     "usage: raid_worker write|atomics|race PE STATE_FILE [ADDS PES | ROUNDS "
                     "STRIPE]\n");
        return 2;
    }
    std::string mode = argv[1];
    int pe = std::atoi(argv[2]);
    int fd = open(argv[3], O_RDWR);
    off_t length = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
    void *mapped =
        fd >= 0 ? mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (mapped == MAP_FAILED) {
        std::perror("raid_worker: state file");
        return 2;
    }
    auto *state = static_cast<State *>(mapped);
    fam f;
    try {
        f.fam_initialize("default", nullptr);
        int result = 2;
        if (mode == "write") {
            result = Write(f, state, pe);
        } else if (argc >= 6) {
            uint64_t first = std::strtoull(argv[4], nullptr, 10);
            uint64_t second = std::strtoull(argv[5], nullptr, 10);
            result = mode == "race" ? Race(f, state, pe, first, second)
                                    : Atomics(f, state, pe, first, second);
        }
        f.fam_finalize("default");
        return result;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "raid_worker %d: %s\n", pe, e.fam_error_msg());
        return 2;
    }
}
