// child_processes.cc: the child-process helpers of test_support.h: RunInChild, RunAsUser and
// RunInCleanChild (through the spawner on a cluster), ChildProcess and RunProgram.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "test_support.h"

extern char **environ;

namespace fampool_test {
namespace {

using Clock = std::chrono::steady_clock;

// Decodes a waitpid status into RunInChild's convention.
int DecodeStatus(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return kChildUncaughtException;
}

// Waits for `pid` at most `timeout_s` seconds; kills it by PID on timeout.
int WaitForChild(pid_t pid, int timeout_s) {
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
        int status = 0;
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return DecodeStatus(status);
        if (done < 0 && errno != EINTR) return kChildForkFailed;
        if (Clock::now() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            fprintf(stderr, "child %d killed after its %d s timeout\n", static_cast<int>(pid),
                    timeout_s);
            return kChildTimedOut;
        }
        std::this_thread::sleep_for(pause);
        if (pause < std::chrono::milliseconds(20)) pause *= 2;
    }
}

// In a child: drops to uid/gid; false (and why, on stderr) when it could not.
bool BecomeUser(uid_t uid, gid_t gid) {
    if (setgroups(1, &kStoreSharingGid) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
        perror("child: dropping to another user");
        return false;
    }
    if (getuid() != uid || geteuid() != uid || getgid() != gid) {
        fprintf(stderr, "child: still uid %d gid %d\n", static_cast<int>(getuid()),
                static_cast<int>(getgid()));
        return false;
    }
    return true;
}

// Runs `body` as RunInChild's child does: its return value, or kChildUncaughtException.
int RunBody(const std::function<int()> &body) {
    try {
        return body();
    } catch (const Fam_Exception &e) {
        fprintf(stderr, "child: uncaught Fam_Exception %s: %s\n",
                FamErrorName(e.fam_error()).c_str(), e.fam_error_msg());
    } catch (const std::exception &e) {
        fprintf(stderr, "child: uncaught exception: %s\n", e.what());
    } catch (...) {
        fprintf(stderr, "child: uncaught exception of unknown type\n");
    }
    return kChildUncaughtException;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Child processes

int RunInChild(const std::function<int()> &body, int timeout_s) {
    fflush(nullptr);  // or the child would print the parent's buffered output again
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return kChildForkFailed;
    }
    if (pid == 0) {
        int result = RunBody(body);
        fflush(nullptr);
        _exit(result & 0xff);
    }
    return WaitForChild(pid, timeout_s);
}

namespace {

// The spawner: forked when a program that runs on a test cluster starts (FAMPOOL_TEST_CLUSTER
// set), before it holds any gRPC or libfabric state, so that the children it forks hold none
// either. A request is one message on a SOCK_SEQPACKET socket: the header below, the body's
// bytes, the working directory and the environment (each string NUL-terminated). The answer
// is the child's result (an int). The spawner ends when the program closes its end (or dies).
struct SpawnRequest {
    int (*thunk)(const void *);
    uint32_t state_size;
    uint32_t uid;
    uint32_t gid;
    int32_t timeout_s;
};
constexpr size_t kMostRequestBytes = 64 << 10;  // below the socket's send buffer

void ServeSpawnRequests(int socket_fd) {
    std::vector<char> message(kMostRequestBytes);
    for (;;) {
        ssize_t got = recv(socket_fd, message.data(), message.size(), 0);
        if (got <= 0) _exit(0);  // the program ended
        SpawnRequest request;
        if (static_cast<size_t>(got) < sizeof request) _exit(1);
        std::memcpy(&request, message.data(), sizeof request);
        // The body, then at least the working directory, the last string NUL-terminated.
        if (request.state_size > static_cast<size_t>(got) - sizeof request - 1 ||
            message[got - 1] != '\0') {
            _exit(1);
        }
        const char *state = message.data() + sizeof request;
        const char *strings = state + request.state_size;
        const char *end = message.data() + got;
        pid_t spawner = getpid();
        pid_t pid = fork();
        if (pid == 0) {
            // The working directory first, then the environment, each NUL-terminated.
            if (chdir(strings) != 0) perror("child: chdir");
            clearenv();
            for (const char *entry = strings + strlen(strings) + 1; entry < end;
                 entry += strlen(entry) + 1) {
                putenv(const_cast<char *>(entry));
            }
            int result = kChildSetupFailed;
            if (request.uid == detail::kSameUser || BecomeUser(request.uid, request.gid)) {
                // After the change of user, which clears it: ends with the spawner.
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != spawner) _exit(result);
                result = RunBody([&] { return request.thunk(state); });
            }
            fflush(nullptr);
            _exit(result & 0xff);
        }
        int result = pid < 0 ? kChildForkFailed : WaitForChild(pid, request.timeout_s);
        if (send(socket_fd, &result, sizeof result, MSG_NOSIGNAL) != sizeof result) _exit(0);
    }
}

int spawner_socket = -1;
bool spawner_tried = false;

// Starts the spawner before the first test (every static object is built by then, none of
// the program's gRPC or libfabric state yet).
class SpawnerEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        // Once: a repeated run (--gtest_repeat) sets environments up again, by then with
        // gRPC state to inherit.
        if (spawner_socket >= 0 || spawner_tried) return;
        spawner_tried = true;
        if (!getenv("FAMPOOL_TEST_CLUSTER")) return;
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
            perror("test spawner: socketpair");
            return;
        }
        pid_t parent = getpid();
        fflush(nullptr);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(0);
            ServeSpawnRequests(fds[1]);
        }
        close(fds[1]);
        if (pid < 0) {
            perror("test spawner: fork");
            close(fds[0]);
            return;
        }
        spawner_socket = fds[0];
    }
};

[[maybe_unused]] ::testing::Environment *const spawner_environment =
    ::testing::AddGlobalTestEnvironment(new SpawnerEnvironment);

std::mutex spawner_mutex;  // one request in flight

}  // namespace

namespace detail {

int RunAsUserForked(uid_t uid, gid_t gid, const std::function<int()> &body, int timeout_s) {
    return RunInChild([&]() -> int { return BecomeUser(uid, gid) ? body() : kChildSetupFailed; },
                      timeout_s);
}

int RunAsUserSpawned(int (*thunk)(const void *), const void *state, size_t size, uid_t uid,
                     gid_t gid, int timeout_s) {
    if (spawner_socket < 0) {
        fprintf(stderr,
                "RunAsUser: no spawner (FAMPOOL_TEST_CLUSTER was not set when the program "
                "started)\n");
        return kChildForkFailed;
    }
    SpawnRequest request{thunk, static_cast<uint32_t>(size), static_cast<uint32_t>(uid),
                         static_cast<uint32_t>(gid), timeout_s};
    std::string message(reinterpret_cast<const char *>(&request), sizeof request);
    message.append(static_cast<const char *>(state), size);
    std::error_code ec;
    message += std::filesystem::current_path(ec).string();
    message.push_back('\0');
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        message += *entry;
        message.push_back('\0');
    }
    if (message.size() > kMostRequestBytes) {
        fprintf(stderr, "RunAsUser: request of %zu bytes is too large\n", message.size());
        return kChildForkFailed;
    }
    std::lock_guard<std::mutex> lock(spawner_mutex);
    fflush(nullptr);
    if (send(spawner_socket, message.data(), message.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(message.size())) {
        perror("RunAsUser: sending to the spawner");
        return kChildForkFailed;
    }
    // The spawner answers within the child's timeout; this bound only guards against a
    // spawner that died.
    pollfd answer{spawner_socket, POLLIN, 0};
    int result = kChildForkFailed;
    int ready = 0;
    do {
        ready = poll(&answer, 1, (timeout_s + 30) * 1000);
    } while (ready < 0 && errno == EINTR);
    if (ready != 1 || recv(spawner_socket, &result, sizeof result, 0) != sizeof result) {
        // A late answer would pass for the next request's: no more requests to this spawner.
        fprintf(stderr, "RunAsUser: no answer from the spawner\n");
        close(spawner_socket);
        spawner_socket = -1;
        return kChildForkFailed;
    }
    return result;
}

}  // namespace detail

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
        kill(-pid_, SIGKILL);
        kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

bool ChildProcess::Start(const ProgramSpec &spec) {
    if (pid_ > 0) {
        error_ = "already started";
        return false;
    }
    if (spec.argv.empty()) {
        error_ = "no program given";
        return false;
    }
    // Everything the child needs is built before fork: after fork only exec-safe calls run.
    std::vector<std::string> env_strings;
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        std::string text(*entry);
        std::string name = text.substr(0, text.find('='));
        bool replaced = false;
        for (const std::string &unset : spec.unset_env) replaced |= (unset == name);
        for (const auto &[set_name, value] : spec.env) replaced |= (set_name == name);
        if (!replaced) env_strings.push_back(text);
    }
    for (const auto &[name, value] : spec.env) env_strings.push_back(name + "=" + value);
    std::vector<char *> envp;
    for (std::string &text : env_strings) envp.push_back(text.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings = spec.argv;
    std::vector<char *> argv;
    for (std::string &arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);

    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        error_ = ErrnoText("pipe2");
        return false;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        error_ = ErrnoText("pipe2");
        close(out_pipe[0]);
        close(out_pipe[1]);
        return false;
    }
    // Closed by a successful exec; carries errno when exec fails.
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        error_ = ErrnoText("pipe2");
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
        return false;
    }
    fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        error_ = ErrnoText("fork");
        for (int fd :
             {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
            close(fd);
        }
        return false;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        int code = 0;
        if (spec.gid >= 0 && (setgroups(1, &kStoreSharingGid) != 0 || setgid(spec.gid) != 0)) {
            code = errno;
        } else if (spec.uid >= 0 && setuid(spec.uid) != 0) {
            code = errno;
        } else if (!spec.working_dir.empty() && chdir(spec.working_dir.c_str()) != 0) {
            code = errno;
        } else {
            execvpe(argv[0], argv.data(), envp.data());
            code = errno;
        }
        ssize_t ignored = write(exec_pipe[1], &code, sizeof(code));
        (void)ignored;
        _exit(127);
    }
    setpgid(pid, pid);  // also from the parent, so the group exists before we might signal it
    pid_ = pid;
    close(out_pipe[1]);
    close(err_pipe[1]);
    close(exec_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    int code = 0;
    ssize_t n;
    do {
        n = read(exec_pipe[0], &code, sizeof(code));
    } while (n < 0 && errno == EINTR);
    close(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof(code))) {
        error_ = "cannot run " + spec.argv[0] + ": " + std::strerror(code);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        return false;
    }
    return true;
}

ProcessResult ChildProcess::Wait(int timeout_s) {
    ProcessResult result;
    if (pid_ <= 0 || reaped_) {
        result.exit_code = 127;
        result.err = error_.empty() ? "not running" : error_;
        return result;
    }
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    // After the program exits, its output is read for at most this long more: a process it
    // left behind may hold the pipes open.
    const auto drain_limit = std::chrono::seconds(2);
    std::optional<Clock::time_point> exited_at;
    int status = 0;
    char buffer[65536];
    while (out_fd_ >= 0 || err_fd_ >= 0) {
        if (!reaped_) {
            pid_t done = waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                reaped_ = true;
                exited_at = Clock::now();
            }
        }
        auto now = Clock::now();
        if (!reaped_ && now >= deadline) break;
        if (exited_at && now - *exited_at >= drain_limit) break;
        struct pollfd fds[2];
        nfds_t count = 0;
        for (int fd : {out_fd_, err_fd_}) {
            if (fd >= 0) fds[count++] = {fd, POLLIN, 0};
        }
        int ready = poll(fds, count, 20);
        if (ready < 0 && errno != EINTR) break;
        for (nfds_t i = 0; i < count && ready > 0; ++i) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
            if (got < 0 && errno == EINTR) continue;
            bool is_out = fds[i].fd == out_fd_;
            if (got <= 0) {
                close(fds[i].fd);
                (is_out ? out_fd_ : err_fd_) = -1;
            } else {
                (is_out ? result.out : result.err).append(buffer, static_cast<size_t>(got));
            }
        }
    }
    if (!reaped_) {
        // Either the output is closed and the program is still running, or time is up.
        for (;;) {
            pid_t done = waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                reaped_ = true;
                break;
            }
            if (Clock::now() >= deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    if (!reaped_) {
        kill(-pid_, SIGKILL);
        kill(pid_, SIGKILL);
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        result.timed_out = true;
        fprintf(stderr, "%d killed after its %d s timeout\n", static_cast<int>(pid_), timeout_s);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
    out_fd_ = err_fd_ = -1;
    if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.term_signal = WTERMSIG(status);
        result.exit_code = 128 + result.term_signal;
    }
    return result;
}

void ChildProcess::Signal(int signal) {
    if (pid_ > 0 && !reaped_) kill(-pid_, signal);
}

ProcessResult RunProgram(const ProgramSpec &spec, int timeout_s) {
    ChildProcess child;
    if (!child.Start(spec)) {
        ProcessResult result;
        result.exit_code = 127;
        result.err = child.error();
        return result;
    }
    return child.Wait(timeout_s);
}

std::string WorkerPath(const std::string &name) {
#ifdef FAMPOOL_TEST_WORKER_DIR
    return std::string(FAMPOOL_TEST_WORKER_DIR) + "/" + name;
#else
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return (self.parent_path() / "workers" / name).string();
#endif
}

}  // namespace fampool_test
