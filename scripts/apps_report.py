"""Writes docs/apps.md (and docs/bench/apps_ratios.png) from the RESULT lines scripts/apps
collected: every measurement in a table, then the comparisons issue 14 asks for, each a ratio of
two runs made by the same scripts/apps invocation on this machine."""
import datetime
import os
import platform
import subprocess

INTRO = """# The seed applications, measured

Written by `scripts/apps --bench --write-docs` ({when}, {host}, {cpus} cores). Each row is one
RESULT line of one run; every run also passed its correctness check (a run that fails its check
fails the script and writes nothing). *rate* is the application's own unit per second over its
timed part (see each application's README under `apps/`). Ratios compare two rows of this same
run: the machine is shared and absolute rates drift between runs, ratios much less.

Settings: *embedded* is the embedded model (no servers, PEs load and store on shared heaps);
*cluster P* is `fampool up --memservers 3 --interleave 4096 --provider P` on this host, PEs
started by `fampool run` (over `shm` the PEs map the servers' heaps: `fabric_direct`).
"""

KEYS_SHOWN = ["variant", "matrix", "interleave", "x", "keys", "updates", "rows", "nonzeros",
              "table_words", "seconds", "io_seconds", "compute_seconds"]


def _rate(result):
    try:
        return float(result.get("rate", "nan"))
    except ValueError:
        return float("nan")


def _find(results, app, setting_part, **match):
    for setting, result in results:
        if result.get("app") != app or setting_part not in setting:
            continue
        if all(result.get(k) == v for k, v in match.items()):
            return result
    return None


def _setting(label):
    """"embedded, 2 PEs" from a run's label "spmv --grid 200 [embedded, 2 PEs]"."""
    return label.split("[")[-1].rstrip("]")


def _comparisons(results, pes):
    """(what, setting, numerator row, denominator row, target text) for each ratio."""
    rows = []
    places = []
    for label, _ in results:
        if _setting(label) not in places and _setting(label).endswith(f"{pes} PEs"):
            places.append(_setting(label))
    for setting in places:
        agg = _find(results, "gups", setting, variant="aggregated")
        atomic = _find(results, "gups", setting, variant="atomic")
        if agg and atomic:
            rows.append(("GUPS: aggregated OP_ADD_INDEXED / per-update fam_xor", setting, agg,
                         atomic, ">= 5x on the cluster"))
        for matrix in ["laplace", "random"]:
            on = _find(results, "spmv", setting, matrix=matrix, interleave="on")
            off = _find(results, "spmv", setting, matrix=matrix, interleave="off")
            if on and off:
                rows.append((f"SpMV ({matrix}): interleave on / off", setting, on, off, ""))
        for setting_run, result in results:
            if (result.get("app") != "radix_sort" or setting not in setting_run or
                    result.get("variant") != "hybrid" or result.get("phase") != "total"):
                continue
            shmem = _find(results, "radix_sort", setting, variant="shmem", phase="total",
                          keys=result.get("keys"))
            if shmem:
                rows.append((f"radix sort, {result.get('keys')} keys: hybrid / SHMEM-only",
                             setting, result, shmem, "> 1 at the largest size"))
    for setting in [p for p in places if p.startswith("cluster")]:
        for matrix in ["laplace", "random"]:
            cluster = _find(results, "spmv", setting, matrix=matrix, interleave="on")
            embedded = _find(results, "spmv", f"embedded, {pes} PEs", matrix=matrix,
                             interleave="on")
            if cluster and embedded:
                rows.append((f"SpMV ({matrix}): cluster / embedded", setting, cluster, embedded,
                             ">= 0.1x over shm"))
    return rows


def _plot(comparisons, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [f"{what}\n[{setting}]" for what, setting, _, _, _ in comparisons]
    ratios = [_rate(a) / _rate(b) for _, _, a, b, _ in comparisons]
    fig, axis = plt.subplots(figsize=(9, 0.5 + 0.55 * len(labels)))
    axis.barh(range(len(labels)), ratios, color="#4477aa")
    axis.set_yticks(range(len(labels)), labels, fontsize=7)
    axis.invert_yaxis()
    axis.set_xscale("log")
    axis.axvline(1.0, color="black", linewidth=0.8)
    axis.set_xlabel("ratio of rates (log scale; right of 1: the first named is faster)")
    for i, ratio in enumerate(ratios):
        axis.text(ratio, i, f" {ratio:.3g}x", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_report(results, args, path):
    lines = [INTRO.format(when=datetime.date.today().isoformat(), host=platform.node(),
                          cpus=os.cpu_count())]
    comparisons = _comparisons(results, args.pes)
    lines.append("## Comparisons\n")
    plot = os.path.join(os.path.dirname(path), "bench", "apps_ratios.png")
    if comparisons and _plot(comparisons, plot):
        lines.append("![ratios](bench/apps_ratios.png)\n")
    lines.append("| comparison | setting | ratio | first rate | second rate | target |")
    lines.append("|---|---|---|---|---|---|")
    for what, setting, a, b, target in comparisons:
        lines.append(f"| {what} | {setting} | {_rate(a) / _rate(b):.3g}x | {_rate(a):.4g} "
                     f"{a.get('unit', '')} | {_rate(b):.4g} {b.get('unit', '')} | {target} |")
    lines.append("\n## Every measurement\n")
    for app in sorted({r.get("app") for _, r in results}):
        lines.append(f"### {app}\n")
        rows = [(s, r) for s, r in results
                if r.get("app") == app and r.get("phase", "total") == "total"]
        keys = [k for k in KEYS_SHOWN if any(k in r for _, r in rows)]
        lines.append("| setting | " + " | ".join(keys) + " | rate |")
        lines.append("|---|" + "---|" * len(keys) + "---|")
        for setting, r in rows:
            cells = [r.get(k, "") for k in keys]
            lines.append(f"| {_setting(setting)} | " + " | ".join(cells) +
                         f" | {_rate(r):.4g} {r.get('unit', '')} |")
        lines.append("")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=os.path.dirname(path)).stdout.strip()
    lines.append(f"Commit measured: {commit or 'unknown'}.\n")
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
    print(f"apps: wrote {path}")
