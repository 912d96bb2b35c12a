"""A client on another host than its servers: the servers run in a network namespace this test
creates, reached over a veth pair, so the client's fabric endpoints must bind the address on
its route to them (not loopback). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and `ip`.

The namespace, the veth pair and the servers are removed again whatever happens; every
command is bounded in time.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

from test_cli import BUILD_DIR, fampool, free_base_port, stop_cluster

IP = shutil.which("ip") or "/usr/sbin/ip"
GET_PUT = os.path.join(BUILD_DIR, "examples", "get_put")


def ip(*args, check=True):
    return subprocess.run([IP, *args], capture_output=True, text=True, timeout=30, check=check,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def remote_host():
    """A namespace "server host" at 10.253.N.2, this host at 10.253.N.1 on a veth pair:
    (namespace, server address)."""
    if os.geteuid() != 0 or not os.access(IP, os.X_OK):
        pytest.skip("needs root and iproute2's ip to create a network namespace")
    n = os.getpid() % 250 + 1
    ns, near, far = f"fampool-t{os.getpid()}", f"fpv{os.getpid()}a", f"fpv{os.getpid()}b"
    try:
        ip("netns", "add", ns)
        ip("link", "add", near, "type", "veth", "peer", "name", far)
        ip("link", "set", far, "netns", ns)
        ip("addr", "add", f"10.253.{n}.1/30", "dev", near)
        ip("link", "set", near, "up")
        ip("-n", ns, "addr", "add", f"10.253.{n}.2/30", "dev", far)
        ip("-n", ns, "link", "set", far, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        yield ns, f"10.253.{n}.2"
    finally:
        ip("link", "del", near, check=False)  # takes its peer along
        ip("netns", "del", ns, check=False)


@pytest.fixture
def remote_cluster(remote_host):
    """One memory server and the metadata service inside the namespace, over tcp:
    (cluster file, run directory)."""
    ns, host = remote_host
    run_dir = tempfile.mkdtemp(prefix="fampool-remote-")
    base = free_base_port(servers=1)
    cluster_file = os.path.join(run_dir, "remote.yaml")
    with open(cluster_file, "w") as f:
        f.write(f"""openfam_model: memory_server
provider: tcp
metadata_address: {host}:{base}
metadata_dir: {run_dir}/meta
archive_dir: {run_dir}/backup
memservers:
  - id: 0
    rpc_interface: {host}:{base + 1}
    libfabric_port: {base + 100}
    fabric_host: {host}
    fam_path: {run_dir}/heaps0
    shm_path: {run_dir}/shm0
""")
    try:
        # `up` inside the namespace starts the servers there and waits until they answer.
        up = subprocess.run([IP, "netns", "exec", ns,
                             os.path.join(BUILD_DIR, "tools", "fampool"),
                             "up", "--config", cluster_file, "--run-dir", run_dir],
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
        assert up.returncode == 0, f"fampool up in {ns} failed:\n{up.stdout}\n{up.stderr}"
        yield os.path.join(run_dir, "cluster.yaml"), run_dir
    finally:
        stop_cluster(run_dir)


def client(cluster_file, **env):
    return subprocess.run([GET_PUT], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL,
                          env={**os.environ, "FAMPOOL_CONFIG": cluster_file,
                               "FAMPOOL_FABRIC_TIMEOUT_MS": "3000", **env})


def test_client_reaches_servers_on_another_host(remote_cluster):
    cluster_file, run_dir = remote_cluster
    run = client(cluster_file)
    assert run.returncode == 0, f"get_put failed:\n{run.stdout}\n{run.stderr}"
    assert "get_put: OK" in run.stdout
    # The same with the interface named.
    named = client(cluster_file, FAMPOOL_IF_DEVICE=f"fpv{os.getpid()}a")
    assert named.returncode == 0, f"get_put failed:\n{named.stdout}\n{named.stderr}"
    status = fampool("status", "--config", cluster_file)
    assert status.returncode == 0, status.stderr


def test_client_bound_to_loopback_cannot_reach_them(remote_cluster):
    """What clients did before they chose their interface: the first transfer fails with
    FAM_ERR_LIBFABRIC (in bounded time) instead of reaching the server."""
    cluster_file, _ = remote_cluster
    run = client(cluster_file, FAMPOOL_IF_DEVICE="lo")
    assert run.returncode != 0, run.stdout
    assert "get_put: OK" not in run.stdout
    assert "fam_put_blocking" in run.stderr, run.stderr
    assert "(Fam_Error 5)" in run.stderr, run.stderr  # FAM_ERR_LIBFABRIC
