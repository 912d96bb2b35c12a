// `fampool run -n N PROGRAM ARGS...`: N processes of PROGRAM under mpirun, each given the
// cluster file in FAMPOOL_CONFIG (and every other FAMPOOL_* variable already set).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include "cli.h"
#include "emulate.h"

extern char **environ;

namespace fampool::cli {
namespace {

// The first executable `name` on PATH, or "".
std::string OnPath(const std::string &name) {
    const char *path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
            return candidate;
        }
    }
    return "";
}

std::string Joined(const std::vector<std::string> &words) {
    std::string line;
    for (const std::string &word : words) line += (line.empty() ? "" : " ") + ShellQuote(word);
    return line;
}

[[noreturn]] void Exec(const std::vector<std::string> &argv) {
    std::vector<char *> args;
    for (const std::string &arg : argv) args.push_back(const_cast<char *>(arg.c_str()));
    args.push_back(nullptr);
    std::fflush(nullptr);
    execvp(args[0], args.data());
    Die(errno == ENOENT ? 127 : 126, "fampool run: cannot execute {}: {}", argv[0],
        std::strerror(errno));
}

}  // namespace

int Run(const RunOptions &options) {
    if (options.command.empty())
        Die(1, "fampool run: no PROGRAM given (fampool run -n N PROGRAM ARGS...)");
    if (options.ranks < 1) Die(1, "fampool run: -n {} must be at least 1", options.ranks);
    const std::string cluster_file = ClusterFileOf(options.cluster);
    LoadCluster("run", cluster_file);  // a missing or wrong file stops here, not in every rank
    setenv("FAMPOOL_CONFIG", cluster_file.c_str(), 1);
    // On an emulated fabric each PE goes to a client node: `fampool exec --by-rank` (its
    // rank's node, round robin) runs the program there.
    std::vector<std::string> command = options.command;
    if (std::optional<Emulation> emulation = EmulationOf(cluster_file)) {
        if (geteuid() != 0) {
            Die(1,
                "fampool run: the cluster of {} runs on an emulated fabric, and placing PEs "
                "in its client nodes' network namespaces needs root",
                cluster_file);
        }
        std::error_code ec;
        std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
        if (ec) Die(1, "fampool run: cannot find its own program: {}", ec.message());
        std::vector<std::string> wrapper = {self, "exec", "--config", cluster_file, "--by-rank"};
        command.insert(command.begin(), wrapper.begin(), wrapper.end());
        std::fprintf(stderr,
                     "fampool run: %d PE(s) over %zu client node(s) of the emulated "
                     "fabric, round robin\n",
                     options.ranks, emulation->Clients().size());
        if (options.ranks == 1) setenv("PMI_RANK", "0", 0);
    }

    std::string mpirun = OnPath("mpirun");
    if (mpirun.empty()) {
        if (options.ranks != 1) {
            Die(1,
                "fampool run: mpirun is not on PATH, so {} processes cannot be started; install "
                "an MPI (OpenMPI: apt-get install openmpi-bin) or use -n 1",
                options.ranks);
        }
        std::fprintf(stderr, "fampool run: FAMPOOL_CONFIG=%s %s\n",
                     ShellQuote(cluster_file).c_str(), Joined(command).c_str());
        Exec(command);
    }
    std::vector<std::string> argv = {"mpirun", "-n", std::to_string(options.ranks),
                                     "--oversubscribe"};
    if (geteuid() == 0) argv.push_back("--allow-run-as-root");
    argv.push_back("-x");
    argv.push_back("FAMPOOL_CONFIG=" + cluster_file);
    // Open MPI's oshmem (OpenSHMEM + FAM programs) crashes in shmem_finalize with its osc/rdma
    // component loaded (docs/apps.md); osc/ucx works. Kept when the caller chose one.
    if (!getenv("OMPI_MCA_osc")) setenv("OMPI_MCA_osc", "ucx", 1);
    argv.push_back("-x");
    argv.push_back("OMPI_MCA_osc");
    for (char **entry = environ; *entry; ++entry) {
        std::string variable = *entry;
        std::string name = variable.substr(0, variable.find('='));
        if (name.starts_with("FAMPOOL_") && name != "FAMPOOL_CONFIG") {
            argv.push_back("-x");
            argv.push_back(name);
        }
    }
    argv.insert(argv.end(), command.begin(), command.end());
    std::fprintf(stderr, "fampool run: %s\n", Joined(argv).c_str());
    // By name, found on PATH, never by absolute path: Open MPI takes /usr/bin/mpirun as
    // `--prefix /usr` and puts /usr/bin first in the PEs' PATH, so a `python3` of the caller's
    // venv or pyenv became the system's (and its packages vanished).
    Exec(argv);
}

}  // namespace fampool::cli
