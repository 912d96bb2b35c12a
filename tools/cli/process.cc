#include "process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli.h"

namespace fampool::cli {
namespace fs = std::filesystem;

bool ProcessAlive(pid_t pid) {
    if (pid <= 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    // "pid (comm) S ...": the state follows the last ')' (comm may hold anything).
    size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) return false;
    char state = line[close + 2];
    return state != 'Z' && state != 'X' && state != 'x';
}

std::vector<std::string> CommandLineOf(pid_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::vector<std::string> argv;
    std::string arg;
    while (std::getline(file, arg, '\0')) argv.push_back(arg);
    return argv;
}

bool IsFampoolServer(pid_t pid) {
    std::vector<std::string> argv = CommandLineOf(pid);
    return !argv.empty() && fs::path(argv[0]).filename() == "fampool-server";
}

bool IsClusterProcess(const PidFile &file) {
    if (file.name != "munged") return IsFampoolServer(file.pid);
    std::vector<std::string> argv = CommandLineOf(file.pid);
    return !argv.empty() && fs::path(argv[0]).filename() == "munged";
}

pid_t StartDetached(const std::vector<std::string> &argv, const std::string &log,
                    const std::string &netns) {
    // The previous run's log is kept beside the new one (LOG.1): after a crash, the next
    // `fampool up` on the same run directory would otherwise erase what the server said.
    std::error_code ignored;
    if (fs::file_size(log, ignored) > 0 && !ignored) fs::rename(log, log + ".1", ignored);
    // Logs name regions, items and users: the cluster user's to read.
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0) Die(1, "fampool up: cannot create log file {}: {}", log, std::strerror(errno));
    fchmod(log_fd, 0600);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
        close(log_fd);
        Die(1, "fampool up: cannot open /dev/null: {}", std::strerror(errno));
    }
    int netns_fd = -1;
    if (!netns.empty()) {
        std::string path = "/run/netns/" + netns;
        netns_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (netns_fd < 0) {
            close(log_fd);
            close(null_fd);
            Die(1, "fampool up: cannot open network namespace {}: {}", path, std::strerror(errno));
        }
    }
    // Everything the child needs is prepared before fork: it only calls async-signal-safe
    // functions between fork and exec.
    std::vector<char *> args;
    for (const std::string &arg : argv) args.push_back(const_cast<char *>(arg.c_str()));
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();  // its own session: no terminal signals (Ctrl-C) reach it
        if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) {
            const char *why = std::strerror(errno);
            static const char kCannot[] = "fampool up: cannot enter its network namespace: ";
            (void)!write(log_fd, kCannot, sizeof kCannot - 1);
            (void)!write(log_fd, why, std::strlen(why));
            (void)!write(log_fd, "\n", 1);
            _exit(126);
        }
        dup2(null_fd, STDIN_FILENO);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        close_range(3, ~0U, 0);  // no pipe of our caller stays open in the server
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        execv(args[0], args.data());
        const char *why = std::strerror(errno);
        (void)!write(STDERR_FILENO, "fampool up: cannot execute ", 27);
        (void)!write(STDERR_FILENO, args[0], std::strlen(args[0]));
        (void)!write(STDERR_FILENO, ": ", 2);
        (void)!write(STDERR_FILENO, why, std::strlen(why));
        (void)!write(STDERR_FILENO, "\n", 1);
        _exit(127);
    }
    int fork_errno = errno;
    close(log_fd);
    close(null_fd);
    if (netns_fd >= 0) close(netns_fd);
    if (pid < 0)
        Die(1, "fampool up: cannot fork to start {}: {}", argv[0], std::strerror(fork_errno));
    return pid;
}

std::string EndedChild(pid_t pid) {
    int status = 0;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == 0) return "";
    if (got < 0) return ProcessAlive(pid) ? "" : "ended";  // not our child (already collected)
    if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    return "ended";
}

namespace {

// Collects pid if it is our child, then tells whether it still runs.
bool StillRunning(pid_t pid) {
    waitpid(pid, nullptr, WNOHANG);
    return ProcessAlive(pid);
}

// Waits until none of `pids` runs or the time is up; returns those still running.
std::vector<pid_t> WaitGone(std::vector<pid_t> pids, double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    while (true) {
        std::erase_if(pids, [](pid_t pid) { return !StillRunning(pid); });
        if (pids.empty() || std::chrono::steady_clock::now() >= deadline) return pids;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace

Stopped StopProcesses(const std::vector<pid_t> &pids, double timeout_s) {
    Stopped result;
    std::vector<pid_t> signalled;
    for (pid_t pid : pids) {
        if (pid <= 0) continue;
        if (kill(pid, SIGTERM) == 0) {
            signalled.push_back(pid);
        } else if (errno == ESRCH) {
            result.terminated.push_back(pid);
        } else {
            result.remaining.push_back(pid);
        }
    }
    std::vector<pid_t> stubborn = WaitGone(signalled, timeout_s);
    for (pid_t pid : signalled) {
        if (std::find(stubborn.begin(), stubborn.end(), pid) == stubborn.end()) {
            result.terminated.push_back(pid);
        }
    }
    for (pid_t pid : stubborn) kill(pid, SIGKILL);
    std::vector<pid_t> undead = WaitGone(stubborn, 3.0);
    for (pid_t pid : stubborn) {
        bool gone = std::find(undead.begin(), undead.end(), pid) == undead.end();
        (gone ? result.killed : result.remaining).push_back(pid);
    }
    return result;
}

std::vector<PidFile> ReadPidFiles(const std::string &run_dir) {
    std::vector<PidFile> files;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(run_dir + "/pids", ec)) {
        if (entry.path().extension() != ".pid") continue;
        PidFile file;
        file.name = entry.path().stem().string();
        file.path = entry.path().string();
        std::ifstream in(file.path);
        long pid = 0;
        if (in >> pid && pid > 0) file.pid = static_cast<pid_t>(pid);
        files.push_back(file);
    }
    std::sort(files.begin(), files.end(),
              [](const PidFile &a, const PidFile &b) { return a.name < b.name; });
    return files;
}

void WritePidFile(const std::string &path, pid_t pid) {
    std::string temporary = path + ".new";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << pid << "\n";
        if (!out.flush()) Die(1, "fampool up: cannot write pid file {}", temporary);
    }
    std::error_code ec;
    fs::rename(temporary, path, ec);
    if (ec) Die(1, "fampool up: cannot write pid file {}: {}", path, ec.message());
}

// The port of metadata shard `shard` in a cluster file `up` writes: the base port for shard 0,
// base + 200 + k for the others (above the memory servers' fabric ports).
int ShardPort(int base, unsigned shard) {
    return shard == 0 ? base : base + 200 + static_cast<int>(shard);
}

int MetricsPort(int base, bool metadata, unsigned index) {
    return base + (metadata ? 300 : 400) + static_cast<int>(index);
}

// Every port a cluster of `servers` memory servers and `shards` metadata shards takes on one
// host from base port `base` (their metrics endpoints' too).
std::vector<int> PortsFrom(int base, unsigned servers, unsigned shards) {
    std::vector<int> ports;
    for (unsigned k = 0; k < shards; ++k) {
        ports.push_back(ShardPort(base, k));
        ports.push_back(MetricsPort(base, true, k));
    }
    for (unsigned i = 0; i < servers; ++i) {
        ports.push_back(base + 1 + static_cast<int>(i));
        ports.push_back(base + 100 + static_cast<int>(i));
        ports.push_back(MetricsPort(base, false, i));
    }
    return ports;
}

// The kernel's range of ports for outgoing connections (ip_local_port_range): it hands them
// out at any moment, so a port found free there may be taken before a server binds it (a
// fresh clone's bench_smoke failed so: "cannot listen on 127.0.0.1:50224").
std::pair<int, int> EphemeralPorts() {
    int low = 32768, high = 60999;
    std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
    int a = 0, b = 0;
    if (in >> a >> b && a > 0 && b >= a) low = a, high = b;
    return {low, high};
}

// --base-port auto: the first base port, from a place that depends on this process (so that
// clusters started at once look in different places), whose every port is free on the
// loopback interface now. The place is above the kernel's ephemeral ports (61000-65135 with
// Linux's default range), else below them, in 20000 and up; the test suite's own clusters use
// 20000-32000.
namespace {
int base_port_lock = -1;  // held from FreeBasePort to ReleaseBasePort
}  // namespace

void ReleaseBasePort() {
    if (base_port_lock >= 0) close(base_port_lock);  // and with it the lock
    base_port_lock = -1;
}

int FreeBasePort(unsigned servers, unsigned shards) {
    constexpr int kRoom = 500, kLowest = 20000, kEnough = 1000, kStep = 317;
    // Two `up`s at once each found the other's ports free before either bound them (a
    // fresh clone's bench_smoke: "cannot serve metrics on 127.0.0.1:64009 (port taken)"):
    // one chooses and starts its servers at a time. Readable by every user, so that anyone's
    // `up` can wait on it; without it (an unwritable /tmp), the probe alone.
    // Waited for 30 s at most: a lock held longer (an `up` stuck, or another user holding it
    // on purpose) leaves this one to the probe alone rather than waiting for ever.
    if (base_port_lock < 0) {
        const char *path = "/tmp/fampool-base-port.lock";
        base_port_lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (base_port_lock >= 0) {
            fchmod(base_port_lock, 0644);  // whatever the umask (fails, harmlessly, if not ours)
        } else {
            base_port_lock = open(path, O_RDONLY | O_CLOEXEC);
        }
        bool locked = false;
        for (int i = 0; base_port_lock >= 0 && !locked && i < 600; ++i) {
            locked = flock(base_port_lock, LOCK_EX | LOCK_NB) == 0;
            if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (!locked) ReleaseBasePort();
    }
    auto [low, high] = EphemeralPorts();
    int first = high + 1, last = 65535 - kRoom;
    if (last - first < kEnough) first = kLowest, last = low - 1 - kRoom;
    if (last - first < kEnough) first = kLowest, last = 65535 - kRoom;  // no room outside it
    const int span = last - first + 1;
    const int start = static_cast<int>(static_cast<unsigned>(getpid()) * 7919u % span);
    for (int tried = 0; tried < span; tried += kStep) {
        int base = first + (start + tried) % span;
        std::vector<int> ports = PortsFrom(base, servers, shards);
        if (std::all_of(ports.begin(), ports.end(), [](int p) { return BindError(p) == 0; })) {
            return base;
        }
    }
    Die(1,
        "fampool up: --base-port auto found no free ports for {} memory servers and {} "
        "metadata shard(s) in {} to {}",
        servers, shards, first, last + kRoom);
}

int BindError(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    // Like the servers themselves: a port whose last connections linger in TIME_WAIT is free.
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int error = bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 ? 0 : errno;
    close(fd);
    return error;
}

pid_t PortHolder(int port) {
    // The socket inodes listening on the port (state 0A is LISTEN), from /proc/net/tcp{,6}.
    std::vector<std::string> inodes;
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
                timeout >> inode;
            size_t colon = local.rfind(':');
            if (colon == std::string::npos || state != "0A") continue;
            if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
                inodes.push_back("socket:[" + inode + "]");
            }
        }
    }
    if (inodes.empty()) return 0;
    std::error_code ec;
    for (const auto &process : fs::directory_iterator("/proc", ec)) {
        std::string name = process.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
        std::error_code fd_ec;
        for (const auto &fd : fs::directory_iterator(process.path() / "fd", fd_ec)) {
            std::error_code link_ec;
            std::string target = fs::read_symlink(fd.path(), link_ec).string();
            if (!link_ec && std::find(inodes.begin(), inodes.end(), target) != inodes.end()) {
                return static_cast<pid_t>(std::stol(name));
            }
        }
    }
    return 0;
}

bool Accepts(const std::string &address) {
    addrinfo hints{}, *found = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    std::string host = HostOf(address), port = std::to_string(PortOf(address));
    if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
    if (host == "::") host = "::1";
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return false;
    bool accepted = false;
    for (addrinfo *a = found; a && !accepted; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        accepted = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(found);
    return accepted;
}

std::string Tail(const std::string &path, int lines) {
    std::ifstream in(path);
    if (!in) return fmt::format("    (cannot read {})", path);
    std::deque<std::string> last;
    std::string line;
    while (std::getline(in, line)) {
        last.push_back(line);
        if (static_cast<int>(last.size()) > lines) last.pop_front();
    }
    if (last.empty()) return fmt::format("    ({} is empty)", path);
    std::string text;
    for (const std::string &l : last) text += (text.empty() ? "    " : "\n    ") + l;
    return text;
}

std::string ToolPath(const std::string &name) {
    for (const char *dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
        std::string path = dir + name;
        if (access(path.c_str(), X_OK) == 0) return path;
    }
    return "";
}

ToolResult RunTool(const std::vector<std::string> &argv, int timeout_ms) {
    ToolResult result;
    std::string program = ToolPath(argv[0]);
    if (program.empty()) {
        result.output = argv[0] + " not found in /usr/sbin, /sbin, /usr/bin or /bin";
        return result;
    }
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        result.output = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    std::vector<char *> args;
    for (const std::string &arg : argv) args.push_back(const_cast<char *>(arg.c_str()));
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipe_fds[1], STDOUT_FILENO);
        dup2(pipe_fds[1], STDERR_FILENO);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
        execv(program.c_str(), args.data());
        _exit(127);
    }
    close(pipe_fds[1]);
    if (pid < 0) {
        close(pipe_fds[0]);
        result.output = std::string("fork: ") + std::strerror(errno);
        return result;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buffer[4096];
    bool timed_out = false;
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd fd{pipe_fds[0], POLLIN, 0};
        if (poll(&fd, 1, static_cast<int>(left)) <= 0) continue;
        ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
        if (n <= 0) break;
        result.output.append(buffer, n);
    }
    close(pipe_fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (timed_out) {
        result.output += fmt::format("(killed after {} s)", timeout_ms / 1000);
    } else if (WIFEXITED(status)) {
        result.status = WEXITSTATUS(status);
    }
    while (!result.output.empty() && std::isspace(static_cast<unsigned char>(result.output.back())))
        result.output.pop_back();
    return result;
}

}  // namespace fampool::cli
