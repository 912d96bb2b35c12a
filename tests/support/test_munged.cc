#include "test_munged.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "rpc/authentication.h"
#include "rpc/munge.h"
#include "test_support.h"

namespace {

std::string FirstExecutable(const std::vector<std::string> &candidates) {
    for (const std::string &path : candidates) {
        if (access(path.c_str(), X_OK) == 0) return path;
    }
    throw std::runtime_error("not installed: " + candidates.front() +
                             " (Debian package munge; scripts/setup installs it)");
}

std::string ReadAll(const std::string &path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TestMunged::TestMunged() {
    // munged refuses a key, socket or seed below a directory others may write, unless it is
    // sticky (/tmp is): a directory of our own, mode 0755 so that other users' clients (the
    // tests run some as uid 65534) reach the socket.
    char pattern[] = "/tmp/fampool-munged-XXXXXX";
    if (!mkdtemp(pattern)) throw std::runtime_error("TestMunged: mkdtemp failed");
    dir_ = pattern;
    chmod(dir_.c_str(), 0755);
    socket_ = dir_ + "/munge.socket";
    log_ = dir_ + "/munged.log";
    std::string key = dir_ + "/munge.key";
    {
        unsigned char bytes[128];
        if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
            throw std::runtime_error("TestMunged: getrandom failed");
        }
        int fd = open(key.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
        bool written = fd >= 0 && write(fd, bytes, sizeof bytes) == sizeof bytes;
        if (fd >= 0) close(fd);
        if (!written) throw std::runtime_error("TestMunged: cannot write " + key);
    }
    std::vector<std::string> args = {
        FirstExecutable({"/usr/sbin/munged", "/sbin/munged", "/usr/local/sbin/munged"}),
        "--foreground",
        "--key-file",
        key,
        "--socket",
        socket_,
        "--pid-file",
        dir_ + "/munged.pid",
        "--seed-file",
        dir_ + "/munged.seed"};
    std::vector<char *> argv;
    for (std::string &arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = fork();
    if (pid_ == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that dies takes its munged with it
        dup2(log, 1);
        dup2(log, 2);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(log);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string why;
    while (true) {
        try {
            fampool::MungeEncode(socket_, "test", "TestMunged");
            return;
        } catch (const openfam::Fam_Exception &e) {
            why = e.fam_error_msg();
        }
        int status = 0;
        bool ended = waitpid(pid_, &status, WNOHANG) == pid_;
        if (ended) pid_ = 0;
        if (ended || std::chrono::steady_clock::now() > deadline) {
            std::string message = "TestMunged: munged " +
                                  std::string(ended ? "ended" : "does not answer") + " (" + why +
                                  "):\n" + ReadAll(log_);
            Stop();
            throw std::runtime_error(message);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

TestMunged::~TestMunged() { Stop(); }

void TestMunged::Stop() {
    if (pid_ > 0) {
        kill(pid_, SIGTERM);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (waitpid(pid_, nullptr, WNOHANG) != pid_) {
            if (std::chrono::steady_clock::now() > deadline) {
                kill(pid_, SIGKILL);
                waitpid(pid_, nullptr, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        pid_ = 0;
    }
    if (!dir_.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dir_.clear();
    }
}

std::string CredentialOf(uid_t uid, gid_t gid, const std::string &socket,
                         const std::string &audience) {
    fampool_test::ProgramSpec spec;
    spec.argv = {FirstExecutable({"/usr/bin/munge", "/bin/munge", "/usr/local/bin/munge"}), "-S",
                 socket, "-s", fampool::CredentialPayload(audience)};
    spec.uid = static_cast<int>(uid);
    spec.gid = static_cast<int>(gid);
    fampool_test::ProcessResult result = fampool_test::RunProgram(spec, 30);
    if (!result.ok()) {
        throw std::runtime_error("munge as uid " + std::to_string(uid) + " failed: " + result.err);
    }
    std::string credential = result.out;
    while (!credential.empty() && (credential.back() == '\n' || credential.back() == '\r')) {
        credential.pop_back();
    }
    return credential;
}
