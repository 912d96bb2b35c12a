"""docs/bench/intent.md (the part between its "workloads" markers) and intent_workloads.png, from
intent/workloads.csv (placement_bench intent-workload on two emulated topologies, each
workload placed by intent and on every fixed set of memory servers). The rest of intent.md,
with the cost of a placed allocation (intent/cost.csv), is written by hand; when the docs
directory has no intent.md, the repository's is the template.
"""
import math
import os

from . import read_csv, plot, write_section
from .plot import table_lines

SUITES = ("intent",)
BEGIN = "<!-- workloads: written by scripts/bench-report intent -->"
BEGIN_PREFIX = "<!-- workloads: written by "
END = "<!-- end of workloads -->"
# "At least as fast as the best fixed placement": the same servers measured again differ by a
# few percent on this shared machine, so a ratio of 0.95 or more counts as met.
TOLERANCE = 0.95


def has_results(results):
    return os.path.exists(os.path.join(results, "intent", "workloads.csv"))


def speed(workload, value):
    """Higher is better for both: MB/s, or gets per second from microseconds per get."""
    return value if workload == "bandwidth" else 1e6 / value


def servers(row):
    return row["servers"].replace("+", ", ")


def cases_of(rows):
    """[(topology, workload, intent row, fixed rows)] in the order of the CSV file."""
    cases = []
    for row in rows:
        key = (row["topology"], row["workload"])
        if key not in [case[:2] for case in cases]:
            mine = [r for r in rows if (r["topology"], r["workload"]) == key]
            intent = next((r for r in mine if r["placement"] == "intent"), None)
            fixed = [r for r in mine if r["placement"] != "intent"]
            if intent and fixed:
                cases.append((*key, intent, fixed))
    return cases


def summary_row(topology, workload, intent, fixed, unit):
    s = lambda r: speed(workload, float(r["value"]))  # noqa: E731
    best, worst = max(fixed, key=s), min(fixed, key=s)
    to_best, to_worst = s(intent) / s(best), s(intent) / s(worst)
    met = to_best >= TOLERANCE and to_worst >= 1.5
    return [topology, workload, servers(intent), f"{float(intent['value']):.1f} {unit}",
            f"{float(best['value']):.1f} ({servers(best)})",
            f"{float(worst['value']):.1f} ({servers(worst)})", f"{to_best:.2f}",
            f"{to_worst:.2f}", "met" if met else "MISSED"]


def draw(ax, topology, workload, intent, fixed, unit):
    labels = ["intent\n(" + intent["servers"] + ")"] + [r["servers"] for r in fixed]
    values = [float(intent["value"])] + [float(r["value"]) for r in fixed]
    colors = ["tab:red"] + ["tab:blue"] * len(fixed)
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, fontsize=7, rotation=45, ha="right")
    if workload == "latency":
        ax.set_yscale("log")  # 14 us beside 1,000 us
    ax.set_title(f"{topology}: {workload}-bound "
                 f"({'higher' if workload == 'bandwidth' else 'lower'} is better)")
    ax.set_ylabel(unit + (" (log scale)" if workload == "latency" else ""))
    ax.set_xlabel("memory servers of the region (red: placed by intent)")


def write(results, docs, smoke):
    rows = read_csv(os.path.join(results, "intent", "workloads.csv"))
    cases = cases_of(rows)
    panel_rows = max(1, math.ceil(len(cases) / 2))
    fig, axes = plot.figure((13, 3.4 * panel_rows), panel_rows, 2)
    details, summary = [], []
    for ax, (topology, workload, intent, fixed) in zip(axes.flat, cases):
        unit = "MB/s" if workload == "bandwidth" else "us per get"
        summary.append(summary_row(topology, workload, intent, fixed, unit))
        draw(ax, topology, workload, intent, fixed, unit)
        details.append(f"\n**{topology}, {workload}-bound** ({unit}; the reason fam_stat gave: "
                       f"`{intent['reason'].replace(';', ',')}`)\n")
        details += table_lines(["placement", "servers", unit],
                               [[r["placement"], servers(r), f"{float(r['value']):.1f}"]
                                for r in [intent] + fixed])
    fig.tight_layout()
    os.makedirs(docs, exist_ok=True)
    png = os.path.join(docs, "intent_workloads.png")
    plot.save(fig, png)
    header = ["topology", "workload", "intent placed on", "intent", "best fixed (servers)",
              "worst fixed (servers)", "intent / best", "intent / worst", "targets"]
    body = "\n".join([BEGIN, "", "![intent against every fixed placement](intent_workloads.png)",
                      "", *table_lines(header, summary), *details, "", END])
    page = write_section(docs, "intent.md", BEGIN_PREFIX, END, body)
    return f"{png} and {page} ({len(cases)} workloads)"
