// `fampool down`: stops the servers of a run directory by the PIDs `up` recorded, frees their
// volatile heaps, and stops the delay lines and removes the network namespaces of the emulated
// fabric `up --emulate` made.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli.h"
#include "emulate.h"
#include "process.h"

namespace fampool::cli {
namespace fs = std::filesystem;
namespace {

// The delay lines and network namespaces of the run directory's emulated fabric, if it has
// one, once every server in them has stopped.
void RemoveEmulated(const std::string &dir) {
    std::optional<Emulation> emulation = EmulationOf(dir + "/cluster.yaml");
    if (!emulation) return;
    RemovedEmulation removed = RemoveEmulation(*emulation, dir);
    if (!removed.delay_lines.empty()) {
        std::printf("fampool down: stopped the delay lines %s\n",
                    fmt::format("{}", fmt::join(removed.delay_lines, ", ")).c_str());
    }
    std::printf("fampool down: removed the emulated fabric: %zu network namespace(s)%s%s\n",
                removed.namespaces.size(), removed.namespaces.empty() ? "" : ", ",
                fmt::format("{}", fmt::join(removed.namespaces, ", ")).c_str());
}

}  // namespace

int Down(const DownOptions &options) {
    const std::string dir = RunDirOf(options.run_dir);
    std::vector<PidFile> files = ReadPidFiles(dir);
    if (files.empty()) {
        std::printf("fampool down: nothing is running from %s (no pid files in %s/pids)\n",
                    dir.c_str(), dir.c_str());
        RemoveEmulated(dir);
        return 0;
    }
    std::vector<pid_t> pids;
    std::map<pid_t, std::string> names;
    std::vector<std::string> notes;
    for (const PidFile &file : files) {
        if (file.pid <= 0) {
            notes.push_back(fmt::format("{} holds no PID: removed", file.path));
        } else if (!ProcessAlive(file.pid)) {
            notes.push_back(fmt::format("{} (pid {}) was not running", file.name, file.pid));
        } else if (!IsClusterProcess(file)) {
            std::vector<std::string> argv = CommandLineOf(file.pid);
            notes.push_back(fmt::format("pid {} of {} now runs {}, not a {}: left alone", file.pid,
                                        file.name, argv.empty() ? std::string("?") : argv[0],
                                        file.name == "munged" ? "munged" : "fampool-server"));
        } else {
            pids.push_back(file.pid);
            names[file.pid] = file.name;
        }
    }
    auto start = std::chrono::steady_clock::now();
    Stopped stopped = StopProcesses(pids, options.timeout_s);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const std::string &note : notes) std::printf("fampool down: %s\n", note.c_str());
    auto list = [&](const std::vector<pid_t> &group) {
        std::vector<std::string> parts;
        for (pid_t pid : group) parts.push_back(fmt::format("{} (pid {})", names[pid], pid));
        return fmt::format("{}", fmt::join(parts, ", "));
    };
    if (!stopped.terminated.empty()) {
        std::printf("fampool down: stopped %s in %.1f s\n", list(stopped.terminated).c_str(), took);
    }
    if (!stopped.killed.empty()) {
        std::printf("fampool down: killed %s (still running %g s after SIGTERM)\n",
                    list(stopped.killed).c_str(), options.timeout_s);
    }
    for (const PidFile &file : files) {
        bool remains = std::count(stopped.remaining.begin(), stopped.remaining.end(), file.pid);
        std::error_code ec;
        if (!remains) fs::remove(file.path, ec);
    }
    if (!stopped.remaining.empty()) {
        Die(1,
            "fampool down: could not stop {} (the signal was refused, or it does not end "
            "even on SIGKILL); their pid files are kept",
            list(stopped.remaining));
    }
    // Volatile heaps die with their servers: free the memory `up` gave them in /dev/shm.
    std::error_code ec;
    uint64_t removed = fs::remove_all(ShmBase(dir), ec);
    if (removed > 0 && !ec)
        std::printf("fampool down: removed volatile heaps in %s\n", ShmBase(dir).c_str());
    if (pids.empty()) std::printf("fampool down: nothing was running from %s\n", dir.c_str());
    RemoveEmulated(dir);
    return 0;
}

}  // namespace fampool::cli
