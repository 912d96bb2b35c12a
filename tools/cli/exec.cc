// `fampool exec`: runs a command on a node of an emulated fabric (inside its network namespace),
// and places the PEs of `fampool run` on the client nodes, one rank after another.
//
// A PE under mpirun reaches its launcher's PMIx server at 127.0.0.1:PORT (PMIX_SERVER_URI*),
// an address of the host's own namespace, which a client node's namespace does not have. The
// first PE placed on a node therefore leaves a forwarder behind on that node's 127.0.0.1:PORT:
// each connection made to it there is carried to the same port of the host's loopback. It
// ends when the launcher does.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "cli.h"
#include "common/error.h"
#include "common/network.h"
#include "emulate.h"

namespace fampool::cli {
namespace {

// The port of the PMIx server this process was launched with; 0 when there is none.
int PmixServerPort() {
    for (const char *name : {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
                             "PMIX_SERVER_URI21", "PMIX_SERVER_URI2"}) {
        const char *uri = std::getenv(name);
        if (!uri) continue;
        std::string text = uri;
        size_t at = text.find("tcp4://127.0.0.1:");
        if (at == std::string::npos) {
            Die(1,
                "fampool exec: {}={} is not a PMIx server on 127.0.0.1 over TCP, which is all "
                "a PE on an emulated node can be given",
                name, text);
        }
        return std::atoi(text.c_str() + at + 17);
    }
    return 0;
}

// The rank of this process in its job (Open MPI, PMIx, PMI2 launchers).
int RankOfThisProcess() {
    for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
        if (const char *value = std::getenv(name)) return std::atoi(value);
    }
    Die(1,
        "fampool exec --by-rank: no rank in the environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, "
        "PMI_RANK, SLURM_PROCID): it places the PEs of `fampool run`");
}

int Loopback(int port, bool listen_on_it) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    int ok = listen_on_it ? bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address)
                          : connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
    if (ok == 0 && listen_on_it) ok = listen(fd, 128);
    if (ok != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool WriteAll(int fd, const char *data, ssize_t n) {
    while (n > 0) {
        ssize_t sent = write(fd, data, n);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return false;
        data += sent;
        n -= sent;
    }
    return true;
}

// The forwarder's loop (see the top of the file): connections accepted on `listener` (in the
// node's namespace, `node_ns`) are joined to new ones to 127.0.0.1:port made in `host_ns`, until
// process `launcher` ends.
[[noreturn]] void Forward(int listener, int host_ns, int node_ns, int port, pid_t launcher) {
    struct Pair {
        int inner, outer;
    };
    std::vector<Pair> pairs;
    char buffer[65536];
    while (kill(launcher, 0) == 0 || errno != ESRCH) {
        std::vector<pollfd> fds = {{listener, POLLIN, 0}};
        for (const Pair &pair : pairs) {
            fds.push_back({pair.inner, POLLIN, 0});
            fds.push_back({pair.outer, POLLIN, 0});
        }
        if (poll(fds.data(), fds.size(), 500) <= 0) continue;
        const size_t polled = pairs.size();
        if (fds[0].revents & POLLIN) {
            int inner = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            if (inner >= 0) {
                setns(host_ns, CLONE_NEWNET);
                int outer = Loopback(port, false);
                setns(node_ns, CLONE_NEWNET);
                if (outer < 0) {
                    close(inner);
                } else {
                    pairs.push_back({inner, outer});
                }
            }
        }
        std::vector<Pair> kept;
        for (size_t i = 0; i < polled; ++i) {
            bool open = true;
            for (int side = 0; side < 2 && open; ++side) {
                const pollfd &fd = fds[1 + 2 * i + side];
                if (!(fd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
                int to = side == 0 ? pairs[i].outer : pairs[i].inner;
                ssize_t n = read(fd.fd, buffer, sizeof buffer);
                open = n > 0 && WriteAll(to, buffer, n);
            }
            if (open) {
                kept.push_back(pairs[i]);
            } else {
                close(pairs[i].inner);
                close(pairs[i].outer);
            }
        }
        for (size_t i = polled; i < pairs.size(); ++i) kept.push_back(pairs[i]);
        pairs = std::move(kept);
    }
    _exit(0);
}

// Leaves a forwarder on this node's 127.0.0.1:port unless a PE placed here earlier did;
// `host_ns` is the host's namespace, this process is in the node's (`node_ns`) already.
void ForwardPmix(int port, int host_ns, int node_ns) {
    int listener = Loopback(port, true);
    if (listener < 0) return;  // an earlier PE of the job on this node forwards already
    pid_t launcher = getppid();
    pid_t child = fork();
    if (child == 0) {
        setsid();
        if (fork() != 0) _exit(0);  // not a child of the PE, which becomes the program
        // It holds nothing of the PE's: the launcher waits for the end of the PE's output
        // pipes, and this process waits for the launcher's end.
        int null_fd = open("/dev/null", O_RDWR);
        for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(null_fd, fd);
        // Above every descriptor first, so that none is overwritten before it is moved.
        int kept[3] = {fcntl(listener, F_DUPFD, 100), fcntl(host_ns, F_DUPFD, 100),
                       fcntl(node_ns, F_DUPFD, 100)};
        for (int i = 0; i < 3; ++i) dup2(kept[i], 3 + i);
        close_range(6, ~0U, 0);
        Forward(3, 4, 5, port, launcher);
    }
    close(listener);
    if (child > 0) waitpid(child, nullptr, 0);
}

}  // namespace

int Exec(const ExecOptions &options) {
    if (options.command.empty()) Die(1, "fampool exec: no COMMAND given (fampool exec -- COMMAND)");
    const std::string cluster_file = ClusterFileOf(options.cluster);
    std::optional<Emulation> emulation = EmulationOf(cluster_file);
    if (!emulation) {
        Die(1,
            "fampool exec: the cluster of {} is not on an emulated fabric (no emulation.yaml "
            "beside it): run the command as it is",
            cluster_file);
    }
    std::string netns;
    if (options.by_rank) {
        std::vector<const EmulatedNode *> clients = emulation->Clients();
        netns = clients[RankOfThisProcess() % clients.size()]->netns;
    } else if (options.node == "switch") {
        netns = emulation->switch_netns;
    } else {
        netns = emulation->Node(options.node.empty() ? "client0" : options.node).netns;
    }
    int port = PmixServerPort();
    int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    try {
        EnterNetworkNamespace(netns);
    } catch (const Failure &failure) {
        Die(1, "fampool exec: {}", failure.fam_error_msg());
    }
    int node_ns = open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (port > 0 && host_ns >= 0 && node_ns >= 0) ForwardPmix(port, host_ns, node_ns);
    setenv("FAMPOOL_CONFIG", cluster_file.c_str(), 1);
    std::vector<char *> argv;
    for (const std::string &arg : options.command) argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    std::fflush(nullptr);
    execvp(argv[0], argv.data());
    Die(errno == ENOENT ? 127 : 126, "fampool exec: cannot execute {}: {}", options.command[0],
        std::strerror(errno));
}

}  // namespace fampool::cli
