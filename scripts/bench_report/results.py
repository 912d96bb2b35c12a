"""RESULTS.md and results_*.png: fampool against its peers, from the suites transfer,
placement and metadata of scripts/bench.

Reads (whichever exist) under the results directory: transfer/transfer.csv (transfer_bench,
mode api), transfer/peers.csv (peers shmem and peers mpi-rma), placement/placement.csv
(placement_bench), metadata/metadata_shards<N>.csv (metadata_bench scaling), and each of the
three suites' skipped.txt (steps scripts/bench could not run, with the reason); and
results-notes.md of the docs directory (or of
docs/bench: written by hand, what the numbers mean and the measured reasons of missed
targets), which is copied into RESULTS.md. Every figure is a ratio to a baseline measured in
the same run.
"""
import os
from collections import defaultdict

from . import hand_written, read_csv, read_lines, plot, run_notes
from .plot import size_text, table

SUITES = ("transfer", "placement", "metadata")
SHARDS = (1, 2, 4)
OPS = ["get", "put", "get_nb", "put_nb"]
OP_NAMES = {"get": "blocking get", "put": "blocking put", "get_nb": "non-blocking get",
            "put_nb": "non-blocking put"}
LARGE = 64 << 10  # "64 KiB and more": where the peer targets apply
DPI = 90


def has_results(results):
    return any(os.path.isdir(os.path.join(results, suite)) for suite in SUITES)


def write(results, docs, smoke):
    return Report(results, docs, smoke).write()


class Report:
    def __init__(self, results, docs, smoke):
        self.results, self.docs, self.smoke = results, docs, smoke
        self.transfer = read_csv(os.path.join(results, "transfer", "transfer.csv"))
        self.peers = read_csv(os.path.join(results, "transfer", "peers.csv"))
        self.placement = read_csv(os.path.join(results, "placement", "placement.csv"))
        self.metadata = {}
        for shards in SHARDS:
            rows = read_csv(os.path.join(results, "metadata", f"metadata_shards{shards}.csv"))
            if rows:
                self.metadata[shards] = rows
        self.skipped = []
        for suite in SUITES:
            self.skipped += read_lines(os.path.join(results, suite, "skipped.txt"))
        self.targets = []  # (name, met: bool|None, figures)
        self.plots = []

    # Lookups ---------------------------------------------------------------------------------

    def fampool(self, label, op, size, threads=1):
        for row in self.transfer:
            if (row["label"], row["op"], int(row["size_bytes"]), int(row["threads"])) == \
                    (label, op, size, threads):
                return row
        return None

    def peer(self, peer, label, op, size):
        for row in self.peers:
            if (row["peer"], row["label"], row["op"], int(row["size_bytes"])) == \
                    (peer, label, op, size):
                return float(row["gbps"])
        return None

    def sizes(self, label):
        return sorted({int(r["size_bytes"]) for r in self.transfer if r["label"] == label})

    def threads(self, label):
        return sorted({int(r["threads"]) for r in self.transfer if r["label"] == label})

    def labels(self):
        order = ["embedded", "tcp", "shm"]
        present = {r["label"] for r in self.transfer}
        return [label for label in order if label in present]

    # Sections --------------------------------------------------------------------------------

    def transfer_section(self):
        if not self.transfer:
            return "No transfer figures in this run.\n"
        text = []
        for label in self.labels():
            baseline = next(r["baseline"] for r in self.transfer if r["label"] == label)
            peers = label != "embedded"
            header = ["op", "size", "fampool GB/s", f"{baseline} GB/s", "ratio"]
            if peers:
                header += ["OpenSHMEM GB/s", "vs OpenSHMEM", "MPI RMA GB/s", "vs MPI RMA"]
            rows = []
            for op in OPS:
                for size in self.sizes(label):
                    row = self.fampool(label, op, size)
                    if not row:
                        continue
                    ours = float(row["fampool_gbps"])
                    cells = [OP_NAMES[op], size_text(size), f"{ours:.3f}",
                             f"{float(row['baseline_gbps']):.3f}", f"{float(row['ratio']):.2f}"]
                    if peers:
                        for peer in ("openshmem", "mpi-rma"):
                            theirs = self.peer(peer, label, op, size)
                            cells += [f"{theirs:.3f}" if theirs else "-",
                                      f"{ours / theirs:.2f}" if theirs else "-"]
                    rows.append(cells)
            model = "the embedded model" if label == "embedded" else \
                f"one memory server over `{label}`"
            text.append(f"### {model}: 1 thread\n\n" + table(header, rows))
        return "\n".join(text)

    def thread_section(self):
        rows = []
        for label in self.labels():
            for op in ("get", "put"):
                for size in (LARGE, 1 << 20):
                    cells = [label, OP_NAMES[op], size_text(size)]
                    found = False
                    for threads in (1, 2, 4, 8):
                        row = self.fampool(label, op, size, threads)
                        if row:
                            found = True
                            cells.append(f"{float(row['fampool_gbps']):.2f} "
                                         f"({float(row['ratio']):.2f})")
                        else:
                            cells.append("-")
                    if found:
                        rows.append(cells)
        if not rows:
            return ""
        return ("GB/s with 1, 2, 4 and 8 threads, each on a context of its own (seed 001 "
                "Fig. 6), and in brackets the ratio to the baseline with as many threads:\n\n" +
                table(["model", "op", "size", "1 thread", "2", "4", "8"], rows))

    def placement_section(self):
        if not self.placement:
            return "No placement figures in this run.\n"
        rows = []
        for r in sorted(self.placement, key=lambda r: (r["placement"], r["op"],
                                                       int(r["servers"]))):
            rows.append([r["placement"], OP_NAMES[r["op"]], r["servers"], r["pes"],
                         f"{float(r['gbps']):.4f}", f"{float(r['link_gbps']):.4f}",
                         f"{float(r['ratio_to_links']):.2f}",
                         r["busiest_server_pes"] if r["busiest_server_pes"] != "0" else "striped"])
        return table(["placement", "op", "servers", "PEs", "GB/s", "links GB/s",
                      "of links", "busiest server (PEs)"], rows)

    def metadata_section(self):
        if not self.metadata:
            return "No metadata figures in this run.\n"
        rows = []
        one = {(r["metric"], r["clients"]): float(r["value"]) for r in self.metadata.get(1, [])}
        for shards, data in sorted(self.metadata.items()):
            for r in data:
                base = one.get((r["metric"], r["clients"]))
                rows.append([shards, r["metric"].replace("_", " "), r["clients"],
                             f"{float(r['value']):.0f}",
                             f"{float(r['value']) / base:.2f}" if base else "-",
                             f"{float(r['cpu_us_per_op']):.1f}",
                             f"{float(r['client_cpu_us_per_op']):.1f}"])
        return table(["shards", "metric", "clients", "per s", "vs 1 shard",
                      "shards' CPU µs/op", "clients' CPU µs/op"], rows)

    # Targets ---------------------------------------------------------------------------------

    def check_targets(self):
        # Emulated fabric, 8 servers.
        by = defaultdict(dict)
        for r in self.placement:
            by[(int(r["servers"]), r["op"])][r["placement"]] = r
        most = max((int(r["servers"]) for r in self.placement), default=0)
        # The targets are about 8 servers (a smoke run has fewer: nothing to judge).
        for op in OPS if most == 8 else []:
            row = by.get((most, op))
            if not row or "uniform" not in row:
                continue
            uniform = float(row["uniform"]["ratio_to_links"])
            self.targets.append((f"{most} servers, {OP_NAMES[op]}, uniform placement: at least "
                                 f"0.9 of the servers' links together",
                                 uniform >= 0.9,
                                 f"{uniform:.2f} of {float(row['uniform']['link_gbps']):.3f} "
                                 f"GB/s"))
            if "interleaved" in row:
                inter = float(row["interleaved"]["gbps"]) / float(row["uniform"]["gbps"])
                self.targets.append((f"{most} servers, {OP_NAMES[op]}: random placement with "
                                     f"interleaving within 10% of uniform", inter >= 0.9,
                                     f"{inter:.2f} of uniform"))
            if "random" in row:
                rand = float(row["random"]["gbps"]) / float(row["uniform"]["gbps"])
                self.targets.append((f"{most} servers, {OP_NAMES[op]}: random placement "
                                     f"without interleaving visibly lower (in-cast)",
                                     rand < 0.9, f"{rand:.2f} of uniform, busiest server "
                                                 f"{row['random']['busiest_server_pes']} PEs"))
        # Peers and raw libfabric at 64 KiB and more, one thread.
        for label in ("tcp", "shm"):
            for op in OPS:
                sizes = [s for s in self.sizes(label) if s >= LARGE]
                worst = {}
                for size in sizes:
                    row = self.fampool(label, op, size)
                    if not row:
                        continue
                    ours = float(row["fampool_gbps"])
                    for peer in ("openshmem", "mpi-rma"):
                        theirs = self.peer(peer, label, op, size)
                        if theirs:
                            ratio = ours / theirs
                            if peer not in worst or ratio < worst[peer][0]:
                                worst[peer] = (ratio, size)
                    ratio = float(row["ratio"])
                    if "raw" not in worst or ratio < worst["raw"][0]:
                        worst["raw"] = (ratio, size)
                baseline = next((r["baseline"] for r in self.transfer if r["label"] == label),
                                "raw-libfabric")
                raw = "raw libfabric" if baseline == "raw-libfabric" else \
                    f"{baseline} (stronger than raw libfabric over {label})"
                names = {"openshmem": ("at least OpenSHMEM's throughput", 1.0),
                         "mpi-rma": ("at least MPI RMA's throughput", 1.0),
                         "raw": (f"at least 0.95x {raw}", 0.95)}
                for key, (ratio, size) in sorted(worst.items()):
                    what, bound = names[key]
                    self.targets.append((f"`{label}`, {OP_NAMES[op]}, 64 KiB to 64 MiB: {what}",
                                         ratio >= bound,
                                         f"lowest {ratio:.2f} (at {size_text(size)})"))
        # Metadata shards.
        if 1 in self.metadata and 4 in self.metadata:
            for metric in ("alloc_dealloc_pairs", "lookups"):
                def rate(shards):
                    rows = [r for r in self.metadata[shards] if r["metric"] == metric]
                    top = max(rows, key=lambda r: int(r["clients"]))
                    return float(top["value"]), int(top["clients"])
                four, clients = rate(4)
                one, _ = rate(1)
                self.targets.append((f"metadata {metric.replace('_', ' ')}: 4 shards at "
                                     f"{clients} clients at least 2x one shard's",
                                     four >= 2 * one, f"{four / one:.2f}x ({four:.0f} against "
                                                      f"{one:.0f} per s)"))

    def model_section(self):
        """The shard model: what the measured CPU per operation predicts with more cores."""
        if 1 not in self.metadata:
            return ""
        lines = []
        for metric in ("alloc_dealloc_pairs", "lookups"):
            rows = [r for r in self.metadata[1] if r["metric"] == metric]
            top = max(rows, key=lambda r: int(r["clients"]))
            shard_us = float(top["cpu_us_per_op"])
            client_us = float(top["client_cpu_us_per_op"])
            if shard_us <= 0:
                continue
            # An alloc_dealloc pair is two calls; the CPU figures are per call.
            calls = 2 if metric == "alloc_dealloc_pairs" else 1
            cells = [metric.replace("_", " "), f"{shard_us:.1f}", f"{client_us:.1f}"]
            for cores in (2, 8, 32):
                predicted = []
                for shards in (1, 2, 4):
                    per_shard = 1e6 / shard_us  # one core's worth of calls per shard
                    machine = cores * 1e6 / (shard_us + client_us)
                    predicted.append(min(shards * per_shard, machine) / calls)
                cells.append(" / ".join(f"{p:.0f}" for p in predicted) +
                             f" ({predicted[2] / predicted[0]:.1f}x)")
            measured = []
            for shards in (1, 2, 4):
                data = [r for r in self.metadata.get(shards, []) if r["metric"] == metric]
                if data:
                    measured.append(float(max(data, key=lambda r: int(r["clients"]))["value"]))
            cells.append(" / ".join(f"{m:.0f}" for m in measured))
            lines.append(cells)
        if not lines:
            return ""
        return ("The model: a shard serves at most one core's worth of calls (1e6 / its CPU "
                "µs per call), and the machine at most `cores x 1e6 / (shard + client CPU µs per "
                "call)`; the rate with N shards at 16 clients is the smaller of N x the first "
                "and the second. Predicted rates for 1 / 2 / 4 shards (ratio 4 to 1 shards), "
                "per second, from the CPU per call measured with one shard and the most "
                "clients, against what this machine measured:\n\n" +
                table(["metric", "shard µs/call", "client µs/call", "2 cores", "8 cores",
                       "32 cores", "measured here (1 / 2 / 4)"], lines))

    # Plots -----------------------------------------------------------------------------------

    def plot_transfer(self):
        labels = self.labels()
        if not labels:
            return
        fig, axes = plot.figure((18, 4 * len(labels)), len(labels), 4)
        for row, label in enumerate(labels):
            baseline = next(r["baseline"] for r in self.transfer if r["label"] == label)
            for col, op in enumerate(OPS):
                ax = axes[row][col]
                sizes = self.sizes(label)
                series = {"fampool": [], baseline: []}
                for size in sizes:
                    r = self.fampool(label, op, size)
                    series["fampool"].append(float(r["fampool_gbps"]) if r else None)
                    series[baseline].append(float(r["baseline_gbps"]) if r else None)
                if label != "embedded":
                    for peer in ("openshmem", "mpi-rma"):
                        series[peer] = [self.peer(peer, label, op, s) for s in sizes]
                styles = {"fampool": "o-", baseline: "s--", "openshmem": "^:",
                          "mpi-rma": "d-."}
                for name, values in series.items():
                    points = [(s, v) for s, v in zip(sizes, values) if v]
                    if points:
                        ax.plot([p[0] for p in points], [p[1] for p in points], styles[name],
                                label=name)
                plot.size_axis(ax, rotation=30)
                ax.set_yscale("log")
                ax.set_title(f"{label}: {OP_NAMES[op]}, 1 thread")
                ax.set_xlabel("transfer size (bytes)")
                ax.set_ylabel("GB/s")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=8)
        fig.tight_layout()
        self.save(fig, "results_transfer.png",
                  "get/put throughput by transfer size, against the baseline and the peers")

    def plot_threads(self):
        labels = self.labels()
        if not labels:
            return
        fig, axes = plot.figure((6 * len(labels), 4), 1, len(labels))
        for col, label in enumerate(labels):
            ax = axes[0][col]
            for op, size, style in (("get", LARGE, "o-"), ("put", LARGE, "s-"),
                                    ("get", 1 << 20, "o--"), ("put", 1 << 20, "s--")):
                points = []
                for threads in self.threads(label):
                    r = self.fampool(label, op, size, threads)
                    if r:
                        points.append((threads, float(r["fampool_gbps"])))
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], style,
                            label=f"{op} {size_text(size)}")
            plot.panel(ax, f"{label}: blocking calls, a context per thread", "threads", "GB/s")
        fig.tight_layout()
        self.save(fig, "results_threads.png", "throughput as threads are added (seed 001 Fig. 6)")

    def plot_placement(self):
        if not self.placement:
            return
        fig, axes = plot.figure((20, 4.5), 1, 4)
        for col, op in enumerate(OPS):
            ax = axes[0][col]
            rows = [r for r in self.placement if r["op"] == op]
            servers = sorted({int(r["servers"]) for r in rows})
            for placement, style in (("uniform", "o-"), ("random", "s-"),
                                     ("interleaved", "^-")):
                points = sorted((int(r["servers"]), float(r["gbps"])) for r in rows
                                if r["placement"] == placement)
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], style,
                            label=placement)
            links = sorted({(int(r["servers"]), float(r["link_gbps"])) for r in rows})
            ax.plot([p[0] for p in links], [p[1] for p in links], "k:", label="servers' links")
            ax.set_xticks(servers)
            plot.panel(ax, f"{OP_NAMES[op]}, {rows[0]['pes'] if rows else '?'} PEs",
                       "memory servers", "aggregate GB/s")
        fig.tight_layout()
        self.save(fig, "results_placement.png",
                  "aggregate throughput by memory servers and placement (seed 000 Fig. 3, 4, 7)")

    def plot_metadata(self):
        if not self.metadata:
            return
        fig, axes = plot.figure((12, 4.5), 1, 2)
        for col, metric in enumerate(("alloc_dealloc_pairs", "lookups")):
            ax = axes[0][col]
            for shards, data in sorted(self.metadata.items()):
                points = sorted((int(r["clients"]), float(r["value"])) for r in data
                                if r["metric"] == metric)
                ax.plot([p[0] for p in points], [p[1] for p in points], "o-",
                        label=f"{shards} shard{'s' if shards > 1 else ''}")
            plot.log2_axis(ax)
            plot.panel(ax, metric.replace("_", " ") + " per second, all clients",
                       "client processes (each on a client node)", "per second")
        fig.tight_layout()
        self.save(fig, "results_metadata.png", "metadata rates by clients and shards")

    def save(self, fig, name, caption):
        plot.save(fig, os.path.join(self.docs, name), DPI)
        self.plots.append((name, caption))

    # The page --------------------------------------------------------------------------------

    def write(self):
        os.makedirs(self.docs, exist_ok=True)
        self.plot_transfer()
        self.plot_threads()
        self.plot_placement()
        self.plot_metadata()
        self.check_targets()
        plots = {name: caption for name, caption in self.plots}
        missed = [t for t in self.targets if t[1] is False]
        out = ["# fampool against its peers: `scripts/bench transfer placement metadata`\n",
               ("**A smoke run (`--smoke`): the figures are too short to mean anything; they "
                "show that every step runs.**\n" if self.smoke else ""),
               "Every figure below comes from `scripts/bench transfer placement metadata` on "
               "this 2-core machine, each next to its baseline measured in the same run. GB/s "
               "are 1e9 bytes per second. The CSV files are in `bench/results/transfer/`, "
               "`bench/results/placement/` and `bench/results/metadata/`, and this page and its "
               "plots are written from them by `scripts/bench-report transfer`; how each "
               "benchmark works is at the top of its program's source (`transfer_bench`, mode "
               "`api`; `peers shmem` and `peers mpi-rma`; `placement_bench`; `metadata_bench "
               "scaling`).\n"]
        out += run_notes(self.skipped)
        out.append("## Targets\n")
        if self.targets:
            out.append(table(["target", "met", "measured"],
                             [[t[0], "yes" if t[1] else "**MISSED**", t[2]]
                              for t in self.targets]))
            out.append(f"{len(self.targets) - len(missed)} of {len(self.targets)} met. "
                       "Each missed target's measured reason is under Notes.\n")
        notes = hand_written(self.docs, "results-notes.md")
        if not self.smoke and notes:
            with open(notes) as f:
                out.append("## Notes\n\n" + f.read().strip() + "\n")
        out.append("## The emulated fabric: placement (seed 000 Fig. 3, 4, 7)\n")
        if "results_placement.png" in plots:
            out.append(f"![{plots['results_placement.png']}](results_placement.png)\n")
        out.append(self.placement_section())
        out.append("## get and put against the baseline and the peers\n")
        out.append("Columns: fampool's GB/s through the API; the baseline's (memcpy for the "
                   "embedded model and for a memory server over `shm`, whose client maps the "
                   "server's heap and copies; a raw libfabric loop over `tcp`) "
                   "and fampool / baseline; OpenSHMEM's and MPI RMA's GB/s over the same "
                   "transport class and fampool / each.\n")
        if "results_transfer.png" in plots:
            out.append(f"![{plots['results_transfer.png']}](results_transfer.png)\n")
        out.append(self.transfer_section())
        out.append("## Threads\n")
        if "results_threads.png" in plots:
            out.append(f"![{plots['results_threads.png']}](results_threads.png)\n")
        out.append(self.thread_section())
        out.append("## Metadata shards\n")
        if "results_metadata.png" in plots:
            out.append(f"![{plots['results_metadata.png']}](results_metadata.png)\n")
        out.append("Columns: shards, metric, client processes, the rate over all clients, the "
                   "rate against one shard's with as many clients, the shards' CPU time per "
                   "call (user + system of their processes over the run, over the calls), the "
                   "clients' CPU time per call.\n")
        out.append(self.metadata_section())
        out.append(self.model_section())
        with open(os.path.join(self.docs, "RESULTS.md"), "w") as f:
            f.write("\n".join(part for part in out if part))
        return (f"{os.path.join(self.docs, 'RESULTS.md')} and {len(self.plots)} plots; "
                f"{len(self.targets) - len(missed)} of {len(self.targets)} targets met")
