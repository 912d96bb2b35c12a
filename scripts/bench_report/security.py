"""What the security guards cost, from scripts/bench security's results: security/summary.md
(the tables docs/bench/small-ops.md and docs/bench/cluster.md quote) and
docs/bench/security_same_node.png.

Reads security/small_ops.csv (small_ops_bench's rows, with the path and the round in front),
security/same_node.csv (transfer_bench same-node) and security/tls.csv (metadata_bench auth
--plain --tls). The plot: the message rate of each small_ops_bench operation and size on the
descriptor path against the path that opened heap files by name, per round (both paths back
to back), with the median of those ratios.
"""
import os
import statistics

from . import read_csv, plot
from .plot import table_lines

SUITES = ("security",)
FILES = ("small_ops.csv", "same_node.csv", "tls.csv")


def has_results(results):
    return any(os.path.exists(os.path.join(results, "security", name)) for name in FILES)


def rates(rows, direct):
    """{(op, size): [rate per round, in round order]} of one-thread default-context rows."""
    found = {}
    rows = [row for row in rows if row["fabric_direct"] == direct and row["kind"] == "rate"
            and row["threads"] == "1" and row["context"] == "default"]
    for row in sorted(rows, key=lambda row: int(row["round"])):
        found.setdefault((row["op"], int(row["size_bytes"])), []).append(float(row["fampool"]))
    return found


def paired(a, b):
    """Median and quartiles of a[i] / b[i]: rounds measured back to back."""
    ratios = sorted(x / y for x, y in zip(a, b))
    n = len(ratios)
    return statistics.median(ratios), ratios[n // 4], ratios[(3 * n) // 4]


def small_ops_lines(descriptor, path, keys):
    rounds = min(len(v) for v in descriptor.values())
    rows = []
    for op, size in keys:
        a, b = statistics.median(descriptor[(op, size)]), statistics.median(path[(op, size)])
        ratio, q1, q3 = paired(descriptor[(op, size)], path[(op, size)])
        rows.append([op, f"{size} B", f"{a:.2f}", f"{b:.2f}", f"{ratio:.3f}",
                     f"{q1:.2f}-{q3:.2f}"])
    return [f"small_ops_bench over shm, 1 thread, default context, {rounds} rounds, each "
            "running both paths back to back (rates in millions of operations per "
            "second, medians over the rounds; ratio: the median over the rounds of "
            "descriptor / path within the round; q1-q3: the quartiles of those ratios):",
            ""] + table_lines(["operation", "size", "descriptor path", "files opened by name",
                               "ratio", "q1-q3"], rows) + [""]


def same_node_lines(rows):
    rows = [[row["metric"], f"{float(row['descriptor']):.1f}", f"{float(row['path']):.1f}",
             f"{float(row['ratio']):.3f}",
             f"{float(row['ratio_q1']):.2f}-{float(row['ratio_q3']):.2f}"] for row in rows]
    return ["transfer_bench same-node (both paths in one process, rounds back to back; medians, "
            "and the quartiles of the per-round ratios):", ""] + table_lines(
        ["metric", "descriptor path", "files opened by name", "ratio", "q1-q3"], rows) + [""]


def tls_lines(rows):
    cells = []
    for row in rows:
        if row.get("ratio"):
            cells.append([row["metric"], f"{float(row['plain']):.1f}",
                          f"{float(row['tls']):.1f}", f"{float(row['ratio']):.3f}"])
        else:
            cells.append([row["metric"], "", f"{float(row['tls']):.1f}", ""])
    # Runs since the bench paired its rounds carry each ratio's spread (ratio_low).
    paired = any(row.get("ratio_low") for row in rows)
    how = ("the ratio is the median of the rounds' ratios, each round measuring both clusters "
           "one after the other; " if paired else "")
    return ["metadata_bench auth, plaintext against TLS (5 rounds of 2 s, medians; " + how +
            "with TLS the \"fabric\" rows are gRPC over TLS):", ""] + table_lines(
        ["metric", "plaintext", "TLS", "TLS / plaintext"], cells) + [""]


def draw(descriptor, path, keys, png):
    fig, panels = plot.figure((9, 4.5))
    ax = panels[0][0]
    labels = [f"{op}\n{size} B" for op, size in keys]
    for k, (op, size) in enumerate(keys):
        ratios = [a / b for a, b in zip(descriptor[(op, size)], path[(op, size)])]
        ax.scatter([k] * len(ratios), ratios, color="tab:blue", s=14, alpha=0.6,
                   label="one round" if k == 0 else None)
        ax.scatter([k], [statistics.median(ratios)], color="tab:red", marker="_", s=400,
                   label="median of the rounds" if k == 0 else None)
    plot.ratio_line(ax, color="gray")
    ax.axhline(0.95, color="tab:orange", linestyle="--", linewidth=0.8, label="0.95 target")
    ax.set_xticks(list(range(len(keys))))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("rate: descriptor path / files opened by name")
    ax.set_title("Same-node access over shm: heap descriptors from the server vs heap files "
                 "opened by name\n(small_ops_bench, 1 thread, non-blocking windows of 64)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    plot.save(fig, png)


def write(results, docs, smoke):
    folder = os.path.join(results, "security")
    small_ops = read_csv(os.path.join(folder, "small_ops.csv"))
    descriptor, path = rates(small_ops, "true"), rates(small_ops, "path")
    keys = sorted(set(descriptor) & set(path), key=lambda k: (k[0], k[1]))
    lines = small_ops_lines(descriptor, path, keys) if keys else []
    same_node = os.path.join(folder, "same_node.csv")
    if os.path.exists(same_node):
        lines += same_node_lines(read_csv(same_node))
    tls = os.path.join(folder, "tls.csv")
    if os.path.exists(tls):
        lines += tls_lines(read_csv(tls))
    summary = os.path.join(folder, "summary.md")
    with open(summary, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not keys:
        return f"{summary} (no small_ops_bench rounds: no plot)"
    os.makedirs(docs, exist_ok=True)
    png = os.path.join(docs, "security_same_node.png")
    draw(descriptor, path, keys, png)
    return f"{summary} and {png}"
