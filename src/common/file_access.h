// Who may reach the files fampool makes: heaps, metadata stores, archives, run directories and
// logs belong to the user who runs the services (or the embedded model) and are private to it,
// unless a site names a sharing group (`sharing_group`), whose members then read and write them
// too. Nothing is ever open to every user: a file others could read or write would be a way
// around the permission checks (docs/security.md).
#ifndef FAMPOOL_COMMON_FILE_ACCESS_H_
#define FAMPOOL_COMMON_FILE_ACCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "fam/fam_exception.h"

namespace fampool {

// The group (user) `text` names on this host, a name or a number: true and its gid (uid) and
// name (a number without a name keeps the number as its name), or false.
bool FindGroup(const std::string &text, uint32_t *gid, std::string *name);
bool FindUser(const std::string &text, uint32_t *uid, std::string *name);

class FileAccess {
  public:
    // Private to this process's user.
    FileAccess() = default;
    // `group`: a group name or number, or "" for private files. Throws
    // Failure(FAM_ERR_INVALID) naming `setting` when the group does not exist or this process
    // may not give files to it (it is neither root nor a member).
    static FileAccess Sharing(const std::string &group, const std::string &setting);

    bool shared() const { return shared_; }
    gid_t group() const { return group_; }
    const std::string &group_name() const { return group_name_; }

    // Regular files: 0600, or 0660 with a sharing group.
    mode_t file_mode() const { return shared_ ? 0660 : 0600; }
    // Directories: 0700, or 02770 with a sharing group (new files inherit the group).
    // `reachable` ones (they hold a socket or a file that other users must open by name, as a
    // run directory's cluster file) let others pass through, not list or change them: 0711,
    // 02771.
    mode_t dir_mode(bool reachable = false) const;

    // How a directory came to be named: one fampool chose, or one a user or site named for
    // fampool's use (its mode and group are fampool's to set), or a shared directory fampool
    // only puts files into (/dev/shm, /tmp: left as it is when it exists).
    enum class Dir { kOwn, kShared };
    // Makes `dir` (missing parents with the process's defaults) and gives it dir_mode() and
    // the group. A kOwn directory that exists already gets them too (an earlier version of
    // fampool made some 0777); it must belong to this user (or, shared, to the group). An
    // existing kShared one is left as it is, but must belong to root or this user and not let
    // others remove files in it (writable without the sticky bit). Whether made or found, it
    // is checked after the mkdir (lstat: a link must be root's or this user's), so another
    // user cannot slip in a directory of theirs. Throws Failure(`error`) naming the directory
    // and the cause.
    void MakeDirectory(const std::string &dir, Dir kind = Dir::kOwn, bool reachable = false,
                       openfam::Fam_Error error = openfam::FAM_ERR_RESOURCE) const;
    // Gives a file this process made file_mode() (or `mode`) and the group, through its
    // descriptor. Throws Failure(FAM_ERR_RESOURCE) naming `path`.
    void Apply(int fd, const std::string &path) const;
    void Apply(int fd, const std::string &path, mode_t mode) const;
    // The same by path (files a library made, as LMDB's).
    void ApplyToPath(const std::string &path) const;

    // "private to uid 1000 (mode 0600)", "shared with group fampool (gid 990, mode 0660)".
    std::string Describe() const;

  private:
    bool shared_ = false;
    gid_t group_ = 0;
    std::string group_name_;
};

}  // namespace fampool

#endif  // FAMPOOL_COMMON_FILE_ACCESS_H_
