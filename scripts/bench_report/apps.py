"""docs/apps.md, docs/bench/apps_ratios.png and docs/bench/apps_sorts.png, from
apps/apps.json: the RESULT lines of one scripts/apps --bench run (scripts/bench apps) with the
date, host, cores and commit of that run. The page has every measurement in a table, then the
comparisons issue 14 asks for, each a ratio of two runs made by the same scripts/apps
invocation on this machine.

The page goes beside the docs directory when that is a "bench" folder (docs/apps.md beside
docs/bench/, as in the repository), into it otherwise; its plots go into the docs directory.
"""
import json
import os

from . import plot
from .plot import table_lines

SUITES = ("apps",)


def has_results(results):
    return os.path.exists(os.path.join(results, "apps", "apps.json"))


INTRO = """# The seed applications, measured

Measured by `scripts/bench apps` ({when}, {host}, {cpus} cores; raw results:
`bench/results/apps/apps.json`) and written by `scripts/bench-report apps`. Each row is one
RESULT line of one run; every run also passed its correctness check (a run that fails its check
fails the script and writes nothing). *rate* is the application's own unit per second over its
timed part (see each application's README under `apps/`). Ratios compare two rows of this same
run: the machine is shared and absolute rates drift between runs, ratios much less.

Settings: *embedded* is the embedded model (no servers, PEs load and store on shared heaps);
*cluster P* is `fampool up --memservers 3 --interleave 4096 --provider P` on this host, PEs
started by `fampool run` (over `shm` the PEs map the servers' heaps: `fabric_direct`).
"""

READING = """## Reading the results

- **GUPS**: over `tcp` every per-update `fam_xor` is a fabric atomic that the memory server's
  progress thread answers, while an aggregated batch is one request per server whose adds the
  server's CPU applies: the ratio is two orders of magnitude (target: at least 5x on a 3-server
  cluster). Over `shm` the PEs map the servers' heaps (`fabric_direct`), so a per-update atomic
  is a CPU atomic and aggregation only saves call overhead; the same holds on the embedded model.
- **SpMV, interleaving**: with 2 PEs and 3 servers sharing this 2-core host, striping each item
  splits every group's gather into one request per server, so each group pays three requests'
  fixed cost instead of one, and loopback has no per-server link for interleaving to spread load
  over (the in-cast it cures in seed 000's Fig. 7 needs many PEs and separate server links:
  issue 17's emulated fabric). On the embedded model a region is one heap whatever the
  attribute: the difference between its two rows is this machine's run-to-run noise (up to
  about 20% between runs of this page).
- **SpMV, cluster vs embedded**: the target (at least 0.1x of the embedded rate) is for 3
  interleaved servers over `shm`; `tcp` is reported beside it.
- **FAMSort** sorts 100-byte records (keys and indices) under a per-PE DRAM cap (16 MiB by
  default), spilling sorted buckets to FAM and merging them by prefix; the radix sort keeps all
  of its 64-bit keys in DRAM. Below the cap the radix sort is faster; FAMSort's point (seed 001's
  Fig. 18) is the sizes beyond the PEs' combined DRAM, where the radix sort cannot run at all: at
  16 M records it sorts 288 MB of keys and indices with 32 MiB of cap in all. Its DRAM is
  `anon_rss_mb` (the process's anonymous memory: the cap plus the library's own few MB; a
  client over `tcp` adds libfabric's buffers); `peak_rss_mb` also counts the pages of FAM the
  PE touched through its mappings (the embedded model and `shm`), which are the heap files'
  memory, not the PE's.
- **Radix sort**: the hybrid version reads its input and writes its output in FAM, the SHMEM-only
  one in files. On the embedded model and over `shm`, FAM is memory the PEs map, faster than the
  files (which sit in the page cache or on a fast virtual disk here), and the hybrid sort wins at
  every size. Over `tcp` on loopback FAM moves a few hundred MB/s through the servers, slower
  than those files, and each pass's histogram and count exchange through FAM costs a round trip
  per call where the symmetric heap costs microseconds: there the hybrid sort is slower. Seed
  001's result (hybrid faster) rests on FAM being faster than the parallel file system.
"""

# Fields every table leaves out: the setting column and the rate column already say them.
KEYS_HIDDEN = {"app", "model", "pes", "unit", "rate", "bandwidth_unit", "region"}


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
    for setting in places:
        for setting_run, result in results:
            if result.get("app") != "famsort" or _setting(setting_run) != setting:
                continue
            radix = _find(results, "radix_sort", setting, variant="hybrid", phase="total",
                          keys=result.get("records"))
            if radix:
                rows.append((f"FAMSort under a {result.get('dram_cap_mb')} MB cap per PE / "
                             f"hybrid radix sort in DRAM, {result.get('records')} keys", setting,
                             result, radix, "sorts beyond the PEs' combined cap"))
    for setting in [p for p in places if p.startswith("cluster")]:
        for matrix in ["laplace", "random"]:
            cluster = _find(results, "spmv", setting, matrix=matrix, interleave="on")
            embedded = _find(results, "spmv", f"embedded, {pes} PEs", matrix=matrix,
                             interleave="on")
            if cluster and embedded:
                rows.append((f"SpMV ({matrix}): cluster / embedded", setting, cluster, embedded,
                             ">= 0.1x over shm"))
    return rows


def _sort_series(results, setting, app, variant, phases, size_key):
    """[(size, seconds)] of one sort program in one setting, seconds summed over `phases`."""
    points = {}
    for label, r in results:
        if r.get("app") != app or _setting(label) != setting:
            continue
        if variant and r.get("variant") != variant:
            continue
        if r.get("phase", "total") in phases:
            size = int(r.get(size_key, "0"))
            points[size] = points.get(size, 0.0) + float(r.get("seconds", "nan"))
    return sorted(points.items())




def _plot_ratios(comparisons, path):
    labels = [f"{what}\n[{setting}]" for what, setting, _, _, _ in comparisons]
    ratios = [_rate(a) / _rate(b) for _, _, a, b, _ in comparisons]
    fig, panels = plot.figure((9, 0.5 + 0.55 * len(labels)))
    axis = panels[0][0]
    # Bars grow from 1 (equal rates): right, the first named is faster; left, slower.
    axis.barh(range(len(labels)), [r - 1 for r in ratios], left=1, color="#4477aa")
    axis.set_yticks(range(len(labels)), labels, fontsize=7)
    axis.invert_yaxis()
    axis.set_xscale("log")
    plot.ratio_line(axis, vertical=True,
                    label="ratio of rates (log scale; right of 1: the first named is faster)")
    for i, ratio in enumerate(ratios):
        # The number beyond the bar's far end: right of it above 1, left of it below.
        axis.text(ratio, i, f" {ratio:.3g}x ", va="center", fontsize=7,
                  ha="left" if ratio >= 1 else "right")
    fig.tight_layout()
    plot.save(fig, path, dpi=120)


def _plot_sorts(results, pes, path):
    """Time against problem size for the sorts (the shape of seed 001's Fig. 13, 14 and 18):
    total time, and the time spent reading input and writing output."""
    places = []
    for label, r in results:
        place = _setting(label)
        if (r.get("app") in ("radix_sort", "famsort") and place.endswith(f"{pes} PEs") and
                place not in places):
            places.append(place)
    if not places:
        return False
    fig, axes = plot.figure((4.2 * len(places), 6.5), 2, len(places))
    series = [("radix_sort", "shmem", "SHMEM-only radix (files)", "keys"),
              ("radix_sort", "hybrid", "hybrid radix (FAM)", "keys"),
              ("famsort", None, "FAMSort (DRAM cap)", "records")]
    for column, place in enumerate(places):
        for row, phases in enumerate([{"total"}, {"input", "output"}]):
            axis = axes[row][column]
            for app, variant, name, size_key in series:
                if row == 1 and app == "famsort":
                    continue
                points = _sort_series(results, place, app, variant, phases, size_key)
                if points:
                    axis.plot([x for x, _ in points], [y for _, y in points], marker="o",
                              label=name)
            plot.log2_axis(axis)
            axis.set_yscale("log")
            axis.set_title(f"{place}: {'total time' if row == 0 else 'input + output time'}",
                           fontsize=8)
            axis.set_xlabel("keys (records for FAMSort)", fontsize=8)
            axis.set_ylabel("seconds (slowest PE)", fontsize=8)
            axis.tick_params(labelsize=7)
            axis.legend(fontsize=7)
    fig.tight_layout()
    plot.save(fig, path)
    return True


def page_path(docs):
    docs = os.path.normpath(docs)
    return os.path.join(os.path.dirname(docs) if os.path.basename(docs) == "bench" else docs,
                        "apps.md")


def write_page(data, docs):
    """Writes the page and its plots from the contents of an apps.json; returns the page."""
    results = [tuple(entry) for entry in data["results"]]
    pes = data["pes"]
    path = page_path(docs)
    os.makedirs(docs, exist_ok=True)

    def link(name):  # a plot's address as the page sees it
        return os.path.relpath(os.path.join(docs, name), os.path.dirname(path))

    lines = [INTRO.format(when=data.get("date", "date unknown"),
                          host=data.get("host", "host unknown"), cpus=data.get("cpus", "?"))]
    comparisons = _comparisons(results, pes)
    lines.append(READING)
    lines.append("## Comparisons\n")
    if comparisons:
        _plot_ratios(comparisons, os.path.join(docs, "apps_ratios.png"))
        lines.append(f"![ratios]({link('apps_ratios.png')})\n")
    lines += table_lines(["comparison", "setting", "ratio", "first rate", "second rate",
                          "target"],
                         [[what, setting, f"{_rate(a) / _rate(b):.3g}x",
                           f"{_rate(a):.4g} {a.get('unit', '')}",
                           f"{_rate(b):.4g} {b.get('unit', '')}", target]
                          for what, setting, a, b, target in comparisons])
    if _plot_sorts(results, pes, os.path.join(docs, "apps_sorts.png")):
        lines.append("\n## Sorts against problem size\n")
        lines.append("Time of the slowest PE against the number of keys, as seed 001's Fig. 13 "
                     "(total), Fig. 14 (reading the input and writing the output: files for the "
                     "SHMEM-only sort, FAM for the hybrid one) and Fig. 18 (FAMSort):\n")
        lines.append(f"![sorts]({link('apps_sorts.png')})\n")
    lines.append("\n## Every measurement\n")
    for app in sorted({r.get("app") for _, r in results}):
        lines.append(f"### {app}\n")
        rows = [(s, r) for s, r in results
                if r.get("app") == app and r.get("phase", "total") == "total"]
        keys = []
        for _, r in rows:
            keys += [k for k in r if k not in KEYS_HIDDEN and k not in keys]
        keys = keys[:12]
        lines += table_lines(["setting"] + keys + ["rate"],
                             [[_setting(s)] + [r.get(k, "") for k in keys] +
                              [f"{_rate(r):.4g} {r.get('unit', '')}"] for s, r in rows])
        lines.append("")
    lines.append(f"Commit measured: {data.get('commit') or 'unknown'}.\n")
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
    return path


def write(results, docs, smoke):
    with open(os.path.join(results, "apps", "apps.json"), encoding="utf-8") as f:
        data = json.load(f)
    path = write_page(data, docs)
    return f"{path}, {os.path.join(docs, 'apps_ratios.png')} and apps_sorts.png"
