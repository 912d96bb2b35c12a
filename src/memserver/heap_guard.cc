#include "memserver/heap_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace fampool {
namespace {

// The registered ranges, found by the signal handler without a lock: a slot is free when its
// base is 0, and claimed (its length being written) while it is kClaimed. More heaps than
// slots go unguarded (a server maps one heap per extent it holds).
constexpr uintptr_t kClaimed = 1;
constexpr size_t kSlots = 8192;
struct Range {
    std::atomic<uintptr_t> base{0};
    std::atomic<uint64_t> length{0};
};
Range g_ranges[kSlots];
std::atomic<uint64_t> g_faults{0};
std::atomic<bool> g_installed{false};

bool Registered(uintptr_t address) {
    for (const Range &range : g_ranges) {
        uintptr_t base = range.base.load(std::memory_order_acquire);
        if (base > kClaimed && address >= base && address - base < range.length.load()) {
            return true;
        }
    }
    return false;
}

void OnBusError(int signal, siginfo_t *info, void *) {
    uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
    long page = sysconf(_SC_PAGESIZE);
    void *start = reinterpret_cast<void *>(address & ~static_cast<uintptr_t>(page - 1));
    if (Registered(address) && mmap(start, static_cast<size_t>(page), PROT_READ | PROT_WRITE,
                                    MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
        if (g_faults.fetch_add(1) == 0) {
            static const char kSaid[] =
                "fampool-server: a heap was cut short under a mapping (a client with write "
                "access truncated it): its cut pages now read as zeros\n";
            (void)!write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
        }
        return;  // the access is made again, on the zero page
    }
    // Not a heap's: the default action (the fault comes again and ends the process).
    struct sigaction fallback;
    std::memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigaction(signal, &fallback, nullptr);
}

}  // namespace

void GuardHeapMappings() {
    if (g_installed.exchange(true)) return;
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = OnBusError;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, nullptr);
}

void RegisterHeapRange(const char *base, uint64_t length) {
    uintptr_t address = reinterpret_cast<uintptr_t>(base);
    for (Range &range : g_ranges) {
        uintptr_t free = 0;
        // Claimed, then the length, then the base: the handler never pairs a base with
        // another range's length.
        if (!range.base.compare_exchange_strong(free, kClaimed)) continue;
        range.length.store(length);
        range.base.store(address, std::memory_order_release);
        return;
    }
}

void UnregisterHeapRange(const char *base) {
    uintptr_t address = reinterpret_cast<uintptr_t>(base);
    for (Range &range : g_ranges) {
        uintptr_t expected = address;
        if (range.base.compare_exchange_strong(expected, 0, std::memory_order_release)) return;
    }
}

uint64_t GuardedFaults() { return g_faults.load(); }

}  // namespace fampool
