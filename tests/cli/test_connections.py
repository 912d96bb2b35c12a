"""The services' gRPC ports against connections that never call, from anyone who reaches them:
2,000 idle connections held while `fampool status` and a program's fam_initialize run, which
must succeed, and again at once after they close; connections that never speak HTTP/2 are
closed by the service within its handshake timeout (10 s); the services raise their open-file
limit to the hard one, and `fampool doctor` names a service that may hold too few; a service
that ran out of descriptors accepts connections again once they are free."""
import os
import resource
import socket
import subprocess
import time

from test_cli import (FAMPOOL, fampool, free_base_port, run_dir,  # noqa: F401 (fixture)
                      cluster, stop_cluster)

EXAMPLE = os.path.join(os.path.dirname(FAMPOOL), "..", "examples", "first_program")
HANDSHAKE_TIMEOUT_S = 10  # tools/server/listeners.h kHandshakeTimeout


def grpc_ports(run_dir):
    """(host, port) of the metadata service and of each memory server, from the cluster file."""
    found = []
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        for line in f:
            for key in ("metadata_address:", "rpc_interface:"):
                if line.strip().startswith(key):
                    host, port = line.split(key)[1].strip().strip('"').rsplit(":", 1)
                    found.append((host, int(port)))
    return found


def idle_connections(address, count):
    """COUNT TCP connections to ADDRESS that send nothing."""
    made = []
    for _ in range(count):
        s = socket.create_connection(address, timeout=5)
        made.append(s)
    return made


def raise_own_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, needed), hard))


def test_idle_connections_do_not_keep_new_clients_out(cluster):
    run_dir, _ = cluster
    ports = grpc_ports(run_dir)
    assert len(ports) == 3, ports
    raise_own_limit(2500)
    held = []
    try:
        held += idle_connections(ports[0], 1000)  # the metadata service
        held += idle_connections(ports[1], 1000)  # a memory server
        status = fampool("status", "--run-dir", run_dir, timeout=30)
        assert status.returncode == 0, status.stdout + status.stderr
        env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
        program = subprocess.run([EXAMPLE], capture_output=True, text=True, env=env, timeout=60)
        assert program.returncode == 0, program.stdout + program.stderr
    finally:
        for s in held:
            s.close()
    started = time.monotonic()
    again = fampool("status", "--run-dir", run_dir, timeout=30)
    assert again.returncode == 0, again.stdout + again.stderr
    assert time.monotonic() - started < 5, "status was slow once the connections closed"


def test_connections_that_never_speak_http2_are_closed(cluster):
    run_dir, _ = cluster
    held = idle_connections(grpc_ports(run_dir)[0], 20)
    closed = set()
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S + 10
    try:
        while len(closed) < len(held) and time.monotonic() < deadline:
            for i, s in enumerate(held):
                if i in closed:
                    continue
                s.settimeout(0.05)
                try:
                    if s.recv(64) == b"":
                        closed.add(i)
                except socket.timeout:
                    pass
                except ConnectionError:
                    closed.add(i)
    finally:
        for s in held:
            s.close()
    assert len(closed) == len(held), f"{len(held) - len(closed)} idle connections still open"


def test_a_service_that_ran_out_of_descriptors_accepts_again(cluster):
    """The metadata service's open-file limit lowered to what it holds plus 100, then 300
    connections: gRPC's accept fails (EMFILE), after which gRPC 1.51 alone never accepted
    again. Once they close, the service listens anew within a few seconds, and `fampool
    status` and a program work."""
    run_dir, _ = cluster
    with open(os.path.join(run_dir, "pids", "metadata.pid")) as f:
        pid = int(f.read().split()[0])
    _, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{pid}/fd")) + 100, hard))
    log = os.path.join(run_dir, "logs", "metadata.log")
    held = idle_connections(grpc_ports(run_dir)[0], 300)
    try:
        deadline = time.monotonic() + 10
        while "Failed accept4" not in open(log).read() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "Failed accept4" in open(log).read(), "the service never ran out of descriptors"
    finally:
        for s in held:
            s.close()
    started = time.monotonic()
    while "listening again" not in open(log).read() and time.monotonic() - started < 10:
        time.sleep(0.1)
    assert "listening again" in open(log).read(), open(log).read()[-2000:]
    status = fampool("status", "--run-dir", run_dir, timeout=30)
    assert status.returncode == 0, status.stdout + status.stderr
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    program = subprocess.run([EXAMPLE], capture_output=True, text=True, env=env, timeout=60)
    assert program.returncode == 0, program.stdout + program.stderr


def test_services_raise_their_limit_and_doctor_names_one_that_may_hold_too_few(run_dir):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Started under a hard limit of 4,096: the services raise their soft limit to it, and
    # doctor names each with the fix.
    up = subprocess.run(["prlimit", "--nofile=1024:4096", FAMPOOL, "up", "--memservers", "1",
                         "--provider", "tcp", "--run-dir", run_dir, "--base-port",
                         str(free_base_port(servers=1))],
                        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert up.returncode == 0, up.stdout + up.stderr
    checked = fampool("doctor", "--run-dir", run_dir)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    for who in ("the metadata service", "memory server 0"):
        assert f"FAIL {who} may hold 4096 descriptors, fewer than 16384" in checked.stdout, \
            checked.stdout
    assert "LimitNOFILE=" in checked.stdout, checked.stdout
    stop_cluster(run_dir)
    if hard >= 16384:
        # Under this process's own limit, each may hold as many as the hard limit allows.
        up = fampool("up", "--memservers", "1", "--provider", "tcp", "--run-dir", run_dir,
                     "--base-port", str(free_base_port(servers=1)))
        assert up.returncode == 0, up.stdout + up.stderr
        checked = fampool("doctor", "--run-dir", run_dir)
        assert f"ok   memory server 0 may hold {hard} descriptors" in checked.stdout, \
            checked.stdout
