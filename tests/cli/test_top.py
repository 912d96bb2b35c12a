"""`fampool top` (issue 33 part 2) under tmux, as an operator would run it: on a cluster of three
memory servers under a workload, the captured screen shows the metadata shard and every memory
server up with their endpoints, and the clients' put rate above zero; q ends it. The tmux server
is the test's own (a socket of its own name), stopped at the end; every wait is bounded."""
import os
import re
import shutil
import subprocess
import time

from test_cli import (BUILD_DIR, FAMPOOL, fampool, run_dir,  # noqa: F401 (fixture)
                      stop_process, up_on_free_ports)

SOAK_WORKER = os.path.join(BUILD_DIR, "tests", "workers", "soak_worker")
PREFIX = "top"


def tmux(socket, *args, timeout=10):
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_top_under_tmux_shows_the_servers_and_the_put_rate(run_dir):
    assert shutil.which("tmux"), "tmux is not installed: run scripts/setup"
    up_on_free_ports(run_dir, "--interleave", "65536", "--authentication", "none", servers=3)
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    setup = subprocess.run([SOAK_WORKER, "--setup", PREFIX, "1"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    log = open(os.path.join(run_dir, "workload.log"), "w")
    worker = subprocess.Popen([SOAK_WORKER, "0", "40", PREFIX], env=env, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    socket = f"fampool-top-test-{os.getpid()}"
    screen = ""
    try:
        started = tmux(socket, "new-session", "-d", "-s", "top", "-x", "150", "-y", "45",
                       f"{FAMPOOL} top --run-dir {run_dir} --interval 1")
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 30
        put_rate = None
        while time.monotonic() < deadline:
            time.sleep(1)
            screen = tmux(socket, "capture-pane", "-p", "-t", "top").stdout
            match = re.search(r"(?m)^\s+put\s+(\S+ ?\S*/s)\s+(\S+ \S+/s)", screen)
            if match and not match.group(1).startswith("0/s"):
                put_rate = match.group(1)
                break
        assert put_rate, f"no put rate above 0 in 30 s; the last screen:\n{screen}"
        assert "fampool top:" in screen, screen
        for server in ("metadata shard 0", "memory server 0", "memory server 1",
                       "memory server 2"):
            line = next((l for l in screen.splitlines() if server in l), "")
            assert re.search(r"127\.0\.0\.1:\d+\s+up\b", line), (server, screen)
        assert "CLIENTS 1 active" in screen, screen

        tmux(socket, "send-keys", "-t", "top", "q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and tmux(socket, "has-session", "-t", "top").returncode == 0:
            time.sleep(0.2)
        assert tmux(socket, "has-session", "-t", "top").returncode != 0, "q did not end top"
    finally:
        tmux(socket, "kill-server")
        stop_process(worker, log)


def test_top_says_when_the_cluster_file_names_no_metrics_endpoint(run_dir):
    up_on_free_ports(run_dir, "--metrics", "off", "--authentication", "none", servers=1)
    top = fampool("top", "--run-dir", run_dir, "--screens", "1")
    assert top.returncode == 1, top.stdout + top.stderr
    assert "names no metrics endpoint" in top.stderr and "--metrics off" in top.stderr, top.stderr


def test_top_screens_prints_rates_without_a_terminal(run_dir):
    up_on_free_ports(run_dir, "--authentication", "none", servers=1)
    top = fampool("top", "--run-dir", run_dir, "--screens", "2", "--interval", "0.2")
    assert top.returncode == 0, top.stdout + top.stderr
    assert top.stdout.count("fampool top:") == 2, top.stdout
    assert "\033[2J" not in top.stdout, "no clearing when printing screens for a log"
    assert re.search(r"memory server 0\s+127\.0\.0\.1:\d+\s+up", top.stdout), top.stdout
