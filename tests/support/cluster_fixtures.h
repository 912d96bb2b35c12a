// The fixtures of the memory-server model's own tests (cluster_test.cc: placement, striping,
// memory-side work; cluster_failure_test.cc: dead and restarted servers, zeroing of freed
// space, other users): each test on a cluster of its own, of the shape its fixture names.
#ifndef FAMPOOL_TESTS_SUPPORT_CLUSTER_FIXTURES_H_
#define FAMPOOL_TESTS_SUPPORT_CLUSTER_FIXTURES_H_

#include <fam/fam.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {

using namespace openfam;
using Clock = std::chrono::steady_clock;

// A FamTest on a cluster of its own, whatever FAMPOOL_TEST_CLUSTER says.
class ClusterTest : public FamTest {
  protected:
    virtual const char *Spec() const { return "3:4096"; }
    void PrepareEnvironment() override { SetEnv("FAMPOOL_TEST_CLUSTER", Spec()); }
    void WaitForCluster() {
        try {
            cluster()->WaitReady();
        } catch (const std::exception &e) {
            FAIL() << e.what();
        }
    }
};

class PlainClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0"; }
};

// Three servers without interleaving, every region on all of them (span size 0).
class EveryServerClusterTest : public ClusterTest {
  protected:
    const char *Spec() const override { return "3:0:tcp:region_span_size_per_memoryserver=0"; }
};

// The index of the memory server holding an item of a non-interleaved region.
inline uint64_t ServerIndexOfItem(Fam_Descriptor *item) {
    return item->get_global_descriptor().offset >> 48;
}

inline void Copy(fam *f, Fam_Descriptor *src, uint64_t src_offset, Fam_Descriptor *dest,
                 uint64_t dest_offset, uint64_t nbytes) {
    f->fam_copy_wait(f->fam_copy(src, src_offset, dest, dest_offset, nbytes));
}

// `bytes` with `part` (from byte `at` of `source`) written at `offset`.
inline std::vector<uint8_t> With(std::vector<uint8_t> bytes, uint64_t offset,
                                 const std::vector<uint8_t> &source, uint64_t at, uint64_t n) {
    std::copy(source.begin() + at, source.begin() + at + n, bytes.begin() + offset);
    return bytes;
}

// Memory-side work on a cluster of three servers: a region striped over all of them (4 KiB
// blocks, "s") and one whose items each lie on one server ("p").
class MemorySideTest : public ClusterTest {
  protected:
    static constexpr uint64_t kSize = 256 << 10;
    void SetUp() override {
        ClusterTest::SetUp();
        if (HasFatalFailure()) return;
        Fam_Region_Attributes striped{}, plain{};
        striped.interleaveEnable = ENABLE;
        plain.interleaveEnable = DISABLE;
        striped_ = CreateRegion("s", 16 << 20, 0777, &striped);
        plain_ = CreateRegion("p", 16 << 20, 0777, &plain);
    }
    void TearDown() override {
        plain_.reset();
        striped_.reset();
        ClusterTest::TearDown();
    }
    void Backup(Fam_Descriptor *item, const char *name) {
        fam()->fam_backup_wait(fam()->fam_backup(item, name, nullptr));
    }
    void Restore(const char *name, Fam_Descriptor *item) {
        fam()->fam_restore_wait(fam()->fam_restore(name, item));
    }
    // The archive file of a backup (the cluster's archive_dir, see FamTest::SetUp).
    std::string ArchivePath(const char *name) const {
        const char *archive = std::getenv("FAMPOOL_ARCHIVE_DIR");
        return (archive ? std::string(archive) : home_dir() + "/backup") + "/" + name +
               ".fambackup";
    }

    std::unique_ptr<Fam_Region_Descriptor> striped_, plain_;
};

// The memory servers of a region, as fam_stat names them.
inline std::vector<uint64_t> ServersOf(fam *f, Fam_Region_Descriptor *region) {
    Fam_Stat stat{};
    f->fam_stat(region, &stat);
    return std::vector<uint64_t>(stat.memory_servers, stat.memory_servers + stat.num_memservers);
}

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_CLUSTER_FIXTURES_H_
