// process_util.h: tools for the multi-process tests, beyond what test_support.h offers.
//
// - ForkedChild: a forked process that runs a function while the parent goes on (RunInChild
//   waits at once); waited for with a deadline and killed by its PID when it outlives it or
//   when the handle is destroyed.
// - StartGate: a pipe that holds any number of children until the parent opens it, so that
//   they start at the same moment.
// - SharedArray: zeroed MAP_SHARED memory made before fork, for children to report results
//   (std::atomic of lock-free types works across processes there).
// - RunLauncher: runs a launcher such as mpirun; on timeout it is asked to stop (SIGTERM, so
//   it stops the PEs it started, which live in process groups of their own), then killed.
// - PidsWithEnvironment: the processes whose environment holds an exact NAME=VALUE, to find
//   (and stop, by PID) PEs a launcher left behind.
//
// Header-only; everything is stopped by PID or by the process group the child leads, never by
// name.
#ifndef FAMPOOL_TESTS_SUPPORT_PROCESS_UTIL_H_
#define FAMPOOL_TESTS_SUPPORT_PROCESS_UTIL_H_

#include <dirent.h>
#include <fam/fam_exception.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_support.h"

namespace fampool_test {

using SteadyClock = std::chrono::steady_clock;

inline double SecondsSince(SteadyClock::time_point start) {
    return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Turns a waitpid status into the convention of RunInChild: the exit code, or 128 + signal.
inline int DecodeWaitStatus(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return kChildUncaughtException;
}

// Runs `body` in a freshly forked child and _exits with its result; an exception becomes
// kChildUncaughtException with what() on stderr.
[[noreturn]] inline void RunChildBody(const std::function<int()> &body) {
    int code = kChildUncaughtException;
    try {
        code = body();
    } catch (const openfam::Fam_Exception &e) {
        fprintf(stderr, "child %d: uncaught Fam_Exception %s: %s\n", static_cast<int>(getpid()),
                FamErrorName(e.fam_error()).c_str(), e.what());
    } catch (const std::exception &e) {
        fprintf(stderr, "child %d: uncaught exception: %s\n", static_cast<int>(getpid()), e.what());
    } catch (...) {
        fprintf(stderr, "child %d: uncaught non-standard exception\n", static_cast<int>(getpid()));
    }
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

// A forked child running a function. The parent keeps going; Wait/WaitUntil collect the
// result. A child still running when the handle is destroyed is killed (SIGKILL, by PID) and
// reaped.
class ForkedChild {
  public:
    explicit ForkedChild(const std::function<int()> &body) {
        fflush(stdout);
        fflush(stderr);
        pid_ = fork();
        if (pid_ == 0) RunChildBody(body);
        if (pid_ < 0) {
            reaped_ = true;
            result_ = kChildForkFailed;
        }
    }
    ~ForkedChild() { Stop(); }
    ForkedChild(const ForkedChild &) = delete;
    ForkedChild &operator=(const ForkedChild &) = delete;

    pid_t pid() const { return pid_; }

    // True while the child has not been reaped (it may have exited and not been waited for).
    bool running() {
        Poll();
        return !reaped_;
    }

    // Reaps the child if it has ended; returns true when it has.
    bool Poll() {
        if (reaped_) return true;
        int status = 0;
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            reaped_ = true;
            result_ = DecodeWaitStatus(status);
        } else if (r < 0 && errno != EINTR) {
            reaped_ = true;
            result_ = kChildUncaughtException;
        }
        return reaped_;
    }

    // Waits until the child ends or `deadline` passes; then kills it by PID and returns
    // kChildTimedOut. Otherwise returns its exit code (or 128 + signal).
    int WaitUntil(SteadyClock::time_point deadline) {
        while (!Poll()) {
            if (SteadyClock::now() >= deadline) {
                Stop();
                result_ = kChildTimedOut;
                return result_;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return result_;
    }
    int Wait(double timeout_s) {
        return WaitUntil(SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                  std::chrono::duration<double>(timeout_s)));
    }

    // Sends a signal to the child (by PID) unless it has been reaped.
    void Kill(int sig) {
        if (!reaped_ && pid_ > 0) kill(pid_, sig);
    }

    // SIGKILL and reap, if it is still there.
    void Stop() {
        if (reaped_ || pid_ <= 0) return;
        kill(pid_, SIGKILL);
        int status = 0;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        result_ = DecodeWaitStatus(status);
    }

  private:
    pid_t pid_ = -1;
    bool reaped_ = false;
    int result_ = kChildTimedOut;
};

// Holds children until the parent calls Open(): each child calls Pass(), which blocks in
// read() until every copy of the pipe's write end is closed. Create it before forking.
class StartGate {
  public:
    StartGate() {
        if (pipe(fds_) != 0) fds_[0] = fds_[1] = -1;
    }
    ~StartGate() {
        CloseFd(&fds_[0]);
        CloseFd(&fds_[1]);
    }
    StartGate(const StartGate &) = delete;
    StartGate &operator=(const StartGate &) = delete;

    bool valid() const { return fds_[0] >= 0; }

    // In a child: drops its copy of the write end and waits for the parent to open the gate.
    void Pass() {
        CloseFd(&fds_[1]);
        char c;
        while (read(fds_[0], &c, 1) < 0 && errno == EINTR) {
        }
        CloseFd(&fds_[0]);
    }

    // In the parent: lets every child through (once they all dropped their write ends).
    void Open() { CloseFd(&fds_[1]); }

  private:
    static void CloseFd(int *fd) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
    }
    int fds_[2] = {-1, -1};
};

// `count` objects of type T in zeroed shared memory that survives fork; T must be trivially
// destructible and valid when all-zero (plain integers, std::atomic of lock-free types).
template <typename T>
class SharedArray {
    static_assert(std::is_trivially_destructible_v<T>, "SharedArray holds plain data");

  public:
    explicit SharedArray(size_t count = 1) : count_(count) {
        bytes_ = count * sizeof(T);
        if (bytes_ == 0) bytes_ = 1;
        void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            perror("SharedArray mmap");
            abort();
        }
        data_ = static_cast<T *>(p);
        for (size_t i = 0; i < count; i++) new (&data_[i]) T();
    }
    ~SharedArray() { munmap(data_, bytes_); }
    SharedArray(const SharedArray &) = delete;
    SharedArray &operator=(const SharedArray &) = delete;

    T &operator[](size_t i) { return data_[i]; }
    T *get() { return data_; }
    size_t size() const { return count_; }

  private:
    T *data_ = nullptr;
    size_t count_ = 0;
    size_t bytes_ = 0;
};

// The PIDs (other than this process) whose initial environment contains exactly `entry`
// ("NAME=VALUE"). Processes exec'd after a test set a unique value carry it; forks of the test
// process itself do not (its /proc environ is the one it was started with).
inline std::vector<pid_t> PidsWithEnvironment(const std::string &entry) {
    std::vector<pid_t> pids;
    DIR *proc = opendir("/proc");
    if (proc == nullptr) return pids;
    while (struct dirent *de = readdir(proc)) {
        char *end = nullptr;
        long pid = strtol(de->d_name, &end, 10);
        if (end == de->d_name || *end != '\0' || pid <= 0 || pid == getpid()) continue;
        std::ifstream in(std::string("/proc/") + de->d_name + "/environ", std::ios::binary);
        if (!in) continue;
        std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        size_t pos = 0;
        while (pos < env.size()) {
            size_t next = env.find('\0', pos);
            if (next == std::string::npos) next = env.size();
            if (env.compare(pos, next - pos, entry) == 0) {
                pids.push_back(static_cast<pid_t>(pid));
                break;
            }
            pos = next + 1;
        }
    }
    closedir(proc);
    return pids;
}

// SIGKILLs each PID (one by one). They are not our children, so there is nothing to reap.
inline void KillPids(const std::vector<pid_t> &pids) {
    for (pid_t pid : pids) kill(pid, SIGKILL);
}

// What RunLauncher saw.
struct LauncherResult {
    bool timed_out = false;  // it outlived its timeout and was stopped
    int exit_code = -1;      // exit status, or 128 + signal
    double seconds = 0;      // how long it ran
    std::string output;      // stdout and stderr, interleaved
};

// Runs argv (argv[0] looked up in PATH) with `env` added to this process's environment and
// the variables in `unset` removed, in a process group of its own, output to a temporary
// file. After `timeout_s` it gets SIGTERM (a launcher such as mpirun then stops its PEs), and
// SIGKILL (its group) `grace_s` later.
inline LauncherResult RunLauncher(const std::vector<std::string> &argv,
                                  const std::vector<std::pair<std::string, std::string>> &env,
                                  double timeout_s, const std::vector<std::string> &unset = {},
                                  double grace_s = 10) {
    LauncherResult result;
    char out_path[] = "/tmp/fampool-launcher-XXXXXX";
    int out_fd = mkstemp(out_path);
    if (out_fd < 0) {
        result.output = std::string("mkstemp: ") + strerror(errno);
        return result;
    }
    unlink(out_path);
    auto start = SteadyClock::now();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(out_fd, STDOUT_FILENO);
        dup2(out_fd, STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        for (const auto &name : unset) unsetenv(name.c_str());
        for (const auto &[name, value] : env) setenv(name.c_str(), value.c_str(), 1);
        std::vector<char *> args;
        for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        close(out_fd);
        result.output = std::string("fork: ") + strerror(errno);
        return result;
    }
    setpgid(pid, pid);  // also from here, so the group exists before any signal
    bool termed = false;
    bool lost = false;  // waitpid failed: we cannot tell how it ended
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            lost = true;
            break;
        }
        double elapsed = SecondsSince(start);
        if (!termed && elapsed > timeout_s) {
            result.timed_out = true;
            termed = true;
            kill(pid, SIGTERM);
        } else if (termed && elapsed > timeout_s + grace_s) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Anything else still in its group goes too.
    kill(-pid, SIGKILL);
    result.seconds = SecondsSince(start);
    result.exit_code = lost ? -1 : DecodeWaitStatus(status);
    lseek(out_fd, 0, SEEK_SET);
    char buf[65536];
    ssize_t n;
    while ((n = read(out_fd, buf, sizeof buf)) > 0) result.output.append(buf, n);
    close(out_fd);
    return result;
}

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_PROCESS_UTIL_H_
