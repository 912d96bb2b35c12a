// context_test.cc: fam_context_open / fam_context_close, the data path on contexts, quiet and
// progress per context, control-path calls refused on contexts, and threads (one context each,
// or sharing one fam object under FAM_THREAD_MULTIPLE).
#include <dirent.h>
#include <fam/fam.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;

// Region "r" (512 MiB, sparse) with an 8 MiB item "i"; a context opened on the fixture's fam.
class ContextTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 512 * kMiB);
        item_ = Allocate("i", 8 * kMiB, region_.get());
        context_ = fam()->fam_context_open();
        ASSERT_NE(context_, nullptr);
    }
    void TearDown() override {
        if (context_ != nullptr) {
            CaughtError caught = CatchFamError([&] { fam()->fam_context_close(context_); });
            EXPECT_FALSE(caught.thrown) << "fam_context_close: " << caught.message;
            context_ = nullptr;
        }
        big_.reset();
        item_.reset();
        region_.reset();
        FamTest::TearDown();
    }

    // Posts 64 non-blocking puts of 4 MiB (256 MiB in all) on `f`: enough work that some are
    // still pending long after the posting returns.
    void PostLotsOfWork(openfam::fam *f) {
        if (!big_) {
            big_ = Allocate("big", 64 * 4 * kMiB, region_.get());
            source_ = Pattern(4 * kMiB, 99);
        }
        for (uint64_t i = 0; i < 64; ++i) {
            f->fam_put_nonblocking(source_.data(), big_.get(), i * 4 * kMiB, 4 * kMiB);
        }
    }

    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
    fam_context *context_ = nullptr;
    std::unique_ptr<Fam_Descriptor> big_;
    std::vector<uint8_t> source_;
};

// ---------------------------------------------------------------------------------------------
// Open, close and the data path on a context

TEST_F(ContextTest, ContextCloseSucceeds) {
    fam_context *second = fam()->fam_context_open();
    ASSERT_NE(second, nullptr);
    EXPECT_NO_THROW(fam()->fam_context_close(second));
}

TEST_F(ContextTest, CloseNullContextThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_context_close(nullptr), FAM_ERR_NULLPTR, "fam_context_close");
}

TEST_F(ContextTest, BlockingPutOnContextIsSeenByFam) {
    std::vector<uint8_t> data = Pattern(64 * kKiB, 1);
    context_->fam_put_blocking(data.data(), item_.get(), 4096, data.size());
    EXPECT_EQ(GetBytes(item_.get(), 4096, data.size()), data);
}

TEST_F(ContextTest, BlockingGetOnContextSeesPutByFam) {
    PutBytes(item_.get(), 100, Pattern(5000, 2));
    std::vector<uint8_t> back(5000);
    context_->fam_get_blocking(back.data(), item_.get(), 100, back.size());
    EXPECT_EQ(back, Pattern(5000, 2));
}

TEST_F(ContextTest, NonBlockingPutOnContextCompletesByContextQuiet) {
    std::vector<uint8_t> data = Pattern(kMiB, 3);
    context_->fam_put_nonblocking(data.data(), item_.get(), 0, data.size());
    context_->fam_quiet();
    EXPECT_EQ(context_->fam_progress(), 0u);
    EXPECT_EQ(GetBytes(item_.get(), 0, kMiB), data);
}

TEST_F(ContextTest, NonBlockingGetOnContextCompletesByContextQuiet) {
    PutBytes(item_.get(), 0, Pattern(kMiB, 4));
    std::vector<uint8_t> back(kMiB);
    context_->fam_get_nonblocking(back.data(), item_.get(), 0, back.size());
    context_->fam_quiet();
    EXPECT_EQ(back, Pattern(kMiB, 4));
}

TEST_F(ContextTest, GatherAndScatterWorkOnContext) {
    std::vector<uint64_t> index = {5, 1, 9};
    std::vector<uint8_t> data = Pattern(3 * 8, 5), back(3 * 8);
    context_->fam_scatter_blocking(data.data(), item_.get(), 3, index.data(), 8);
    context_->fam_gather_blocking(back.data(), item_.get(), 3, index.data(), 8);
    EXPECT_EQ(back, data);
    EXPECT_EQ(GetBytes(item_.get(), 8, 8),
              std::vector<uint8_t>(data.begin() + 8, data.begin() + 16));
}

TEST_F(ContextTest, AtomicsOnContextAreSeenByFam) {
    context_->fam_set(item_.get(), 64, uint64_t{10});
    EXPECT_EQ(context_->fam_fetch_add(item_.get(), 64, uint64_t{5}), 10u);
    EXPECT_EQ(fam()->fam_fetch_uint64(item_.get(), 64), 15u);
    EXPECT_EQ(context_->fam_compare_swap(item_.get(), 64, uint64_t{15}, uint64_t{20}), 15u);
    EXPECT_EQ(context_->fam_fetch_uint64(item_.get(), 64), 20u);
}

TEST_F(ContextTest, DataPathErrorsOnContextNameTheCall) {
    std::vector<uint8_t> data(16);
    EXPECT_FAM_ERROR(context_->fam_put_blocking(data.data(), item_.get(), 8 * kMiB, 16),
                     FAM_ERR_OUTOFRANGE, "fam_put_blocking");
    EXPECT_FAM_ERROR_AT_QUIET(context_, context_->fam_set(item_.get(), 3, uint64_t{1}),
                              FAM_ERR_INVALID, "fam_set");
}

TEST_F(ContextTest, FenceOnContextOrdersItsPuts) {
    std::vector<uint8_t> big(4 * kMiB, 0xA0), small(64, 0xB0);
    context_->fam_put_nonblocking(big.data(), item_.get(), 0, big.size());
    context_->fam_fence();
    context_->fam_put_nonblocking(small.data(), item_.get(), 0, small.size());
    context_->fam_quiet();
    EXPECT_EQ(GetBytes(item_.get(), 0, 64), small);
    EXPECT_EQ(GetBytes(item_.get(), 64, 64), std::vector<uint8_t>(64, 0xA0));
}

TEST_F(ContextTest, TwoContextsWorkIndependentlyAfterOneCloses) {
    fam_context *other = fam()->fam_context_open();
    fam()->fam_context_close(other);
    std::vector<uint8_t> data = Pattern(4096, 6);
    context_->fam_put_blocking(data.data(), item_.get(), 0, data.size());
    EXPECT_EQ(GetBytes(item_.get(), 0, 4096), data);
}

// ---------------------------------------------------------------------------------------------
// Quiet and progress are per context

TEST_F(ContextTest, ContextProgressDoesNotCountParentOperations) {
    PostLotsOfWork(fam());
    EXPECT_EQ(context_->fam_progress(), 0u);
    EXPECT_GT(fam()->fam_progress(), 0u);
    fam()->fam_quiet();
}

TEST_F(ContextTest, ParentProgressDoesNotCountContextOperations) {
    PostLotsOfWork(context_);
    EXPECT_EQ(fam()->fam_progress(), 0u);
    EXPECT_GT(context_->fam_progress(), 0u);
    context_->fam_quiet();
}

TEST_F(ContextTest, ContextQuietDoesNotWaitForParentOperations) {
    PostLotsOfWork(fam());
    std::vector<uint8_t> data = Pattern(64, 7);
    context_->fam_put_nonblocking(data.data(), item_.get(), 0, data.size());
    context_->fam_quiet();
    EXPECT_GT(fam()->fam_progress(), 0u) << "the context's quiet waited for the parent's puts";
    EXPECT_EQ(GetBytes(item_.get(), 0, 64), data);
    fam()->fam_quiet();
}

TEST_F(ContextTest, ParentQuietDoesNotWaitForContextOperations) {
    PostLotsOfWork(context_);
    std::vector<uint8_t> data = Pattern(64, 8);
    fam()->fam_put_nonblocking(data.data(), item_.get(), 0, data.size());
    fam()->fam_quiet();
    EXPECT_GT(context_->fam_progress(), 0u) << "the parent's quiet waited for the context's puts";
    EXPECT_EQ(GetBytes(item_.get(), 0, 64), data);
    context_->fam_quiet();
}

TEST_F(ContextTest, ContextQuietCompletesAllItsPendingOperations) {
    PostLotsOfWork(context_);
    context_->fam_quiet();
    EXPECT_EQ(context_->fam_progress(), 0u);
    for (uint64_t i = 0; i < 64; i += 9) {
        ASSERT_EQ(GetBytes(big_.get(), i * 4 * kMiB, 4 * kMiB), source_) << "chunk " << i;
    }
}

// ---------------------------------------------------------------------------------------------
// Control-path calls on a context throw FAM_ERR_INVALIDOP

struct ControlCall {
    const char *label;
    const char *call;
    std::function<void(fam_context *, Fam_Region_Descriptor *, Fam_Descriptor *)> invoke;
};

const std::vector<ControlCall> &ControlCalls() {
    using C = fam_context *;
    using R = Fam_Region_Descriptor *;
    using D = Fam_Descriptor *;
    static const std::vector<ControlCall> calls = {
        {"CreateRegion", "fam_create_region",
         [](C c, R, D) { delete c->fam_create_region("new", kMiB, 0777, nullptr); }},
        {"LookupRegion", "fam_lookup_region", [](C c, R, D) { delete c->fam_lookup_region("r"); }},
        {"DestroyRegion", "fam_destroy_region", [](C c, R r, D) { c->fam_destroy_region(r); }},
        {"ResizeRegion", "fam_resize_region",
         [](C c, R r, D) { c->fam_resize_region(r, 1024 * kMiB); }},
        {"StatRegion", "fam_stat",
         [](C c, R r, D) {
             Fam_Stat stat;
             c->fam_stat(r, &stat);
         }},
        {"ChangeRegionPermissions", "fam_change_permissions",
         [](C c, R r, D) { c->fam_change_permissions(r, 0700); }},
        {"AllocateNamed", "fam_allocate",
         [](C c, R r, D) { delete c->fam_allocate("new", 64, 0600, r); }},
        {"AllocateUnnamed", "fam_allocate",
         [](C c, R r, D) { delete c->fam_allocate(64, 0600, r); }},
        {"Lookup", "fam_lookup", [](C c, R, D) { delete c->fam_lookup("i", "r"); }},
        {"Deallocate", "fam_deallocate", [](C c, R, D d) { c->fam_deallocate(d); }},
        {"Close", "fam_close", [](C c, R, D d) { c->fam_close(d); }},
        {"StatItem", "fam_stat",
         [](C c, R, D d) {
             Fam_Stat stat;
             c->fam_stat(d, &stat);
         }},
        {"ChangeItemPermissions", "fam_change_permissions",
         [](C c, R, D d) { c->fam_change_permissions(d, 0600); }},
        {"Copy", "fam_copy", [](C c, R, D d) { c->fam_copy_wait(c->fam_copy(d, 0, d, 4096, 64)); }},
        {"Backup", "fam_backup",
         [](C c, R, D d) { c->fam_backup_wait(c->fam_backup(d, "ctx-backup", nullptr)); }},
        {"RestoreIntoItem", "fam_restore",
         [](C c, R, D d) { c->fam_restore_wait(c->fam_restore("ctx-backup", d)); }},
        {"RestoreIntoRegion", "fam_restore",
         [](C c, R r, D) {
             Fam_Descriptor *out = nullptr;
             c->fam_restore_wait(c->fam_restore("ctx-backup", r, "restored", 0600, &out));
             delete out;
         }},
        {"DeleteBackup", "fam_delete_backup",
         [](C c, R, D) { c->fam_delete_backup_wait(c->fam_delete_backup("ctx-backup")); }},
        {"ListBackup", "fam_list_backup", [](C c, R, D) { free(c->fam_list_backup("*")); }},
        {"ContextOpen", "fam_context_open",
         [](C c, R, D) { c->fam_context_close(c->fam_context_open()); }},
        {"BarrierAll", "fam_barrier_all", [](C c, R, D) { c->fam_barrier_all(); }},
        // A context's fam_abort throws: it must not end the process (or the job).
        {"Abort", "fam_abort", [](C c, R, D) { c->fam_abort(3); }},
        {"Initialize", "fam_initialize", [](C c, R, D) { c->fam_initialize("default", nullptr); }},
        {"Finalize", "fam_finalize", [](C c, R, D) { c->fam_finalize("default"); }},
        {"ListOptions", "fam_list_options", [](C c, R, D) { free(c->fam_list_options()); }},
        {"GetOption", "fam_get_option",
         [](C c, R, D) { free(const_cast<void *>(c->fam_get_option("VERSION"))); }},
    };
    return calls;
}

class ControlCallOnContextTest : public ContextTest,
                                 public ::testing::WithParamInterface<ControlCall> {};

TEST_P(ControlCallOnContextTest, ThrowsInvalidOp) {
    const ControlCall &call = GetParam();
    EXPECT_FAM_ERROR(call.invoke(context_, region_.get(), item_.get()), FAM_ERR_INVALIDOP,
                     call.call);
}

TEST_P(ControlCallOnContextTest, ChangesNothing) {
    const ControlCall &call = GetParam();
    PutBytes(item_.get(), 0, Pattern(4096, 10));
    CatchFamError([&] { call.invoke(context_, region_.get(), item_.get()); });
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("i", "r"));
    EXPECT_EQ(GetBytes(found.get(), 0, 4096), Pattern(4096, 10));
    Fam_Stat stat{};
    fam()->fam_stat(region_.get(), &stat);
    EXPECT_EQ(stat.size, 512 * kMiB);
    EXPECT_EQ(stat.perm & 0777, 0777u);
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("new"), FAM_ERR_NOTFOUND, "fam_lookup_region");
}

INSTANTIATE_TEST_SUITE_P(Calls, ControlCallOnContextTest, ::testing::ValuesIn(ControlCalls()),
                         [](const ::testing::TestParamInfo<ControlCall> &info) {
                             return std::string(info.param.label);
                         });

// ---------------------------------------------------------------------------------------------
// Many contexts

size_t OpenFileDescriptors() {
    size_t count = 0;
    if (DIR *dir = opendir("/proc/self/fd")) {
        while (readdir(dir) != nullptr) ++count;
        closedir(dir);
    }
    return count;
}

TEST_F(ContextTest, ThousandOpenCloseCyclesLeakNoFileDescriptors) {
    // Warm up once so lazily created resources are not counted as a leak.
    fam()->fam_context_close(fam()->fam_context_open());
    size_t before = OpenFileDescriptors();
    for (int i = 0; i < 1000; ++i) {
        fam_context *context = nullptr;
        ASSERT_NO_THROW(context = fam()->fam_context_open()) << "cycle " << i;
        ASSERT_NE(context, nullptr) << "cycle " << i;
        ASSERT_NO_THROW(fam()->fam_context_close(context)) << "cycle " << i;
    }
    EXPECT_LE(OpenFileDescriptors(), before + 2);
    std::vector<uint8_t> data = Pattern(64, 11);
    context_->fam_put_blocking(data.data(), item_.get(), 0, data.size());
    EXPECT_EQ(GetBytes(item_.get(), 0, 64), data);
}

TEST_F(ContextTest, EightThreadsEachWithItsOwnContextCompleteExactly) {
    constexpr int kThreads = 8;
    constexpr int kPuts = 16;
    constexpr uint64_t kChunk = 64 * kKiB;  // 8 threads x 16 puts x 64 KiB = the 8 MiB item
    std::vector<fam_context *> contexts;
    for (int t = 0; t < kThreads; ++t) contexts.push_back(fam()->fam_context_open());
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            fam_context *context = contexts[t];
            std::vector<std::vector<uint8_t>> chunks;
            for (int k = 0; k < kPuts; ++k) chunks.push_back(Pattern(kChunk, t * 100 + k));
            try {
                for (int k = 0; k < kPuts; ++k) {
                    uint64_t offset = (t * kPuts + k) * kChunk;
                    context->fam_put_nonblocking(chunks[k].data(), item_.get(), offset, kChunk);
                }
                uint64_t pending = context->fam_progress();
                if (pending > kPuts) errors[t] += "progress " + std::to_string(pending) + " > 16; ";
                context->fam_quiet();
                if (context->fam_progress() != 0) errors[t] += "progress not 0 after quiet; ";
                std::vector<uint8_t> back(kChunk);
                for (int k = 0; k < kPuts; ++k) {
                    uint64_t offset = (t * kPuts + k) * kChunk;
                    context->fam_get_blocking(back.data(), item_.get(), offset, kChunk);
                    if (back != chunks[k]) errors[t] += "chunk " + std::to_string(k) + " differs; ";
                }
            } catch (const Fam_Exception &e) {
                errors[t] +=
                    std::string("threw ") + FamErrorName(e.fam_error()) + ": " + e.fam_error_msg();
            }
        });
    }
    for (std::thread &thread : threads) thread.join();
    for (fam_context *context : contexts) fam()->fam_context_close(context);
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
    for (int t = 0; t < kThreads; ++t) {
        for (int k = 0; k < kPuts; ++k) {
            uint64_t offset = (t * kPuts + k) * kChunk;
            ASSERT_EQ(GetBytes(item_.get(), offset, kChunk), Pattern(kChunk, t * 100 + k))
                << "thread " << t << " chunk " << k;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FAM_THREAD_MULTIPLE: threads share one fam object

class ThreadMultipleTest : public ThreadMultipleFamTest {};  // 16 MiB region, 4 MiB item

TEST_F(ThreadMultipleTest, ThreadsSharingFamDoPutGetAndAtomicsExactly) {
    constexpr int kThreads = 8;
    constexpr int kRounds = 200;
    constexpr uint64_t kSlot = 4096;
    constexpr uint64_t kCounter = 4 * kMiB - 64;
    std::vector<std::string> errors(kThreads);
    std::vector<std::vector<uint64_t>> fetched(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            openfam::fam *f = fam();
            uint64_t base = (1 + t) * kSlot * 2;
            try {
                std::vector<uint8_t> back(kSlot);
                for (int round = 0; round < kRounds; ++round) {
                    std::vector<uint8_t> data = Pattern(kSlot, t * 1000 + round);
                    f->fam_put_blocking(data.data(), item_.get(), base, kSlot);
                    f->fam_get_blocking(back.data(), item_.get(), base, kSlot);
                    if (back != data) errors[t] += "round " + std::to_string(round) + " differs; ";
                    f->fam_set(item_.get(), base + kSlot, int64_t{round});
                    if (f->fam_fetch_int64(item_.get(), base + kSlot) != round) {
                        errors[t] += "own counter wrong in round " + std::to_string(round) + "; ";
                    }
                    fetched[t].push_back(f->fam_fetch_add(item_.get(), kCounter, uint64_t{1}));
                }
            } catch (const Fam_Exception &e) {
                errors[t] +=
                    std::string("threw ") + FamErrorName(e.fam_error()) + ": " + e.fam_error_msg();
            }
        });
    }
    for (std::thread &thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(fam()->fam_fetch_uint64(item_.get(), kCounter),
              static_cast<uint64_t>(kThreads * kRounds));
    // Atomic fetch_add hands out every old value exactly once.
    std::set<uint64_t> distinct;
    for (const auto &values : fetched) distinct.insert(values.begin(), values.end());
    EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads * kRounds));
}

TEST_F(ThreadMultipleTest, ThreadsSharingFamPostNonBlockingPutsCompletedByOneQuiet) {
    constexpr int kThreads = 4;
    constexpr int kPuts = 32;
    constexpr uint64_t kChunk = 16 * kKiB;
    std::vector<std::vector<uint8_t>> chunks;
    for (int i = 0; i < kThreads * kPuts; ++i) chunks.push_back(Pattern(kChunk, 500 + i));
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            try {
                for (int k = 0; k < kPuts; ++k) {
                    int i = t * kPuts + k;
                    fam()->fam_put_nonblocking(chunks[i].data(), item_.get(), i * kChunk, kChunk);
                }
            } catch (const Fam_Exception &) {
                ++failures;
            }
        });
    }
    for (std::thread &thread : threads) thread.join();
    EXPECT_EQ(failures.load(), 0);
    fam()->fam_quiet();
    EXPECT_EQ(fam()->fam_progress(), 0u);
    for (int i = 0; i < kThreads * kPuts; ++i) {
        ASSERT_EQ(GetBytes(item_.get(), i * kChunk, kChunk), chunks[i]) << "put " << i;
    }
}

}  // namespace
}  // namespace fampool_test
