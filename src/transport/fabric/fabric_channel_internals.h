// What fabric_channel.cc (opening, posting, the operations) and fabric_channel_completion.cc
// (waiting, probing, recovery) share: how long a waiter spins and naps, and the context value
// each operation carries so that a failure in the queue can be attributed. Internal to fabric/.
#ifndef FAMPOOL_TRANSPORT_FABRIC_FABRIC_CHANNEL_INTERNALS_H_
#define FAMPOOL_TRANSPORT_FABRIC_FABRIC_CHANNEL_INTERNALS_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fampool::channel {

// How long a waiter polls the counter before it sleeps. Sleeping saves the core the memory
// server (or the application's other thread) needs; polling saves the wake-up latency of an
// operation that completes within microseconds.
constexpr auto kSpin = std::chrono::microseconds(50);
// Within kSpin, polls yield the core after this: a memory server on this node whose work is
// queued behind the polling thread (always runnable, so the scheduler does not preempt it for
// the server) would otherwise wait for the end of its time slice.
constexpr auto kPureSpin = std::chrono::microseconds(5);
// Longest single sleep on the counter's wait object, so that one that misses an event costs
// latency, not a hang.
constexpr int kSliceMs = 20;
// Where the counter has no wait object (tcp, shm): after the spin, polls that yield the core
// for this long (a 1 MiB transfer takes 0.1-0.2 ms; napping instead cost shm 10-15% of its
// bandwidth at 1 MiB), then naps between polls, growing while nothing completes, up to what
// a long operation may lose. The longest nap bounds what a waiter costs the cores: each poll
// drives the provider (tens of microseconds over tcp), and 8 PEs napping at most 0.2 ms took
// both cores of a node whose memory server then got 1% of them for 7 s, and their operations
// waited on it past the timeout (docs/robustness.md, "The tcp data path").
constexpr auto kYieldFor = std::chrono::milliseconds(2);
constexpr auto kFirstNap = std::chrono::microseconds(2);
constexpr auto kLongestNap = std::chrono::milliseconds(1);
// A waiter reads the counter's failure count once in this many polls (see WaitAll).
constexpr uint64_t kRoundsPerFailureCount = 16;
// Operations that made no progress for this long get their keys and ranges probed.
constexpr auto kProbeAfter = std::chrono::milliseconds(200);
// The most bytes one RMA operation moves. The operation is the unit a waiter sees complete,
// and a wait gives up on a server only when nothing completed for the whole timeout: one
// operation of 8 MiB on a TCP flow that others starved at a shared link (the emulated fabric
// caught one paced at 1.4 Mbit/s for seconds) or a 4 GiB put on a healthy server outlasted the
// timeout with the server working all along. Operations of 1 MiB complete at least once per
// 10 s timeout down to 100 KB/s. Measured against the raw libfabric loop (transfer_bench, tcp):
// within noise at 64 KiB-64 MiB, puts faster at 16-64 MiB, and 64 MiB gets 0.94-0.99 of the
// loop where one operation of 64 MiB was 1.22-1.29 (docs/robustness.md).
constexpr uint64_t kLargestOperation = uint64_t{1} << 20;
// How long EndInFlight drives the provider to see the connections it aborted fail and close
// them: a few hundred rounds of progress (ofi_rxm looks at connections once in 128).
constexpr auto kDroppingConnections = std::chrono::milliseconds(500);
// A put of this many bytes or more has its servers make its pages first (MakePagesAhead), the
// size from which the embedded model's copy does (WriteFamBytes).
constexpr uint64_t kPagesAheadFrom = uint64_t{4} << 20;
// Extents, and ranges in each, whose pages a channel remembers having had made.
constexpr size_t kPagesAheadKept = 256;
// Key and range records kept for probing; operations beyond them are not probed.
constexpr size_t kTouchedKept = 32;
// Local registrations kept when the provider wants local buffers registered.
constexpr size_t kRegistrationCache = 16;
// A caller's buffer larger than this is registered a window of this size at a time, as its
// pieces are posted: at most kRegistrationCache windows (64 MiB) are registered at once for a
// call of any size, where a 4 GiB put registered (pinned, on verbs) all 4 GiB. The cache is
// emptied to half once what is in flight completed, so a large call waits for its operations
// once per 8 windows (32 MiB).
constexpr uint64_t kRegistrationWindow = uint64_t{4} << 20;
// LocalDescriptor's answer for a buffer registered by windows (a value no provider hands out:
// the address of a byte of ours).
inline char by_window_tag;
inline void *const kByWindow = &by_window_tag;
// Failures of non-blocking operations kept word for word until Quiet; more are counted.
constexpr size_t kDeferredKept = 16;

// An operation's context value: the call it belongs to (its tag; for a probe, whether it
// checked write or read access), the memory server, and the kind of operation, so that a
// failure in the queue can be reported and attributed.
constexpr int kServerBits = 24;
constexpr int kTagShift = kServerBits + 2;
constexpr uint64_t kServerMask = (uint64_t{1} << kServerBits) - 1;

inline void *ContextOf(uint64_t tag, uint8_t kind, uint64_t server_id) {
    uint64_t value = (tag << kTagShift) | (std::min(server_id, kServerMask) << 2) | kind;
    return reinterpret_cast<void *>(value);
}

inline uint64_t ValueOf(void *context) { return reinterpret_cast<uint64_t>(context); }
inline uint8_t KindOf(void *context) { return ValueOf(context) & 3; }
inline uint64_t TagOf(void *context) { return ValueOf(context) >> kTagShift; }
inline bool SameTag(uint64_t tag, void *context) {
    return (tag & (~uint64_t{0} >> kTagShift)) == TagOf(context);
}

inline std::string ServerOf(void *context) {
    uint64_t id = (ValueOf(context) >> 2) & kServerMask;
    return id == kServerMask ? std::string("?") : std::to_string(id);
}

inline const char *CallOf(void *context) {
    switch (KindOf(context)) {
        case 1:
            return "fi_read";
        case 2:
            return "fi_write";
        case 3:
            return "fi_atomic";
        default:
            return TagOf(context) == 1 ? "fi_write" : "fi_read";  // what a probe stood for
    }
}

}  // namespace fampool::channel

namespace fampool {
struct FabricBinding;
namespace channel {

// Moves item bytes [offset, offset + nbytes) of an item whose servers' heaps are mapped here
// (FabricBinding::direct), piece by piece where they span servers.
void CopyDirect(const FabricBinding &item, uint64_t offset, char *local, uint64_t nbytes,
                bool write);

}  // namespace channel
}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_FABRIC_FABRIC_CHANNEL_INTERNALS_H_
