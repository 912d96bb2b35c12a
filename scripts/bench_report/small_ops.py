"""Small operations and threads (docs/bench/small-ops.md), from scripts/bench small-ops'
results: small-ops/{embedded,shm,shm-rma,tcp}.csv (small_ops_bench per model, with the raw
libfabric loops), small-ops/transfers.csv (transfer_bench api on each cluster, label
cluster-KEY: one thread's large get/put against a raw libfabric loop with as many in flight;
results from before it hold small_ops_bench's rows of kind "bandwidth" instead) and
small-ops/openshmem.csv (peers shmem-rate). Writes
  small_ops_rate.png     message rate against size, one thread: fampool non-blocking and
                         blocking per model, the raw libfabric loops, OpenSHMEM
  small_ops_threads.png  message rate of 256 B gets and puts against threads, on the default
                         context and on a context per thread, with OpenSHMEM's
to the docs directory, and the tables the page quotes to small-ops/summary.md.
"""
import math
import os

from . import read_csv, plot
from .plot import table_lines

SUITES = ("small-ops",)
MODELS = [("embedded", "embedded"), ("shm", "cluster, shm"),
          ("shm-rma", "cluster, shm RMA"), ("tcp", "cluster, tcp")]
STYLES = {"embedded": ("tab:blue", "o"), "shm": ("tab:green", "s"),
          "shm-rma": ("tab:olive", "v"), "tcp": ("tab:red", "^")}
SIZES = [8, 64, 256, 1024, 4096]
LARGE = [65536, 1048576, 4194304]
TRANSFER_OPS = ["get", "put", "get_nb", "put_nb"]


def has_results(results):
    return any(os.path.exists(os.path.join(results, "small-ops", f"{key}.csv"))
               for key, _ in MODELS)


def num(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def pick(rows, **want):
    return [r for r in rows if all(str(r[k]) == str(v) for k, v in want.items())]


def one(rows, **want):
    found = pick(rows, **want)
    return found[0] if found else None


def fmt(value, digits=2):
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def below(fig, axis):
    """One legend for both panels, under them, where it hides no line."""
    handles, labels = axis.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.2, 1, 1))


def plot_rate(data, shmem, path):
    fig, panels = plot.figure((12, 6), 1, 2, sharey=True)
    axes = panels[0]
    for axis, op in zip(axes, ["get", "put"]):
        for key, label in MODELS:
            rows = sorted(pick(data[key], kind="rate", op=op, threads=1, context="default"),
                          key=lambda r: int(r["size_bytes"]))
            if not rows:
                continue
            sizes = [int(r["size_bytes"]) for r in rows]
            color, marker = STYLES[key]
            axis.plot(sizes, [num(r["fampool"]) for r in rows], color=color, marker=marker,
                      label=f"fampool {label}, non-blocking")
            axis.plot(sizes, [num(r["blocking"]) for r in rows], color=color, marker=marker,
                      linestyle=":", label=f"fampool {label}, blocking")
            raw = [num(r["raw"]) for r in rows]
            if key != "shm" and not all(math.isnan(v) for v in raw):  # shm's: as shm-rma's
                axis.plot(sizes, raw, color=color, marker="x", linestyle="--",
                          label=f"raw libfabric {key.replace('-rma', '')}, window 64")
        rows = sorted(pick(shmem, op=op, threads=1), key=lambda r: int(r["size_bytes"]))
        if rows:
            axis.plot([int(r["size_bytes"]) for r in rows], [num(r["mops"]) for r in rows],
                      color="black", marker="D", label="OpenSHMEM (UCX), nbi")
        plot.size_axis(axis)
        axis.set_yscale("log")
        axis.set_xlabel("bytes per operation")
        axis.set_title(f"{op}: one thread, 64 operations between quiets")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("million operations per second")
    below(fig, axes[0])
    plot.save(fig, path)


def plot_threads(data, shmem, path):
    fig, panels = plot.figure((12, 6), 1, 2, sharey=True)
    axes = panels[0]
    for axis, op in zip(axes, ["get", "put"]):
        for key, label in MODELS:
            color, marker = STYLES[key]
            for context, line in [("default", "-"), ("per-thread", "--")]:
                rows = sorted(pick(data[key], kind="rate", op=op, size_bytes=256,
                                   context=context), key=lambda r: int(r["threads"]))
                if rows:
                    axis.plot([int(r["threads"]) for r in rows],
                              [num(r["fampool"]) for r in rows], color=color, marker=marker,
                              linestyle=line, label=f"fampool {label}, {context} context")
        rows = sorted(pick(shmem, op=op, size_bytes=256), key=lambda r: int(r["threads"]))
        if rows:
            axis.plot([int(r["threads"]) for r in rows], [num(r["mops"]) for r in rows],
                      color="black", marker="D", label="OpenSHMEM (UCX), context per thread")
        plot.log2_axis(axis)
        axis.set_yscale("log")
        axis.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        axis.set_xlabel("threads (2 cores)")
        axis.set_title(f"256 B non-blocking {op}s, all threads together")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("million operations per second")
    below(fig, axes[0])
    plot.save(fig, path)


def rate(rows, **want):
    return num((one(rows, kind="rate", **want) or {}).get("fampool"))


def against_raw(r):
    """fampool / raw with 64 in flight (and / raw in batches of 64) of one row."""
    if not r:
        return "–"
    fam, raw, batch = num(r["fampool"]), num(r["raw"]), num(r.get("raw_batch"))
    return f"{fmt(fam / raw)} ({fmt(fam / batch)})"


def large_transfers(transfers, key):
    """The large-transfer table of cluster `key` from transfer_bench's rows."""
    rows = [r for r in transfers if r["label"] == f"cluster-{key}" and r["threads"] == "1"]
    sizes = sorted({int(r["size_bytes"]) for r in rows}) or LARGE
    baseline = next((r["baseline"] for r in rows if r["baseline"] != "none"), "raw-libfabric")
    them = "raw libfabric" if baseline == "raw-libfabric" else baseline
    lines = [f"### Cluster over {key}: large transfers, one thread (`transfer_bench api`), GB/s: "
             f"fampool / {them} with as many in flight (get, put: one; get_nb, put_nb: 16, "
             "then a quiet) = ratio\n"]
    body = []
    for op in TRANSFER_OPS:
        cells = []
        for s in sizes:
            r = one(rows, op=op, size_bytes=s)
            ours, theirs = num((r or {}).get("fampool_gbps")), num((r or {}).get("baseline_gbps"))
            if not r:
                cells.append("–")
            elif r["baseline"] == "none" or not theirs > 0:
                cells.append(f"{fmt(ours)} / –")
            else:
                cells.append(f"{fmt(ours)} / {fmt(theirs)} = {fmt(num(r['ratio']))}")
        body.append([op] + cells)
    return lines + table_lines(["op"] + [plot.size_text(s) for s in sizes], body) + [""]


def cluster_tables(data, key, transfers):
    lines = [f"### Cluster over {key}: non-blocking rate / raw libfabric, one thread: against 64 "
             "kept in flight (against batches of 64, fampool's shape)\n"]
    rows = []
    for op in ["get", "put", "add"]:
        sizes = [8] if op == "add" else SIZES
        cells = [against_raw(one(data[key], kind="rate", op=op, size_bytes=s, threads=1,
                                 context="default")) for s in sizes]
        rows.append([op] + cells + ["" for _ in range(len(SIZES) - len(cells))])
    lines += table_lines(["op"] + [f"{s} B" for s in SIZES], rows) + [""]
    if transfers:
        return lines + large_transfers(transfers, key)
    # Results from before transfers.csv: small_ops_bench's own large transfers.
    lines.append(f"### Cluster over {key}: large transfers, GB/s (fampool / raw with 16 in "
                 "flight)\n")
    rows = []
    for op in ["get", "put"]:
        cells = []
        for s in LARGE:
            r = one(data[key], kind="bandwidth", op=op, size_bytes=s)
            cells.append("–" if not r else f"{fmt(num(r['fampool']))} / {fmt(num(r['raw']))} = "
                         f"{fmt(num(r['vs_raw']))}")
        rows.append([op] + cells)
    return lines + table_lines(["op", "64 KiB (16 non-blocking)", "1 MiB (one blocking)",
                                "4 MiB (one blocking)"], rows) + [""]


def summary(data, shmem, transfers):
    lines = ["### Embedded: non-blocking / blocking, one thread, default context\n"]
    rows = [[op] + [fmt(num((one(data["embedded"], kind="rate", op=op, size_bytes=s, threads=1,
                                  context="default") or {}).get("nb_vs_blocking")))
                    for s in SIZES] for op in ["get", "put"]]
    lines += table_lines(["op"] + [f"{s} B" for s in SIZES], rows) + [""]
    lines.append("### 256 B non-blocking rate, one thread (million/s), and OpenSHMEM's\n")
    rows = []
    for op in ["get", "put"]:
        values = [rate(data[k], op=op, size_bytes=256, threads=1, context="default")
                  for k, _ in MODELS]
        ref = num((one(shmem, op=op, size_bytes=256, threads=1) or {}).get("mops"))
        rows.append([op] + [fmt(v, 1) for v in values] +
                    [fmt(ref, 1), fmt(values[0] / ref if ref else math.nan)])
    lines += table_lines(["op", "embedded", "cluster shm", "cluster shm RMA", "cluster tcp",
                          "OpenSHMEM", "embedded / OpenSHMEM"], rows) + [""]
    for key in ["shm-rma", "tcp", "shm"]:
        lines += cluster_tables(data, key, transfers)
    lines.append("### Threads: rate with 2 threads / 1 thread, 256 B, default context\n")
    rows = []
    for op in ["get", "put", "add"]:
        size = 8 if op == "add" else 256
        cells = []
        for key, _ in MODELS:
            a = rate(data[key], op=op, size_bytes=size, threads=1, context="default")
            b = rate(data[key], op=op, size_bytes=size, threads=2, context="default")
            cells.append(fmt(b / a if a else math.nan))
        a = num((one(shmem, op=op, size_bytes=size, threads=1) or {}).get("mops"))
        b = num((one(shmem, op=op, size_bytes=size, threads=2) or {}).get("mops"))
        cells.append(fmt(b / a if a else math.nan))
        rows.append([op] + cells)
    lines += table_lines(["op", "embedded", "cluster shm", "cluster shm RMA", "cluster tcp",
                          "OpenSHMEM (context per thread)"], rows)
    return "\n".join(lines) + "\n"


def write(results, docs, smoke):
    folder = os.path.join(results, "small-ops")
    data = {key: read_csv(os.path.join(folder, f"{key}.csv")) for key, _ in MODELS}
    shmem = read_csv(os.path.join(folder, "openshmem.csv"))
    transfers = read_csv(os.path.join(folder, "transfers.csv"))
    os.makedirs(docs, exist_ok=True)
    plot_rate(data, shmem, os.path.join(docs, "small_ops_rate.png"))
    plot_threads(data, shmem, os.path.join(docs, "small_ops_threads.png"))
    path = os.path.join(folder, "summary.md")
    with open(path, "w") as f:
        f.write(summary(data, shmem, transfers))
    return f"{path}, {os.path.join(docs, 'small_ops_rate.png')} and small_ops_threads.png"
