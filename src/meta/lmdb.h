// A thin C++ layer over LMDB: one environment per data directory and process, transactions that
// abort unless committed, byte-string keys, and LMDB errors turned into FAM_ERR_METADATA.
#ifndef FAMPOOL_META_LMDB_H_
#define FAMPOOL_META_LMDB_H_

#include <lmdb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/file_access.h"

namespace fampool {

// The named databases of the metadata store; see metadata_store.cc for their keys and values.
enum class Table {
    kMeta,
    kRegions,
    kRegionNames,
    kItems,
    kItemNames,
    kFreeByOffset,
    kFreeBySize,
    kScrub
};
constexpr int kTableCount = 8;

class LmdbEnv {
  public:
    // Opens (creating if needed) the environment in `dir`. Environments are shared within a
    // process: LMDB forbids opening the same one twice in one process. The directory and the
    // store's files get `access`'s modes and group: private to this user unless a sharing
    // group is set (a store others can write is a way around every permission check).
    static std::shared_ptr<LmdbEnv> Open(const std::string &dir, bool sync_commits,
                                         const FileAccess &access = FileAccess());
    ~LmdbEnv();

    MDB_env *env() const { return env_; }
    MDB_dbi dbi(Table table) const { return dbi_[static_cast<int>(table)]; }
    const std::string &dir() const { return dir_; }
    void Sync();

  private:
    LmdbEnv() = default;
    MDB_env *env_ = nullptr;
    MDB_dbi dbi_[kTableCount] = {};
    std::string dir_;
};

// A read or write transaction; aborted by the destructor unless Commit() was called.
class Txn {
  public:
    Txn(const LmdbEnv &env, bool write);
    ~Txn();
    Txn(const Txn &) = delete;
    Txn &operator=(const Txn &) = delete;

    void Commit();
    // Ends the transaction early (the destructor then does nothing).
    void Abort();
    bool writable() const { return write_; }

    // Get: false when the key is absent. Put with no_overwrite: false when the key exists.
    bool Get(Table table, std::string_view key, std::string_view *value) const;
    bool Put(Table table, std::string_view key, std::string_view value, bool no_overwrite = false);
    bool Del(Table table, std::string_view key);

    MDB_txn *raw() const { return txn_; }
    const LmdbEnv &env() const { return env_; }

  private:
    const LmdbEnv &env_;
    MDB_txn *txn_ = nullptr;
    bool write_;
};

// A cursor positioned with Seek (first key >= the given one) and moved with Next/Prev.
class Cursor {
  public:
    Cursor(const Txn &txn, Table table);
    ~Cursor();
    Cursor(const Cursor &) = delete;
    Cursor &operator=(const Cursor &) = delete;

    bool Seek(std::string_view key);
    bool First();
    bool Last();
    bool Next();
    bool Prev();
    bool valid() const { return valid_; }
    std::string_view key() const { return {static_cast<const char *>(key_.mv_data), key_.mv_size}; }
    std::string_view value() const {
        return {static_cast<const char *>(value_.mv_data), value_.mv_size};
    }
    void Delete();

  private:
    bool Move(MDB_cursor_op op);
    MDB_cursor *cursor_ = nullptr;
    MDB_val key_{}, value_{};
    bool valid_ = false;
};

// Throws Failure(FAM_ERR_METADATA) describing an LMDB error; `what` names the operation.
[[noreturn]] void RaiseLmdb(const char *what, int rc);

// Big-endian fixed-width integers, so that byte order of keys is numeric order.
void AppendU64(std::string &out, uint64_t value);
uint64_t ReadU64(std::string_view bytes, size_t at = 0);

}  // namespace fampool

#endif  // FAMPOOL_META_LMDB_H_
