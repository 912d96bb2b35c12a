"""The page docs/bench/metrics.md and its plot metrics.png, from metrics/cost.csv
(bench/metrics_bench on two one-server tcp clusters alike but for `fampool up --metrics`):
each figure's median rate with metrics off and on, and their ratio against issue 33's target
(at least 0.98: metrics cost at most 2%). The text between the "figures" markers is written
here; the rest of the page is kept as written by hand.
"""
import os

from . import plot, read_csv, write_section

SUITES = ("metrics",)
TARGET = 0.98
BEGIN = "<!-- figures: written by scripts/bench-report metrics"
END = "<!-- end of figures -->"


def has_results(results):
    return os.path.exists(os.path.join(results, "metrics", "cost.csv"))


def draw(rows, path):
    fig, panels = plot.figure((9, 3.8))
    ax = panels[0][0]
    names = [r["figure"] for r in rows]
    ratios = [float(r["paired"]) for r in rows]
    colors = ["tab:blue" if value >= TARGET else "tab:orange" for value in ratios]
    ax.bar(names, ratios, color=colors)
    for x, value in enumerate(ratios):
        ax.text(x, value + 0.005, f"{value:.3f}", ha="center", fontsize=8)
    ax.axhline(TARGET, color="tab:red", linestyle="--", label=f"target {TARGET} (2% cost)")
    plot.ratio_line(ax, color="gray", label="no cost (1.00)")
    low = min(ratios + [TARGET])
    ax.set_ylim(max(0, low - 0.06), max(ratios + [1.0]) + 0.04)
    ax.tick_params(axis="x", labelsize=8, rotation=15)
    ax.set_ylabel("rate with metrics on / off")
    ax.set_title(f"What metrics cost: the median of each round's on / off, {rows[0]['rounds']} "
                 "alternating rounds\n(one memory server, tcp on loopback; orange: below target)",
                 fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    plot.save(fig, path)


def write(results, docs, smoke):
    rows = read_csv(os.path.join(results, "metrics", "cost.csv"))
    if not rows:
        return "nothing (no metrics/cost.csv)"
    os.makedirs(docs, exist_ok=True)
    png = os.path.join(docs, "metrics.png")
    draw(rows, png)
    table = plot.table(
        ["figure", "unit", "metrics off", "metrics on", "on / off", "paired", "range off",
         "range on", "target 0.98"],
        [[r["figure"], r["unit"], f"{float(r['off']):,.0f}", f"{float(r['on']):,.0f}",
          f"{float(r['ratio']):.3f}", f"{float(r['paired']):.3f}",
          f"{float(r['off_min']):,.0f}-{float(r['off_max']):,.0f}",
          f"{float(r['on_min']):,.0f}-{float(r['on_max']):,.0f}",
          "met" if float(r["paired"]) >= TARGET else "missed"] for r in rows])
    body = (f"{BEGIN} from bench/results/metrics/cost.csv{' (a smoke run)' if smoke else ''} "
            f"-->\n\n![metrics on / off](metrics.png)\n\n{table}\n\n{END}")
    page = write_section(docs, "metrics.md", BEGIN, END, body)
    return f"{page} and {png}"
