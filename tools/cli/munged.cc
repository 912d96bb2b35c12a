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

// munged checks every directory above its socket and key: each must be searchable by all
// (others reach the socket) and written only by its owner or root, unless sticky (/tmp). Said
// here with the fix, before munged says it in its own words (its "execute permissions for all
// required" for a run directory below one `mktemp -d` made, mode 0700).
void CheckMungedDirectories(const std::string &dir) {
    std::error_code ec;
    fs::path path = fs::absolute(dir, ec);
    for (fs::path at = path.parent_path(); !at.empty(); at = at.parent_path()) {
        struct stat st;
        if (stat(at.c_str(), &st) != 0) continue;  // not made yet: `up` makes it below
        unsigned mode = st.st_mode & 07777;
        if (!(st.st_mode & S_IXOTH)) {
            Die(1,
                "fampool up: munged needs every directory above its socket {} to be "
                "searchable by all users, and {} is mode {:04o} (as `mktemp -d` makes them): "
                "`chmod 755 {}` (or `chmod o+x`), or choose another --run-dir; or "
                "--authentication none, or a site's munged (--munge-socket)",
                dir, at.string(), mode, at.string());
        }
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
            Die(1,
                "fampool up: munged refuses a socket and key below {}, mode {:04o}: others may "
                "write there (munged calls that insecure: they could replace them); `chmod go-w "
                "{}`, or choose a --run-dir below directories only you or root can write; or "
                "--authentication none, or a site's munged (--munge-socket)",
                at.string(), mode, at.string());
        }
        if (at == at.root_path()) break;
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
    CheckMungedDirectories(files.dir);
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
