#!/usr/bin/env python3
"""A link delay on `fampool up --emulate` (tools/delayline/fampool_delayline.cc): a memory
server whose topology entry has `delay: 2ms` answers a round trip from a client node in 4 to
5 ms, its fampool-delayline stops with `fampool down`, and the cluster works through it.

    delay_line_test.py              the CTest test (delay_line_emulated): exit 0 passed,
                                    1 failed, 77 skipped (not root, no iptables, no
                                    fampool-delayline, no network namespaces)
    delay_line_test.py --measure    the numbers of docs/cli.md: round trips at delays of
                                    100 us, 500 us and 2 ms, and a TCP transfer through a
                                    200mbit link with a 1 ms delay

FAMPOOL_BUILD_DIR names the build (default: build). Each cluster has a run directory of its
own, and `fampool down` runs on it whatever happens; every command is bounded in time.
"""
import glob
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

BUILD_DIR = os.path.abspath(os.environ.get("FAMPOOL_BUILD_DIR", "build"))
FAMPOOL = os.path.join(BUILD_DIR, "tools", "fampool")
DELAY_LINE = os.path.join(BUILD_DIR, "tools", "fampool-delayline")
WORKER = os.path.join(BUILD_DIR, "tests", "workers", "emulation_worker")
SKIPPED = 77
PORT = 47001

# Runs in a node's namespace: answers each UDP datagram until "quit" or IDLE s of silence.
ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", %d))
s.settimeout(float(sys.argv[1]))
print("ready", flush=True)
while True:
    try:
        data, peer = s.recvfrom(2048)
    except socket.timeout:
        break
    s.sendto(data, peer)
    if data == b"quit":
        break
""" % PORT

# Runs in another node's namespace: COUNT round trips to HOST, 5 ms apart; prints each in us,
# or "lost" after a second without an answer (and stops after 3 of those).
PROBE = """
import socket, sys, time
host, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
lost = 0
for i in range(count + 1):
    start = time.perf_counter_ns()
    s.sendto(b"quit" if i == count or lost == 2 else b"probe", (host, %d))
    try:
        s.recvfrom(2048)
        print((time.perf_counter_ns() - start) / 1000.0)
    except socket.timeout:
        print("lost")
        lost += 1
        if lost == 3:
            break
    time.sleep(0.005)
""" % PORT

# Receives one TCP stream for its whole length and prints its rate in bit/s.
SINK = """
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("0.0.0.0", %d))
s.listen(1)
s.settimeout(20)
c, _ = s.accept()
total, start = 0, None
while True:
    data = c.recv(1 << 20)
    if not data:
        break
    start = start or time.perf_counter()
    total += len(data)
print(total * 8 / (time.perf_counter() - start))
""" % PORT

# Sends to HOST for SECONDS as fast as TCP lets it.
SOURCE = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
s.connect((sys.argv[1], %d))
chunk, end = b"x" * (1 << 20), time.perf_counter() + float(sys.argv[2])
while time.perf_counter() < end:
    s.sendall(chunk)
s.close()
""" % PORT


def run(*args, timeout=60):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def why_skipped():
    if os.geteuid() != 0:
        return "not root (network namespaces, iptables and NFQUEUE need CAP_NET_ADMIN)"
    if not shutil.which("iptables"):
        return "no iptables (apt-get install iptables; scripts/setup does)"
    if not os.access(DELAY_LINE, os.X_OK):
        return f"no {DELAY_LINE} (it is built where libnetfilter-queue-dev is installed)"
    made = run("unshare", "--net", "true")
    if made.returncode != 0:
        return f"cannot make a network namespace here: {made.stderr.strip()}"
    return None


class Cluster:
    """`fampool up --emulate` of a topology file in a run directory of its own."""

    def __init__(self, topology):
        self.dir = tempfile.mkdtemp(prefix="fampool-delay-")
        os.chmod(self.dir, 0o755)
        path = os.path.join(self.dir, "topology.yaml")
        with open(path, "w") as f:
            f.write(topology)
        self.up = run(FAMPOOL, "up", "--emulate", "--topology", path, "--authentication",
                      "none", "--run-dir", self.dir)
        self.down = None

    def __enter__(self):
        if self.up.returncode != 0:
            self.stop()
            raise AssertionError("fampool up failed:\n" + self.up.stdout + self.up.stderr)
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.down is None:
            self.down = run(FAMPOOL, "down", "--run-dir", self.dir)
            # What each delay line said last: its counts, on stopping.
            self.delay_line_said = []
            for log in sorted(glob.glob(os.path.join(self.dir, "logs", "delayline-*.log"))):
                with open(log) as f:
                    self.delay_line_said += f.read().strip().splitlines()[-1:]
            shutil.rmtree(self.dir, ignore_errors=True)

    def delay_lines(self):
        """{node: PID} of the delay lines in emulation.yaml."""
        with open(os.path.join(self.dir, "emulation.yaml")) as f:
            nodes = re.findall(r"name: (\w+),.* delay_line_pid: (\d+)", f.read())
        return {name: int(pid) for name, pid in nodes if int(pid) > 0}

    def on(self, node, *command, timeout=60):
        return run(FAMPOOL, "exec", "--run-dir", self.dir, "--node", node, "--", *command,
                   timeout=timeout)

    def start_on(self, node, code, *args):
        return subprocess.Popen([FAMPOOL, "exec", "--run-dir", self.dir, "--node", node, "--",
                                 sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)

    def round_trips(self, node, address, count, idle_s=20):
        """Round trips in us from client0 to `address` (on `node`); None for a lost one."""
        echo = self.start_on(node, ECHO, str(idle_s))
        ready, _, _ = select.select([echo.stdout], [], [], 20)
        if not ready or echo.stdout.readline().strip() != "ready":
            echo.kill()
            raise AssertionError(f"the echo on {node} did not start: {echo.communicate()[1]}")
        probe = self.on("client0", sys.executable, "-c", PROBE, address, str(count))
        echo.communicate(timeout=30)
        assert probe.returncode == 0, probe.stderr
        samples = [None if line == "lost" else float(line) for line in probe.stdout.split()]
        return samples[:-1]  # the last one told the echo to quit

    def transfer_rate(self, sender, receiver, address, seconds):
        """bit/s of one TCP stream from node `sender` to `receiver` (at `address`)."""
        sink = self.start_on(receiver, SINK)
        time.sleep(0.5)
        source = self.on(sender, sys.executable, "-c", SOURCE, address, str(seconds))
        out, err = sink.communicate(timeout=30)
        assert source.returncode == 0 and sink.returncode == 0, source.stderr + err
        return float(out)


def running(pid):
    """Whether pid runs and is not a zombie (one that has ended, not yet collected)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def check():
    """The CTest test: a 2 ms delay on memory0's link."""
    delay_us = 2000
    start = time.monotonic()
    with Cluster("clients: 1\nmemservers:\n  - {delay: 2ms}\n") as cluster:
        lines = cluster.delay_lines()
        assert list(lines) == ["memory0"], f"one delay line, memory0's: {lines}"
        pid = lines["memory0"]
        with open(f"/proc/{pid}/cmdline") as f:
            assert "fampool-delayline" in f.read(), "emulation.yaml names the delay line's PID"
        rules = cluster.on("memory0", "iptables", "-S")
        assert "-A OUTPUT -o fab0 -j NFQUEUE" in rules.stdout, rules.stdout + rules.stderr
        assert "-A INPUT -i fab0 -j NFQUEUE" in rules.stdout, rules.stdout

        # Each way delayed 2 ms once: a round trip takes 4 ms more than on a plain link, never
        # less (a packet is never early), and the delay line's own lateness stays far below
        # 1 ms. Bounds above use the fastest round trip: a loaded machine makes the median
        # late, never the minimum early, so only a wrong delay fails them.
        samples = cluster.round_trips("memory0", "10.77.2.1", 50)
        assert None not in samples, f"lost round trips: {samples}"
        low, mid = min(samples), median(samples)
        print(f"round trip to memory0 (delay {delay_us} us): min {low:.0f} us, median "
              f"{mid:.0f} us, max {max(samples):.0f} us")
        assert low >= 2 * delay_us, f"a round trip of {low:.0f} us is shorter than 2 x delay"
        assert low <= 2 * delay_us + 1000, f"no round trip under {low:.0f} us: too slow"
        # The metadata shard's link has no delay.
        plain = cluster.round_trips("metadata0", "10.77.1.1", 20)
        assert None not in plain and min(plain) < 1000, f"an undelayed link: {plain}"

        # The cluster works through the delayed link: a put and a get of 1 MiB.
        job = run(FAMPOOL, "run", "--run-dir", cluster.dir, "-n", "1", WORKER, str(1 << 20))
        assert job.returncode == 0 and re.search(r"^pe 0 of 1 .* ok$", job.stdout, re.M), \
            job.stdout + job.stderr

        # A delay line that has stopped lets nothing through undelayed: the link goes dark.
        os.kill(pid, 15)
        for _ in range(100):
            if not running(pid):
                break
            time.sleep(0.05)
        dark = cluster.round_trips("memory0", "10.77.2.1", 2, idle_s=3)
        assert dark == [None, None], f"round trips without the delay line: {dark}"
    # `fampool down` passes over the delay line that is gone.
    assert cluster.down.returncode == 0, cluster.down.stdout + cluster.down.stderr
    print(f"delay_line_emulated: passed in {time.monotonic() - start:.1f} s")


def check_down_stops_the_delay_line():
    with Cluster("clients: 1\nmemservers:\n  - {delay: 100us}\n") as cluster:
        pid = cluster.delay_lines()["memory0"]
        names = re.findall(r"netns: (\S+?),", open(os.path.join(cluster.dir,
                                                                 "emulation.yaml")).read())
        cluster.stop()
        assert cluster.down.returncode == 0, cluster.down.stderr
        assert f"memory0's (pid {pid})" in cluster.down.stdout, cluster.down.stdout
        assert not running(pid), "fampool down left the delay line running"
        listed = run("ip", "netns", "list").stdout
        assert not any(name in listed for name in names), listed


def measure():
    """The numbers docs/cli.md gives."""
    for delay in ("100us", "500us", "2ms"):
        with Cluster(f"clients: 1\nmemservers:\n  - {{delay: {delay}}}\n") as cluster:
            samples = cluster.round_trips("memory0", "10.77.2.1", 200)
            plain = cluster.round_trips("metadata0", "10.77.1.1", 200)
            print(f"delay {delay}: round trip to memory0 min {min(samples):.0f} median "
                  f"{median(samples):.0f} p90 {sorted(samples)[180]:.0f} us; to metadata0 "
                  f"(no delay) median {median(plain):.0f} us")
        print("  " + "\n  ".join(cluster.delay_line_said))
    with Cluster("clients: 1\nmemservers:\n  - {rate: 200mbit, delay: 1ms}\n") as cluster:
        for sender, receiver, address in [("client0", "memory0", "10.77.2.1"),
                                          ("memory0", "client0", "10.77.3.1")] * 2:
            rate = cluster.transfer_rate(sender, receiver, address, 5)
            print(f"200mbit link with a 1 ms delay: TCP {sender} -> {receiver} "
                  f"{rate / 1e6:.1f} Mbit/s ({rate / 2e8 * 100:.1f}% of the rate)")
    print("  " + "\n  ".join(cluster.delay_line_said))


def main():
    reason = why_skipped()
    if reason:
        print(f"skipped: {reason}")
        return SKIPPED
    if sys.argv[1:] == ["--measure"]:
        measure()
        return 0
    try:
        check()
        check_down_stops_the_delay_line()
    except AssertionError as failure:
        print(f"FAILED: {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
