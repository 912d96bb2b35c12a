#include "common/file_access.h"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/error.h"

namespace fampool {
namespace {

// The group `text` names (a name, or a number), or nullopt.
bool FindGroup(const std::string &text, gid_t *gid, std::string *name) {
    std::vector<char> buffer(16384);
    group entry{}, *found = nullptr;
    bool numeric = !text.empty() && std::all_of(text.begin(), text.end(), ::isdigit);
    if (numeric) {
        *gid = static_cast<gid_t>(std::stoul(text));
        getgrgid_r(*gid, &entry, buffer.data(), buffer.size(), &found);
        *name = found ? found->gr_name : text;
        return true;  // a number need not have a name
    }
    getgrnam_r(text.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (!found) return false;
    *gid = found->gr_gid;
    *name = found->gr_name;
    return true;
}

bool MemberOf(gid_t gid) {
    if (geteuid() == 0 || getegid() == gid) return true;
    int count = getgroups(0, nullptr);
    if (count <= 0) return false;
    std::vector<gid_t> groups(static_cast<size_t>(count));
    count = getgroups(count, groups.data());
    return count > 0 && std::find(groups.begin(), groups.begin() + count, gid) !=
                            groups.begin() + count;
}

}  // namespace

FileAccess FileAccess::Sharing(const std::string &group, const std::string &setting) {
    FileAccess access;
    if (group.empty()) return access;
    if (!FindGroup(group, &access.group_, &access.group_name_)) {
        Fail(openfam::FAM_ERR_INVALID, "{}: no group \"{}\" on this node (getent group {})",
             setting, group, group);
    }
    if (!MemberOf(access.group_)) {
        Fail(openfam::FAM_ERR_INVALID,
             "{}: this user (uid {}) is not a member of group \"{}\" (gid {}), so its files "
             "cannot be shared with that group: add the user to it, or unset {}",
             setting, geteuid(), access.group_name_, access.group_, setting);
    }
    access.shared_ = true;
    return access;
}

mode_t FileAccess::dir_mode(bool reachable) const {
    mode_t mode = shared_ ? 02770 : 0700;
    return reachable ? mode | 0011 : mode;
}

void FileAccess::MakeDirectory(const std::string &dir, Dir kind, bool reachable,
                               openfam::Fam_Error error) const {
    std::filesystem::path path(dir);
    std::error_code ec;
    bool existed = std::filesystem::is_directory(path, ec);
    if (!existed) {
        if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
        if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
            Fail(error, "cannot create directory {}: {}", dir, std::strerror(errno));
        }
    } else if (kind == Dir::kShared) {
        // /dev/shm, /tmp, a site's shared directory: not ours to change, but one where anyone
        // may remove or replace a file of ours is no place for heaps.
        struct stat st;
        if (stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
            Fail(error,
                 "directory {} (mode {:04o}) lets every user remove or replace the files in it "
                 "(writable by others, no sticky bit): choose another, or `chmod +t {}`",
                 dir, st.st_mode & 07777, dir);
        }
        return;
    }
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) {
        Fail(error, "cannot read directory {}: {}", dir, std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) Fail(error, "{} exists and is not a directory", dir);
    if (st.st_uid != geteuid()) {
        // Another member of the sharing group made it: theirs to set, and set already.
        if (shared_ && st.st_gid == group_) return;
        if (existed && kind == Dir::kOwn) {
            Fail(error,
                 "directory {} belongs to uid {}, not to this user (uid {}): fampool keeps its "
                 "files in directories of the user who runs it, and users share an embedded "
                 "store only through a sharing_group (docs/security.md)",
                 dir, st.st_uid, geteuid());
        }
        return;
    }
    if (shared_ && st.st_gid != group_ &&
        chown(dir.c_str(), static_cast<uid_t>(-1), group_) != 0) {
        Fail(error, "cannot give directory {} to group {}: {}", dir, group_name_,
             std::strerror(errno));
    }
    const mode_t mode = dir_mode(reachable);
    if ((st.st_mode & 07777) != mode && chmod(dir.c_str(), mode) != 0) {
        Fail(error, "cannot set the mode of directory {} to {:04o}: {}", dir, mode,
             std::strerror(errno));
    }
}

void FileAccess::Apply(int fd, const std::string &path) const { Apply(fd, path, file_mode()); }

void FileAccess::Apply(int fd, const std::string &path, mode_t mode) const {
    if (shared_ && fchown(fd, static_cast<uid_t>(-1), group_) != 0) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot give {} to group {}: {}", path, group_name_,
             std::strerror(errno));
    }
    if (fchmod(fd, mode) != 0) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot set the mode of {} to {:04o}: {}", path, mode,
             std::strerror(errno));
    }
}

void FileAccess::ApplyToPath(const std::string &path) const {
    if (shared_ && chown(path.c_str(), static_cast<uid_t>(-1), group_) != 0) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot give {} to group {}: {}", path, group_name_,
             std::strerror(errno));
    }
    if (chmod(path.c_str(), file_mode()) != 0) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot set the mode of {} to {:04o}: {}", path,
             file_mode(), std::strerror(errno));
    }
}

std::string FileAccess::Describe() const {
    if (shared_) {
        return fmt::format("shared with group {} (gid {}, mode {:04o})", group_name_, group_,
                           file_mode());
    }
    return fmt::format("private to uid {} (mode {:04o})", geteuid(), file_mode());
}

}  // namespace fampool
