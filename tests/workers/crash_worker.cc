// crash_worker: a fam client that crashes or is killed mid-run, for the tests that check it
// dies promptly (a crashed client that hangs holds its job, its memory and its fabric
// endpoints until someone sends SIGKILL).
//
//   crash_worker MODE NAME
//
// Initializes fam from the environment, creates region NAME with an item, opens a context, and
// keeps non-blocking puts in flight on both. Then, by MODE:
//   abort      calls abort()
//   double-free  frees a block twice, so that glibc aborts inside free() while it holds the
//              malloc lock
//   wait       creates the file $CRASH_WORKER_READY_FILE (when set) and keeps transferring
//              until a signal ends it
//   handlers   prints one line per signal, "<signal> default" or "<signal> handled by <library
//              file>", for SIGINT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM; exits 0
// Exit status 2 when fam_initialize threw. Two modes end before any of that, the way OpenFAM's
// examples do on a failed start (fam_abort in the catch block), with fam_abort(3):
//   abort-uninitialized  without calling fam_initialize
//   abort-failed-init    after a fam_initialize refused (runtime "NO_SUCH_RUNTIME"), whose
//                        message it prints first
#include <dlfcn.h>
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace openfam;

namespace {

void PrintHandlers() {
    const std::pair<int, const char *> signals[] = {
        {SIGINT, "SIGINT"}, {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
        {SIGFPE, "SIGFPE"}, {SIGSEGV, "SIGSEGV"}, {SIGTERM, "SIGTERM"}};
    for (const auto &[signal, name] : signals) {
        struct sigaction action {};
        sigaction(signal, nullptr, &action);
        if (action.sa_handler == SIG_DFL) {
            std::printf("%s default\n", name);
            continue;
        }
        void *address = (action.sa_flags & SA_SIGINFO)
                            ? reinterpret_cast<void *>(action.sa_sigaction)
                            : reinterpret_cast<void *>(action.sa_handler);
        Dl_info info{};
        dladdr(address, &info);
        std::printf("%s handled by %s\n", name, info.dli_fname ? info.dli_fname : "?");
    }
}

// Frees a 4 KiB block twice (too large for glibc's per-thread cache): glibc detects it inside
// free(), with the arena's lock held, and aborts.
[[noreturn]] void DoubleFree() {
    void *volatile block = std::malloc(4096);
    void *guard = std::malloc(4096);  // keeps the block from merging into the top chunk
    std::free(block);
    std::free(block);
    std::free(guard);
    std::abort();  // not reached: the second free() aborts
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr,
                     "usage: crash_worker abort|double-free|wait|handlers|"
                     "abort-uninitialized|abort-failed-init NAME\n");
        return 2;
    }
    std::string mode = argv[1];
    fam f;
    if (mode == "abort-uninitialized") {
        f.fam_abort(3);
        return 4;  // fam_abort returned
    }
    if (mode == "abort-failed-init") {
        Fam_Options options;
        std::memset(&options, 0, sizeof options);
        char runtime[] = "NO_SUCH_RUNTIME";
        options.runtime = runtime;
        try {
            f.fam_initialize("default", &options);
        } catch (Fam_Exception &e) {
            std::fprintf(stderr, "crash_worker: fam_initialize: %s\n", e.fam_error_msg());
            f.fam_abort(3);
        }
        return 4;  // fam_initialize accepted the runtime, or fam_abort returned
    }
    try {
        f.fam_initialize("default", nullptr);
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "crash_worker: fam_initialize: %s\n", e.fam_error_msg());
        return 2;
    }
    if (mode == "handlers") {
        PrintHandlers();
        f.fam_finalize("default");
        return 0;
    }
    Fam_Region_Descriptor *region = f.fam_create_region(argv[2], 8 << 20, 0777, nullptr);
    Fam_Descriptor *item = f.fam_allocate("i", 4 << 20, 0777, region);
    fam_context *context = f.fam_context_open();
    std::vector<char> data(1 << 20, 'x');
    for (int round = 0;; ++round) {
        f.fam_put_nonblocking(data.data(), item, 0, data.size());
        context->fam_put_nonblocking(data.data(), item, 2 << 20, data.size());
        if (round == 4) {
            if (mode == "abort") std::abort();
            if (mode == "double-free") DoubleFree();
            if (const char *ready = std::getenv("CRASH_WORKER_READY_FILE")) {
                if (FILE *file = std::fopen(ready, "w")) std::fclose(file);
            }
        }
        if (round % 16 == 15) {
            f.fam_quiet();
            context->fam_quiet();
        }
    }
}
