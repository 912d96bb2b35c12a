"""The suites of scripts/bench that need the emulated fabric (`fampool up --emulate`: network
namespaces, so root) for some or all of their figures: placement, metadata scaling over
shards, and intent-based placement on two topologies. Each writes its CSV files into `out`."""
import itertools
import os

from .runner import parse_rate

PLACEMENTS = ["uniform", "random", "interleaved"]


def placement(r, out, link_rate):
    """placement_bench: P PEs on P client nodes, 1..8 memory servers whose links are the
    bottleneck; uniform, random and interleaved placement (seed 000 Fig. 3, 4, 7). Each count
    of servers is measured once, on a fresh cluster; a run that fails fails the suite."""
    servers = [1, 2] if r.smoke else [1, 2, 4, 8]
    pes = 2 if r.smoke else 8
    csv_path = os.path.join(out, "placement.csv")
    for count in servers:
        r.say(f"placement: {count} memory server(s), links {link_rate}, {pes} PEs on {pes} "
              f"client nodes: {', '.join(PLACEMENTS)}")
        run_dir = r.up(f"placement-{count}", "--emulate", "--memservers", count, "--clients",
                       pes, "--link-rate", link_rate, "--interleave", "65536")
        try:
            r.run([r.bench("placement_bench"), "placement", "--netns",
                   r.client_namespaces(run_dir), "--pes", pes, "--seconds",
                   "0.3" if r.smoke else "2", "--link-bps", parse_rate(link_rate), "--label",
                   link_rate, "--placements", ",".join(PLACEMENTS), "--csv", csv_path],
                  env={"FAMPOOL_CONFIG": r.config(run_dir)})
        finally:
            r.down(run_dir)


def metadata(r, out):
    """metadata_bench scaling: 1..16 client processes, each on a client node of its own,
    against 1, 2 and 4 metadata shards, with the shards' CPU time per operation."""
    clients = "1,2" if r.smoke else "1,2,4,8,16"
    for count in [1, 2] if r.smoke else [1, 2, 4]:
        r.say(f"metadata: {count} shard(s), {clients} clients on client nodes of their own")
        run_dir = r.up(f"metadata-{count}", "--emulate", "--memservers", "1",
                       "--metadata-shards", count, "--clients", clients.split(",")[-1])
        try:
            r.run([r.bench("metadata_bench"), "scaling", "--clients", clients, "--seconds",
                   "0.5" if r.smoke else "2", "--rounds", "1" if r.smoke else "3", "--netns",
                   r.client_namespaces(run_dir), "--shards", count, "--cpu-pids",
                   r.pids(run_dir, "metadata"), "--label", f"shards={count}", "--csv",
                   os.path.join(out, f"metadata_shards{count}.csv")],
                  env={"FAMPOOL_CONFIG": r.config(run_dir)})
        finally:
            r.down(run_dir)


# Intent-based placement (seed 003): 4 memory servers, 1 client node, 64 KiB interleaving.
#   near-fast  servers 0, 1: DRAM on 1 Gbit/s links, no delay; servers 2, 3: far memory on
#              200 Mbit/s links with 500 us of delay each way
#   far-fast   servers 0, 1: DRAM on 200 Mbit/s links; servers 2, 3: far memory on 1 Gbit/s
#              links with 500 us of delay each way
TOPOLOGIES = {
    "near-fast": [("1gbit", None, "dram"), ("1gbit", None, "dram"),
                  ("200mbit", "500us", "far"), ("200mbit", "500us", "far")],
    "far-fast": [("200mbit", None, "dram"), ("200mbit", None, "dram"),
                 ("1gbit", "500us", "far"), ("1gbit", "500us", "far")],
}


def topology_text(servers):
    lines = ["clients: 1", "memservers:"]
    for rate, delay, kind in servers:
        fields = [f"rate: {rate}", f"kind: {kind}"] + ([f"delay: {delay}"] if delay else [])
        lines.append("  - {" + ", ".join(fields) + "}")
    return "\n".join(lines) + "\n"


def intent(r, out, emulation_missing):
    """What placing by intent costs (placement_bench intent-cost, embedded and a 3-server tcp
    cluster), and what it buys: one unchanged workload program (placement_bench
    intent-workload) on two emulated topologies, placed by intent and on every fixed set of
    servers (root only)."""
    cost = os.path.join(out, "cost.csv")
    rounds = ["--rounds", "20"] if r.smoke else []
    r.run([r.bench("placement_bench"), "intent-cost", *rounds, "--csv", cost],
          env={"FAMPOOL_HOME": os.path.join(r.work, "intent-home"), "FAMPOOL_CONFIG": None,
               "OPENFAM_ROOT": None})
    run_dir = r.up("intent-cost", "--memservers", "3", "--provider", "tcp")
    try:
        r.run([r.bench("placement_bench"), "intent-cost", *rounds, "--csv", cost],
              env={"FAMPOOL_CONFIG": r.config(run_dir)})
    finally:
        r.down(run_dir)
    if emulation_missing:
        r.skip(f"intent workloads: {emulation_missing}", "workloads.csv")
        return
    placements = ["intent"] + [",".join(map(str, c)) for k in range(1, 5)
                               for c in itertools.combinations(range(4), k)]
    if r.smoke:
        placements = ["intent", "0", "2"]
    rows = ["topology,workload,placement,servers,value,reason"]
    for name, servers in TOPOLOGIES.items():
        topology = os.path.join(r.work, f"topology-{name}.yaml")
        with open(topology, "w") as f:
            f.write(topology_text(servers))
        run_dir = r.up(f"intent-{name}", "--emulate", "--topology", topology, "--interleave",
                       "65536")
        try:
            for kind, place in itertools.product(["bandwidth", "latency"], placements):
                r.say(f"intent: {name}: {kind} workload on {place}")
                text = r.run([r.fampool_bin, "exec", "--run-dir", run_dir, "--",
                              r.bench("placement_bench"), "intent-workload", "--workload", kind,
                              "--place", place, "--seconds", "0.2" if r.smoke else "2",
                              "--label", name], capture=True, timeout=120)
                rows.append(text.strip().splitlines()[-1])
        finally:
            r.down(run_dir)
    with open(os.path.join(out, "workloads.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
