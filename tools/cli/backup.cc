// `fampool backup` and `fampool restore`: a data item's bytes to and from the archive store
// (fam_backup, fam_restore), the archive's backups listed (fam_list_backup) and deleted
// (fam_delete_backup), on either model, through the OpenFAM API as a program would call it:
// the library lays the bytes out, checks the caller's access to the item and checksums them.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>

#include "cli.h"
#include "pool.h"

namespace fampool::cli {
namespace {

// One backup as fam_list_backup describes it.
struct BackupRow {
    std::string name, time, item, crc32c;
    uint64_t size = 0;
    uint32_t uid = 0, gid = 0, mode = 0;
};

std::string BackupObject(const std::string &name) { return "backup " + Quote(name); }

// fam_list_backup's text: a line per backup, "name=N size=S uid=U gid=G mode=M time=T item=I
// crc32c=C". Names may hold spaces, so the fields are found from the fixed ones around them.
std::vector<BackupRow> ParseBackups(const std::string &command, const std::string &text) {
    static const std::regex line_format(
        R"(name=(.*) size=(\d+) uid=(\d+) gid=(\d+) mode=([0-7]+) time=(\S*) item=(.*) )"
        R"(crc32c=([0-9a-f]+))");
    std::vector<BackupRow> rows;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        if (line.empty()) continue;
        std::smatch m;
        if (!std::regex_match(line, m, line_format)) {
            Die(1, "fampool {}: fam_list_backup gave a line it cannot read: {}", command, line);
        }
        BackupRow row;
        row.name = m[1];
        row.size = std::stoull(m[2]);
        row.uid = static_cast<uint32_t>(std::stoul(m[3]));
        row.gid = static_cast<uint32_t>(std::stoul(m[4]));
        row.mode = static_cast<uint32_t>(std::stoul(m[5], nullptr, 8));
        row.time = m[6];
        row.item = m[7];
        row.crc32c = m[8];
        rows.push_back(row);
    }
    return rows;
}

// The backups named `name` ("*": all of them).
std::vector<BackupRow> Backups(FamOn &fam, const std::string &command, const Model &model,
                               const std::string &name) {
    std::string text = Ask(command, model, name == "*" ? "backups" : BackupObject(name), [&] {
        std::unique_ptr<char, decltype(&std::free)> list(fam->fam_list_backup(name.c_str()),
                                                         &std::free);
        return std::string(list.get());
    });
    return ParseBackups(command, text);
}

double Since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Rate(uint64_t bytes, double seconds) {
    return seconds > 0 ? fmt::format("{:.0f} MB/s", bytes / seconds / 1e6) : "-";
}

int ListBackups(FamOn &fam, const Model &model, const std::string &name, bool exact) {
    std::vector<BackupRow> rows = Backups(fam, "backup", model, name.empty() ? "*" : name);
    Table table({"NAME", "SIZE", "UID", "GID", "MODE", "TIME", "ITEM", "CRC32C"});
    for (const BackupRow &row : rows) {
        table.Add({row.name, Bytes(row.size, exact), std::to_string(row.uid),
                   std::to_string(row.gid), fmt::format("{:04o}", row.mode), row.time, row.item,
                   row.crc32c});
    }
    if (table.size() == 0) {
        std::printf("  (no backups)\n");
    } else {
        table.Print();
    }
    return 0;
}

int DeleteBackup(FamOn &fam, const Model &model, const std::string &name) {
    Ask("backup", model, BackupObject(name),
        [&] { fam->fam_delete_backup_wait(fam->fam_delete_backup(name.c_str())); });
    std::printf("deleted %s\n", BackupObject(name).c_str());
    return 0;
}

}  // namespace

int Backup(const BackupOptions &options) {
    const std::string command = "backup";
    Model model = ChooseModel(command, options.cluster);
    FamOn fam(command, model);
    if (options.list) return ListBackups(fam, model, options.list_name, options.exact_bytes);
    if (!options.delete_name.empty()) return DeleteBackup(fam, model, options.delete_name);
    const std::string object = ItemObject(options.item, options.region);
    std::unique_ptr<openfam::Fam_Descriptor> item(Ask(command, model, object, [&] {
        return fam->fam_lookup(options.item.c_str(), options.region.c_str());
    }));
    auto start = std::chrono::steady_clock::now();
    Ask(command, model, fmt::format("{} to {}", object, BackupObject(options.name)),
        [&] { fam->fam_backup_wait(fam->fam_backup(item.get(), options.name.c_str(), nullptr)); });
    double seconds = Since(start);
    std::vector<BackupRow> made = Backups(fam, command, model, options.name);
    std::printf("backed up %s to %s: %s in %.2f s (%s), crc32c %s\n", object.c_str(),
                BackupObject(options.name).c_str(),
                Bytes(item->get_size(), options.exact_bytes).c_str(), seconds,
                Rate(item->get_size(), seconds).c_str(),
                made.empty() ? "?" : made.front().crc32c.c_str());
    return 0;
}

int Restore(const BackupOptions &options) {
    const std::string command = "restore";
    // A bad mode fails before anything is asked of the model.
    std::optional<uint32_t> mode;
    if (!options.mode.empty()) mode = ParseMode(command, options.mode);
    Model model = ChooseModel(command, options.cluster);
    FamOn fam(command, model);
    std::vector<BackupRow> found = Backups(fam, command, model, options.name);
    if (found.empty()) Die(1, "fampool restore: {} not found", BackupObject(options.name));
    const BackupRow &backup = found.front();
    const std::string object = ItemObject(options.item, options.region);
    std::unique_ptr<openfam::Fam_Region_Descriptor> region(
        Ask(command, model, RegionObject(options.region),
            [&] { return fam->fam_lookup_region(options.region.c_str()); }));
    // The item is looked up; a missing one is made, the backup's size, with --mode or the mode
    // the backed-up item had.
    std::unique_ptr<openfam::Fam_Descriptor> item;
    try {
        item.reset(fam->fam_lookup(options.item.c_str(), options.region.c_str()));
    } catch (const Fam_Exception &e) {
        if (e.fam_error() != openfam::FAM_ERR_NOTFOUND) Fault(command, model, object, e);
    }
    // --mode is the mode of an item restore makes: an existing item keeps its own, so the
    // option is refused rather than quietly not applied.
    if (item && mode) {
        Die(1,
            "fampool restore: --mode sets the mode of an item restore makes, but {} exists "
            "(restore into it without --mode, or into a new item)",
            object);
    }
    const std::string what = fmt::format("{} into {}", BackupObject(options.name), object);
    auto start = std::chrono::steady_clock::now();
    std::string outcome;
    if (item) {
        Ask(command, model, what,
            [&] { fam->fam_restore_wait(fam->fam_restore(options.name.c_str(), item.get())); });
        outcome = fmt::format("the existing item of {}", Bytes(item->get_size()));
    } else {
        uint32_t made_mode = mode.value_or(backup.mode);
        openfam::Fam_Descriptor *made = nullptr;
        Ask(command, model, what, [&] {
            fam->fam_restore_wait(fam->fam_restore(options.name.c_str(), region.get(),
                                                   options.item.c_str(), made_mode, &made));
        });
        item.reset(made);
        outcome = fmt::format("a new item, mode {:04o}", made_mode);
    }
    double seconds = Since(start);
    std::printf("restored %s (%s) into %s (%s) in %.2f s (%s)\n",
                BackupObject(options.name).c_str(), Bytes(backup.size).c_str(), object.c_str(),
                outcome.c_str(), seconds, Rate(backup.size, seconds).c_str());
    return 0;
}

uint32_t ParseMode(const std::string &command, const std::string &text) {
    char *end = nullptr;
    unsigned long mode = std::strtoul(text.c_str(), &end, 8);
    if (text.empty() || *end != '\0' || mode > 07777) {
        Die(1, "fampool {}: mode \"{}\" is not an octal mode (0 to 7777, e.g. 0640)", command,
            text);
    }
    return static_cast<uint32_t>(mode);
}

}  // namespace fampool::cli
