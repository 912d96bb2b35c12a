"""Metrics (issue 33 part 1): a cluster of 3 memory servers under a workload is scraped every
second by Debian's Prometheus server, started by the test on loopback with a configuration and
a store of its own; queries through its HTTP API show a non-zero put rate, the capacity in use,
a degraded RAID1 member after a SIGKILL of a memory server, then its rebuild once the server is
started again. Every wait is bounded; Prometheus and the workload are stopped by their PIDs.
Region names appear in the metrics only with `--metrics per-region` (metrics_per_region)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from test_cli import (BUILD_DIR, fampool, free_base_port, pids_of,  # noqa: F401 (fixture)
                      run_dir, stop_process, up_on_free_ports)

SOAK_WORKER = os.path.join(BUILD_DIR, "tests", "workers", "soak_worker")
PREFIX = "metrics"
WORKLOAD_S = 60  # the workload's length; the test stops it sooner when it has seen enough


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics_targets(run_dir):
    """host:port of every metrics endpoint the cluster file names: the metadata service's, then
    the memory servers'."""
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        text = f.read()
    metadata = re.search(r"(?m)^metadata_metrics_port: (\d+)$", text).group(1)
    servers = re.findall(r"(?m)^    metrics_port: (\d+)$", text)
    return [f"127.0.0.1:{port}" for port in [metadata, *servers]]


class Prometheus:
    """A Prometheus server of the test's own, scraping `targets` every second."""

    def __init__(self, targets, workdir):
        binary = shutil.which("prometheus")
        assert binary, "Debian's prometheus is not installed: run scripts/setup"
        self.port = free_port()
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: fampool\n    static_configs:\n"
                    f"      - targets: {json.dumps(targets)}\n")
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.wait_for(lambda: self.get("/-/ready") is not None, 30, "Prometheus to be ready")

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.read().decode()
        except OSError:
            return None

    def query(self, expression):
        """The instant vector `expression` evaluates to now: [(labels, value)]."""
        text = self.get("/api/v1/query?query=" + urllib.parse.quote(expression))
        if text is None:
            return []
        answer = json.loads(text)
        assert answer["status"] == "success", answer
        return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]

    def wait_for(self, ready, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"Prometheus ended: see {self.log.name}"
            if ready():
                return
            time.sleep(0.5)
        pytest.fail(f"waited {seconds} s for {what}")

    def wait_for_value(self, expression, seconds, what):
        """Waits until `expression` has a sample above 0; returns the samples."""
        found = []

        def ready():
            found[:] = [s for s in self.query(expression) if s[1] > 0]
            return bool(found)
        self.wait_for(ready, seconds, f"{what} ({expression})")
        return found

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def prometheus_dir():
    path = tempfile.mkdtemp(prefix="fampool-prometheus-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_prometheus_sees_puts_capacity_a_degraded_member_and_its_rebuild(run_dir, prometheus_dir):
    up_on_free_ports(run_dir, "--interleave", "65536", "--metrics", "per-region", servers=3)
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    setup = subprocess.run([SOAK_WORKER, "--setup", PREFIX, "1"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    prometheus = Prometheus(metrics_targets(run_dir), prometheus_dir)
    worker_log = open(os.path.join(prometheus_dir, "worker.log"), "w")
    worker = subprocess.Popen([SOAK_WORKER, "0", str(WORKLOAD_S), PREFIX, "--redundant-only"],
                              env=env, stdout=worker_log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    try:
        every_target_up = 'count(up{job="fampool"} == 1)'
        prometheus.wait_for(lambda: [v for _, v in prometheus.query(every_target_up)] == [4.0],
                            30, "all 4 endpoints to be scraped")
        puts = prometheus.wait_for_value('rate(fampool_client_bytes_total{kind="put"}[5s])', 30,
                                         "a put rate")
        assert puts[0][1] > 0
        prometheus.wait_for_value(
            'histogram_quantile(0.5, sum by (le) '
            '(rate(fampool_client_operation_duration_seconds_bucket{kind="put"}[5s])))', 30,
            "a median blocking put time")
        used = prometheus.wait_for_value("sum(fampool_memserver_used_bytes)", 30,
                                         "memory in use on the memory servers")
        assert used[0][1] > 0
        prometheus.wait_for_value(f'fampool_region_used_bytes{{region="{PREFIX}raid1"}}', 30,
                                  "bytes in use in the RAID1 region")
        prometheus.wait_for_value('fampool_regions_used_bytes{redundancy="RAID1"}', 30,
                                  "bytes in use in RAID1 regions")

        # A SIGKILL of memory server 1: its members of the RAID1 region are lost.
        name = "memory1"
        pid = pids_of(run_dir)[name]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [arg.decode() for arg in f.read().split(b"\0") if arg]
        os.kill(pid, signal.SIGKILL)
        prometheus.wait_for_value(
            f'fampool_region_members_degraded{{region="{PREFIX}raid1",state="lost"}}', 30,
            "a lost RAID1 member")
        prometheus.wait_for_value('fampool_regions_degraded{redundancy="RAID1"}', 30,
                                  "a degraded RAID1 region")
        down = prometheus.query('fampool_memserver_up{server="1"}')
        assert down and down[0][1] == 0, down

        # Started again, the server's members are rebuilt at once.
        with open(os.path.join(run_dir, "logs", f"{name}.log"), "a") as out:
            restarted = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        with open(os.path.join(run_dir, "pids", f"{name}.pid"), "w") as f:
            f.write(f"{restarted.pid}\n")
        prometheus.wait_for_value("fampool_rebuilt_members_total", 60, "a rebuilt member")
        prometheus.wait_for(
            lambda: not prometheus.query(f'fampool_region_members_degraded{{region="{PREFIX}raid1"}}')
            and [v for _, v in prometheus.query('fampool_regions_degraded{redundancy="RAID1"}')]
            == [0.0], 60, "the RAID1 region to be healthy again")
        prometheus.wait_for_value('fampool_memserver_up{server="1"}', 30, "server 1 up again")
    finally:
        stop_process(worker, worker_log)
        prometheus.stop()


def test_region_names_stay_out_of_the_metrics_unless_asked_for(run_dir):
    up_on_free_ports(run_dir, "--interleave", "65536", "--authentication", "none", servers=3)
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    setup = subprocess.run([SOAK_WORKER, "--setup", "secretname", "1"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    with urllib.request.urlopen(f"http://{metrics_targets(run_dir)[0]}/metrics",
                                timeout=10) as reply:
        text = reply.read().decode()
    assert re.search(r'(?m)^fampool_regions\{shard="0",redundancy="RAID1"\} 2$', text), text
    assert "secretname" not in text and "fampool_region_size_bytes" not in text, text


def in_time_wait(port):
    """Whether a connection on 127.0.0.1:PORT lingers in TIME_WAIT (state 06 of /proc/net/tcp)."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return any(row[1] == f"0100007F:{port:04X}" and row[3] == "06" for row in rows)


def test_a_metrics_port_whose_last_connections_linger_in_time_wait_is_served(run_dir):
    """A port whose last connections linger in TIME_WAIT (a memory server's fabric port a moment
    before, in bench_smoke) is free to `up`'s probe, and a metrics endpoint binds it: with
    cpp-httplib's own socket options (SO_REUSEPORT, not SO_REUSEADDR) the server stopped,
    "cannot serve metrics on 127.0.0.1:PORT (port taken ...)"."""
    for attempt in range(3):
        base = free_base_port(servers=1)
        port = base + 400  # memory server 0's metrics endpoint (docs/configuration.md)
        # The side that closes first keeps the connection in TIME_WAIT: here, the port's.
        with socket.socket() as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(1)
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            accepted, _ = listener.accept()
            accepted.close()
            time.sleep(0.1)
            client.close()
        assert in_time_wait(port), f"no connection of port {port} in TIME_WAIT"
        up = fampool("up", "--memservers", "1", "--provider", "tcp", "--run-dir", run_dir,
                     "--base-port", str(base), "--authentication", "none")
        # Another test may take one of the other ports meanwhile: new ports, not this one.
        if up.returncode == 0 or f"127.0.0.1:{port} " in up.stdout + up.stderr or attempt == 2:
            break
    assert up.returncode == 0, up.stdout + up.stderr
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.status == 200
        assert b"fampool_" in reply.read()
