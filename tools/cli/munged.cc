// The munged of a cluster `fampool up` starts on this host (authentication: munge, no site
// munged named): a key made for the cluster and a socket in the run directory, so that the
// servers and the clients that read the cluster file agree on both.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "common/error.h"
#include "rpc/munge.h"

namespace fampool::cli {
namespace fs = std::filesystem;
namespace {

// munged on PATH, else where Debian installs it (/usr/sbin is not on every user's PATH).
std::string MungedProgram() {
    std::vector<fs::path> candidates;
    const char *path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (!dir.empty()) candidates.push_back(fs::path(dir) / "munged");
    }
    for (const char *dir : {"/usr/sbin", "/sbin", "/usr/local/sbin"}) {
        candidates.push_back(fs::path(dir) / "munged");
    }
    for (const fs::path &candidate : candidates) {
        if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    Die(1,
        "fampool up: authentication munge needs munged, which is not on PATH nor in /usr/sbin "
        "(Debian: apt-get install munge), or use --authentication none");
}

// 128 random bytes (1024 bits, mungekey's default), readable by this user only: munged
// refuses a key others may read.
void WriteKey(const std::string &path) {
    unsigned char key[128];
    size_t filled = 0;
    while (filled < sizeof key) {
        ssize_t got = getrandom(key + filled, sizeof key - filled, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) Die(1, "fampool up: cannot read random bytes for {}", path);
        filled += static_cast<size_t>(got);
    }
    std::error_code ignored;
    fs::remove(path, ignored);  // the last `up`'s key is read-only
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
    if (fd < 0) Die(1, "fampool up: cannot create MUNGE key {}: {}", path, std::strerror(errno));
    bool written = write(fd, key, sizeof key) == static_cast<ssize_t>(sizeof key);
    int write_errno = errno;
    close(fd);
    if (!written) {
        Die(1, "fampool up: cannot write MUNGE key {}: {}", path, std::strerror(write_errno));
    }
}

}  // namespace

MungedFiles MungedFilesOf(const std::string &run_dir) {
    std::string dir = run_dir + "/munge";
    return MungedFiles{dir, dir + "/munge.key", dir + "/munge.socket", dir + "/munged.pid",
                       dir + "/munged.seed"};
}

std::vector<std::string> PrepareMunged(const MungedFiles &files) {
    std::string program = MungedProgram();
    if (files.socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
        Die(1,
            "fampool up: the MUNGE socket path {} is {} characters long, more than a Unix "
            "socket takes ({}): choose a shorter --run-dir",
            files.socket, files.socket.size(), sizeof(sockaddr_un{}.sun_path) - 1);
    }
    std::error_code ec;
    fs::create_directories(files.dir, ec);
    if (ec) Die(1, "fampool up: cannot create directory {}: {}", files.dir, ec.message());
    // Others must reach the socket; nobody else may write here (munged checks that too).
    if (chmod(files.dir.c_str(), 0755) != 0) {
        Die(1, "fampool up: cannot set the permissions of {}: {}", files.dir, std::strerror(errno));
    }
    WriteKey(files.key);
    return {program,      "--foreground", "--key-file",   files.key,     "--socket",
            files.socket, "--pid-file",   files.pid_file, "--seed-file", files.seed};
}

bool MungedAnswers(const std::string &socket, std::string *why) {
    try {
        MungeEncode(socket, "fampool up check", "munge_encode");
        return true;
    } catch (const Fam_Exception &e) {
        *why = e.fam_error_msg();
        return false;
    }
}

}  // namespace fampool::cli
