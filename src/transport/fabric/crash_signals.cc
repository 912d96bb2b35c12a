// Debian's libfabric links the psm provider's libinfinipath, whose load-time constructor
// installs handlers for SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM in every process
// that links libfabric, before main() runs. The handler prints a backtrace: a Ctrl-C or a kill
// prints a stack, and a crash inside malloc (a double free, which glibc ends with abort())
// takes the malloc lock the crash already holds, so the process hangs in a futex with every
// signal blocked, and only SIGKILL ends it. fampool puts the default actions back when it is
// loaded, and again after the fabric is opened (providers loaded later could do the same),
// touching only handlers that live in libinfinipath: the application's own stay.
#include <dlfcn.h>
#include <signal.h>

#include <cstring>

#include "transport/fabric/fabric.h"

namespace fampool {
namespace {

bool HandlerInLibInfinipath(const struct sigaction &action) {
    if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) return false;
    void *address = (action.sa_flags & SA_SIGINFO)
                        ? reinterpret_cast<void *>(action.sa_sigaction)
                        : reinterpret_cast<void *>(action.sa_handler);
    Dl_info info{};
    return dladdr(address, &info) && info.dli_fname &&
           std::strstr(info.dli_fname, "libinfinipath") != nullptr;
}

__attribute__((constructor)) void RestoreOnLoad() { RestoreCrashSignals(); }

}  // namespace

void RestoreCrashSignals() {
    for (int signal : {SIGINT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM, SIGQUIT}) {
        struct sigaction action {};
        if (sigaction(signal, nullptr, &action) != 0 || !HandlerInLibInfinipath(action)) continue;
        struct sigaction standard {};
        standard.sa_handler = SIG_DFL;
        sigemptyset(&standard.sa_mask);
        sigaction(signal, &standard, nullptr);
    }
}

}  // namespace fampool
