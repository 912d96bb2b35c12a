#!/usr/bin/env python3
"""Region creation and destruction timed while the memory servers' links are full.

  tests/stall/region_calls.py --build-dir build [--runs N] [--seconds S] [--link-rate R]

Each run starts a fresh emulated cluster (`fampool up --emulate`: 8 memory servers and 8
client nodes, every link shaped to R, 64 KiB interleaving; root, for the network namespaces).
7 PEs on client nodes 1-7 write interleaved items over all 8 servers for S seconds
(`placement_bench placement --placements interleaved --ops put`): each server's incoming link
is the in-cast of 7 flows and its queue stays full. Meanwhile a PE on client node 0 (Python)
creates and destroys an interleaved region over the 8 servers again and again, and each call
is timed; beside it a second PE there allocates and deallocates 4 KiB items in a plain region
of its own, also timed. A region's creation asks each of its servers to create its extent; the
metadata service makes those calls through the servers' full links, and an allocation must not
wait for them.

Prints, per run and over all runs, the count, median, 90th percentile and largest time of
each call, and every call that failed. Exit status 1 when a call failed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MODES = ("regions", "items")  # the two probes: regions created and destroyed, items allocated
CALLS = {"create": "regions", "destroy": "regions", "allocate": "items", "deallocate": "items"}

PROBE = r"""
import json, os, sys, time
import fampool
mode, stop_file, out = sys.argv[1], sys.argv[2], sys.argv[3]
times = {"create": [], "destroy": []} if mode == "regions" else {"allocate": [], "deallocate": []}
failures = []


def timed(kind, call):
    start = time.monotonic()
    try:
        got = call()
    except Exception as error:
        failures.append(f"{kind} after {time.monotonic() - start:.2f} s: {error}")
        return None
    times[kind].append(time.monotonic() - start)
    return got


with fampool.Fam() as fam:
    own = None if mode == "regions" else fam.create_region(f"items_{os.getpid()}", 64 << 20)
    i = 0
    while not os.path.exists(stop_file):
        i += 1
        if mode == "regions":
            name = f"probe_{os.getpid()}_{i}"
            region = timed("create", lambda: fam.create_region(name, 16 << 20, 0o700,
                                                               interleave=True))
            if region is not None:
                timed("destroy", lambda: fam.destroy_region(region))
        else:
            item = timed("allocate", lambda: fam.allocate(own, f"x{i}", 4096, 0o600))
            if item is not None:
                timed("deallocate", lambda: fam.deallocate(item))
    if own is not None:
        fam.destroy_region(own)
with open(out, "w") as f:
    json.dump({"times": times, "failures": failures}, f)
"""


def summary(values):
    if not values:
        return "none"
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return (f"{len(values):4} calls, median {statistics.median(values) * 1e3:7.1f} ms, "
            f"p90 {p90 * 1e3:7.1f} ms, largest {values[-1] * 1e3:8.1f} ms")


def namespaces(run_dir):
    names = []
    with open(os.path.join(run_dir, "emulation.yaml")) as f:
        for line in f:
            if "name: client" in line:
                names.append(line.split("netns: ")[1].split(",")[0])
    return names


def one_run(args, build, index):
    fampool = os.path.join(build, "tools", "fampool")
    run_dir = tempfile.mkdtemp(prefix="fampool-regions-")
    os.chmod(run_dir, 0o755)
    config = os.path.join(run_dir, "cluster.yaml")
    env = dict(os.environ, FAMPOOL_CONFIG=config)
    try:
        subprocess.run([fampool, "up", "--run-dir", run_dir, "--base-port", "auto",
                        "--authentication", "none", "--emulate", "--memservers", "8",
                        "--clients", "8", "--link-rate", args.link_rate, "--interleave",
                        "65536"], check=True, capture_output=True, text=True, timeout=120)
        spaces = namespaces(run_dir)
        stop_file = os.path.join(run_dir, "stop")
        probe_env = dict(env, PYTHONPATH=os.path.join(build, "python"))
        probes = {mode: subprocess.Popen(
            ["ip", "netns", "exec", spaces[0], sys.executable, "-c", PROBE, mode, stop_file,
             os.path.join(run_dir, f"{mode}.json")], env=probe_env) for mode in MODES}
        load = subprocess.run(
            [os.path.join(build, "bench", "placement_bench"), "placement", "--netns",
             ",".join(spaces[1:]), "--pes", str(len(spaces) - 1), "--placements",
             "interleaved", "--ops", "put", "--seconds", str(args.seconds), "--link-bps",
             str(args.link_bps)], env=env, capture_output=True, text=True,
            timeout=args.seconds + 120)
        with open(stop_file, "w"):
            pass
        got = {"times": {}, "failures": []}
        for mode, probe in probes.items():
            probe.wait(timeout=120)
            with open(os.path.join(run_dir, f"{mode}.json")) as f:
                each = json.load(f)
            got["times"].update(each["times"])
            got["failures"] += each["failures"]
        if load.returncode != 0:
            got["failures"].append(f"the load failed ({load.returncode}): "
                                   f"{load.stdout[-500:]}{load.stderr[-500:]}")
        for kind in CALLS:
            print(f"run {index}: {kind:<10} {summary(got['times'][kind])}")
        for failure in got["failures"]:
            print(f"run {index}: FAILED {failure}")
        return got
    finally:
        subprocess.run([fampool, "down", "--run-dir", run_dir], capture_output=True, timeout=120)
        subprocess.run(["rm", "-rf", run_dir])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--link-rate", default="200mbit")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("region_calls: needs root (network namespaces)")
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    rate = args.link_rate.lower()
    args.link_bps = int(next(float(rate[:-len(u)]) * f for u, f in units.items()
                             if rate.endswith(u)))
    build = os.path.abspath(args.build_dir)
    every, failures = {kind: [] for kind in CALLS}, 0
    for index in range(1, args.runs + 1):
        got = one_run(args, build, index)
        for kind in CALLS:
            every[kind] += got["times"][kind]
        failures += len(got["failures"])
    for kind in CALLS:
        print(f"all: {kind:<10} {summary(every[kind])}")
    print(f"all: {failures} failed calls")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
