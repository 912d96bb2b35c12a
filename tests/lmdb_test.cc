// lmdb_test.cc: the thin layer over LMDB (meta/lmdb.h): transactions that abort unless
// committed, puts that may refuse to overwrite, cursors, one environment per directory and
// process, and big-endian keys that sort as numbers.
#include "meta/lmdb.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::Cursor;
using fampool::LmdbEnv;
using fampool::Table;
using fampool::Txn;

class LmdbTest : public ::testing::Test {
  protected:
    void SetUp() override { env_ = LmdbEnv::Open(dir_.path(), /*sync_commits=*/false); }
    std::string Get(std::string_view key) {
        Txn txn(*env_, false);
        std::string_view value;
        return txn.Get(Table::kMeta, key, &value) ? std::string(value) : std::string("(absent)");
    }
    void Put(std::string_view key, std::string_view value) {
        Txn txn(*env_, true);
        txn.Put(Table::kMeta, key, value);
        txn.Commit();
    }
    std::string Key(uint64_t n) {
        std::string key;
        fampool::AppendU64(key, n);
        return key;
    }

    TempDir dir_{"/tmp", "fampool-lmdb-"};
    std::shared_ptr<LmdbEnv> env_;
};

TEST_F(LmdbTest, CommittedPutIsReadBack) {
    Put("a", "1");
    EXPECT_EQ(Get("a"), "1");
    EXPECT_EQ(Get("b"), "(absent)");
}

TEST_F(LmdbTest, TransactionNotCommittedLeavesNothing) {
    {
        Txn txn(*env_, true);
        txn.Put(Table::kMeta, "a", "1");
    }
    EXPECT_EQ(Get("a"), "(absent)");
    Txn txn(*env_, true);
    txn.Put(Table::kMeta, "b", "2");
    txn.Abort();
    EXPECT_EQ(Get("b"), "(absent)");
}

TEST_F(LmdbTest, PutWithoutOverwriteKeepsTheOldValue) {
    Put("a", "1");
    Txn txn(*env_, true);
    EXPECT_FALSE(txn.Put(Table::kMeta, "a", "2", /*no_overwrite=*/true));
    EXPECT_TRUE(txn.Put(Table::kMeta, "b", "2", /*no_overwrite=*/true));
    txn.Commit();
    EXPECT_EQ(Get("a"), "1");
    EXPECT_EQ(Get("b"), "2");
}

TEST_F(LmdbTest, DelRemovesAndReportsWhetherTheKeyWasThere) {
    Put("a", "1");
    Txn txn(*env_, true);
    EXPECT_TRUE(txn.Del(Table::kMeta, "a"));
    EXPECT_FALSE(txn.Del(Table::kMeta, "a"));
    txn.Commit();
    EXPECT_EQ(Get("a"), "(absent)");
}

TEST_F(LmdbTest, TablesAreSeparate) {
    Txn txn(*env_, true);
    txn.Put(Table::kRegions, "k", "regions");
    txn.Put(Table::kItems, "k", "items");
    std::string_view value;
    ASSERT_TRUE(txn.Get(Table::kRegions, "k", &value));
    EXPECT_EQ(value, "regions");
    ASSERT_TRUE(txn.Get(Table::kItems, "k", &value));
    EXPECT_EQ(value, "items");
    EXPECT_FALSE(txn.Get(Table::kMeta, "k", &value));
}

TEST_F(LmdbTest, BigEndianKeysSortAsNumbers) {
    for (uint64_t n : {300ull, 2ull, 1ull << 40, 70000ull}) Put(Key(n), std::to_string(n));
    Txn txn(*env_, false);
    Cursor cursor(txn, Table::kMeta);
    std::vector<uint64_t> order;
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        order.push_back(fampool::ReadU64(cursor.key()));
    }
    EXPECT_EQ(order, (std::vector<uint64_t>{2, 300, 70000, 1ull << 40}));
}

TEST_F(LmdbTest, CursorSeeksTheFirstKeyAtOrAfterAndMovesBothWays) {
    for (uint64_t n : {10, 20, 30}) Put(Key(n), "");
    Txn txn(*env_, false);
    Cursor cursor(txn, Table::kMeta);
    ASSERT_TRUE(cursor.Seek(Key(15)));
    EXPECT_EQ(fampool::ReadU64(cursor.key()), 20u);
    ASSERT_TRUE(cursor.Prev());
    EXPECT_EQ(fampool::ReadU64(cursor.key()), 10u);
    EXPECT_FALSE(cursor.Prev());
    ASSERT_TRUE(cursor.Last());
    EXPECT_EQ(fampool::ReadU64(cursor.key()), 30u);
    EXPECT_FALSE(cursor.Next());
    EXPECT_FALSE(cursor.Seek(Key(31)));
}

TEST_F(LmdbTest, CursorDeleteRemovesTheCurrentKey) {
    for (uint64_t n : {1, 2, 3}) Put(Key(n), "");
    {
        Txn txn(*env_, true);
        Cursor cursor(txn, Table::kMeta);
        ASSERT_TRUE(cursor.Seek(Key(2)));
        cursor.Delete();
        txn.Commit();
    }
    EXPECT_EQ(Get(Key(2)), "(absent)");
    EXPECT_EQ(Get(Key(3)), "");
}

TEST_F(LmdbTest, OneEnvironmentPerDirectoryAndProcess) {
    std::shared_ptr<LmdbEnv> again = LmdbEnv::Open(dir_.path(), false);
    EXPECT_EQ(again.get(), env_.get());
    Put("shared", "yes");
    Txn txn(*again, false);
    std::string_view value;
    ASSERT_TRUE(txn.Get(Table::kMeta, "shared", &value));
    EXPECT_EQ(value, "yes");
}

TEST_F(LmdbTest, CommitsOutliveTheEnvironment) {
    Put("kept", "1");
    std::string path = dir_.path();
    env_.reset();
    env_ = LmdbEnv::Open(path, false);
    EXPECT_EQ(Get("kept"), "1");
}

TEST_F(LmdbTest, LmdbErrorsBecomeMetadataFailuresNamingTheOperation) {
    EXPECT_FAM_ERROR(fampool::RaiseLmdb("mdb_put in a test", MDB_MAP_FULL),
                     openfam::FAM_ERR_METADATA, "mdb_put in a test");
}

TEST_F(LmdbTest, ReadU64ReadsWhatAppendU64Wrote) {
    std::string bytes;
    fampool::AppendU64(bytes, 0x0102030405060708ull);
    fampool::AppendU64(bytes, 42);
    ASSERT_EQ(bytes.size(), 16u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x01) << "most significant byte first";
    EXPECT_EQ(fampool::ReadU64(bytes), 0x0102030405060708ull);
    EXPECT_EQ(fampool::ReadU64(bytes, 8), 42u);
}

}  // namespace
}  // namespace fampool_test
