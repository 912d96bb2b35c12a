"""The plots of docs/bench/python.md, from python/embedded.csv and python/cluster.csv
(bench/python_bench.py --csv on the embedded model and on a one-server tcp cluster): the
ratio of the Python call's GB/s to the same C++ call's, per operation and size, against
issue 19's target of 0.9. The page's tables are written by hand.
"""
import os

from . import plot, read_csv

SUITES = ("python",)
PLOTS = (("embedded.csv", "python.png"), ("cluster.csv", "python_cluster.png"))
TARGET = 0.9


def has_results(results):
    return any(os.path.exists(os.path.join(results, "python", name)) for name, _ in PLOTS)


def draw(rows, path):
    fig, panels = plot.figure((9, 3.6))
    ax = panels[0][0]
    ax.bar([f"{r['op']} {int(r['bytes']) >> 20} MiB" for r in rows],
           [float(r["ratio"]) for r in rows])
    ax.tick_params(axis="x", labelsize=8, rotation=20)
    ax.axhline(TARGET, color="tab:red", linestyle="--", label=f"target {TARGET}")
    plot.ratio_line(ax, color="gray", label="Python / C++ (GB/s ratio)")
    ax.set_ylim(0, 1.35)
    ax.set_title(f"numpy get/put and FamArray a[:] against the C++ call, same process\n"
                 f"({rows[0]['label']})", fontsize=10)
    ax.legend(loc="upper right")
    fig.tight_layout()
    plot.save(fig, path)


def write(results, docs, smoke):
    os.makedirs(docs, exist_ok=True)
    written = []
    for name, png in PLOTS:
        rows = read_csv(os.path.join(results, "python", name))
        if rows:
            draw(rows, os.path.join(docs, png))
            written.append(os.path.join(docs, png))
    return " and ".join(written)
