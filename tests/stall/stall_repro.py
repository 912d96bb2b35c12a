#!/usr/bin/env python3
"""The tcp stall, made on demand: fresh emulated clusters (memory servers behind links of a
given rate, PEs on client nodes of their own), each running placement_bench's first step and a
short measurement (every PE creates its region, allocates its item, puts it whole, then puts and
gets for --seconds). A run whose PEs are not done --watch seconds after they began (a run takes
4-11 s when nothing stalls; the data path gives up at 10 s) is caught while it stalls: both
ends' sockets (ss -tmpi in every node's namespace), the descriptors each memory server's epoll
sets hold (/proc/PID/fdinfo) and the servers' thread stacks (gdb) are written to the run's
directory, which is kept when the run fails. It prints each run's outcome and the count.

    tests/stall/stall_repro.py --build-dir build --runs 20 [--pes 8] [--servers 1]
        [--rate 200mbit] [--watch 8.5] [--server-env NAME=VALUE ...]

--server-env sets a variable for the cluster's processes (fampool up passes its environment
on): a provider setting tried as a cause. Needs root (network namespaces).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, timeout=120, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def nodes(run_dir, prefix):
    """(name, netns) of the emulated nodes whose name starts with prefix."""
    found = []
    with open(os.path.join(run_dir, "emulation.yaml")) as f:
        for line in f:
            m = re.search(r"name: (\w+), netns: ([^,]+),", line)
            if m and m.group(1).startswith(prefix):
                found.append((m.group(1), m.group(2)))
    return found


def server_pids(run_dir):
    pids = []
    pid_dir = os.path.join(run_dir, "pids")
    for name in sorted(os.listdir(pid_dir)):
        if name.startswith("memory"):
            with open(os.path.join(pid_dir, name)) as f:
                pids.append((name, int(f.read().strip())))
    return pids


def epoll_sets(pid):
    """Each epoll descriptor of pid with the descriptors it watches, and each socket's inode."""
    lines = []
    fd_dir = f"/proc/{pid}/fd"
    for fd in sorted(os.listdir(fd_dir), key=int):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if "eventpoll" in target:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                watched = [m.group(1) for m in re.finditer(r"tfd:\s+(\d+)", f.read())]
            lines.append(f"epoll fd {fd} watches {' '.join(watched)}")
        elif target.startswith("socket:"):
            lines.append(f"fd {fd} {target}")
    return "\n".join(lines)


def sample_threads(run_dir, at, with_cpu):
    """Each memory server thread's scheduler state and the system call it is in (or
    "running"), from /proc: no ptrace, so the servers run on undisturbed."""
    taken = []
    for name, pid in server_pids(run_dir):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                    call = " ".join(f.read().split()[:2])
            except OSError:
                continue
            taken.append((name, tid, state, call))
    return at, taken, cpu_times() if with_cpu else None


def cpu_times():
    """The machine's CPU time by kind (/proc/stat, in ticks) and each process's user+system
    ticks by command name, so that a stall's CPU can be attributed."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:9]
    machine = dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"),
                       map(int, fields)))
    by_command = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        command = text[text.index("(") + 1:text.rindex(")")]
        rest = text[text.rindex(")") + 2:].split()
        by_command[command] = by_command.get(command, 0) + int(rest[11]) + int(rest[12])
    return machine, by_command


# x86-64 system call numbers the samples show, by name.
SYSCALLS = {"0": "read", "7": "poll", "45": "recvfrom", "47": "recvmsg", "202": "futex",
            "232": "epoll_wait", "281": "epoll_pwait", "230": "clock_nanosleep",
            "44": "sendto", "46": "sendmsg", "43": "accept", "288": "accept4", "271": "ppoll",
            "35": "nanosleep", "24": "sched_yield"}


def write_samples(run_dir, samples):
    """Per server thread, what it was doing from the run's start to the capture, as spans."""
    spans = {}
    # CPU use per second of the run: the machine's by kind, and the busiest commands'.
    cpu_lines = []
    timed = [(at, cpu) for at, _, cpu in samples if cpu]
    for (at0, (m0, c0)), (at1, (m1, c1)) in zip(timed, timed[1:]):
        ticks = os.sysconf("SC_CLK_TCK") * (at1 - at0)
        kinds = " ".join(f"{k} {100 * (m1[k] - m0[k]) / ticks:.0f}%" for k in m1
                         if m1[k] != m0[k])
        busiest = sorted(((c1[c] - c0.get(c, 0), c) for c in c1), reverse=True)[:4]
        commands = ", ".join(f"{c} {100 * d / ticks:.0f}%" for d, c in busiest if d > 0)
        cpu_lines.append(f"  {at0:6.2f}-{at1:6.2f} s  machine: {kinds}; by command: {commands}")
    for at, taken, _ in samples:
        for name, tid, state, call in taken:
            number, _, first = call.partition(" ")
            what = "running" if number == "running" else (
                f"{SYSCALLS.get(number, 'syscall ' + number)}({int(first, 16) if first.startswith('0x') else first})")
            key = (name, tid)
            current = spans.setdefault(key, [])
            label = f"{state} {what}"
            if current and current[-1][2] == label:
                current[-1][1] = at
            else:
                current.append([at, at, label])
    lines = []
    for (name, tid), runs in sorted(spans.items()):
        if all(label.startswith("S ") and "futex" in label for _, _, label in runs):
            continue  # idle worker threads
        lines.append(f"== {name} thread {tid}")
        lines.extend(f"  {a:6.2f}-{b:6.2f} s  {label}" for a, b, label in runs)
    with open(os.path.join(run_dir, "thread-samples.txt"), "w") as f:
        f.write("== CPU (100% = one core)\n" + "\n".join(cpu_lines) + "\n"
                + "\n".join(lines) + "\n")


def capture(run_dir, tag):
    """What the servers are doing now, into run_dir/stall-TAG.txt."""
    out = [f"== captured {time.strftime('%H:%M:%S')}"]
    # First, while the stall lasts: one second of the whole machine's CPU samples (perf, if
    # installed), by command, library and function: where the cores go.
    if shutil.which("perf"):
        data = os.path.join(run_dir, "perf.data")
        run(["perf", "record", "-a", "-g", "-F", "499", "-o", data, "--", "sleep", "1"],
            timeout=60)
        report = run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                      "comm,dso,sym", "-g", "none", "--percent-limit", "0.5"], timeout=120)
        out.append("== perf: 1 s of the machine's CPU, by command, library and function")
        out.append("\n".join(line for line in report.stdout.splitlines()
                             if line.strip() and not line.startswith("#")))
    # Both ends' sockets first (a stalled flow shows at the sender as Send-Q, at the receiver
    # as Recv-Q), then the servers' epoll sets, and the stacks last: gdb stops the server.
    for name, netns in nodes(run_dir, "memory") + nodes(run_dir, "client"):
        out.append(f"== ss -tmpi in {name} ({netns})")
        out.append(run(["ip", "netns", "exec", netns, "ss", "-tmpin"]).stdout)
    # The links' queues (tbf: backlog, drops) and each node's TCP counters, every namespace of
    # the run (the switch's too): where packets wait or are lost between the ends.
    with open(os.path.join(run_dir, "emulation.yaml")) as f:
        switch = re.search(r"switch_netns: (\S+)", f.read()).group(1)
    for name, netns in nodes(run_dir, "") + [("switch", switch)]:
        out.append(f"== tc -s qdisc in {name} ({netns})")
        out.append(run(["tc", "-n", netns, "-s", "qdisc", "show"]).stdout)
        counters = run(["ip", "netns", "exec", netns, "nstat", "-az"]).stdout.splitlines()
        wanted = ("Drop", "Prune", "Collapse", "Retrans", "Timeout", "ZeroWindow", "Overflow",
                  "Backlog", "RcvQ", "OFO", "Lost", "Probe")
        out.append(f"== nstat in {name} (non-zero TCP counters of interest)")
        out.append("\n".join(line for line in counters
                             if any(w in line for w in wanted) and line.split()[1] != "0"))
    for name, pid in server_pids(run_dir):
        out.append(f"== {name} pid {pid}: epoll sets and sockets")
        out.append(epoll_sets(pid))
    # One second of the servers' system calls that read sockets or wait on them: whether the
    # progress thread asks its queue's epoll set at all, and what it is told.
    for name, pid in server_pids(run_dir):
        out.append(f"== {name} pid {pid}: 1 s of strace")
        traced = run(["timeout", "1", "strace", "-f", "-tt", "-e",
                      "trace=epoll_wait,epoll_pwait,poll,ppoll,recvfrom,recvmsg,readv,accept,"
                      "accept4,sendmsg,sendto", "-p", str(pid)], timeout=30)
        out.append("\n".join(traced.stderr.splitlines()[:400]))
    # With a libfabric that has debug information (--server-env LD_LIBRARY_PATH=...), what
    # each tcp connection's receive side is doing (tcp_state.py); gdb stops the server briefly.
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tcp_state.py")
    gdb_env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    for name, pid in server_pids(run_dir):
        out.append(f"== {name} pid {pid}: tcp connections (tcp_state.py)")
        state = run(["gdb", "-batch", "-p", str(pid), "-x", script], timeout=60, env=gdb_env)
        out.append("\n".join(line for line in (state.stdout + state.stderr).splitlines()
                             if "ep " in line or "tcp_state" in line or "Error" in line))
    for name, pid in server_pids(run_dir):
        out.append(f"== {name} pid {pid}: threads")
        out.append(run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt 12"],
                       timeout=60).stdout)
    path = os.path.join(run_dir, f"stall-{tag}.txt")
    with open(path, "w") as f:
        f.write("\n".join(out))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pes", type=int, default=8)
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--rate", default="200mbit")
    parser.add_argument("--seconds", default="0.3")
    parser.add_argument("--watch", type=float, default=8.5)
    parser.add_argument("--server-env", action="append", default=[])
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("stall_repro: needs root (network namespaces for the emulated fabric)")
        return 77
    fampool = os.path.join(args.build_dir, "tools", "fampool")
    bench = os.path.join(args.build_dir, "bench", "placement_bench")
    env = dict(os.environ)
    for setting in args.server_env:
        name, _, value = setting.partition("=")
        env[name] = value
    # The PEs' output is read when they end: libfabric's logs (FI_LOG_*) go to the servers only.
    bench_env = {k: v for k, v in env.items() if not k.startswith("FI_LOG_")}
    work = tempfile.mkdtemp(prefix="fampool-stall-")
    os.chmod(work, 0o755)
    stalls = 0
    for n in range(1, args.runs + 1):
        run_dir = os.path.join(work, f"run{n}")
        up = run([fampool, "up", "--emulate", "--memservers", str(args.servers), "--clients",
                  str(args.pes), "--link-rate", args.rate, "--interleave", "65536",
                  "--authentication", "none", "--base-port", "auto", "--run-dir", run_dir],
                 env=env)
        if up.returncode != 0:
            print(f"run {n}: fampool up failed: {up.stderr.strip()}")
            return 1
        clients = ",".join(ns for _, ns in nodes(run_dir, "client"))
        start = time.monotonic()
        job = subprocess.Popen(
            [bench, "placement", "--netns", clients, "--pes", str(args.pes), "--seconds",
             args.seconds, "--placements", "uniform", "--ops", "put", "--csv",
             os.path.join(run_dir, "placement.csv")],
            env={**bench_env, "FAMPOOL_CONFIG": os.path.join(run_dir, "cluster.yaml")},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        caught = None
        samples = []
        while job.poll() is None:
            if caught is None and time.monotonic() - start > args.watch:
                write_samples(run_dir, samples)
                caught = capture(run_dir, "watch")
            if caught is None:
                samples.append(sample_threads(run_dir, time.monotonic() - start,
                                              len(samples) % 20 == 0))
            time.sleep(0.05)
        output = job.stdout.read()
        took = time.monotonic() - start
        failed = job.returncode != 0
        if failed:
            stalls += 1
            with open(os.path.join(run_dir, "bench.log"), "w") as f:
                f.write(output)
            errors = [line for line in output.splitlines() if ": PE " in line]
            why = errors[0] if errors else (output.strip().splitlines() or ["?"])[-1]
            print(f"run {n}: STALL ({took:.1f} s, exit {job.returncode}): {why}; kept {run_dir}"
                  + (f", caught in {caught}" if caught else ""))
        else:
            print(f"run {n}: ok ({took:.1f} s"
                  + (f", slow: caught anyway in {caught})" if caught else ")"))
        down = subprocess.run([fampool, "down", "--run-dir", run_dir], capture_output=True,
                              text=True, timeout=120)
        if down.returncode != 0:
            # The cluster (its processes, namespaces) may be left: say so and keep its files.
            print(f"run {n}: fampool down failed, {run_dir} kept: {down.stderr.strip()}")
        elif not failed and not caught:
            shutil.rmtree(run_dir, ignore_errors=True)
        sys.stdout.flush()
    print(f"stall_repro: {stalls} of {args.runs} runs stalled (pes {args.pes}, servers "
          f"{args.servers}, links {args.rate}, settings {args.server_env or 'none'})")
    if stalls == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if stalls else 0


if __name__ == "__main__":
    sys.exit(main())
