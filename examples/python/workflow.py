"""The HPC workflow of seed 002 in Python: ingest, analyse, plot and archive through FAM alone.

Each stage is a separate job (one launch each, any number of PEs under mpirun); they share
nothing but fabric-attached memory, found by region and item name:

    python workflow.py ingest --samples 1000000   # instruments -> a persistent region
    python workflow.py analyse                    # statistics of what is new, kept in FAM
    python workflow.py ingest --samples 500000    # more data arrives ...
    python workflow.py analyse                    # ... and only that is analysed
    python workflow.py plot --out workflow.png    # traces and histograms, from FAM
    python workflow.py archive                    # the readings to the archive (fam_backup)
    python workflow.py clean                      # region and backup gone

Under mpirun (`mpirun -n 4 python workflow.py analyse`, or `fampool run -n 4 python ...` on a
cluster) the PEs split the samples. The incremental analysis is the seed's "previously
computed results stored in FAM": the running statistics and histograms live in the region, so
each analysis reads only the samples ingested since the last one. workflow.ipynb drives the
same functions from a notebook.
"""
import argparse
import sys

import numpy as np

import fampool

REGION = "workflow"
CHANNELS = 4
CAPACITY = 1 << 22  # samples per channel the region holds (16 MiB of float32 each)
BINS = 64
LOW, HIGH = -4.0, 4.0  # the histograms' range; values outside count in the end bins
STATS = ["count", "sum", "sum of squares", "min", "max"]
CHUNK = 1 << 18  # samples per channel read or written at a time


def readings(first, count, seed=1):
    """Samples first .. first + count of every channel: a slow wave, a faster one, and noise
    that is a function of (seed, channel, sample) alone, so any PE can make any range and a
    test can make them again."""
    t = np.arange(first, first + count, dtype=np.float64)
    out = np.empty((CHANNELS, count), dtype=np.float32)
    for c in range(CHANNELS):
        noise = np.modf(np.sin(t * 12.9898 + c * 78.233 + seed * 37.719) * 43758.5453)[0]
        out[c] = (c - 1.5) + np.sin(t / (5000.0 * (c + 1))) + 0.25 * np.sin(t / 97.0) + noise
    return out


def share(first, end, fam):
    """This PE's part of samples first .. end."""
    n, me = fam.pe_count, fam.pe_id
    per = -(-(end - first) // n)
    return min(end, first + me * per), min(end, first + (me + 1) * per)


def open_store(fam, create=False):
    """The arrays of the region: readings (channels x capacity), state [ingested, analysed],
    stats (channels x STATS), histogram (channels x BINS). PE 0 creates them when asked."""
    if create and fam.pe_id == 0:
        try:
            fam.lookup_region(REGION)
        except fampool.FamError as e:
            if e.name != "FAM_ERR_NOTFOUND":
                raise
            region = fam.create_region(REGION, 128 << 20, 0o755, memory_type="persistent")
            fampool.empty(fam, region, "readings", (CHANNELS, CAPACITY), "float32", 0o644)
            fampool.zeros(fam, region, "state", 2, "int64", 0o644)
            stats = fampool.zeros(fam, region, "stats", (CHANNELS, len(STATS)), "float64", 0o644)
            stats[:, 3], stats[:, 4] = np.inf, -np.inf
            fampool.zeros(fam, region, "histogram", (CHANNELS, BINS), "int64", 0o644)
    fam.barrier_all()
    try:
        return {name: fampool.open_array(fam, REGION, name)
                for name in ("readings", "state", "stats", "histogram")}
    except fampool.FamError as e:
        if e.name == "FAM_ERR_NOTFOUND":
            sys.exit(f"workflow: {e.message}: run `workflow.py ingest` first")
        raise


def ingest(fam, samples, seed=1):
    """Appends `samples` new samples per channel; returns how many the region now holds."""
    store = open_store(fam, create=True)
    first = int(store["state"][0])
    if first + samples > CAPACITY:
        sys.exit(f"workflow: the region holds {CAPACITY} samples per channel; {first} are in, "
                 f"{samples} more do not fit (run `workflow.py clean` to start again)")
    lo, hi = share(first, first + samples, fam)
    for start in range(lo, hi, CHUNK):
        end = min(hi, start + CHUNK)
        store["readings"][:, start:end] = readings(start, end - start, seed)
    fam.barrier_all()
    if fam.pe_id == 0:
        store["state"][0] = first + samples
    fam.barrier_all()
    return first + samples


def scratch(fam, name, shape, dtype):
    """A zeroed scratch array of this analysis (PE 0 makes it, dropping one an analysis that
    did not finish left); every PE opens it after the barrier."""
    if fam.pe_id == 0:
        try:
            fam.deallocate(fam.lookup(name, REGION))
        except fampool.FamError as e:
            if e.name != "FAM_ERR_NOTFOUND":
                raise
        fampool.zeros(fam, REGION, name, shape, dtype)


def analyse(fam):
    """Folds the samples ingested since the last analysis into the statistics and histograms
    kept in FAM (histograms memory-side, by aggregation); returns (new samples, stats).

    The PEs' statistics (one row each) and histogram counts (added memory-side into one
    scratch histogram) meet in scratch arrays, which PE 0 folds into the kept ones, then
    records the samples as analysed: an analysis that stops before the fold leaves the kept
    results as they were, and the next one starts again from the same samples (only a stop
    within PE 0's three writes of the fold would count them twice)."""
    store = open_store(fam)
    ingested, analysed = (int(v) for v in store["state"][:])
    scratch(fam, "partials", (fam.pe_count, CHANNELS, len(STATS)), "float64")
    scratch(fam, "new-counts", (CHANNELS, BINS), "int64")
    fam.barrier_all()
    partials = fampool.open_array(fam, REGION, "partials")
    counts = fampool.open_array(fam, REGION, "new-counts")
    lo, hi = share(analysed, ingested, fam)
    mine = np.zeros((CHANNELS, len(STATS)))
    mine[:, 3], mine[:, 4] = np.inf, -np.inf
    offsets = (np.arange(CHANNELS) * BINS)[:, None]
    for start in range(lo, hi, CHUNK):
        block = store["readings"][:, start:min(hi, start + CHUNK)].astype(np.float64)
        mine[:, 0] += block.shape[1]
        mine[:, 1] += block.sum(axis=1)
        mine[:, 2] += (block * block).sum(axis=1)
        mine[:, 3] = np.minimum(mine[:, 3], block.min(axis=1))
        mine[:, 4] = np.maximum(mine[:, 4], block.max(axis=1))
        bins = np.clip(((block - LOW) / (HIGH - LOW) * BINS).astype(np.int64), 0, BINS - 1)
        counts.add_at((bins + offsets).ravel(), 1)
    partials[fam.pe_id] = mine
    fam.barrier_all()
    stats = store["stats"]
    if fam.pe_id == 0:
        parts = np.concatenate([stats.read()[None], partials.read()])
        merged = np.concatenate([parts[:, :, :3].sum(axis=0), parts[:, :, 3:4].min(axis=0),
                                 parts[:, :, 4:5].max(axis=0)], axis=1)
        store["histogram"].write(store["histogram"].read() + counts.read())
        stats.write(merged)
        store["state"][1] = ingested
        partials.deallocate()
        counts.deallocate()
    fam.barrier_all()
    return ingested - analysed, stats.read()


def report(new, stats):
    print(f"analysed {new} new samples per channel")
    print("channel    samples       mean        std        min        max")
    for c, (count, total, squares, low, high) in enumerate(stats):
        mean = total / count if count else float("nan")
        std = np.sqrt(max(squares / count - mean * mean, 0.0)) if count else float("nan")
        print(f"{c:7d} {int(count):10d} {mean:10.4f} {std:10.4f} {low:10.4f} {high:10.4f}")


def figure(fam, window=100_000, points=2000):
    """A matplotlib figure of what FAM holds: each channel's first `window` samples (every
    k-th, read with one strided slice) and its histogram."""
    store = open_store(fam)  # first: every PE meets at its barrier even if matplotlib fails
    import matplotlib
    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ingested, analysed = (int(v) for v in store["state"][:])
    window = min(window, ingested)
    step = max(1, window // points)
    fig, (traces, histograms) = plt.subplots(1, 2, figsize=(12, 4.5))
    edges = np.linspace(LOW, HIGH, BINS + 1)
    for c in range(CHANNELS):
        trace = store["readings"][c, 0:window:step]
        traces.plot(np.arange(len(trace)) * step, trace, lw=0.6, label=f"channel {c}")
        counts = store["histogram"][c]
        histograms.stairs(counts, edges, label=f"channel {c}")
    traces.set(title=f"Readings in FAM: the first {window} of {ingested} (every {step}th)",
               xlabel="sample", ylabel="value")
    histograms.set(title=f"Histograms kept in FAM ({analysed} samples analysed)",
                   xlabel="value", ylabel="samples")
    traces.legend(loc="upper right", fontsize=8)
    histograms.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def archive(fam):
    """Backs the readings up to the archive (replacing an earlier backup)."""
    store = open_store(fam)
    if fam.pe_id == 0:
        try:
            fam.delete_backup("workflow-readings")
        except fampool.FamError as e:
            if e.name not in ("FAM_BACKUP_NOTFOUND", "FAM_ERR_NOTFOUND"):
                raise
        fam.backup(store["readings"].item, "workflow-readings")
    fam.barrier_all()


def clean(fam):
    if fam.pe_id == 0:
        for drop in (lambda: fam.delete_backup("workflow-readings"),
                     lambda: fam.destroy_region(fam.lookup_region(REGION))):
            try:
                drop()
            except fampool.FamError as e:
                if e.name not in ("FAM_BACKUP_NOTFOUND", "FAM_ERR_NOTFOUND"):
                    raise
    fam.barrier_all()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=["ingest", "analyse", "plot", "archive", "clean"])
    parser.add_argument("--samples", type=int, default=1 << 20,
                        help="ingest: samples per channel to append (default 1048576)")
    parser.add_argument("--seed", type=int, default=1, help="ingest: the data's seed")
    parser.add_argument("--out", default="workflow.png", help="plot: the PNG to write")
    args = parser.parse_args(argv)
    with fampool.Fam() as fam:
        if args.stage == "ingest":
            total = ingest(fam, args.samples, args.seed)
            if fam.pe_id == 0:
                print(f"ingested {args.samples} samples per channel ({total} in the region)")
        elif args.stage == "analyse":
            new, stats = analyse(fam)
            if fam.pe_id == 0:
                report(new, stats)
        elif args.stage == "plot":
            if fam.pe_id == 0:
                figure(fam).savefig(args.out, dpi=120)
                print(f"wrote {args.out}")
            else:
                open_store(fam)  # meets PE 0 at its barrier
        elif args.stage == "archive":
            archive(fam)
            if fam.pe_id == 0:
                print("readings backed up as workflow-readings")
        else:
            clean(fam)


if __name__ == "__main__":
    main()
