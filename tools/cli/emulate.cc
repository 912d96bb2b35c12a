#include "emulate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "cli.h"
#include "common/config.h"
#include "common/error.h"
#include "common/network.h"
#include "process.h"

namespace fampool::cli {
namespace fs = std::filesystem;
namespace {

// Longest a delay line may take to start.
constexpr int kToolTimeoutMs = 10000;
constexpr const char *kSubnetPrefix = "10.77.";
constexpr const char *kDelayLine = "fampool-delayline";
constexpr const char *kCongestionControl = "cubic";

std::string Joined(const std::vector<std::string> &argv) {
    std::string line;
    for (const std::string &word : argv) line += (line.empty() ? "" : " ") + ShellQuote(word);
    return line;
}

// Runs a command of the emulation's set-up; throws CliError saying what failed.
void Must(const std::vector<std::string> &argv, const std::string &step) {
    ToolResult result = RunTool(argv);
    if (result.status == 0) return;
    Die(1, "fampool up --emulate: {}: `{}` failed: {}", step, Joined(argv),
        result.output.empty() ? "(no output)" : result.output);
}

// fp<6 hex digits of the run directory>: the namespaces of one run directory share it.
std::string PrefixOf(const std::string &run_dir) {
    return fmt::format("fp{:06x}", RunDirHash(run_dir) & 0xffffff);
}

std::vector<std::string> ExistingNamespaces() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator("/run/netns", ec)) {
        names.push_back(entry.path().filename().string());
    }
    return names;
}

void WriteText(const std::string &path, const std::string &text) {
    std::ofstream out(path + ".new", std::ios::trunc);
    out << text;
    if (!out.flush()) Die(1, "fampool up --emulate: cannot write {}", path);
    out.close();
    fs::rename(path + ".new", path);
}

std::string EmulationText(const Emulation &emulation) {
    std::string text = fmt::format(
        "# The emulated fabric `fampool up --emulate` made for this run directory; `fampool "
        "down` removes it.\nswitch_netns: {}\nmtu: {}\nnodes:\n",
        emulation.switch_netns, emulation.mtu);
    for (const EmulatedNode &node : emulation.nodes) {
        text += fmt::format(
            "  - {{name: {}, netns: {}, address: {}, port: {}, rate_bps: {}, delay_us: {}, "
            "delay_line_pid: {}}}\n",
            node.name, node.netns, node.address, node.port, node.link.rate_bps, node.link.delay_us,
            node.delay_line);
    }
    return text;
}

// The rate of one end of a link (`netns`, `device`): a tbf queueing discipline.
void Shape(const std::string &netns, const std::string &device, const Link &link, unsigned mtu,
           const std::string &step) {
    if (link.rate_bps == 0) return;
    // A burst of 2 ms of traffic (at least 4 frames): tbf then holds the rate within 1% with
    // 9000-byte frames (measured: 198 of 200 Mbit/s, 991 of 1000).
    uint64_t burst = std::max<uint64_t>({link.rate_bps / 8 / 500, 4ull * mtu, 32768});
    Must({"tc", "-n", netns, "qdisc", "add", "dev", device, "root", "handle", "1:", "tbf", "rate",
          std::to_string(link.rate_bps) + "bit", "burst", std::to_string(burst), "latency", "50ms"},
         step);
}

// fampool-delayline beside this program or in ../bin (where `up` finds fampool-server); ""
// when it is in neither.
std::string DelayLineProgram() {
    std::error_code ec;
    fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (ec) return "";
    for (const fs::path &program : {dir / kDelayLine, dir.parent_path() / "bin" / kDelayLine}) {
        if (access(program.c_str(), X_OK) == 0) return program.string();
    }
    return "";
}

// The delay of `node`'s link. The delay line runs in the node's namespace, and iptables hands
// it (NFQUEUE `queue`) every packet the node sends on its link and every one it receives:
// each direction is delayed delay_us once, as netem on both ends of the pair would, so a round
// trip to the node takes 2 x delay_us more. The delay line is always used, netem never, even
// on a kernel that has it: one implementation, measured here (docs/cli.md), the same on every
// host. Waits until it has bound its queue; records its PID in `node` first, so that a failure
// stops it.
void StartDelayLine(EmulatedNode &node, unsigned queue, const std::string &run_dir,
                    const std::string &step) {
    const std::string log = run_dir + "/logs/delayline-" + node.name + ".log";
    node.delay_line = StartDetached({DelayLineProgram(), "--queue", std::to_string(queue),
                                     "--delay-us", std::to_string(node.link.delay_us)},
                                    log, node.netns);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kToolTimeoutMs);
    while (true) {
        std::ifstream in(log);
        std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (said.find(": ready") != std::string::npos) break;
        std::string ended = EndedChild(node.delay_line);
        if (!ended.empty() || std::chrono::steady_clock::now() > deadline) {
            Die(1, "fampool up --emulate: {}: {} (pid {}) {}; last lines of {}:\n{}", step,
                kDelayLine, node.delay_line,
                ended.empty() ? fmt::format("did not start in {} s", kToolTimeoutMs / 1000)
                              : "ended: " + ended,
                log, Tail(log, 10));
        }
        usleep(10000);
    }
    const std::string iptables = ToolPath("iptables");
    for (const char *chain : {"OUTPUT", "INPUT"}) {
        Must({"ip", "netns", "exec", node.netns, iptables, "-w", "-A", chain,
              chain == std::string("OUTPUT") ? "-o" : "-i", "fab0", "-j", "NFQUEUE", "--queue-num",
              std::to_string(queue)},
             step + " (its delay)");
    }
}

// Stops the delay lines of `emulation` that still run a fampool-delayline (SIGTERM, SIGKILL
// after 3 s) and names them.
std::vector<std::string> StopDelayLines(const Emulation &emulation) {
    std::vector<pid_t> pids;
    std::vector<std::string> stopped;
    for (const EmulatedNode &node : emulation.nodes) {
        if (node.delay_line <= 0 || !ProcessAlive(node.delay_line)) continue;
        std::vector<std::string> argv = CommandLineOf(node.delay_line);
        if (argv.empty() || fs::path(argv[0]).filename() != kDelayLine) continue;
        pids.push_back(node.delay_line);
        stopped.push_back(fmt::format("{}'s (pid {})", node.name, node.delay_line));
    }
    StopProcesses(pids, 3.0);
    return stopped;
}

}  // namespace

std::string EmulatedAddress(const std::string &kind, size_t index) {
    int subnet = kind == "metadata" ? 1 : kind == "memory" ? 2 : 3;
    return fmt::format("{}{}.{}", kSubnetPrefix, subnet, index + 1);
}

const EmulatedNode &Emulation::Node(const std::string &name) const {
    std::string names;
    for (const EmulatedNode &node : nodes) {
        if (node.name == name) return node;
        names += (names.empty() ? "" : ", ") + node.name;
    }
    Die(1, "the emulated fabric has no node \"{}\" (it has: {})", name, names);
}

std::vector<const EmulatedNode *> Emulation::Clients() const {
    std::vector<const EmulatedNode *> clients;
    for (const EmulatedNode &node : nodes) {
        if (node.name.starts_with("client")) clients.push_back(&node);
    }
    return clients;
}

std::string EmulationFileOf(const std::string &run_dir) { return run_dir + "/emulation.yaml"; }

std::optional<Emulation> EmulationOf(const std::string &cluster_file) {
    std::string path = fs::path(cluster_file).parent_path().string() + "/emulation.yaml";
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    try {
        YAML::Node root = YAML::LoadFile(path);
        Emulation emulation;
        emulation.switch_netns = root["switch_netns"].as<std::string>();
        emulation.mtu = root["mtu"].as<unsigned>();
        for (const YAML::Node &entry : root["nodes"]) {
            EmulatedNode node;
            node.name = entry["name"].as<std::string>();
            node.netns = entry["netns"].as<std::string>();
            node.address = entry["address"].as<std::string>();
            node.port = entry["port"].as<std::string>();
            node.link.rate_bps = entry["rate_bps"].as<uint64_t>();
            node.link.delay_us = entry["delay_us"].as<uint64_t>();
            if (entry["delay_line_pid"]) node.delay_line = entry["delay_line_pid"].as<pid_t>();
            emulation.nodes.push_back(node);
        }
        return emulation;
    } catch (const YAML::Exception &e) {
        Die(1, "cannot read {} (the emulated fabric of this cluster): {}", path, e.what());
    }
}

void CheckCanEmulate() {
    std::vector<std::string> missing;
    if (geteuid() != 0) {
        missing.push_back(
            "root (network namespaces, veth pairs and tc need CAP_SYS_ADMIN and "
            "CAP_NET_ADMIN)");
    }
    for (const char *tool : {"ip", "tc"}) {
        if (ToolPath(tool).empty()) {
            missing.push_back(
                fmt::format("the {} command (iproute2: apt-get install iproute2)", tool));
        }
    }
    if (!missing.empty()) {
        Die(1, "fampool up --emulate cannot run here; it needs {}", fmt::join(missing, "; and "));
    }
}

Emulation CreateEmulation(const Topology &topology, const std::string &run_dir,
                          const std::function<void(const std::string &)> &progress) {
    CheckCanEmulate();
    const std::string prefix = PrefixOf(run_dir);
    for (const std::string &name : ExistingNamespaces()) {
        if (name.starts_with(prefix + "-")) {
            Die(1,
                "fampool up --emulate: network namespace {} of an earlier emulation of {} still "
                "exists; remove it with `fampool down --run-dir {}`",
                name, run_dir, ShellQuote(run_dir));
        }
    }

    Emulation emulation;
    emulation.switch_netns = prefix + "-switch";
    emulation.mtu = topology.mtu;
    auto add = [&](const std::string &kind, const std::string &port, size_t index,
                   const Link &link) {
        std::string name = fmt::format("{}{}", kind, index);
        emulation.nodes.push_back({name, prefix + "-" + name, EmulatedAddress(kind, index),
                                   fmt::format("{}{}", port, index), link});
    };
    for (unsigned k = 0; k < topology.metadata_shards; ++k) {
        add("metadata", "md", k, topology.metadata_link);
    }
    for (size_t i = 0; i < topology.memservers.size(); ++i) {
        add("memory", "m", i, topology.memservers[i].link);
    }
    for (unsigned c = 0; c < topology.clients; ++c) add("client", "c", c, topology.client_link);
    for (const EmulatedNode &node : emulation.nodes) {
        if (node.link.delay_us && (ToolPath("iptables").empty() || DelayLineProgram().empty())) {
            Die(1,
                "fampool up --emulate: {}'s link has a delay, and link delays need iptables "
                "(apt-get install iptables) and {} beside fampool (built where "
                "libnetfilter-queue-dev is installed); scripts/setup installs both",
                node.name, kDelayLine);
        }
    }

    std::vector<std::string> made;  // namespaces, for the undo
    try {
        const std::string &sw = emulation.switch_netns;
        const std::string mtu = std::to_string(topology.mtu);
        progress(fmt::format("creating network namespace {} (the switch: bridge br0, {}0.1/16)", sw,
                             kSubnetPrefix));
        Must({"ip", "netns", "add", sw}, "the switch namespace");
        made.push_back(sw);
        Must({"ip", "-n", sw, "link", "set", "lo", "up"}, "the switch's loopback");
        Must({"ip", "-n", sw, "link", "add", "br0", "type", "bridge"}, "the switch's bridge");
        Must({"ip", "-n", sw, "link", "set", "br0", "mtu", mtu, "up"}, "the switch's bridge");
        Must({"ip", "-n", sw, "addr", "add", std::string(kSubnetPrefix) + "0.1/16", "dev", "br0"},
             "the switch's address");
        for (size_t k = 0; k < emulation.nodes.size(); ++k) {
            EmulatedNode &node = emulation.nodes[k];
            std::string step = "node " + node.name;
            progress(fmt::format(
                "creating {} ({}, {}, link {}{})", node.name, node.netns, node.address,
                RateText(node.link.rate_bps),
                node.link.delay_us ? fmt::format(", delay {} us", node.link.delay_us) : ""));
            Must({"ip", "netns", "add", node.netns}, step);
            made.push_back(node.netns);
            Must({"ip", "-n", node.netns, "link", "set", "lo", "up"}, step);
            Must({"ip", "-n", sw, "link", "add", node.port, "type", "veth", "peer", "name", "fab0",
                  "netns", node.netns},
                 step);
            Must({"ip", "-n", sw, "link", "set", node.port, "mtu", mtu, "master", "br0", "up"},
                 step);
            Must({"ip", "-n", node.netns, "link", "set", "fab0", "mtu", mtu, "up"}, step);
            Must({"ip", "-n", node.netns, "addr", "add", node.address + "/16", "dev", "fab0"},
                 step);
            // The node's TCP uses Linux's default congestion control, not the host's choice
            // (a namespace inherits it): with bbr, one PE's flow through a shaped link was
            // paced at 1.4 Mbit/s for 8 s while the others kept the link's queue full, and new
            // connections' packets were dropped until they backed off for seconds, which no
            // fabric a site runs shows. Set on the subnet's route: a namespace's default may
            // only name what the host allows (tcp_allowed_congestion_control), a route any.
            Must({"ip", "-n", node.netns, "route", "replace", std::string(kSubnetPrefix) + "0.0/16",
                  "dev", "fab0", "proto", "kernel", "scope", "link", "src", node.address, "congctl",
                  kCongestionControl},
                 step + " (TCP congestion control " + kCongestionControl + ")");
            // Both directions: what the node sends (its end) and what it receives (the switch's).
            Shape(node.netns, "fab0", node.link, topology.mtu, step + " (outgoing)");
            Shape(sw, node.port, node.link, topology.mtu, step + " (incoming)");
            if (node.link.delay_us) {
                StartDelayLine(node, k, run_dir, step);
                progress(
                    fmt::format("{}: {} us each way added by fampool-delayline (pid {}, "
                                "NFQUEUE {} in its namespace)",
                                node.name, node.link.delay_us, node.delay_line, k));
            }
        }
        WriteText(EmulationFileOf(run_dir), EmulationText(emulation));
    } catch (...) {
        StopDelayLines(emulation);
        for (auto it = made.rbegin(); it != made.rend(); ++it) RunTool({"ip", "netns", "del", *it});
        throw;
    }
    return emulation;
}

RemovedEmulation RemoveEmulation(const Emulation &emulation, const std::string &run_dir) {
    RemovedEmulation removed;
    removed.delay_lines = StopDelayLines(emulation);
    std::vector<std::string> existing = ExistingNamespaces();
    std::set<std::string> present(existing.begin(), existing.end());
    std::vector<std::string> names;
    for (const EmulatedNode &node : emulation.nodes) names.push_back(node.netns);
    names.push_back(emulation.switch_netns);
    for (const std::string &name : names) {
        if (!present.count(name)) continue;
        ToolResult result = RunTool({"ip", "netns", "del", name});
        if (result.status != 0) {
            Die(1, "fampool down: cannot remove network namespace {}: {}", name, result.output);
        }
        removed.namespaces.push_back(name);
    }
    std::error_code ec;
    fs::remove(EmulationFileOf(run_dir), ec);
    return removed;
}

void EnterSwitch(const Emulation &emulation, const std::string &command) {
    try {
        EnterNetworkNamespace(emulation.switch_netns);
    } catch (const Failure &failure) {
        Die(1,
            "fampool {}: the cluster runs on an emulated fabric, reached from its switch "
            "namespace: {}",
            command, failure.fam_error_msg());
    }
}

}  // namespace fampool::cli
