// `fampool top`: a live view of a cluster from its servers' metrics endpoints (docs/
// operations.md): every interval it scrapes each endpoint the cluster file names, and prints
// the clients' data-path rates, each memory server's health, use and call rate, and the
// regions that are degraded or being rebuilt. Rates are the change since the scrape before.
#include <httplib.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "cli.h"
#include "common/cluster_config.h"
#include "common/metrics.h"
#include "common/network.h"

namespace fampool::cli {
namespace {

using metrics::Sample;

// One endpoint: what it is and where, and its last scrape.
struct Endpoint {
    std::string what;  // "metadata shard 0", "memory server 1"
    std::string host;
    int port = 0;
    std::optional<std::vector<Sample>> samples;  // nullopt: it did not answer
    std::string error;
};

std::vector<Endpoint> EndpointsOf(const ClusterConfig &cluster) {
    std::vector<Endpoint> endpoints;
    const std::vector<std::string> shards = MetadataShards(cluster);
    if (cluster.metadata_metrics_port) {
        for (size_t k = 0; k < shards.size(); ++k) {
            endpoints.push_back({fmt::format("metadata shard {}", k),
                                 HostOf(shards[k]),
                                 cluster.metadata_metrics_port + static_cast<int>(k),
                                 {},
                                 ""});
        }
    }
    for (const MemoryServerConfig &server : cluster.memservers) {
        if (!server.metrics_port) continue;
        endpoints.push_back({fmt::format("memory server {}", server.id),
                             HostOf(server.rpc_address),
                             server.metrics_port,
                             {},
                             ""});
    }
    return endpoints;
}

void Scrape(Endpoint &endpoint) {
    httplib::Client client(endpoint.host, endpoint.port);
    client.set_connection_timeout(0, 500000);  // 0.5 s
    client.set_read_timeout(2, 0);
    httplib::Result result = client.Get("/metrics");
    if (!result || result->status != 200) {
        endpoint.samples.reset();
        endpoint.error =
            result ? fmt::format("HTTP {}", result->status) : httplib::to_string(result.error());
        return;
    }
    endpoint.samples = metrics::ParseText(result->body);
}

// The sum of the samples of `name` whose labels include `match`.
double Sum(const std::vector<Sample> &samples, const std::string &name,
           const metrics::Labels &match = {}) {
    double total = 0;
    for (const Sample &sample : samples) {
        if (sample.name != name) continue;
        bool matches = true;
        for (const auto &[label, value] : match) matches &= sample.Label(label) == value;
        if (matches) total += sample.value;
    }
    return total;
}

std::vector<Sample> All(const std::vector<Endpoint> &endpoints) {
    std::vector<Sample> all;
    for (const Endpoint &endpoint : endpoints) {
        if (endpoint.samples)
            all.insert(all.end(), endpoint.samples->begin(), endpoint.samples->end());
    }
    return all;
}

std::string Rate(double per_second, bool bytes) {
    if (bytes) return Bytes(static_cast<uint64_t>(per_second)) + "/s";
    if (per_second >= 1e6) return fmt::format("{:.1f} M/s", per_second / 1e6);
    if (per_second >= 1e3) return fmt::format("{:.1f} k/s", per_second / 1e3);
    return fmt::format("{:.0f}/s", per_second);
}

// One screen from this scrape and the one `seconds` before it (none at the first).
std::string Screen(const std::string &cluster_file, const std::vector<Endpoint> &now,
                   const std::vector<Endpoint> *before, double seconds) {
    std::vector<Sample> all = All(now), earlier = before ? All(*before) : std::vector<Sample>();
    auto rate = [&](const std::vector<Sample> &a, const std::vector<Sample> &b,
                    const std::string &name,
                    const metrics::Labels &match) -> std::optional<double> {
        if (!before || seconds <= 0) return std::nullopt;
        return std::max(0.0, (Sum(a, name, match) - Sum(b, name, match)) / seconds);
    };
    std::time_t clock = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%H:%M:%S", std::localtime(&clock));
    std::string out =
        fmt::format("fampool top: {}  {}  ({} endpoints)\n\n", cluster_file, when, now.size());
    // The clients report to shard 0: their rates are its counters' change between two scrapes
    // that both reached it.
    auto shard0 = [](const std::vector<Endpoint> &endpoints) -> const std::vector<Sample> * {
        for (const Endpoint &e : endpoints) {
            if (e.what == "metadata shard 0" && e.samples) return &*e.samples;
        }
        return nullptr;
    };
    const std::vector<Sample> *reports = shard0(now);
    const std::vector<Sample> *reports_before = before ? shard0(*before) : nullptr;
    out += fmt::format("CLIENTS {} active (reported in the last 30 s)\n",
                       reports ? fmt::format("{:.0f}", Sum(*reports, "fampool_clients"))
                               : std::string("? (metadata shard 0 does not answer)"));
    out += fmt::format("  {:<8} {:>12} {:>14}\n", "KIND", "OPS", "BYTES");
    for (const char *kind : {"put", "get", "atomic", "gather", "scatter"}) {
        std::optional<double> ops, bytes;
        if (reports && reports_before) {
            ops = rate(*reports, *reports_before, "fampool_client_operations_total",
                       {{"kind", kind}});
            bytes = rate(*reports, *reports_before, "fampool_client_bytes_total", {{"kind", kind}});
        }
        out += fmt::format("  {:<8} {:>12} {:>14}\n", kind, ops ? Rate(*ops, false) : "-",
                           bytes ? Rate(*bytes, true) : "-");
    }
    out += "\nSERVERS\n";
    out += fmt::format("  {:<18} {:<22} {:<6} {:>10} {:>6} {:>12} {:>12} {:>10}\n", "SERVER",
                       "ENDPOINT", "STATE", "HEARTBEAT", "HEAPS", "USED", "CAPACITY", "CALLS");
    for (const Endpoint &endpoint : now) {
        std::string address = fmt::format("{}:{}", endpoint.host, endpoint.port);
        if (!endpoint.samples) {
            out += fmt::format("  {:<18} {:<22} {:<6} ({})\n", endpoint.what, address, "DOWN",
                               endpoint.error);
            continue;
        }
        const std::vector<Sample> &mine = *endpoint.samples;
        const Endpoint *old = nullptr;
        if (before) {
            for (const Endpoint &e : *before) old = e.what == endpoint.what && e.samples ? &e : old;
        }
        std::optional<double> calls;
        if (old) calls = rate(mine, *old->samples, "fampool_calls_total", {});
        std::string calls_text = calls ? Rate(*calls, false) : "-";
        if (endpoint.what.rfind("metadata", 0) == 0) {
            out += fmt::format("  {:<18} {:<22} {:<6} {:>10} {:>6} {:>12} {:>12} {:>10}\n",
                               endpoint.what, address, "up", "-", "-", "-", "-", calls_text);
            continue;
        }
        std::string id = endpoint.what.substr(endpoint.what.rfind(' ') + 1);
        // Health as the metadata service sees it (shard 0's heartbeats); "?" without them.
        std::string state = reports ? "up" : "?", heartbeat = "-";
        for (const Sample &sample : reports ? *reports : std::vector<Sample>()) {
            if (sample.Label("server") != id) continue;
            if (sample.name == "fampool_memserver_up" && sample.value == 0) state = "LOST";
            if (sample.name == "fampool_memserver_heartbeat_age_seconds") {
                heartbeat = fmt::format("{:.1f} s", sample.value);
            }
        }
        double capacity = Sum(mine, "fampool_memserver_capacity_bytes");
        out += fmt::format(
            "  {:<18} {:<22} {:<6} {:>10} {:>6.0f} {:>12} {:>12} {:>10}\n", endpoint.what, address,
            state, heartbeat, Sum(mine, "fampool_memserver_heaps"),
            Bytes(static_cast<uint64_t>(Sum(mine, "fampool_memserver_used_bytes"))),
            capacity > 0 ? Bytes(static_cast<uint64_t>(capacity)) : std::string("no limit"),
            calls_text);
    }
    // Regions named only where the service has a series per region (metrics_per_region).
    std::map<std::string, std::string> degraded;  // region -> "2 lost, 1 rebuilding"
    for (const Sample &sample : all) {
        if (sample.name != "fampool_region_members_degraded") continue;
        std::string &text = degraded[sample.Label("region")];
        text += fmt::format("{}{:.0f} {}", text.empty() ? "" : ", ", sample.value,
                            sample.Label("state"));
    }
    out += fmt::format(
        "\nREGIONS {:.0f} ({:.0f} degraded)  members of redundant regions: {:.0f} "
        "healthy, {:.0f} lost, {:.0f} rebuilding\n",
        Sum(all, "fampool_regions"), Sum(all, "fampool_regions_degraded"),
        Sum(all, "fampool_members", {{"state", "healthy"}}),
        Sum(all, "fampool_members", {{"state", "lost"}}),
        Sum(all, "fampool_members", {{"state", "rebuilding"}}));
    for (const auto &[region, text] : degraded) out += fmt::format("  {:<30} {}\n", region, text);
    double left = Sum(all, "fampool_memserver_rebuild_remaining_bytes");
    double stripes = Sum(all, "fampool_memserver_rebuild_remaining_stripes");
    if (Sum(all, "fampool_rebuild_running") > 0 || left > 0 || stripes > 0) {
        out += fmt::format("  rebuilding: {} and {:.0f} RAID5 stripes left\n",
                           Bytes(static_cast<uint64_t>(left)), stripes);
    }
    return out;
}

// The terminal in the state it was found in, at exit (keys were read one at a time).
termios saved_terminal;
bool terminal_changed = false;
void RestoreTerminal() {
    if (terminal_changed) tcsetattr(STDIN_FILENO, TCSANOW, &saved_terminal);
}
void EndOnSignal(int) {
    RestoreTerminal();  // tcsetattr is async-signal-safe
    (void)!write(STDOUT_FILENO, "\n", 1);
    _exit(0);
}

// Waits up to `seconds` for a key; true when it was q.
bool QuitPressed(double seconds) {
    pollfd in{STDIN_FILENO, POLLIN, 0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        if (!terminal_changed) {
            usleep(static_cast<useconds_t>(left.count()) * 1000);
            return false;
        }
        if (poll(&in, 1, static_cast<int>(left.count())) > 0) {
            char key = 0;
            if (read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q')) return true;
        }
    }
}

}  // namespace

int Top(const TopOptions &options) {
    std::string path = ClusterFileOf(options.cluster);
    ClusterConfig cluster = LoadClusterConfig(path);
    std::vector<Endpoint> endpoints = EndpointsOf(cluster);
    if (endpoints.empty()) {
        Die(1,
            "fampool top: {} names no metrics endpoint: set metadata_metrics_port and each "
            "memory server's metrics_port (fampool up sets them unless --metrics off; "
            "docs/operations.md)",
            path);
    }
    if (!(options.interval >= 0.1 && options.interval <= 60)) {  // NaN too
        Die(1, "fampool top: --interval {} is out of range (0.1 to 60 seconds)", options.interval);
    }
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_terminal) == 0) {
        termios raw = saved_terminal;
        raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
        terminal_changed = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        std::atexit(RestoreTerminal);
    }
    std::signal(SIGINT, EndOnSignal);
    std::signal(SIGTERM, EndOnSignal);
    std::optional<std::vector<Endpoint>> before;
    auto scraped_before = std::chrono::steady_clock::now();
    for (int screen = 0; options.screens == 0 || screen < options.screens + 1; ++screen) {
        for (Endpoint &endpoint : endpoints) Scrape(endpoint);
        auto scraped = std::chrono::steady_clock::now();
        double seconds = std::chrono::duration<double>(scraped - scraped_before).count();
        // --screens N: N screens with rates, after a first scrape that only starts them.
        if (options.screens == 0 || screen > 0) {
            std::string text = Screen(path, endpoints, before ? &*before : nullptr, seconds);
            if (options.screens == 0) std::fputs("\033[H\033[2J", stdout);  // clear, top left
            std::fputs(text.c_str(), stdout);
            if (options.screens == 0) std::fputs("\n(q or Ctrl-C to quit)\n", stdout);
            std::fflush(stdout);
        }
        before = endpoints;
        scraped_before = scraped;
        if (options.screens != 0 && screen == options.screens) break;
        if (QuitPressed(options.interval)) break;
    }
    RestoreTerminal();
    return 0;
}

}  // namespace fampool::cli
