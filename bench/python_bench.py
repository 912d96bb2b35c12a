#!/usr/bin/env python3
"""numpy get/put through the fampool Python package against the same C++ call in the same
process (issue 19's target: at least 0.9x), on the embedded model or the cluster FAMPOOL_CONFIG
names.

  PYTHONPATH=build/python bench/python_bench.py [--sizes 1048576,67108864] [--seconds 1]
                                                [--rounds 5] [--csv PATH] [--label L]

Each round times, for each size and direction, blocking transfers of the whole size for about
--seconds: `fam.put(item, array)` / `fam.get_into(item, array)` with a numpy uint8 array, and
the C++ `fam_put_blocking` / `fam_get_blocking` from a C++ buffer (Fam._time_native), in
alternating order; the medians over the rounds are printed. "array put" / "array get" time
the same bytes through a FamArray of rows of 4 KiB: `a[:] = array` and `array = a[:]` (a new
numpy array each time), against the same C++ put / get; "array read" is `a.read(out=array)`
(into the caller's array). Columns: op; bytes; python_GBps and
cpp_GBps (GB/s, 1e9 bytes); ratio = python / cpp. --csv PATH writes them, with the --label of
the model, for scripts/bench-report (`scripts/bench python` runs both models).
"""
import argparse
import csv
import os
import statistics
import tempfile
import time

import numpy as np

import fampool


def python_rate(fam, item, op, array, seconds):
    if op in ("put", "get"):
        call = fam.put if op == "put" else fam.get_into
    else:  # the whole of a FamArray over the item: a[:] = array, or array = a[:]
        rows = array.reshape(-1, 4096)
        view = fampool.FamArray(fam, item, np.uint8, rows.shape)
        calls = {"array put": lambda _, data: view.__setitem__(slice(None), rows),
                 "array get": lambda _, data: view[:],
                 "array read": lambda _, data: view.read(out=rows)}
        call = calls[op]
    repeats, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        call(item, array)
        repeats += 1
    return repeats * array.nbytes / (time.perf_counter() - start)


def native_rate(fam, item, op, nbytes, seconds):
    repeats = 1
    while True:
        elapsed = fam._time_native(item, op, nbytes, repeats)
        if elapsed >= seconds / 4 or repeats > 1 << 20:
            break
        repeats *= 2
    repeats = max(1, int(repeats * seconds / max(elapsed, 1e-9)))
    return repeats * nbytes / fam._time_native(item, op, nbytes, repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1048576,67108864")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--csv", help="write the figures here (scripts/bench-report python "
                        "plots them)")
    parser.add_argument("--label", default="embedded", help="the model, in the CSV")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    home = None
    if "FAMPOOL_CONFIG" not in os.environ and "FAMPOOL_HOME" not in os.environ:
        home = tempfile.TemporaryDirectory(prefix="python-bench-")
        os.environ["FAMPOOL_HOME"] = home.name
    with fampool.Fam() as fam:
        region = fam.create_region("python_bench", 2 * max(sizes) + (64 << 20))
        item = fam.allocate(region, "x", max(sizes))
        print(f"{'op':9} {'bytes':>10} {'python_GBps':>12} {'cpp_GBps':>9} {'ratio':>6}")
        results = []
        for size in sizes:
            array = np.ones(size, dtype=np.uint8)
            for op in ("put", "get", "array put", "array get", "array read"):
                ours, native = [], []
                baseline = "put" if op.endswith("put") else "get"
                for round_ in range(args.rounds):
                    pair = [lambda: ours.append(python_rate(fam, item, op, array, args.seconds)),
                            lambda: native.append(native_rate(fam, item, baseline, size,
                                                              args.seconds))]
                    for run in (pair if round_ % 2 == 0 else pair[::-1]):
                        run()
                p, c = statistics.median(ours), statistics.median(native)
                print(f"{op:9} {size:>10} {p / 1e9:>12.2f} {c / 1e9:>9.2f} {p / c:>6.3f}")
                results.append((op, size, p, c))
        fam.deallocate(item)
        fam.destroy_region(region)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["label", "op", "bytes", "python_gbps", "cpp_gbps", "ratio"])
            writer.writerows([args.label, op, size, f"{p / 1e9:.4f}", f"{c / 1e9:.4f}",
                              f"{p / c:.4f}"] for op, size, p, c in results)

if __name__ == "__main__":
    main()
