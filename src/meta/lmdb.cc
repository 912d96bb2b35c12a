#include "meta/lmdb.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "common/error.h"

namespace fampool {
namespace {

constexpr const char *kTableNames[kTableCount] = {"meta",         "regions",    "region_names",
                                                  "items",        "item_names", "free_by_offset",
                                                  "free_by_size", "scrub"};
// Virtual size reserved for the store; the file is sparse and grows only with use. At ~200
// bytes per item this holds hundreds of millions of items.
constexpr size_t kMapSize = 64ull << 30;
constexpr unsigned kMaxReaders = 4096;

struct Registry {
    std::mutex mutex;
    pid_t pid = 0;
    std::map<std::string, std::weak_ptr<LmdbEnv>> envs;
};

Registry &GetRegistry() {
    static Registry *registry = new Registry();  // never destroyed: used from atexit paths
    return *registry;
}

MDB_val Val(std::string_view bytes) {
    return MDB_val{bytes.size(), const_cast<char *>(bytes.data())};
}

}  // namespace

void RaiseLmdb(const char *what, int rc) {
    if (rc == MDB_MAP_FULL) {
        Fail(openfam::FAM_ERR_METADATA, "metadata store is full ({} GiB map): {}", kMapSize >> 30,
             what);
    }
    Fail(openfam::FAM_ERR_METADATA, "metadata store error in {}: {}", what, mdb_strerror(rc));
}

void AppendU64(std::string &out, uint64_t value) {
    char bytes[8];
    for (int i = 7; i >= 0; --i) {
        bytes[i] = static_cast<char>(value & 0xff);
        value >>= 8;
    }
    out.append(bytes, 8);
}

uint64_t ReadU64(std::string_view bytes, size_t at) {
    uint64_t value = 0;
    for (size_t i = 0; i < 8; ++i) {
        value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
    }
    return value;
}

std::shared_ptr<LmdbEnv> LmdbEnv::Open(const std::string &dir, bool sync_commits,
                                       const FileAccess &access) {
    Registry &registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (registry.pid != getpid()) {
        // A forked child must not use its parent's environments (LMDB's rule): forget them.
        new (&registry.envs) std::map<std::string, std::weak_ptr<LmdbEnv>>();
        registry.pid = getpid();
    }
    if (auto existing = registry.envs[dir].lock()) return existing;

    access.MakeDirectory(dir, FileAccess::Dir::kOwn, false, openfam::FAM_ERR_METADATA);
    std::shared_ptr<LmdbEnv> env(new LmdbEnv());
    env->dir_ = dir;
    int rc = mdb_env_create(&env->env_);
    if (rc) RaiseLmdb("mdb_env_create", rc);
    mdb_env_set_maxdbs(env->env_, kTableCount + 1);
    mdb_env_set_maxreaders(env->env_, kMaxReaders);
    mdb_env_set_mapsize(env->env_, kMapSize);
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | MDB_WRITEMAP;
    if (!sync_commits) flags |= MDB_NOSYNC;
    rc = mdb_env_open(env->env_, dir.c_str(), flags, access.file_mode());
    if (rc) {
        std::string why;
        struct stat st;
        if (rc == EACCES && stat(dir.c_str(), &st) == 0) {
            why = fmt::format(
                " (the store belongs to uid {}, group {}, mode {:04o}, and this process runs as "
                "uid {}: users share a store only through a sharing_group, docs/security.md)",
                st.st_uid, st.st_gid, st.st_mode & 07777, geteuid());
        }
        Fail(openfam::FAM_ERR_METADATA, "cannot open metadata store in {}: {}{}", dir,
             mdb_strerror(rc), why);
    }
    // The files as `access` says whatever the umask, and a store an earlier version made
    // 0666 closed. A file of another member of the sharing group is theirs to set.
    for (const char *file : {"/data.mdb", "/lock.mdb"}) {
        struct stat st;
        std::string path = dir + file;
        if (stat(path.c_str(), &st) == 0 && st.st_uid == geteuid()) access.ApplyToPath(path);
    }

    MDB_txn *txn = nullptr;
    rc = mdb_txn_begin(env->env_, nullptr, 0, &txn);
    if (rc) RaiseLmdb("mdb_txn_begin", rc);
    for (int i = 0; i < kTableCount; ++i) {
        rc = mdb_dbi_open(txn, kTableNames[i], MDB_CREATE, &env->dbi_[i]);
        if (rc) {
            mdb_txn_abort(txn);
            RaiseLmdb("mdb_dbi_open", rc);
        }
    }
    rc = mdb_txn_commit(txn);
    if (rc) RaiseLmdb("mdb_txn_commit", rc);
    registry.envs[dir] = env;
    return env;
}

LmdbEnv::~LmdbEnv() {
    if (env_) {
        mdb_env_sync(env_, 1);
        mdb_env_close(env_);
    }
}

void LmdbEnv::Sync() {
    int rc = mdb_env_sync(env_, 1);
    if (rc) RaiseLmdb("mdb_env_sync", rc);
}

Txn::Txn(const LmdbEnv &env, bool write) : env_(env), write_(write) {
    int rc = mdb_txn_begin(env.env(), nullptr, write ? 0 : MDB_RDONLY, &txn_);
    if (rc) RaiseLmdb("mdb_txn_begin", rc);
}

Txn::~Txn() {
    if (txn_) mdb_txn_abort(txn_);
}

void Txn::Commit() {
    int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    if (rc) RaiseLmdb("mdb_txn_commit", rc);
}

void Txn::Abort() {
    if (txn_) mdb_txn_abort(txn_);
    txn_ = nullptr;
}

bool Txn::Get(Table table, std::string_view key, std::string_view *value) const {
    MDB_val k = Val(key), v{};
    int rc = mdb_get(txn_, env_.dbi(table), &k, &v);
    if (rc == MDB_NOTFOUND) return false;
    if (rc) RaiseLmdb("mdb_get", rc);
    if (value) *value = std::string_view(static_cast<const char *>(v.mv_data), v.mv_size);
    return true;
}

bool Txn::Put(Table table, std::string_view key, std::string_view value, bool no_overwrite) {
    MDB_val k = Val(key), v = Val(value);
    int rc = mdb_put(txn_, env_.dbi(table), &k, &v, no_overwrite ? MDB_NOOVERWRITE : 0);
    if (rc == MDB_KEYEXIST) return false;
    if (rc) RaiseLmdb("mdb_put", rc);
    return true;
}

bool Txn::Del(Table table, std::string_view key) {
    MDB_val k = Val(key);
    int rc = mdb_del(txn_, env_.dbi(table), &k, nullptr);
    if (rc == MDB_NOTFOUND) return false;
    if (rc) RaiseLmdb("mdb_del", rc);
    return true;
}

Cursor::Cursor(const Txn &txn, Table table) {
    int rc = mdb_cursor_open(txn.raw(), txn.env().dbi(table), &cursor_);
    if (rc) RaiseLmdb("mdb_cursor_open", rc);
}

Cursor::~Cursor() { mdb_cursor_close(cursor_); }

bool Cursor::Move(MDB_cursor_op op) {
    int rc = mdb_cursor_get(cursor_, &key_, &value_, op);
    if (rc == MDB_NOTFOUND) return valid_ = false;
    if (rc) RaiseLmdb("mdb_cursor_get", rc);
    return valid_ = true;
}

bool Cursor::Seek(std::string_view key) {
    key_ = Val(key);
    return Move(MDB_SET_RANGE);
}
bool Cursor::First() { return Move(MDB_FIRST); }
bool Cursor::Last() { return Move(MDB_LAST); }
bool Cursor::Next() { return Move(MDB_NEXT); }
bool Cursor::Prev() { return Move(MDB_PREV); }

void Cursor::Delete() {
    int rc = mdb_cursor_del(cursor_, 0);
    if (rc) RaiseLmdb("mdb_cursor_del", rc);
}

}  // namespace fampool
