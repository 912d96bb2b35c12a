"""docs/bench/large.md (the part between its "figures" markers) and large.png, from the large
suite's transfer_bench large runs (large/large.csv): per model and item size, the median over
trials of the first write into fresh item memory, the same write again and a read, beside
memcpy into a fresh mapping of the same kind of memory (its first write and a rewrite) in the
same run (memcpy straight in, and MADV_POPULATE_WRITE then memcpy: the strongest, which the
targets use). The rest of large.md is written by hand.
"""
import os
import statistics

from . import plot, read_csv, write_section
from .plot import size_text, table_lines

SUITES = ("large",)
BEGIN = "<!-- figures: written by scripts/bench-report large -->"
BEGIN_PREFIX = "<!-- figures: written by "
END = "<!-- end of figures -->"
# The targets: the first write at least 0.8x the raw first write on the embedded model, and at
# least 0.8x of min(raw first write, write again) on a cluster (its link may be slower than
# the memory).
TARGET = 0.8
COLUMNS = ("create_region_s", "allocate_s", "raw_first_gbps", "raw_best_first_gbps",
           "raw_again_gbps", "first_put_gbps", "put_again_gbps", "get_gbps", "first_ratio",
           "first_of_best")


def has_results(results):
    return os.path.exists(os.path.join(results, "large", "large.csv"))


def medians(rows):
    """One row per (label, size): the median of each column over the trials, in run order."""
    groups = {}
    for row in rows:
        groups.setdefault((row["label"], int(row["size_bytes"])), []).append(row)
    out = []
    for (label, size), trials in groups.items():
        merged = {"label": label, "size": size, "trials": len(trials)}
        for column in COLUMNS:
            merged[column] = statistics.median(float(t[column]) for t in trials)
        out.append(merged)
    return out


def measure(row):
    """The figure the target applies to, by model."""
    return row["first_ratio"] if row["label"] == "embedded" else row["first_of_best"]


def verdict(row):
    return "met" if measure(row) >= TARGET else "MISSED"


def draw(rows, path):
    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, axes = plot.figure((5.2 * len(labels), 4.2), 1, len(labels))
    series = (("raw_first_gbps", "memcpy into fresh memory", "lightgray", "//"),
              ("raw_best_first_gbps", "populate, then memcpy", "tab:gray", "//"),
              ("first_put_gbps", "fampool first put", "tab:blue", None),
              ("put_again_gbps", "fampool put again", "tab:green", None),
              ("get_gbps", "fampool get", "tab:orange", None))
    width = 0.16
    for ax, label in zip(axes[0], labels):
        mine = [r for r in rows if r["label"] == label]
        for k, (column, name, color, hatch) in enumerate(series):
            ax.bar([i + (k - 2) * width for i in range(len(mine))], [r[column] for r in mine],
                   width, label=name, color=color, hatch=hatch,
                   edgecolor="white" if hatch else None)
        ax.set_xticks(range(len(mine)))
        ax.set_xticklabels([size_text(r["size"]) for r in mine])
        plot.panel(ax, f"{label}: one blocking call of the whole item", "item size",
                   "GB/s (1e9 bytes a second)", legend=False)
    # One legend for both panels, below them: inside a panel it covered the first size's bars.
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(series), fontsize=8)
    fig.suptitle("First write into fresh item memory, write again and read, beside memcpy into "
                 "a fresh /dev/shm mapping (medians)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    plot.save(fig, path)


def write(results, docs, smoke):
    rows = medians(read_csv(os.path.join(results, "large", "large.csv")))
    os.makedirs(docs, exist_ok=True)
    png = os.path.join(docs, "large.png")
    draw(rows, png)
    table = table_lines(
        ["model", "item", "trials", "create region", "allocate", "raw first", "raw best first",
         "raw again",
         "first put", "put again", "get", "first / raw best", "first / min(raw best, again)",
         "target 0.8"],
        [[r["label"], size_text(r["size"]), r["trials"], f"{r['create_region_s'] * 1e3:.1f} ms",
          f"{r['allocate_s'] * 1e3:.1f} ms", f"{r['raw_first_gbps']:.2f}",
          f"{r['raw_best_first_gbps']:.2f}",
          f"{r['raw_again_gbps']:.2f}", f"{r['first_put_gbps']:.2f}",
          f"{r['put_again_gbps']:.2f}", f"{r['get_gbps']:.2f}", f"{r['first_ratio']:.2f}",
          f"{r['first_of_best']:.2f}", verdict(r)] for r in rows])
    body = "\n".join([BEGIN, "", "![first write, write again and read](large.png)", "",
                      *table, "", "Rates in GB/s. `bench/results/large/large.csv` has every "
                      "trial.", "", END])
    page = write_section(docs, "large.md", BEGIN_PREFIX, END, body)
    return f"{png} and {page} ({len(rows)} rows)"
