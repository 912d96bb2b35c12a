// Debian's libfabric links the psm provider's libinfinipath, whose load-time constructor
// installs handlers for SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM in every process
// that links libfabric, before main() runs. The handler prints a backtrace: a Ctrl-C or a kill
// prints a stack, and a crash inside malloc (a double free, which glibc ends with abort())
// takes the malloc lock the crash already holds, so the process hangs in a futex with every
// signal blocked, and only SIGKILL ends it. fampool puts the default actions back when it is
// loaded, and after each fi_getinfo what was there before it (providers loaded then could do
// the same), touching only handlers that live in libinfinipath: the application's own stay.
#include <dlfcn.h>
#include <signal.h>

#include <cstring>
#include <iterator>

#include "fabric/fabric.h"

namespace fampool {
namespace {

bool HandlerInLibInfinipath(const struct sigaction &action) {
    if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) return false;
    void *address = (action.sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(action.sa_sigaction)
                                                   : reinterpret_cast<void *>(action.sa_handler);
    Dl_info info{};
    return dladdr(address, &info) && info.dli_fname &&
           std::strstr(info.dli_fname, "libinfinipath") != nullptr;
}

constexpr int kSignals[] = {SIGINT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM, SIGQUIT};
static_assert(std::size(kSignals) == CrashSignals::kCount);

__attribute__((constructor)) void RestoreOnLoad() { RestoreCrashSignals(CrashSignals()); }

}  // namespace

CrashSignals::CrashSignals() {
    for (size_t i = 0; i < std::size(kSignals); ++i) {
        if (sigaction(kSignals[i], nullptr, &saved_[i]) != 0) {
            saved_[i] = {};
            saved_[i].sa_handler = SIG_DFL;
        }
    }
}

void RestoreCrashSignals(const CrashSignals &before) {
    for (size_t i = 0; i < std::size(kSignals); ++i) {
        struct sigaction now {};
        if (sigaction(kSignals[i], nullptr, &now) != 0 || !HandlerInLibInfinipath(now)) continue;
        // What was there before libinfinipath came, unless that was libinfinipath's too.
        struct sigaction back = before.saved_[i];
        if (HandlerInLibInfinipath(back)) {
            back = {};
            back.sa_handler = SIG_DFL;
            sigemptyset(&back.sa_mask);
        }
        sigaction(kSignals[i], &back, nullptr);
    }
}

}  // namespace fampool
