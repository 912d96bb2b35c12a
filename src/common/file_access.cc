#include "common/file_access.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/error.h"

namespace fampool {
namespace {

template <typename Entry, typename ById, typename ByName, typename IdOf, typename NameOf>
bool FindAccount(const std::string &text, uint32_t *id, std::string *name, ById by_id,
                 ByName by_name, IdOf id_of, NameOf name_of) {
    bool numeric = !text.empty() && text.size() <= 10 &&
                   std::all_of(text.begin(), text.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) {
        unsigned long value = std::strtoul(text.c_str(), nullptr, 10);
        if (value > 0xfffffffeul) return false;
        *id = static_cast<uint32_t>(value);
    }
    // A large group needs a larger buffer (ERANGE): grow it, up to 16 MiB.
    for (size_t size = 16384; size <= (16u << 20); size *= 4) {
        std::vector<char> buffer(size);
        Entry entry{}, *found = nullptr;
        int rc = numeric ? by_id(*id, &entry, buffer.data(), buffer.size(), &found)
                         : by_name(text.c_str(), &entry, buffer.data(), buffer.size(), &found);
        if (rc == ERANGE) continue;
        if (numeric) {
            *name = found ? name_of(*found) : text;
            return true;  // a number need not have a name
        }
        if (!found) return false;
        *id = id_of(*found);
        *name = name_of(*found);
        return true;
    }
    return false;
}

bool MemberOf(gid_t gid) {
    if (geteuid() == 0 || getegid() == gid) return true;
    int count = getgroups(0, nullptr);
    if (count <= 0) return false;
    std::vector<gid_t> groups(static_cast<size_t>(count));
    count = getgroups(count, groups.data());
    return count > 0 &&
           std::find(groups.begin(), groups.begin() + count, gid) != groups.begin() + count;
}

}  // namespace

bool FindGroup(const std::string &text, uint32_t *gid, std::string *name) {
    return FindAccount<group>(
        text, gid, name, getgrgid_r, getgrnam_r, [](const group &g) { return g.gr_gid; },
        [](const group &g) { return std::string(g.gr_name); });
}

bool FindUser(const std::string &text, uint32_t *uid, std::string *name) {
    return FindAccount<passwd>(
        text, uid, name, getpwuid_r, getpwnam_r, [](const passwd &p) { return p.pw_uid; },
        [](const passwd &p) { return std::string(p.pw_name); });
}

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
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    const bool made = mkdir(dir.c_str(), 0700) == 0;
    if (!made && errno != EEXIST) {
        Fail(error, "cannot create directory {}: {}", dir, std::strerror(errno));
    }
    // Checked whether this call made it or found it: another user may have made it (or a
    // link of that name) between any check and the mkdir.
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0) {
        Fail(error, "cannot read directory {}: {}", dir, std::strerror(errno));
    }
    auto trusted = [](uid_t owner) { return owner == geteuid() || owner == 0; };
    if (S_ISLNK(st.st_mode)) {
        if (!trusted(st.st_uid)) {
            Fail(error, "{} is a symbolic link of uid {}: another user chose where it leads", dir,
                 st.st_uid);
        }
        if (stat(dir.c_str(), &st) != 0) {
            Fail(error, "cannot read directory {}: {}", dir, std::strerror(errno));
        }
    }
    if (!S_ISDIR(st.st_mode)) Fail(error, "{} exists and is not a directory", dir);
    const bool group_ours = shared_ && st.st_gid == group_;
    const bool replaceable = !(st.st_mode & S_ISVTX) &&
                             ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && !group_ours));
    if (!made && kind == Dir::kShared) {
        // /dev/shm, /tmp, a site's shared directory: not ours to change, but one another user
        // owns, or where others may remove or replace a file of ours, is no place for heaps and
        // sockets.
        if (!trusted(st.st_uid)) {
            Fail(error,
                 "directory {} belongs to uid {}: another user could replace fampool's files "
                 "and sockets in it; choose a directory of root's or of this user's",
                 dir, st.st_uid);
        }
        if (replaceable) {
            Fail(error,
                 "directory {} (mode {:04o}) lets other users remove or replace the files in "
                 "it (writable by them, no sticky bit): choose another, or `chmod +t {}`",
                 dir, st.st_mode & 07777, dir);
        }
        return;
    }
    if (st.st_uid != geteuid()) {
        // Another member of the sharing group made it: theirs to set, and set already.
        if (group_ours && !replaceable) return;
        Fail(error,
             "directory {} belongs to uid {}, not to this user (uid {}): fampool keeps its "
             "files in directories of the user who runs it, and users share an embedded "
             "store only through a sharing_group (docs/security.md)",
             dir, st.st_uid, geteuid());
    }
    if (shared_ && st.st_gid != group_ && chown(dir.c_str(), static_cast<uid_t>(-1), group_) != 0) {
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
