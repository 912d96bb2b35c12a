// backup_restore.cc: saving an item to the archive store and bringing it back.
//
// fam_backup copies an item, with its size and permissions, to a named backup in the archive
// store (in the embedded model a directory: $FAMPOOL_ARCHIVE_DIR, else $FAMPOOL_HOME/backup).
// fam_restore copies a backup into an existing item at least as large, or allocates a new item
// for it. Each call returns a wait object and runs in the background until its *_wait call.
// fam_list_backup describes backups; fam_delete_backup removes one.
//
// Run it alone: ./backup_restore. It exits 0 when both restores return the saved contents.
#include <fam/fam.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

using namespace openfam;

namespace {

const char *kRegionName = "example_backup_restore";
const char *kBackupName = "example_backup_ledger";
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kWords = kMiB / sizeof(uint64_t);

void expect(bool ok, const char *what) {
    if (!ok) throw std::runtime_error(what);
}

void destroy_if_exists(fam &my_fam, const char *name) {
    try {
        Fam_Region_Descriptor *stale = my_fam.fam_lookup_region(name);
        my_fam.fam_destroy_region(stale);
        delete stale;
        std::printf("  destroyed region \"%s\" left by an earlier run\n", name);
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
    }
}

// Backups outlive regions and processes: remove the one an interrupted run may have left.
void delete_backup_if_exists(fam &my_fam, const char *name) {
    try {
        my_fam.fam_delete_backup_wait(my_fam.fam_delete_backup(name));
        std::printf("  deleted backup \"%s\" left by an earlier run\n", name);
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != FAM_BACKUP_NOTFOUND) throw;
    }
}

void expect_contents(fam &my_fam, Fam_Descriptor *item, const std::vector<uint64_t> &want,
                     const char *what) {
    std::vector<uint64_t> got(want.size());
    my_fam.fam_get_blocking(got.data(), item, 0, got.size() * sizeof(uint64_t));
    expect(got == want, what);
}

void run(fam &my_fam) {
    destroy_if_exists(my_fam, kRegionName);
    delete_backup_if_exists(my_fam, kBackupName);

    Fam_Region_Descriptor *region = my_fam.fam_create_region(kRegionName, 16 * kMiB, 0700, nullptr);
    Fam_Descriptor *ledger = my_fam.fam_allocate("ledger", kMiB, 0600, region);
    std::vector<uint64_t> saved(kWords);
    for (uint64_t i = 0; i < kWords; ++i) saved[i] = 0x9e3779b97f4a7c15ULL * (i + 1);
    my_fam.fam_put_blocking(saved.data(), ledger, 0, kMiB);
    std::printf("backup_restore: item \"ledger\" (1 MiB) filled with a pattern\n");

    Fam_Backup_Options options{};
    my_fam.fam_backup_wait(my_fam.fam_backup(ledger, kBackupName, &options));
    std::printf("backup_restore: backed up to \"%s\"\n", kBackupName);

    char *listing = my_fam.fam_list_backup(kBackupName);
    std::printf("backup_restore: fam_list_backup says:\n  %s%s", listing,
                listing[0] && listing[std::strlen(listing) - 1] == '\n' ? "" : "\n");
    std::free(listing);

    // Backup names are unique; the second backup is refused (at the call or at its wait).
    try {
        my_fam.fam_backup_wait(my_fam.fam_backup(ledger, kBackupName, &options));
        throw std::runtime_error("a second backup with the same name was created");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_BACKUP_NOT_CREATED, "duplicate backup: wrong error code");
        std::printf("backup_restore: second backup to the same name refused as expected: %s\n",
                    e.what());
    }

    // Lose the data, then restore it in place.
    std::vector<uint64_t> zeros(kWords, 0);
    my_fam.fam_put_blocking(zeros.data(), ledger, 0, kMiB);
    expect_contents(my_fam, ledger, zeros, "the overwrite did not happen");
    my_fam.fam_restore_wait(my_fam.fam_restore(kBackupName, ledger));
    expect_contents(my_fam, ledger, saved, "restore in place returned other contents");
    std::printf(
        "backup_restore: overwrote \"ledger\" with zeros, restored it in place: "
        "verified\n");

    // Restore into a new item, allocated by the restore.
    Fam_Descriptor *copy = nullptr;
    my_fam.fam_restore_wait(my_fam.fam_restore(kBackupName, region, "ledger_copy", 0600, &copy));
    expect(copy != nullptr && copy->get_size() >= kMiB, "restore did not allocate the item");
    expect_contents(my_fam, copy, saved, "restore to a new item returned other contents");
    std::printf("backup_restore: restored into the new item \"ledger_copy\": verified\n");

    my_fam.fam_delete_backup_wait(my_fam.fam_delete_backup(kBackupName));
    try {
        char *gone = my_fam.fam_list_backup(kBackupName);
        std::free(gone);
        throw std::runtime_error("a deleted backup is still listed");
    } catch (const Fam_Exception &e) {
        expect(e.fam_error() == FAM_BACKUP_NOTFOUND, "list of a deleted backup: wrong error");
        std::printf("backup_restore: deleted the backup; listing it now fails: %s\n", e.what());
    }

    my_fam.fam_deallocate(copy);
    my_fam.fam_deallocate(ledger);
    delete copy;
    delete ledger;
    my_fam.fam_destroy_region(region);
    delete region;
}

}  // namespace

int main() {
    fam my_fam;
    try {
        my_fam.fam_initialize("default", nullptr);
        run(my_fam);
        my_fam.fam_finalize("default");
        std::printf("backup_restore: OK\n");
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "backup_restore: FAILED: %s (Fam_Error %d)\n", e.what(),
                     e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "backup_restore: FAILED: %s\n", e.what());
    }
    return 1;
}
