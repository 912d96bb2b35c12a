// emulation_worker: one PE of the emulated-fabric tests (tests/emulation/test_emulate.py), run
// by `fampool run` on a client node of `fampool up --emulate`.
//
//   emulation_worker BYTES
//     Joins the job (fam_initialize with the launcher's runtime), creates region "pe<rank>"
//     and an item of BYTES in it, puts a pattern, gets it back and checks it, waits at a
//     barrier with the other PEs, and prints one line:
//       pe RANK of SIZE source ADDRESS put_s SECONDS get_s SECONDS ok
//     ADDRESS: the first IPv4 address of this PE's network interfaces other than loopback (on
//     a client node of an emulated fabric, the node's).
//   emulation_worker setup BYTES
//     Creates region "stall" (interleaved over every memory server) and item "striped" of BYTES
//     in it.
//   emulation_worker first INTERLEAVE SERVERS
//     A fresh PE's first operations: after fam_initialize and a lookup of "striped", an 8-byte
//     put, then an 8-byte get, in the first block of each server (offset s * INTERLEAVE), each
//     the PE's first contact with that server's fabric endpoint. Prints one line per server:
//       server S put_s SECONDS get_s SECONDS ok
//     Exit status 0 on success, 1 on a mismatch, 2 on a fam error.
//   emulation_worker given-up DIR BYTES
//     A RAID1 write given up behind a cut link, with the test driving the faults through files
//     in DIR: creates RAID1 region "given-up" and item "slot" of BYTES, puts bytes 'A', creates
//     DIR/ready and waits for DIR/cut (the link of one copy's server is cut then); puts 'B'
//     (given up at that server after the members' bound, made again once it can be), then
//     'C', creates DIR/written and waits for DIR/read (the other copy's server is killed
//     meanwhile); gets the item and prints
//       given-up put_b_s SECONDS a N b N c N
//     N: how many bytes read back hold each pattern. Exit status 0 when all hold 'C', 1
//     otherwise, 2 on a fam error or a file not created within 120 s.
#include <arpa/inet.h>
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

std::string FirstAddress() {
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return "?";
    std::string found = "?";
    for (ifaddrs *each = list; each; each = each->ifa_next) {
        if (!each->ifa_addr || each->ifa_addr->sa_family != AF_INET) continue;
        char text[INET_ADDRSTRLEN];
        auto *address = reinterpret_cast<sockaddr_in *>(each->ifa_addr);
        inet_ntop(AF_INET, &address->sin_addr, text, sizeof text);
        if (std::string(text) != "127.0.0.1") {
            found = text;
            break;
        }
    }
    freeifaddrs(list);
    return found;
}

int Option(fam &f, const char *name) {
    const int *value = static_cast<const int *>(f.fam_get_option(const_cast<char *>(name)));
    int result = *value;
    free(const_cast<int *>(value));
    return result;
}

}  // namespace

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

void Setup(uint64_t bytes) {
    fam f;
    f.fam_initialize("default", nullptr);
    Fam_Region_Attributes attributes{};
    attributes.interleaveEnable = ENABLE;
    std::unique_ptr<Fam_Region_Descriptor> region(
        f.fam_create_region("stall", 2 * bytes, 0777, &attributes));
    std::unique_ptr<Fam_Descriptor> item(f.fam_allocate("striped", bytes, 0777, region.get()));
    f.fam_finalize("default");
}

int First(uint64_t interleave, uint64_t servers) {
    fam f;
    f.fam_initialize("default", nullptr);
    std::unique_ptr<Fam_Descriptor> item(f.fam_lookup("striped", "stall"));
    bool ok = true;
    for (uint64_t s = 0; s < servers; ++s) {
        uint64_t out = 0x5eed0000 + s, in = 0;
        auto start = Clock::now();
        f.fam_put_blocking(&out, item.get(), s * interleave, sizeof out);
        double put_s = Since(start);
        start = Clock::now();
        f.fam_get_blocking(&in, item.get(), s * interleave, sizeof in);
        double get_s = Since(start);
        ok &= in == out;
        std::printf("server %llu put_s %.4f get_s %.4f %s\n", static_cast<unsigned long long>(s),
                    put_s, get_s, in == out ? "ok" : "MISMATCH");
    }
    std::fflush(stdout);
    f.fam_finalize("default");
    return ok ? 0 : 1;
}

// Waits for the file at `path` (the test's go-ahead).
bool AwaitFile(const std::string &path) {
    auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(path)) {
        if (Clock::now() > deadline) {
            std::fprintf(stderr, "emulation_worker: %s not created within 120 s\n", path.c_str());
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

void CreateFile(const std::string &path) {
    if (FILE *file = std::fopen(path.c_str(), "w")) std::fclose(file);
}

int GivenUp(const std::string &dir, uint64_t bytes) {
    fam f;
    f.fam_initialize("default", nullptr);
    Fam_Region_Attributes attributes{};
    attributes.redundancyLevel = RAID1;
    attributes.interleaveEnable = DISABLE;
    std::unique_ptr<Fam_Region_Descriptor> region(
        f.fam_create_region("given-up", 2 * bytes, 0700, &attributes));
    std::unique_ptr<Fam_Descriptor> item(f.fam_allocate("slot", bytes, 0600, region.get()));
    std::vector<char> a(bytes, 'A'), b(bytes, 'B'), c(bytes, 'C'), in(bytes);
    f.fam_put_blocking(a.data(), item.get(), 0, bytes);
    CreateFile(dir + "/ready");
    if (!AwaitFile(dir + "/cut")) return 2;
    auto start = Clock::now();
    f.fam_put_blocking(b.data(), item.get(), 0, bytes);
    double put_b_s = Since(start);
    f.fam_put_blocking(c.data(), item.get(), 0, bytes);
    CreateFile(dir + "/written");
    if (!AwaitFile(dir + "/read")) return 2;
    f.fam_get_blocking(in.data(), item.get(), 0, bytes);
    uint64_t count[3] = {0, 0, 0};
    for (char byte : in) {
        if (byte >= 'A' && byte <= 'C') ++count[byte - 'A'];
    }
    std::printf("given-up put_b_s %.3f a %llu b %llu c %llu\n", put_b_s,
                static_cast<unsigned long long>(count[0]),
                static_cast<unsigned long long>(count[1]),
                static_cast<unsigned long long>(count[2]));
    std::fflush(stdout);
    try {
        f.fam_destroy_region(region.get());  // the cluster, one server killed, goes next anyway
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "emulation_worker given-up: destroying the region: %s\n",
                     e.fam_error_msg());
    }
    f.fam_finalize("default");
    return count[2] == bytes ? 0 : 1;
}

int main(int argc, char **argv) {
    std::string mode = argc > 1 ? argv[1] : "";
    try {
        if (mode == "setup" && argc == 3) {
            Setup(std::strtoull(argv[2], nullptr, 0));
            return 0;
        }
        if (mode == "first" && argc == 4) {
            return First(std::strtoull(argv[2], nullptr, 0), std::strtoull(argv[3], nullptr, 0));
        }
        if (mode == "given-up" && argc == 4) {
            return GivenUp(argv[2], std::strtoull(argv[3], nullptr, 0));
        }
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "emulation_worker %s: %s\n", mode.c_str(), e.fam_error_msg());
        return 2;
    }
    if (argc != 2) {
        std::fprintf(stderr,
                     "usage: emulation_worker BYTES | setup BYTES | first INTERLEAVE SERVERS | "
                     "given-up DIR BYTES\n");
        return 2;
    }
    const uint64_t bytes = std::strtoull(argv[1], nullptr, 0);
    try {
        fam f;
        f.fam_initialize("default", nullptr);
        int rank = Option(f, "PE_ID");
        int size = Option(f, "PE_COUNT");
        std::string name = "pe" + std::to_string(rank);
        std::unique_ptr<Fam_Region_Descriptor> region(
            f.fam_create_region(name.c_str(), 2 * bytes, 0777, nullptr));
        std::unique_ptr<Fam_Descriptor> item(f.fam_allocate("data", bytes, 0777, region.get()));
        std::vector<uint8_t> out(bytes), in(bytes);
        for (uint64_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(i * 131 + rank);
        auto start = Clock::now();
        f.fam_put_blocking(out.data(), item.get(), 0, bytes);
        double put_s = std::chrono::duration<double>(Clock::now() - start).count();
        start = Clock::now();
        f.fam_get_blocking(in.data(), item.get(), 0, bytes);
        double get_s = std::chrono::duration<double>(Clock::now() - start).count();
        bool ok = in == out;
        f.fam_barrier_all();
        f.fam_destroy_region(region.get());
        std::printf("pe %d of %d source %s put_s %.4f get_s %.4f %s\n", rank, size,
                    FirstAddress().c_str(), put_s, get_s, ok ? "ok" : "MISMATCH");
        std::fflush(stdout);
        f.fam_finalize("default");
        return ok ? 0 : 1;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "emulation_worker: %s\n", e.fam_error_msg());
        return 2;
    }
}
