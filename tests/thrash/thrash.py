#!/usr/bin/env python3
"""The thrasher: PEs write, add, fetch-add and copy on RAID1 and RAID5 items while memory
servers are killed, stopped and restarted at random; after each round one more server is
killed and every slot and counter is checked against what the PEs were told was done.

  tests/thrash/thrash.py --build-dir build --seconds 120            (CTest thrash)
  tests/thrash/thrash.py --build-dir build --seconds 1800 --hog     (label long)
  tests/thrash/thrash.py --build-dir build --seed 12345             (replay a run's choices)
  tests/thrash/thrash.py --build-dir build --emulate                (links cut and delayed)

A cluster of --servers memory servers over tcp (`fampool up`, loopback ports of its own, no
authentication) holds a RAID1 region (volatile) and a RAID5 region (persistent), interleave
4 KiB; --pes thrash_worker processes (tests/thrash/thrash_worker.cc) each own slots of many
sizes in both and share counters. A round is --faults faults, one at a time, each chosen at
random: SIGKILL of a memory server and its restart 0.5-3 s later with the same command line,
or SIGSTOP for 1-8 s and SIGCONT; with --emulate (root; `fampool up --emulate`: every server
and the PEs' client node in a network namespace of its own) also a server's link cut for 1-8 s
(iptables drops every packet both ways; connections stay open, as through a switch that lost
power) or slowed to 1-16 Mbit/s (tbf, packets queued up to 2 s). After each fault the thrasher waits until every region is healthy again. At the end
of a round the PEs pause, one more memory server is killed, and once the metadata service
has declared it dead the PEs read back every slot and counter with it gone; then it is
restarted and the next round begins once the regions are healthy.

The verdict: zero slots or counters wrong (lost: a slot not as last acknowledged, a counter
below its acknowledged adds, a fetch_add result fetched twice; applied twice: a counter
above), zero calls failed (every fault leaves at most one member of each region
unavailable, which a redundant region must hide), no call hung (60 s), every rebuild done
within 120 s. The seed (--seed, else a fresh one) decides every choice of the thrasher and
the PEs; it is printed first, and a failure prints it again with the history: the faults and
every PE call around each failure, in time order (the full history stays in the run
directory, which is kept after a failure and removed after a pass).

Exit status 0 on a pass, 1 on a failure, 77 when --emulate cannot run here (not root).
"""
import argparse
import mmap
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# The state file's layout: tests/thrash/thrash_state.h.
MAGIC = 0x31304853415254
MOST_PES = 8
LEVELS = 2
FETCH_WORDS = ADD_WORDS = 32
HEADER = 64
PE_BYTES = 32 * 8
SEEN_BITS = 1 << 18
STATE_BYTES = 8192 + LEVELS * FETCH_WORDS * (SEEN_BITS // 8)
RUN, PAUSE, CHECK, STOP = 1, 2, 3, 4
PE_WORDS = ["acted", "ops", "puts", "gets", "fetch_adds", "adds", "copies", "failed",
            "wrong_reads", "wrong_slots", "wrong_counters", "duplicates", "checks",
            "slots_checked", "phase", "op_started_ns", "counters_above", "counters_below"]

HANG_S = 60
HEALTHY_WAIT_S = 120
DEGRADED_WAIT_S = 30
COMMAND_WAIT_S = 120


def log(message):
    print(f"thrash: {message}", flush=True)


def free_base_port(servers):
    """A base port whose ports `fampool up` takes (P..P+servers, P+100.., P+300, P+400..) are
    free now."""
    for _ in range(100):
        base = random.SystemRandom().randint(10000, 19000)
        ports = [*range(base, base + servers + 1), *range(base + 100, base + 100 + servers),
                 base + 300, *range(base + 400, base + 400 + servers)]
        try:
            for port in ports:
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    sys.exit("thrash: no free base port found in 10000-19000")


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


class State:
    """The mapped state file."""

    def __init__(self, path):
        with open(path, "wb") as f:
            f.truncate(STATE_BYTES)
        self.file = open(path, "r+b")
        self.map = mmap.mmap(self.file.fileno(), STATE_BYTES)
        struct.pack_into("<Q", self.map, 0, MAGIC)
        self.sequence = 0

    def command(self, kind):
        self.sequence += 1
        struct.pack_into("<Q", self.map, 8, self.sequence << 8 | kind)
        return self.sequence

    def pe(self, pe, word):
        return struct.unpack_from("<Q", self.map, HEADER + pe * PE_BYTES
                                  + PE_WORDS.index(word) * 8)[0]

    def total(self, word, pes):
        return sum(self.pe(pe, word) for pe in range(pes))


class Thrasher:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
        self.random = random.Random(self.seed)
        self.build = os.path.abspath(args.build_dir)
        self.fampool_bin = os.path.join(self.build, "tools", "fampool")
        self.worker_bin = os.path.join(self.build, "tests", "thrash", "thrash_worker")
        self.run_dir = None
        self.env = None
        self.state = None
        self.workers = []  # Popen per PE
        self.children = []  # restarted servers, reaped by threads
        self.hog = None
        self.failures = []
        self.events = None  # the driver's history file
        self.counts = {"rounds": 0, "faults": 0, "kill": 0, "stop": 0, "cut": 0, "delay": 0,
                       "rebuilds": 0, "checks": 0}
        self.started = time.monotonic()

    # History.

    def event(self, text):
        line = f"{time.monotonic():.6f} thrasher {text}"
        self.events.write(line + "\n")
        self.events.flush()
        log(f"{time.monotonic() - self.started:7.1f} s: {text}")

    def fail(self, text):
        self.failures.append(text)
        self.event(f"FAILURE {text}")

    # The cluster.

    def fampool(self, *argv, timeout=60):
        return subprocess.run([self.fampool_bin, *argv], capture_output=True, text=True,
                              timeout=timeout, env=self.env, stdin=subprocess.DEVNULL)

    def up(self):
        for path in (self.fampool_bin, self.worker_bin):
            if not os.access(path, os.X_OK):
                sys.exit(f"thrash: {path} is not built (scripts/build)")
        self.run_dir = tempfile.mkdtemp(prefix="fampool-thrash-")
        os.chmod(self.run_dir, 0o755)
        self.events = open(os.path.join(self.run_dir, "thrasher.events"), "w")
        self.env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(self.run_dir, "cluster.yaml"))
        argv = ["up", "--memservers", str(self.args.servers), "--interleave", "4096",
                "--provider", "tcp", "--run-dir", self.run_dir, "--authentication", "none",
                "--metrics", "off"]
        if self.args.emulate:
            argv += ["--emulate", "--clients", "1"]
        else:
            argv += ["--base-port", str(free_base_port(self.args.servers))]
        up = self.fampool(*argv, timeout=120)
        if up.returncode != 0:
            self.fail(f"fampool up failed:\n{up.stdout}{up.stderr}")
            return False
        self.event(f"cluster of {self.args.servers} memory servers in {self.run_dir}"
                   + (" on an emulated fabric" if self.args.emulate else ""))
        self.state = State(os.path.join(self.run_dir, "state"))
        setup = subprocess.run(self.pe_argv([self.worker_bin, "setup", self.state_path(),
                                             str(self.args.pes)]),
                               capture_output=True, text=True, timeout=120, env=self.env,
                               stdin=subprocess.DEVNULL)
        if setup.returncode != 0:
            self.fail(f"thrash_worker setup failed:\n{setup.stdout}{setup.stderr}")
            return False
        return True

    def state_path(self):
        return os.path.join(self.run_dir, "state")

    def pe_argv(self, argv):
        """A PE's command line: on an emulated fabric, on its client node."""
        if not self.args.emulate:
            return argv
        return [self.fampool_bin, "exec", "--node", "client0", "--run-dir", self.run_dir, "--",
                *argv]

    def emulated_nodes(self):
        """{node name: (namespace, switch port)} from the run directory's emulation.yaml, and
        the switch's namespace."""
        with open(os.path.join(self.run_dir, "emulation.yaml")) as f:
            text = f.read()
        switch = re.search(r"^switch_netns: (\S+)", text, re.M).group(1)
        nodes = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
            r"name: (\w+), netns: ([^,]+), address: [^,]+, port: ([^,]+),", text)}
        return nodes, switch

    def down(self):
        if not self.run_dir:
            return
        try:
            down = self.fampool("down", "--run-dir", self.run_dir, timeout=60)
            if down.returncode != 0:
                print(down.stdout + down.stderr, file=sys.stderr)
        except subprocess.TimeoutExpired:
            print("thrash: fampool down timed out", file=sys.stderr)
        for name, pid in self.pids().items():
            if running(pid):
                log(f"stopping {name} (pid {pid}) left running")
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
        for child in self.children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def pids(self):
        pids = {}
        pid_dir = os.path.join(self.run_dir, "pids")
        for name in sorted(os.listdir(pid_dir)) if os.path.isdir(pid_dir) else []:
            if name.endswith(".pid"):
                try:
                    with open(os.path.join(pid_dir, name)) as f:
                        pids[name[:-4]] = int(f.read().strip())
                except (OSError, ValueError):
                    pass
        return pids

    def health(self):
        """"healthy", "degraded" or None (status failed)."""
        try:
            status = self.fampool("status", "--run-dir", self.run_dir, timeout=30)
        except subprocess.TimeoutExpired:
            return None
        if status.returncode != 0:
            return None
        return "degraded" if re.search(r"\b(degraded|rebuilding)\b", status.stdout) else "healthy"

    def wait_health(self, wanted, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.health() == wanted:
                return True
            if not self.watch_workers():
                return False
            time.sleep(0.3)
        return False

    # Faults.

    def kill(self, server):
        name = f"memory{server}"
        pid = self.pids()[name]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [arg.decode() for arg in f.read().split(b"\0") if arg]
        os.kill(pid, signal.SIGKILL)
        self.event(f"SIGKILL {name} (pid {pid})")
        return name, argv

    def restart(self, name, argv):
        if self.args.emulate:
            argv = ["ip", "netns", "exec", self.emulated_nodes()[0][name][0], *argv]
        with open(os.path.join(self.run_dir, "logs", f"{name}.log"), "a") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        threading.Thread(target=process.wait, daemon=True).start()
        self.children.append(process)
        with open(os.path.join(self.run_dir, "pids", f"{name}.pid"), "w") as f:
            f.write(f"{process.pid}\n")
        self.event(f"restarted {name} (pid {process.pid})")

    def cut(self, server, on):
        """Memory server `server`'s link cut (every packet dropped both ways, connections kept:
        iptables in its namespace) or restored."""
        namespace = self.emulated_nodes()[0][f"memory{server}"][0]
        for chain in ("INPUT", "OUTPUT"):
            subprocess.run(["ip", "netns", "exec", namespace, "iptables", "-w",
                            "-A" if on else "-D", chain, "-i" if chain == "INPUT" else "-o",
                            "fab0", "-j", "DROP"], check=True, capture_output=True)

    def throttle(self, server, rate):
        """Memory server `server`'s link slowed to `rate` both ways (tbf: packets wait in its
        queue, up to 2 s) or, with None, back to unshaped."""
        nodes, switch = self.emulated_nodes()
        namespace, port = nodes[f"memory{server}"]
        for netns, device in ((namespace, "fab0"), (switch, port)):
            argv = ["tc", "-n", netns, "qdisc", "replace" if rate else "del", "dev", device, "root"]
            if rate:
                argv += ["tbf", "rate", rate, "burst", "16kb", "latency", "2s"]
            subprocess.run(argv, check=bool(rate), capture_output=True)

    def fault(self):
        server = self.random.randrange(self.args.servers)
        kinds = ["kill", "stop"] + (["cut", "delay"] if self.args.emulate else [])
        kind = self.random.choice(kinds)
        self.counts["faults"] += 1
        self.counts[kind] += 1
        if kind == "kill":
            name, argv = self.kill(server)
            self.pause_watching(self.random.uniform(0.5, 3))
            self.restart(name, argv)
        elif kind == "stop":
            pid = self.pids()[f"memory{server}"]
            seconds = self.random.uniform(1, 8)
            os.kill(pid, signal.SIGSTOP)
            self.event(f"SIGSTOP memory{server} (pid {pid}) for {seconds:.1f} s")
            self.pause_watching(seconds)
            os.kill(pid, signal.SIGCONT)
            self.event(f"SIGCONT memory{server}")
        elif kind == "cut":
            seconds = self.random.uniform(1, 8)
            self.cut(server, True)
            self.event(f"link of memory{server} cut for {seconds:.1f} s")
            self.pause_watching(seconds)
            self.cut(server, False)
            self.event(f"link of memory{server} restored")
        else:
            seconds = self.random.uniform(1, 8)
            rate = self.random.choice(["1mbit", "4mbit", "16mbit"])
            self.throttle(server, rate)
            self.event(f"link of memory{server} slowed to {rate} for {seconds:.1f} s")
            self.pause_watching(seconds)
            self.throttle(server, None)
            self.event(f"link of memory{server} restored")
        if not self.wait_health("healthy", HEALTHY_WAIT_S):
            if not self.failures:
                self.fail(f"regions not healthy {HEALTHY_WAIT_S} s after the {kind} of "
                          f"memory{server}")
            return False
        self.event("every region healthy")
        return True

    def pause_watching(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.watch_workers()
            time.sleep(min(0.1, max(0, deadline - time.monotonic())))

    # The PEs.

    def start_workers(self):
        for pe in range(self.args.pes):
            events = os.path.join(self.run_dir, f"pe{pe}.events")
            with open(os.path.join(self.run_dir, f"pe{pe}.err"), "w") as err:
                self.workers.append(subprocess.Popen(
                    self.pe_argv([self.worker_bin, "run", str(pe), self.state_path(),
                                  str(self.seed), events]),
                    stdout=err, stderr=subprocess.STDOUT, env=self.env, stdin=subprocess.DEVNULL))

    def watch_workers(self):
        """False (and a failure noted) when a PE exited or a call hangs."""
        for pe, process in enumerate(self.workers):
            if process.poll() is not None:
                if not any(f"PE {pe} " in f for f in self.failures):
                    with open(os.path.join(self.run_dir, f"pe{pe}.err")) as f:
                        self.fail(f"PE {pe} exited with status {process.returncode}: {f.read()}")
                return False
            started = self.state.pe(pe, "op_started_ns")
            if started and time.monotonic_ns() - started > HANG_S * 1e9:
                if not any(f"PE {pe} " in f for f in self.failures):
                    self.fail(f"PE {pe} has been in one call for more than {HANG_S} s")
                return False
        return True

    def command(self, kind, what):
        sequence = self.state.command(kind)
        deadline = time.monotonic() + COMMAND_WAIT_S
        while time.monotonic() < deadline:
            if all(self.state.pe(pe, "acted") >= sequence for pe in range(self.args.pes)):
                return True
            if not self.watch_workers():
                return False
            time.sleep(0.05)
        self.fail(f"the PEs did not {what} within {COMMAND_WAIT_S} s")
        return False

    # A round.

    def round(self):
        self.counts["rounds"] += 1
        self.event(f"round {self.counts['rounds']}")
        for _ in range(self.args.faults):
            self.pause_watching(self.random.uniform(0.5, 2))
            if not self.fault():
                return False
        if not self.command(PAUSE, "pause"):
            return False
        name, argv = self.kill(self.random.randrange(self.args.servers))
        if not self.wait_health("degraded", DEGRADED_WAIT_S):
            self.fail(f"{name} killed, but no region degraded within {DEGRADED_WAIT_S} s")
            return False
        before = self.state.total("wrong_slots", self.args.pes)
        if not self.command(CHECK, "check"):
            return False
        self.counts["checks"] += 1
        self.event(f"checked with {name} killed: "
                   f"{self.state.total('wrong_slots', self.args.pes) - before} slot(s) wrong")
        self.restart(name, argv)
        if not self.wait_health("healthy", HEALTHY_WAIT_S):
            if not self.failures:
                self.fail(f"regions not healthy {HEALTHY_WAIT_S} s after {name}'s restart")
            return False
        self.event("every region healthy")
        return self.command(RUN, "run")

    def run(self):
        log(f"seed {self.seed} (replay with --seed {self.seed}); {self.args.pes} PEs, "
            f"{self.args.servers} memory servers, {self.args.faults} faults a round, "
            f"{self.args.seconds:.0f} s" + (", beside stress-ng --cpu 2" if self.args.hog else ""))
        if self.args.hog:
            self.hog = subprocess.Popen(["stress-ng", "--cpu", "2", "--quiet"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not self.up():
                return
            self.start_workers()
            if not self.command(RUN, "start"):
                return
            end = self.started + self.args.seconds
            while time.monotonic() < end and self.round():
                if self.counters_wrong() and not self.args.keep_going:
                    break
            if not self.failures or self.args.keep_going:
                self.state.command(STOP)
                for pe, process in enumerate(self.workers):
                    try:
                        code = process.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        self.fail(f"PE {pe} did not stop within 60 s")
                        continue
                    if code != 0:
                        with open(os.path.join(self.run_dir, f"pe{pe}.err")) as f:
                            self.fail(f"PE {pe} exited with status {code}: {f.read()}")
        finally:
            for process in self.workers:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            if self.hog:
                self.hog.terminate()
                self.hog.wait()
            self.down()

    def counters_wrong(self):
        pes = self.args.pes
        bad = {word: self.state.total(word, pes) for word in
               ("failed", "wrong_reads", "wrong_slots", "wrong_counters", "duplicates")}
        if any(bad.values()):
            self.fail("after round {}: {}".format(
                self.counts["rounds"], ", ".join(f"{k} {v}" for k, v in bad.items() if v)))
            return True
        return False

    # The verdict.

    def summary(self):
        pes = self.args.pes
        if self.state:
            t = {word: self.state.total(word, pes) for word in PE_WORDS[1:14] + PE_WORDS[16:]}
        else:
            t = {word: 0 for word in PE_WORDS}
        c = self.counts
        log(f"seed {self.seed}: {c['rounds']} rounds, {c['faults']} faults (kill {c['kill']}, "
            f"stop {c['stop']}, cut {c['cut']}, delay {c['delay']}), {c['checks']} checks with "
            f"a server killed")
        log(f"acknowledged: {t['puts']} puts, {t['copies']} copies, {t['fetch_adds']} fetch_adds, "
            f"{t['adds']} adds; {t['gets']} reads checked while running, "
            f"{t['slots_checked']} slots checked with a server killed")
        lost = t["wrong_reads"] + t["wrong_slots"] + t["duplicates"] + t["counters_below"]
        log(f"lost {lost} (wrong reads {t['wrong_reads']}, wrong slots {t['wrong_slots']}, "
            f"fetch_add results seen twice {t['duplicates']}, counters below their adds "
            f"{t['counters_below']}), applied twice {t['counters_above']}, "
            f"calls failed {t['failed']}")
        return t

    def history(self):
        """The faults and the PEs' calls around each failure, in time order."""
        lines = []
        for name in os.listdir(self.run_dir):
            if name.endswith(".events"):
                with open(os.path.join(self.run_dir, name), errors="replace") as f:
                    lines += [line.rstrip("\n") for line in f if line.strip()]

        def at(line):
            try:
                return float(line.split(" ", 1)[0])
            except ValueError:
                return 0.0
        lines.sort(key=at)
        bad = [i for i, line in enumerate(lines)
               if re.search(r" (FAILED|WRONG|DUPLICATE|FAILURE) ", line)]
        shown = set()
        for i in bad[:20]:
            shown.update(range(max(0, i - 25), min(len(lines), i + 3)))
        shown.update(i for i, line in enumerate(lines) if " thrasher " in line)
        out, last = [], None
        for i in sorted(shown):
            if last is not None and i != last + 1:
                out.append("   ...")
            out.append(f"{at(lines[i]) - self.started:10.3f} {lines[i].split(' ', 1)[1]}")
            last = i
        return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--seconds", type=float, default=120,
                        help="rounds start until this much time has passed (default 120)")
    parser.add_argument("--seed", type=int, help="the run's choices (default: a fresh seed)")
    parser.add_argument("--pes", type=int, default=3, help="thrash_worker PEs (default 3)")
    parser.add_argument("--servers", type=int, default=4, help="memory servers (default 4)")
    parser.add_argument("--faults", type=int, default=3, help="faults a round (default 3)")
    parser.add_argument("--hog", action="store_true", help="run stress-ng --cpu 2 beside it")
    parser.add_argument("--emulate", action="store_true",
                        help="servers in network namespaces; links cut and delayed too (root)")
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    parser.add_argument("--keep-going", action="store_true",
                        help="go on after a round that found something wrong (to count them all)")
    args = parser.parse_args()
    if not 1 <= args.pes <= MOST_PES or args.servers < 3:
        parser.error(f"--pes 1 to {MOST_PES}, --servers at least 3 (RAID5)")
    if args.emulate and os.geteuid() != 0:
        print("thrash: --emulate needs root (network namespaces); skipped")
        return 77
    if args.hog and not shutil.which("stress-ng"):
        parser.error("--hog needs stress-ng (scripts/setup installs it)")
    thrasher = Thrasher(args)

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    try:
        thrasher.run()
    except KeyboardInterrupt:
        thrasher.failures.append("interrupted")
    thrasher.summary()
    if thrasher.failures:
        log(f"FAILED (seed {thrasher.seed}; replay with --seed {thrasher.seed}):")
        for failure in thrasher.failures:
            print(f"  {failure}")
        if thrasher.run_dir and os.path.isdir(thrasher.run_dir):
            print("history (seconds since the start):")
            print(thrasher.history())
            log(f"the whole history and the servers' logs: {thrasher.run_dir}")
        return 1
    log("ok")
    if thrasher.run_dir and not args.keep:
        shutil.rmtree(thrasher.run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
