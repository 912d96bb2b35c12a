"""docs/bench/striped.md (the part between its "figures" markers) and striped.png, from the
cluster suite's transfer_bench striped runs: cluster/striped.csv (the suite's provider, 4 KiB
interleaving) and, from a full run, cluster/striped_tcp_64k.csv and striped_shm_64k.csv. Each
compares an item striped over three memory servers with an item on one of them, in the same
run. The rest of striped.md is written by hand; when the docs directory has no striped.md, the
repository's is the template. The suite's other pages (cluster.md, fabric.md, metadata.md)
are written by hand.
"""
import os

from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from . import read_csv, plot, write_section
from .plot import size_text, table_lines

SUITES = ("cluster",)
FILES = ("striped.csv", "striped_tcp_64k.csv", "striped_shm_64k.csv")
BEGIN = "<!-- figures: written by scripts/bench-report cluster -->"
BEGIN_PREFIX = "<!-- figures: written by "
END = "<!-- end of figures -->"
# Issue 32's targets: striped get/put of 64 KiB and 1 MiB at least 0.8x of one server's
# bandwidth; a 256 B get at most 1.5x of one server's latency.
BANDWIDTH_TARGET = 0.8
BANDWIDTH_TARGET_SIZES = (64 << 10, 1 << 20)
LATENCY_TARGET = 1.5
OPS = {"get": "blocking get", "put": "blocking put", "put_nonblocking": "non-blocking put",
       "get_latency_us": "blocking get", "put_latency_us": "blocking put",
       "fetch_add_latency_us": "fetch_add"}


def has_results(results):
    return any(os.path.exists(os.path.join(results, "cluster", name)) for name in FILES)


def value(row, column, older):
    """A cell under its name, or under the name runs before 2026-11-29 gave it."""
    return float(row[column] if column in row else row[older])


def latency(row):
    return row["op"].endswith("_latency_us")


def verdict(row):
    """'met', 'MISSED' or '-' (no target for this row)."""
    ratio, size = float(row["ratio"]), int(row["size_bytes"])
    if latency(row):
        if row["op"] != "get_latency_us":
            return "-"
        return "met" if ratio <= LATENCY_TARGET else "MISSED"
    if row["op"] not in ("get", "put") or size not in BANDWIDTH_TARGET_SIZES:
        return "-"
    return "met" if ratio >= BANDWIDTH_TARGET else "MISSED"


def speedup(row):
    """Striped against one server as speed, above 1 faster: the bandwidth ratio as it is, a
    latency ratio (striped time over one server's) turned over."""
    ratio = float(row["ratio"])
    return 1.0 / ratio if latency(row) else ratio


def title(rows):
    first = rows[0]
    provider = first.get("provider") or "the suite's provider"
    return (f"{provider}, {first['servers']} servers, "
            f"{size_text(int(first['interleave_bytes']))} interleave")


def draw(ax, rows):
    labels = [f"{OPS.get(r['op'], r['op'])}\n{size_text(int(r['size_bytes']))}" for r in rows]
    colors = {"met": "tab:green", "MISSED": "tab:red", "-": "tab:gray"}
    # Bars from 1 (as fast as one server) up to a faster ratio or down to a slower one.
    ratios = [speedup(r) for r in rows]
    ax.bar(range(len(rows)), [r - 1 for r in ratios], bottom=1,
           color=[colors[verdict(r)] for r in rows])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7, rotation=60, ha="right")
    ax.set_yscale("log")  # shm's loads and stores beside tcp's RMA: 0.05x to 20x
    ax.set_ylim(min(0.25, min(ratios) / 1.3), max(4.0, max(ratios) * 1.3))
    ax.yaxis.set_major_locator(FixedLocator([0.05, 0.1, 0.25, 0.5, 0.8, 1, 1.25, 2, 4, 10, 20]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    plot.ratio_line(ax, label="striped speed / one server's, log scale\n(above 1: striped faster)")
    ax.set_title(title(rows), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)


def table_rows(rows):
    out = []
    for r in rows:
        unit = "us" if latency(r) else "GB/s"
        striped = value(r, "striped", "striped_gbps")
        one = value(r, "one_server", "plain_gbps")
        out.append([OPS.get(r["op"], r["op"]), size_text(int(r["size_bytes"])),
                    f"{striped:.3g} {unit}", f"{one:.3g} {unit}", f"{float(r['ratio']):.2f}",
                    verdict(r)])
    return out


def write(results, docs, smoke):
    runs = [(name, read_csv(os.path.join(results, "cluster", name))) for name in FILES]
    runs = [(name, rows) for name, rows in runs if rows]
    fig, axes = plot.figure((5.2 * len(runs), 4.6), 1, len(runs))
    sections = []
    for ax, (name, rows) in zip(axes[0], runs):
        draw(ax, rows)
        sections += ["", f"**{title(rows)}** (`bench/results/cluster/{name}`)", ""]
        sections += table_lines(["op", "size", "striped", "one server", "striped / one",
                                 "issue 32's target"], table_rows(rows))
    fig.suptitle("An item striped over three memory servers against one on one server "
                 "(green: target met, red: missed, gray: no target)", fontsize=10)
    fig.tight_layout()
    os.makedirs(docs, exist_ok=True)
    png = os.path.join(docs, "striped.png")
    plot.save(fig, png)
    body = "\n".join([BEGIN, "", "![striped against one server](striped.png)", *sections, "",
                      END])
    page = write_section(docs, "striped.md", BEGIN_PREFIX, END, body)
    return f"{png} and {page} ({len(runs)} configurations)"
