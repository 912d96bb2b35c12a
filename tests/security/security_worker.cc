// security_worker: one OpenFAM call (or a few) as whichever user runs it, for the multi-user
// suite (test_multiuser.py). It prints "ok" and what it read, or "error <Fam_Error> <message>",
// and exits 0 either way (2 when fam_initialize fails, which it prints the same way); a store
// through a read-only mapping kills it with SIGSEGV, which the suite expects.
//
//   security_worker make REGION RMODE ITEM IMODE TEXT [dataitem]   region + item, TEXT put
//   security_worker get REGION ITEM N          N bytes of the item (as text)
//   security_worker put REGION ITEM TEXT
//   security_worker chmod REGION ITEM MODE     the item's mode ("-" as ITEM: the region's)
//   security_worker backup REGION ITEM NAME
//   security_worker describe NAME | list | delete NAME
//   security_worker restore NAME REGION ITEM   into the existing item
//   security_worker restore-new NAME REGION ITEM
//   security_worker map REGION ITEM read N | write TEXT | mprotect
//   security_worker destroy REGION
//   security_worker region REGION SIZE [raid1]  a region of SIZE bytes (mode 0700), no item
//   security_worker resize REGION SIZE
//   security_worker time REGION COUNT          COUNT rounds, 2 ms apart, of an allocation and
//                                              deallocation in REGION (calls to the metadata
//                                              service) and a fam_fetch_add on an item of it
//                                              (RAID1: calls to its memory servers); prints
//                                              each round as T:A:B, its start on the steady
//                                              clock (ns) and the two times (us)
//   security_worker secrets REGION COUNT TEXT  waits 2 s with its endpoints open, then allocates
//                                              COUNT items (mode 0600) in REGION 100 ms apart,
//                                              puts TEXT in each and deallocates it; prints
//                                              "misplaced N": items not in REGION
//
// Modes are octal. Configured from the environment (FAMPOOL_CONFIG, or the embedded model's).
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

mode_t Mode(const std::string &text) { return static_cast<mode_t>(std::stoul(text, nullptr, 8)); }

void Print(const std::string &text) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
}

// Runs the command's calls; "ok" and what `body` returns, or the error.
void Run(const std::function<std::string()> &body) {
    try {
        std::string shown = body();
        Print(shown.empty() ? "ok" : "ok " + shown);
    } catch (const Fam_Exception &e) {
        Print("error " + std::to_string(e.fam_error()) + " " + e.fam_error_msg());
    }
}

std::string Wait(fam &f, void *wait) {
    f.fam_backup_wait(wait);
    return "";
}

std::string Command(fam &f, const std::vector<std::string> &a) {
    const std::string &what = a.at(0);
    auto item = [&](size_t region_at) {
        return std::unique_ptr<Fam_Descriptor>(
            f.fam_lookup(a.at(region_at + 1).c_str(), a.at(region_at).c_str()));
    };
    if (what == "make") {
        Fam_Region_Attributes attributes{};
        attributes.permissionLevel = a.size() > 6 && a[6] == "dataitem" ? DATAITEM : REGION;
        std::unique_ptr<Fam_Region_Descriptor> region(
            f.fam_create_region(a.at(1).c_str(), 8 << 20, Mode(a.at(2)), &attributes));
        std::unique_ptr<Fam_Descriptor> made(
            f.fam_allocate(a.at(3).c_str(), 4096, Mode(a.at(4)), region.get()));
        f.fam_put_blocking(const_cast<char *>(a.at(5).c_str()), made.get(), 0, a[5].size());
        return "";
    }
    if (what == "get") {
        std::string bytes(std::stoul(a.at(3)), '\0');
        f.fam_get_blocking(bytes.data(), item(1).get(), 0, bytes.size());
        return bytes.c_str();
    }
    if (what == "put") {
        f.fam_put_blocking(const_cast<char *>(a.at(3).c_str()), item(1).get(), 0, a[3].size());
        return "";
    }
    if (what == "chmod") {
        if (a.at(2) == "-") {
            std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(a[1].c_str()));
            f.fam_change_permissions(region.get(), Mode(a.at(3)));
        } else {
            f.fam_change_permissions(item(1).get(), Mode(a.at(3)));
        }
        return "";
    }
    if (what == "backup") return Wait(f, f.fam_backup(item(1).get(), a.at(3).c_str(), nullptr));
    if (what == "describe" || what == "list") {
        char *text = f.fam_list_backup(what == "list" ? "*" : a.at(1).c_str());
        std::string listing = text;
        free(text);
        for (char &c : listing) {
            if (c == '\n') c = '|';
        }
        return listing;
    }
    if (what == "delete") {
        f.fam_delete_backup_wait(f.fam_delete_backup(a.at(1).c_str()));
        return "";
    }
    if (what == "restore") {
        f.fam_restore_wait(f.fam_restore(a.at(1).c_str(), item(2).get()));
        return "";
    }
    if (what == "restore-new") {
        std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(a.at(2).c_str()));
        Fam_Descriptor *made = nullptr;
        f.fam_restore_wait(
            f.fam_restore(a.at(1).c_str(), region.get(), a.at(3).c_str(), 0600, &made));
        delete made;
        return "";
    }
    if (what == "map") {
        std::unique_ptr<Fam_Descriptor> mapped_item = item(1);
        auto *bytes = static_cast<char *>(f.fam_map(mapped_item.get()));
        const std::string &how = a.at(3);
        if (how == "read") return std::string(bytes, std::stoul(a.at(4))).c_str();
        if (how == "write") {
            std::memcpy(bytes, a.at(4).data(), a[4].size());  // SIGSEGV when read-only
            return "written";
        }
        long page = sysconf(_SC_PAGESIZE);
        void *start = reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(bytes) & ~(page - 1));
        if (mprotect(start, static_cast<size_t>(page), PROT_READ | PROT_WRITE) != 0) {
            return std::string("mprotect refused: ") + std::strerror(errno);
        }
        return "mprotect allowed";
    }
    if (what == "secrets") {
        std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(a.at(1).c_str()));
        std::this_thread::sleep_for(std::chrono::seconds(2));
        int misplaced = 0;
        for (int i = 0; i < std::stoi(a.at(2)); ++i) {
            std::string name = "secret-" + std::to_string(i);
            std::unique_ptr<Fam_Descriptor> made(
                f.fam_allocate(name.c_str(), 4096, 0600, region.get()));
            f.fam_put_blocking(const_cast<char *>(a.at(3).c_str()), made.get(), 0, a[3].size());
            if (made->get_global_descriptor().regionId !=
                region->get_global_descriptor().regionId) {
                ++misplaced;  // another region's item: left as it is
            } else {
                f.fam_deallocate(made.get());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return "misplaced " + std::to_string(misplaced);
    }
    if (what == "region") {
        Fam_Region_Attributes attributes{};
        if (a.size() > 3 && a[3] == "raid1") attributes.redundancyLevel = RAID1;
        std::unique_ptr<Fam_Region_Descriptor> region(
            f.fam_create_region(a.at(1).c_str(), std::stoull(a.at(2)), 0700, &attributes));
        return "";
    }
    if (what == "resize") {
        std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(a.at(1).c_str()));
        f.fam_resize_region(region.get(), std::stoull(a.at(2)));
        return "";
    }
    if (what == "time") {
        using Clock = std::chrono::steady_clock;
        std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(a.at(1).c_str()));
        std::unique_ptr<Fam_Descriptor> counter(f.fam_allocate(8, 0600, region.get()));
        std::string rounds;
        auto micros = [](Clock::duration d) {
            return std::chrono::duration<double, std::micro>(d).count();
        };
        for (int i = 0; i < std::stoi(a.at(2)); ++i) {
            auto start = Clock::now();
            std::unique_ptr<Fam_Descriptor> made(f.fam_allocate(4096, 0600, region.get()));
            f.fam_deallocate(made.get());
            auto allocated = Clock::now();
            f.fam_fetch_add(counter.get(), 0, uint64_t{1});
            auto done = Clock::now();
            rounds += std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         start.time_since_epoch())
                                         .count()) +
                      ":" + std::to_string(micros(allocated - start)) + ":" +
                      std::to_string(micros(done - allocated)) + " ";
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        f.fam_deallocate(counter.get());
        return rounds;
    }
    if (what == "destroy") {
        std::unique_ptr<Fam_Region_Descriptor> region(f.fam_lookup_region(a.at(1).c_str()));
        f.fam_destroy_region(region.get());
        return "";
    }
    throw std::invalid_argument("unknown command " + what);
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::fprintf(stderr, "usage: security_worker COMMAND ... (see the file's comment)\n");
        return 2;
    }
    fam f;
    try {
        f.fam_initialize("default", nullptr);
    } catch (const Fam_Exception &e) {
        Print("error " + std::to_string(e.fam_error()) + " " + e.fam_error_msg());
        return 2;
    }
    try {
        Run([&] { return Command(f, args); });
    } catch (const std::exception &e) {
        std::fprintf(stderr, "security_worker: %s\n", e.what());
        return 2;
    }
    f.fam_finalize("default");
    return 0;
}
