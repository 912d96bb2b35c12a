// An emulated multi-node fabric on one host (`fampool up --emulate`; seed 004's FAME): every
// metadata shard, memory server and client node gets a network namespace of its own, joined to
// a bridge in a "switch" namespace by a veth pair. tc shapes both ends of each pair to the
// node's link rate (tbf), so that a server's link can be the bottleneck, as a NIC is on a real
// fabric. A link's delay is added in the node's namespace by a fampool-delayline
// (tools/delayline) that iptables hands every packet the node sends or receives on the link
// (NFQUEUE): the kernels here have no netem. Nothing is added to the host's own namespace;
// `fampool down` stops the delay lines and removes every namespace `up` made. It needs root.
//
// Addresses (10.77.0.0/16, inside the namespaces only): the switch 10.77.0.1, metadata shard k
// 10.77.1.(k+1), memory server i 10.77.2.(i+1), client node c 10.77.3.(c+1).
#ifndef FAMPOOL_TOOLS_CLI_EMULATE_H_
#define FAMPOOL_TOOLS_CLI_EMULATE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fampool::cli {

struct Link {
    uint64_t rate_bps = 0;  // bits per second each way; 0: not limited
    uint64_t delay_us = 0;  // one way
};

// "10gbit", "250mbit", "1500kbit", "800000bit" or "unlimited" (0). Throws CliError naming
// `what` for anything else.
uint64_t ParseRate(const std::string &text, const std::string &what);
// "0", "50us", "2ms". Throws CliError naming `what`.
uint64_t ParseDelay(const std::string &text, const std::string &what);
// 250000000 -> "250mbit", 0 -> "unlimited".
std::string RateText(uint64_t rate_bps);

struct TopologyServer {
    Link link;
    std::string memory_type;     // volatile, persistent or "" (both), as in the cluster file
    std::string failure_domain;  // as in the cluster file
    uint64_t capacity = 0;       // bytes of extents it may hold; 0: no limit
    bool spare = false;
    std::string kind;  // its memory (dram, persistent, far); "": the default
};

// What a topology file describes (docs/cli.md, "fampool up --emulate"), or what `up`'s
// options do.
struct Topology {
    std::string path;  // the file, "" when made from options
    unsigned mtu = 9000;
    unsigned metadata_shards = 1;
    unsigned clients = 1;
    Link metadata_link;
    Link client_link;
    std::vector<TopologyServer> memservers;
};

// The cluster-file keys of a memory server's topology entry (memory_type, failure_domain,
// capacity, spare, kind, and bandwidth and latency from its link), each line indented for a
// `memservers` entry.
std::string TopologyServerKeys(const TopologyServer &server);

// Reads and checks a topology file. Throws CliError naming the file and the key.
Topology LoadTopology(const std::string &path);

// The address of node `index` of a kind ("metadata", "memory", "client") on the emulated
// network.
std::string EmulatedAddress(const std::string &kind, size_t index);

struct EmulatedNode {
    std::string name;     // "metadata0", "memory1", "client2"
    std::string netns;    // its network namespace
    std::string address;  // its address on the emulated network
    std::string port;     // its interface in the switch namespace
    Link link;
    pid_t delay_line = 0;  // the fampool-delayline delaying its link; 0: none
};

struct Emulation {
    std::string switch_netns;
    unsigned mtu = 9000;
    std::vector<EmulatedNode> nodes;

    // The node called `name`; throws CliError listing the nodes when there is none.
    const EmulatedNode &Node(const std::string &name) const;
    // The client nodes, in order.
    std::vector<const EmulatedNode *> Clients() const;
};

// DIR/emulation.yaml: the emulation `up` made for run directory DIR.
std::string EmulationFileOf(const std::string &run_dir);
// The emulation of the cluster whose file is `cluster_file` (emulation.yaml beside it), if any.
std::optional<Emulation> EmulationOf(const std::string &cluster_file);

// Throws CliError naming what is missing unless this process can emulate a fabric: root, and
// iproute2's ip and tc.
void CheckCanEmulate();
// Checks that this host can emulate (CheckCanEmulate), creates every namespace,
// link and queueing discipline of `topology`, starts a delay line for each link with a delay
// (its log: RUN_DIR/logs/delayline-NODE.log) and writes EmulationFileOf(run_dir), with the delay
// lines' PIDs. Each step is told to `progress`. On failure it removes what it made and throws
// CliError naming the step, the command and what it said.
Emulation CreateEmulation(const Topology &topology, const std::string &run_dir,
                          const std::function<void(const std::string &)> &progress);
struct RemovedEmulation {
    std::vector<std::string> delay_lines;  // "memory0 (pid 123)": those it stopped
    std::vector<std::string> namespaces;   // those it removed
};
// Stops the delay lines of `emulation` that still run (by their PIDs, each only while it is
// still a fampool-delayline), then removes its namespaces that exist (their links go with them)
// and its file in `run_dir`.
RemovedEmulation RemoveEmulation(const Emulation &emulation, const std::string &run_dir);
// Moves this process into the switch namespace, from where every node's address is reached
// over no shaped link (what the CLI's own calls use). Throws CliError naming `command`.
void EnterSwitch(const Emulation &emulation, const std::string &command);

}  // namespace fampool::cli

#endif  // FAMPOOL_TOOLS_CLI_EMULATE_H_
