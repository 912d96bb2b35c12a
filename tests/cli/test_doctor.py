"""`fampool doctor` (issue 33 part 5): on a healthy cluster every check passes and the exit
status is 0; each broken set-up below fails with status 1, naming the cause and its fix: a
provider this node does not offer, munged stopped, a cluster that is down, too little room for
volatile heaps (a 16 MiB tmpfs, as root), a port of the cluster another program holds, a clock
10 minutes off (the doctor run under faketime), a server of another fampool version (a gRPC
server of the test's own answering Info as one), and a program's environment that overrides
the cluster's provider."""
import os
import re
import shutil
import socket
import subprocess
from concurrent import futures

import pytest

from test_cli import FAMPOOL, fampool, pids_of, cluster, run_dir  # noqa: F401 (fixtures)


def doctor(*args):
    return fampool("doctor", *args)


def copy_of_cluster_file(run_dir, name, edit):
    """RUN_DIR/NAME: the cluster file with EDIT(text) applied; its path."""
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        text = edit(f.read())
    path = os.path.join(run_dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_a_healthy_cluster_passes_every_check(cluster):
    run_dir, _ = cluster
    checked = doctor("--run-dir", run_dir)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "FAIL" not in checked.stdout, checked.stdout
    for found in ("provider tcp is offered", "the metadata service listens",
                  "memory server 0 listens", "memory server 1 listens", "munged answers",
                  "the metadata service runs this node's fampool, 0.",
                  "memory server 1 runs this node's fampool", "memory server 0's clock is",
                  "memory server 1's metrics endpoint answers", "a program started here reads"):
        assert found in checked.stdout, checked.stdout
    counts = re.search(r"(\d+) of (\d+) checks passed", checked.stdout)
    assert counts and counts.group(1) == counts.group(2), checked.stdout


def test_a_provider_this_node_does_not_offer_is_named_with_those_it_does(cluster):
    run_dir, _ = cluster
    path = copy_of_cluster_file(run_dir, "cxi.yaml",
                                lambda text: re.sub(r"(?m)^provider: .*$", "provider: cxi", text))
    checked = doctor("--config", path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FAIL provider cxi" in checked.stdout and "not offered" in checked.stdout, \
        checked.stdout
    assert "tcp" in checked.stdout.split("offered:")[1].split("\n")[0], checked.stdout
    assert "fix: set `provider:`" in checked.stdout, checked.stdout


def test_munged_stopped_is_named(cluster):
    run_dir, _ = cluster
    os.kill(pids_of(run_dir)["munged"], 9)
    checked = doctor("--run-dir", run_dir)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "munged does not make credentials" in checked.stdout, checked.stdout
    assert "fix: start it" in checked.stdout, checked.stdout


def test_a_cluster_that_is_down_says_fampool_up(cluster):
    run_dir, _ = cluster
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    checked = doctor("--run-dir", run_dir)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FAIL the metadata service: nothing listens" in checked.stdout, checked.stdout
    assert f"`fampool up --run-dir {run_dir}`" in checked.stdout, checked.stdout


def test_too_little_room_for_volatile_heaps_is_named(cluster):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    run_dir, _ = cluster
    small = os.path.join(run_dir, "small-shm")
    os.mkdir(small)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", small],
                             capture_output=True, text=True, timeout=30)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        path = copy_of_cluster_file(
            run_dir, "small.yaml",
            lambda text: re.sub(r"shm_path: [^,}\n]+", f"shm_path: {small}", text))
        checked = doctor("--config", path)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert f"FAIL {small} (volatile heaps)" in checked.stdout, checked.stdout
        assert "less than 256 MiB" in checked.stdout and "fix:" in checked.stdout, \
            checked.stdout
    finally:
        subprocess.run(["umount", small], capture_output=True, timeout=30)


def test_a_port_another_program_holds_is_named_before_up(cluster):
    run_dir, base = cluster
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    metrics_port = base + 400  # memory server 0's metrics endpoint
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", metrics_port))
    holder.listen()
    try:
        checked = doctor("--run-dir", run_dir)
    finally:
        holder.close()
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert (f"FAIL memory server 0's metrics endpoint: 127.0.0.1:{metrics_port} is held by "
            "another program") in checked.stdout, checked.stdout
    assert f"ss -ltnp 'sport = :{metrics_port}'" in checked.stdout, checked.stdout


def test_a_clock_ten_minutes_off_is_named(cluster):
    faketime = shutil.which("faketime")
    assert faketime, "faketime is not installed: run scripts/setup"
    run_dir, _ = cluster
    checked = subprocess.run([faketime, "-f", "+600s", FAMPOOL, "doctor", "--run-dir", run_dir],
                             capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert re.search(r"FAIL the metadata service's clock is -(599|600)\.\d+ s from this node's",
                     checked.stdout), checked.stdout
    assert "fix: synchronize the nodes' clocks" in checked.stdout, checked.stdout


def test_a_server_of_another_fampool_version_is_named(cluster):
    grpc = pytest.importorskip("grpc", reason="grpcio (scripts/setup installs it) answers as "
                                              "the old server")
    run_dir, _ = cluster

    # ServerInfo with id 0, version (field 12) "0.0.9 (protocol deadbeef)" and no clock.
    version = b"0.0.9 (protocol deadbeef)"
    info = bytes([0x08, 0x00, 0x62, len(version)]) + version
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "fampool.rpc.MemoryServer",
        {"Info": grpc.unary_unary_rpc_method_handler(lambda request, context: info)})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        path = copy_of_cluster_file(
            run_dir, "old.yaml",
            lambda text: re.sub(r"rpc_interface: \S+", f"rpc_interface: 127.0.0.1:{port}", text,
                                count=1))
        checked = doctor("--config", path)
    finally:
        server.stop(0)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FAIL memory server 0 runs fampool 0.0.9 (protocol deadbeef), this node's is" in \
        checked.stdout, checked.stdout
    assert "install the same fampool on every node" in checked.stdout, checked.stdout


def test_an_environment_that_overrides_the_clusters_provider_is_named(cluster):
    run_dir, _ = cluster
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"),
               FAMPOOL_PROVIDER="shm")
    checked = fampool("doctor", "--run-dir", run_dir, env=env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "set by the environment over the file: provider=shm (FAMPOOL_PROVIDER)" in \
        checked.stdout, checked.stdout
    assert "FAIL a program started here would ask for provider shm, and the cluster serves " \
        "over tcp" in checked.stdout, checked.stdout
