// transfer_bench channel: what fampool's libfabric data path costs over the raw libfabric loop it
// is built on, per provider and transfer size, in one binary on the same machine.
//
//   raw           fabric_raw.h: a target thread that polls its endpoint without sleeping, a
//                 client that posts one fi_read / fi_write and polls its queue until done,
//                 with libfabric's default flags (raw-dflt) and with FI_DELIVERY_COMPLETE on
//                 every operation (raw-dc: writes complete at the target; shm checks the key
//                 of a read). The baseline `raw` of each trial is the fastest configuration
//                 libfabric offers for the operation: the faster of the two for a read, raw-dc
//                 for a write (the API's blocking put and quiet need delivery). Ratios are
//                 against it.
//   fampool       FabricChannel::Read / Write (blocking) through FabricTransport, against a
//                 FabricServer whose progress thread sleeps when idle (the memory server's way)
//   fampool-busy  the same against a FabricServer that polls without sleeping: the difference
//                 to `fampool` is what sleeping costs the client
//
// Client and server(s) run in this process on this machine's cores (2 here), so the figures
// include their competition for the CPU, as on a real node running a client next to a
// server. Buffers are 1 MiB and stay in cache. Each time is the median of N trials (default
// 5); a trial runs every variant back to back, and `ratio` (fampool / raw) and `extra`
// (fampool - raw, ns) are medians of the trials' own ratios and differences, so that a trial
// the shared machine slowed counts against both sides.
//
//   transfer_bench channel [--quick] [--trials N] [--csv PATH] [--providers shm,tcp,sockets]
//   [--port N]
//
// Prints a table and writes PATH (default fabric_bench.csv) with the columns
// provider,op,size_bytes,raw_default_ns,raw_delivery_ns,raw_ns,raw_gbps,fampool_ns,
// fampool_gbps,fampool_busy_ns,ratio,extra_ns (raw_ns: the median of the trials' baselines).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric_raw.h"
#include "memserver/fabric_server.h"
#include "meta/client/metadata_service.h"
#include "transport/fabric/fabric_transport.h"

namespace {

using Clock = std::chrono::steady_clock;
using fampool::FabricServer;

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kSizes[] = {256, 4 * kKiB, 16 * kKiB, 64 * kKiB, kMiB};

struct Settings {
    bool quick = false;
    int trials = 5;
    std::string csv = "fabric_bench.csv";
    std::vector<std::string> providers = {"shm", "tcp", "sockets"};
    int port = 24500;
};

struct Row {
    std::string provider, op;
    uint64_t size = 0;
    double raw_default_ns = 0, raw_delivery_ns = 0, raw_ns = 0, fampool_ns = 0, fampool_busy_ns = 0;
    // Medians over trials of fampool's time less, and over, the raw loop's time in the same
    // trial: the two run back to back, so a trial the machine slowed slows both.
    double extra_ns = 0, paired_ratio = 0;
};

// Operations per trial: about the same time for every size; sockets is slow and noisy here.
uint64_t CountFor(const Settings &settings, const std::string &provider, uint64_t size) {
    uint64_t count = size <= 256         ? 20000
                     : size <= 4 * kKiB  ? 10000
                     : size <= 16 * kKiB ? 5000
                     : size <= 64 * kKiB ? 2000
                                         : 200;
    if (provider == "sockets") count /= 40;
    if (settings.quick) count /= 10;
    return std::max<uint64_t>(count, 5);
}

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// fampool's blocking loop: one item of 1 MiB on one FabricServer.
double FampoolLoop(const std::string &provider, int port, FabricServer::Progress progress,
                   bool write, uint64_t size, uint64_t count) {
    fampool::FabricConfig server_config;
    server_config.provider = provider;
    server_config.service = std::to_string(port);
    FabricServer server(server_config, progress);
    std::vector<char> extent(kMiB, 1);
    auto registration = server.Register(extent.data(), extent.size(), true);

    fampool::FabricConfig client_config;
    client_config.provider = provider;
    fampool::FabricTransport transport(client_config, [](uint64_t) -> fampool::MemoryServer & {
        throw std::runtime_error("no fallback atomics in this benchmark");
    });
    fampool::ItemInfo item;
    item.region_id = 1;
    item.size = kMiB;
    item.region.memory_servers = {0};
    fampool::ServerAccess access;
    access.fabric_address = server.address();
    access.key = registration.key;
    access.base = registration.base;
    item.access.push_back(access);
    auto binding = transport.Attach(item);
    auto channel = transport.OpenChannel();
    std::vector<char> local(kMiB, 2);

    auto one = [&] {
        if (write) {
            channel->Write(binding, 0, local.data(), size, true);
        } else {
            channel->Read(binding, 0, local.data(), size, true);
        }
    };
    for (int i = 0; i < 10; ++i) one();
    auto start = Clock::now();
    for (uint64_t i = 0; i < count; ++i) one();
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
           static_cast<double>(count);
}

double RawLoop(const std::string &provider, int port, fabric_raw::Semantics semantics, bool write,
               uint64_t size, uint64_t count) {
    fabric_raw::RawTarget target(provider, "127.0.0.1", std::to_string(port), kMiB);
    fabric_raw::RawClient client(provider, "127.0.0.1", kMiB, semantics);
    return client.Run(target.target(), write, size, count).ns_per_op;
}

double GBps(uint64_t size, double ns) { return static_cast<double>(size) / ns; }

Settings Parse(int argc, char **argv) {
    Settings settings;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--quick") {
            settings.quick = true;
        } else if (arg == "--csv") {
            settings.csv = value();
        } else if (arg == "--trials") {
            settings.trials = std::max(1, std::stoi(value()));
        } else if (arg == "--port") {
            settings.port = std::stoi(value());
        } else if (arg == "--providers") {
            settings.providers.clear();
            std::stringstream list(value());
            std::string name;
            while (std::getline(list, name, ',')) settings.providers.push_back(name);
        } else {
            throw std::runtime_error(
                "unknown argument " + arg +
                " (use --quick, --trials N, --csv PATH, --providers a,b, --port N)");
        }
    }
    return settings;
}

}  // namespace

int ChannelMain(int argc, char **argv) {
    try {
        Settings settings = Parse(argc, argv);
        int port = settings.port;
        auto next_port = [&] { return port++ % 10000 + 20000; };
        std::vector<Row> rows;
        std::printf("%-8s %-5s %8s | %9s %9s %9s %7s | %10s %7s %6s %8s | %9s\n", "provider", "op",
                    "size", "dflt ns", "dc ns", "raw ns", "GB/s", "fampool ns", "GB/s", "ratio",
                    "extra ns", "busy ns");
        for (const std::string &provider : settings.providers) {
            for (uint64_t size : kSizes) {
                for (bool write : {false, true}) {
                    uint64_t count = CountFor(settings, provider, size);
                    std::vector<double> raw_default, raw_delivery, raw, fampool, busy, extra, ratio;
                    for (int trial = 0; trial < settings.trials; ++trial) {
                        raw_default.push_back(RawLoop(provider, next_port(),
                                                      fabric_raw::Semantics::kDefault, write, size,
                                                      count));
                        raw_delivery.push_back(RawLoop(provider, next_port(),
                                                       fabric_raw::Semantics::kDelivery, write,
                                                       size, count));
                        raw.push_back(write ? raw_delivery.back()
                                            : std::min(raw_default.back(), raw_delivery.back()));
                        fampool.push_back(FampoolLoop(provider, next_port(),
                                                      FabricServer::Progress::kBlocking, write,
                                                      size, count));
                        busy.push_back(FampoolLoop(provider, next_port(),
                                                   FabricServer::Progress::kBusyPoll, write, size,
                                                   count));
                        extra.push_back(fampool.back() - raw.back());
                        ratio.push_back(fampool.back() / raw.back());
                    }
                    Row row{provider,
                            write ? "write" : "read",
                            size,
                            Median(raw_default),
                            Median(raw_delivery),
                            Median(raw),
                            Median(fampool),
                            Median(busy),
                            Median(extra),
                            Median(ratio)};
                    std::printf(
                        "%-8s %-5s %8lu | %9.0f %9.0f %9.0f %7.3f | %10.0f %7.3f %6.2f %8.0f | "
                        "%9.0f\n",
                        provider.c_str(), row.op.c_str(), static_cast<unsigned long>(size),
                        row.raw_default_ns, row.raw_delivery_ns, row.raw_ns, GBps(size, row.raw_ns),
                        row.fampool_ns, GBps(size, row.fampool_ns), row.paired_ratio, row.extra_ns,
                        row.fampool_busy_ns);
                    std::fflush(stdout);
                    rows.push_back(row);
                }
            }
        }
        FILE *csv = std::fopen(settings.csv.c_str(), "w");
        if (!csv) throw std::runtime_error("cannot write " + settings.csv);
        std::fprintf(csv,
                     "provider,op,size_bytes,raw_default_ns,raw_delivery_ns,raw_ns,"
                     "raw_gbps,fampool_ns,fampool_gbps,fampool_busy_ns,ratio,extra_ns\n");
        for (const Row &row : rows) {
            std::fprintf(csv, "%s,%s,%lu,%.1f,%.1f,%.1f,%.4f,%.1f,%.4f,%.1f,%.3f,%.1f\n",
                         row.provider.c_str(), row.op.c_str(), static_cast<unsigned long>(row.size),
                         row.raw_default_ns, row.raw_delivery_ns, row.raw_ns,
                         GBps(row.size, row.raw_ns), row.fampool_ns, GBps(row.size, row.fampool_ns),
                         row.fampool_busy_ns, row.paired_ratio, row.extra_ns);
        }
        std::fclose(csv);
        std::printf("wrote %s\n", settings.csv.c_str());
        return 0;
    } catch (const std::exception &error) {
        std::fprintf(stderr, "transfer_bench channel: %s\n", error.what());
        return 1;
    }
}
