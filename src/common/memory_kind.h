// What a memory server's memory is (its kind) and how fast it is, for intent-based placement
// (seed 003; docs/intent.md). A server declares its kind in the cluster file; its bandwidth and
// latency are set there (the emulated fabric writes its links' rate and delay) or measured by
// the server at start on its own heap directory.
#ifndef FAMPOOL_COMMON_MEMORY_KIND_H_
#define FAMPOOL_COMMON_MEMORY_KIND_H_

#include <cstdint>
#include <string>

namespace fampool {

// The kinds a server may declare: "dram", "persistent" (memory that keeps its bytes across a
// restart: NVRAM, or heaps on a local file system), "far" (a slower tier: CXL-attached memory,
// a parallel file system).
bool IsMemoryKind(const std::string &kind);
// "dram, persistent, far" (for messages).
const char *MemoryKindList();
// The kind a server that declares none has: "persistent" when it holds persistent regions
// only, else "dram".
std::string DefaultMemoryKind(const std::string &memory_type);

// A bandwidth in bytes per second from "200mbit", "10gbit", "1500kbit", "800bit" (bits per
// second) or "2GB/s", "500MB/s", "64KB/s", "100B/s" (bytes, decimal). Throws
// Failure(FAM_ERR_INVALID) naming `what` otherwise.
uint64_t ParseBandwidth(const std::string &what, const std::string &text);
// A latency in nanoseconds from "120ns", "2us", "1ms". Throws Failure(FAM_ERR_INVALID).
uint64_t ParseLatency(const std::string &what, const std::string &text);
// 1250000000 -> "1.25 GB/s"; 0 -> "-".
std::string BandwidthText(uint64_t bytes_per_second);
// 2000 -> "2.0 us"; 0 -> "-".
std::string LatencyText(uint64_t nanoseconds);

// What placement knows of a memory server's memory.
struct MemoryProfile {
    std::string kind;         // dram, persistent or far
    uint64_t bandwidth = 0;   // bytes per second; 0: unknown
    uint64_t latency_ns = 0;  // 0: unknown
    uint64_t capacity = 0;    // bytes of extents it may hold; 0: no limit
    std::string host;         // the node it runs on ("": this process's node)
    bool known = false;       // false: not learnt yet (the server did not answer)
};

// A server's declared memory: its kind and what is known of its speed (0: to be measured).
inline MemoryProfile DeclaredProfile(const std::string &kind, uint64_t bandwidth = 0,
                                     uint64_t latency_ns = 0) {
    MemoryProfile profile;
    profile.kind = kind;
    profile.bandwidth = bandwidth;
    profile.latency_ns = latency_ns;
    return profile;
}

struct MemorySpeed {
    uint64_t bandwidth = 0;   // bytes per second a copy into the memory sustains
    uint64_t latency_ns = 0;  // one dependent load from it
};
// Measures memory of a heap in `dir` (a file there, mapped, of `bytes`; removed after): the
// rate of a copy into it and the latency of dependent loads at random. About 30 ms for 32 MiB.
// Throws Failure(FAM_ERR_MEMORY) when the file cannot be made.
MemorySpeed MeasureMemory(const std::string &dir, uint64_t bytes = uint64_t{32} << 20);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_MEMORY_KIND_H_
