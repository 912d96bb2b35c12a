"""The fampool command: up, status, ls, down on a real cluster of fampool-server processes.

Runs the programs of a build tree ($FAMPOOL_BUILD_DIR, default ./build). A test that stops or
breaks its cluster starts its own (`cluster`, `run_dir`) in a fresh run directory on random
ports; the tests that leave a cluster as they found it share one per module (`shared_cluster`,
checked to hold no region after each). Every cluster is stopped again (`fampool down` in a
finalizer) whatever happens; every command is bounded in time.
"""
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

BUILD_DIR = os.path.abspath(os.environ.get("FAMPOOL_BUILD_DIR", "build"))
FAMPOOL = os.path.join(BUILD_DIR, "tools", "fampool")
COMMAND_TIMEOUT_S = 60  # `up` waits at most 30 s for the servers


def fampool(*args, timeout=COMMAND_TIMEOUT_S, env=None):
    """Runs `fampool ARGS` and returns the finished process (stdout, stderr as text)."""
    return subprocess.run([FAMPOOL, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL)


def running(pid):
    """Whether pid runs (a zombie has stopped: only its parent has yet to collect it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def pids_of(run_dir):
    pid_dir = os.path.join(run_dir, "pids")
    if not os.path.isdir(pid_dir):
        return {}
    pids = {}
    for name in os.listdir(pid_dir):
        if name.endswith(".pid"):
            with open(os.path.join(pid_dir, name)) as f:
                pids[name[:-4]] = int(f.read().strip())
    return pids


def free_base_port(servers=2):
    """A base port P in 10000-19000 with the ports `up` takes for that many memory servers
    (P..P+servers, P+100..P+100+servers-1, and the metrics endpoints P+300 and
    P+400..P+400+servers-1) free right now. Below the range the C++ suites' clusters draw
    their ports from (20000-32000, tests/support/test_cluster.cc), which run alongside: a port
    found free there was taken by one of them before `up` bound it ("cannot serve metrics on
    127.0.0.1:20343 (port taken)", beside a CPU hog)."""
    import socket
    for _ in range(50):
        base = random.randint(10000, 19000)
        ok = True
        ports = (list(range(base, base + servers + 1)) + list(range(base + 100, base + 100 + servers))
                 + [base + 300] + list(range(base + 400, base + 400 + servers)))
        for port in ports:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    pytest.fail("no free base port found in 10000-19000")


def stop_process(process, log=None):
    """Ends a workload the test started (SIGINT, then SIGKILL after 30 s) and closes its log."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if log:
        log.close()


def stop_cluster(run_dir):
    """`fampool down`, then SIGKILL to what it left running (by PID), then the directory goes."""
    fampool("down", "--run-dir", run_dir, timeout=30)
    for pid in pids_of(run_dir).values():
        if running(pid):
            os.kill(pid, 9)
    shutil.rmtree(run_dir, ignore_errors=True)


def cluster_logs(run_dir, lines=80):
    """The last `lines` lines of each server log of the cluster in `run_dir`, each under its
    name: what a failed test prints, since the directory goes with the cluster."""
    logs = os.path.join(run_dir, "logs")
    out = []
    for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
        with open(os.path.join(logs, name), errors="replace") as f:
            out.append(f"--- {name} (last {lines} lines)\n" + "".join(f.readlines()[-lines:]))
    return "\n".join(out)


def new_run_dir():
    path = tempfile.mkdtemp(prefix="fampool-cli-")
    # Readable by all (clients of other users read the cluster file and reach the munged
    # socket), writable by its owner only: munged refuses to run below a directory others may
    # write.
    os.chmod(path, 0o755)
    return path


# How `fampool up` says a port it was given is taken (a test running beside this one bound it
# between free_base_port's check and the server's start).
PORT_TAKEN = re.compile(r"cannot (listen|serve metrics) on|port taken|Address already in use")


def up_on_free_ports(run_dir, *options, servers=2):
    """`fampool up --memservers SERVERS --provider tcp OPTIONS` in RUN_DIR on a free base port,
    tried again (at most 3 times, each on new ports) when a port was taken meanwhile by another
    test's cluster: the base port. Fails the test on any other failure."""
    for attempt in range(3):
        base = free_base_port(servers=servers)
        up = fampool("up", "--memservers", str(servers), "--provider", "tcp", "--run-dir",
                     run_dir, "--base-port", str(base), *options)
        if up.returncode == 0:
            return base
        if not PORT_TAKEN.search(up.stdout + up.stderr) or attempt == 2:
            break
    pytest.fail(f"fampool up failed:\n{up.stdout}\n{up.stderr}")


def start_cluster(run_dir):
    """`fampool up` of two memory servers over the tcp provider in RUN_DIR: (run_dir, base_port)."""
    return run_dir, up_on_free_ports(run_dir)


@pytest.fixture
def run_dir(request):
    """A fresh run directory; the cluster started there is stopped afterwards, whatever happens."""
    path = new_run_dir()
    request.addfinalizer(lambda: stop_cluster(path))
    return path


@pytest.fixture
def cluster(run_dir):
    """A running cluster of its own, for a test that stops or breaks it: (run_dir, base_port)."""
    return start_cluster(run_dir)


@pytest.fixture(scope="module")
def module_cluster():
    path = new_run_dir()
    try:
        yield start_cluster(path)
    finally:
        stop_cluster(path)


@pytest.fixture
def shared_cluster(module_cluster):
    """The module's one running cluster (as `cluster`), for the tests that leave it as they found
    it: they read it, or remove the regions they made. Each `up` and `down` of a cluster of its
    own costs a test about 2 s. After each test the cluster must hold no region."""
    yield module_cluster
    listing = fampool("ls", "--run-dir", module_cluster[0])
    assert listing.returncode == 0 and "(no regions)" in listing.stdout, \
        f"the test left regions on the shared cluster:\n{listing.stdout}{listing.stderr}"


@pytest.fixture(autouse=True)
def build_present():
    assert os.access(FAMPOOL, os.X_OK), f"{FAMPOOL} is not built (set FAMPOOL_BUILD_DIR)"


def test_up_prints_servers_and_export_line(run_dir):
    base = free_base_port()
    started = time.monotonic()
    up = fampool("up", "--memservers", "2", "--provider", "tcp", "--run-dir", run_dir,
                 "--base-port", str(base))
    assert up.returncode == 0, up.stderr
    assert time.monotonic() - started < 35
    cluster_file = os.path.join(run_dir, "cluster.yaml")
    assert up.stdout.rstrip().splitlines()[-1] == f"export FAMPOOL_CONFIG={cluster_file}"
    assert f"127.0.0.1:{base}" in up.stdout
    assert f"127.0.0.1:{base + 1}" in up.stdout and f"127.0.0.1:{base + 2}" in up.stdout
    assert sorted(pids_of(run_dir)) == ["memory0", "memory1", "metadata", "munged"]
    assert all(running(pid) for pid in pids_of(run_dir).values())


def test_run_starts_four_pes_of_an_example_on_three_interleaved_servers(run_dir):
    """`up --memservers 3` then `run -n 4 PROGRAM`: four PEs under mpirun compute SpMV on a
    matrix and vectors striped over three memory servers, meeting at PMIx barriers."""
    base = free_base_port(servers=3)
    up = fampool("up", "--memservers", "3", "--interleave", "4096", "--provider", "tcp",
                 "--run-dir", run_dir, "--base-port", str(base))
    assert up.returncode == 0, f"fampool up failed:\n{up.stdout}\n{up.stderr}"
    demo = os.path.join(BUILD_DIR, "examples", "spmv_demo")
    run = fampool("run", "-n", "4", "--run-dir", run_dir, demo, "60", timeout=300)
    assert run.returncode == 0, f"fampool run failed:\n{run.stdout}\n{run.stderr}"
    assert "spmv_demo: OK" in run.stdout, run.stdout
    for pe in range(4):
        assert f"spmv_demo: PE {pe}: rows" in run.stdout, run.stdout
    assert "mpirun" in run.stderr  # the command it ran comes first
    status = fampool("status", "--run-dir", run_dir)
    assert status.returncode == 0, status.stderr


def test_up_again_keeps_the_previous_logs(run_dir):
    base = free_base_port()
    args = ("up", "--memservers", "1", "--provider", "tcp", "--run-dir", run_dir,
            "--base-port", str(base))
    first = fampool(*args)
    assert first.returncode == 0, f"fampool up failed:\n{first.stdout}\n{first.stderr}"
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    log = os.path.join(run_dir, "logs", "memory0.log")
    with open(log) as f:
        before = f.read()
    assert before, "the first run's log is empty"
    again = fampool(*args)
    assert again.returncode == 0, f"fampool up failed:\n{again.stdout}\n{again.stderr}"
    with open(log + ".1") as f:
        assert f.read() == before


def test_up_writes_cluster_file_from_options(run_dir):
    base = free_base_port()
    up = fampool("up", "--memservers", "2", "--run-dir", run_dir, "--base-port", str(base),
                 "--interleave", "4096", "--placement", "least-used")
    assert up.returncode == 0, up.stderr
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        text = f.read()
    assert "openfam_model: memory_server" in text
    assert "provider: tcp" in text
    assert f"metadata_address: 127.0.0.1:{base}" in text
    assert "dataitem_interleave_size: 4096" in text
    assert "placement: least-used" in text
    assert f"libfabric_port: {base + 101}" in text
    assert f'fam_path: "{run_dir}/heaps1"' in text
    assert text.count("capacity: ") == 2  # --capacity auto (the node's memory over the servers)


def test_status_shows_both_servers_reachable(shared_cluster):
    run_dir, base = shared_cluster
    status = fampool("status", "--run-dir", run_dir)
    assert status.returncode == 0, status.stderr
    rows = [line.split() for line in status.stdout.splitlines()]
    servers = {row[1]: row[2] for row in rows if len(row) >= 3 and row[0] in ("0", "1")}
    assert servers == {f"127.0.0.1:{base + 1}": "yes", f"127.0.0.1:{base + 2}": "yes"}
    assert "2 memory servers (2 reachable)" in status.stdout


def test_status_reads_cluster_named_by_fampool_config(shared_cluster):
    run_dir, _ = shared_cluster
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    status = fampool("status", env=env)
    assert status.returncode == 0, status.stderr
    assert "2 memory servers (2 reachable)" in status.stdout


def test_ls_of_new_cluster_shows_no_regions(shared_cluster):
    run_dir, _ = shared_cluster
    listing = fampool("ls", "--run-dir", run_dir)
    assert listing.returncode == 0, listing.stderr
    assert "(no regions)" in listing.stdout


def test_ls_of_missing_region_fails_naming_it(shared_cluster):
    run_dir, _ = shared_cluster
    listing = fampool("ls", "no_such_region", "--run-dir", run_dir)
    assert listing.returncode == 1
    assert "fampool ls" in listing.stderr and '"no_such_region"' in listing.stderr
    assert "not found" in listing.stderr


def test_stat_of_missing_item_fails_naming_it(shared_cluster):
    run_dir, _ = shared_cluster
    stat = fampool("stat", "no_such_region", "no_such_item", "--run-dir", run_dir)
    assert stat.returncode == 1
    assert "fampool stat" in stat.stderr and '"no_such_item"' in stat.stderr


def test_second_up_on_same_ports_fails_naming_port(shared_cluster):
    run_dir, base = shared_cluster
    before = pids_of(run_dir)
    again = fampool("up", "--memservers", "2", "--run-dir", run_dir, "--base-port", str(base))
    assert again.returncode == 1
    assert re.search(rf"port {base}\b", again.stderr), again.stderr
    assert "already in use" in again.stderr
    assert f"fampool down --run-dir {run_dir}" in again.stderr
    assert pids_of(run_dir) == before  # the running cluster is left alone
    assert all(running(pid) for pid in before.values())


def test_second_up_in_other_run_dir_names_port_and_owner(shared_cluster):
    run_dir, base = shared_cluster
    other = tempfile.mkdtemp(prefix="fampool-cli-other-")
    try:
        again = fampool("up", "--run-dir", other, "--base-port", str(base))
        assert again.returncode == 1
        assert re.search(rf"port {base}\b", again.stderr), again.stderr
        assert f"fampool down --run-dir {run_dir}" in again.stderr
        assert pids_of(other) == {}
    finally:
        fampool("down", "--run-dir", other, timeout=30)
        shutil.rmtree(other, ignore_errors=True)


def test_down_stops_every_server(cluster):
    run_dir, _ = cluster
    pids = pids_of(run_dir)
    assert len(pids) == 4  # the servers and munged
    down = fampool("down", "--run-dir", run_dir, timeout=30)
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout
    assert not any(running(pid) for pid in pids.values())
    assert pids_of(run_dir) == {}


def test_down_removes_volatile_heap_directory(cluster):
    run_dir, _ = cluster
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        shm_dirs = re.findall(r'shm_path: "([^"]+)"', f.read())
    assert len(shm_dirs) == 2 and all(os.path.isdir(d) for d in shm_dirs)
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    assert not any(os.path.exists(os.path.dirname(d)) for d in shm_dirs)


def test_down_twice_is_idempotent(cluster):
    run_dir, _ = cluster
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    again = fampool("down", "--run-dir", run_dir, timeout=30)
    assert again.returncode == 0
    assert "nothing is running" in again.stdout


def test_status_after_down_exits_2(cluster):
    run_dir, _ = cluster
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    status = fampool("status", "--run-dir", run_dir)
    assert status.returncode == 2
    assert "metadata service" in status.stderr and "does not answer" in status.stderr


def test_up_config_with_unknown_key_fails_naming_key(run_dir):
    config = os.path.join(run_dir, "bad.yaml")
    with open(config, "w") as f:
        f.write(f"openfam_model: memory_server\nprovider: tcp\n"
                f"metadata_address: 127.0.0.1:{free_base_port()}\nno_such_key: 1\n")
    up = fampool("up", "--config", config, "--run-dir", run_dir)
    assert up.returncode == 1
    assert '"no_such_key"' in up.stderr and config in up.stderr
    assert pids_of(run_dir) == {}


def test_up_with_bad_interleave_fails_naming_option(run_dir):
    up = fampool("up", "--run-dir", run_dir, "--base-port", str(free_base_port()),
                 "--interleave", "100")
    assert up.returncode == 1
    assert "--interleave 100" in up.stderr
    assert pids_of(run_dir) == {}


@pytest.mark.parametrize("value, error", [("0", "--capacity 0: give none"), ("lots", "--capacity")])
def test_up_with_bad_capacity_fails_naming_option(run_dir, value, error):
    up = fampool("up", "--run-dir", run_dir, "--base-port", str(free_base_port()), "--capacity", value)
    assert up.returncode == 1 and error in up.stderr, up.stderr
    assert pids_of(run_dir) == {}


def cluster_ports(run_dir):
    """Every port a cluster file of `up` names: the metadata service's, then each server's."""
    text = open(os.path.join(run_dir, "cluster.yaml")).read()
    return [int(port) for port in re.findall(
        r"(?:metadata_address: 127\.0\.0\.1:|rpc_interface: 127\.0\.0\.1:|libfabric_port: )(\d+)",
        text)]


def test_base_port_auto_gives_two_clusters_free_ports_of_their_own(run_dir):
    other = tempfile.mkdtemp(prefix="fampool-cli-")
    os.chmod(other, 0o755)
    try:
        for where in (run_dir, other):
            up = fampool("up", "--memservers", "2", "--run-dir", where, "--base-port", "auto",
                         "--authentication", "none")
            assert up.returncode == 0, f"fampool up failed:\n{up.stdout}\n{up.stderr}"
        first, second = cluster_ports(run_dir), cluster_ports(other)
        assert len(first) == 5 and len(second) == 5, (first, second)
        assert not set(first) & set(second), (first, second)
        base = first[0]
        # Outside the kernel's ephemeral ports, which outgoing connections take at any moment.
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        assert base > high or base + 400 < low, (base, low, high)
        assert first == [base, base + 1, base + 100, base + 2, base + 101]
        for where in (run_dir, other):
            status = fampool("status", "--run-dir", where)
            assert status.returncode == 0, status.stdout + status.stderr
    finally:
        stop_cluster(other)


@pytest.mark.parametrize("value", ["8x", "70000", "0", ""])
def test_base_port_that_is_neither_a_port_nor_auto_is_refused(run_dir, value):
    up = fampool("up", "--run-dir", run_dir, "--base-port", value)
    assert up.returncode != 0
    assert f'--base-port: "{value}" is neither a port (1 to 65535) nor auto' in up.stderr
    assert pids_of(run_dir) == {}


def test_status_without_cluster_file_fails_naming_it(run_dir):
    status = fampool("status", "--run-dir", run_dir)
    assert status.returncode == 1
    assert os.path.join(run_dir, "cluster.yaml") in status.stderr


def test_server_started_by_hand_on_a_taken_port_fails_naming_it(run_dir):
    """fampool-server itself refuses a taken gRPC port (gRPC would otherwise share it with the
    first owner through SO_REUSEPORT and start as if nothing were wrong)."""
    import socket
    base = free_base_port(servers=1)
    config = os.path.join(run_dir, "cluster.yaml")
    with open(config, "w") as f:
        f.write(f"openfam_model: memory_server\nprovider: tcp\n"
                f"metadata_address: 127.0.0.1:{base}\n"
                f'metadata_dir: "{run_dir}/meta"\n'
                f"memservers:\n  - id: 0\n    rpc_interface: 127.0.0.1:{base + 1}\n"
                f"    libfabric_port: {base + 100}\n"
                f'    fam_path: "{run_dir}/heaps0"\n    shm_path: "{run_dir}/shm0"\n')
    server = os.path.join(BUILD_DIR, "tools", "fampool-server")
    with socket.socket() as owner:
        owner.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # as a gRPC server binds
        owner.bind(("127.0.0.1", base))
        owner.listen()
        try:
            started = subprocess.run([server, "--config", config, "--role", "metadata"],
                                     capture_output=True, text=True, timeout=20,
                                     stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"fampool-server started and served on taken port {base}")
    assert started.returncode != 0, started.stdout + started.stderr
    assert f"127.0.0.1:{base}" in started.stderr, started.stderr


def c_api_script(body):
    """A Python program that initializes fam through libfampool's C API (ctypes), runs BODY and
    finalizes it. BODY sees `lib` (argument and result types of the calls below set) and
    `fam`."""
    return f"""
import ctypes
lib = ctypes.CDLL({os.path.join(BUILD_DIR, "src", "libfampool.so")!r})
lib.c_fam_create.restype = ctypes.c_void_p
lib.c_fam_initialize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
lib.c_fam_create_region.restype = ctypes.c_void_p
lib.c_fam_create_region.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                    ctypes.c_uint, ctypes.c_void_p]
lib.c_fam_allocate_named.restype = ctypes.c_void_p
lib.c_fam_allocate_named.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.c_uint, ctypes.c_void_p]
lib.c_fam_lookup.restype = ctypes.c_void_p
lib.c_fam_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
for call in (lib.c_fam_put_blocking, lib.c_fam_get_blocking):
    call.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                     ctypes.c_size_t]
lib.c_fam_finalize.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
fam = lib.c_fam_create()
assert lib.c_fam_initialize(fam, b"default", None) == 0
{body}
assert lib.c_fam_finalize(fam, b"default") == 0
"""


def run_c_api_in(env, body):
    """Runs c_api_script(BODY) in a child Python process with environment ENV (the child holds
    the fabric state, not this process); returns its stdout."""
    made = subprocess.run(["python3", "-c", c_api_script(body)], capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stdout + made.stderr
    return made.stdout


def run_c_api(run_dir, body):
    """run_c_api_in on the cluster of RUN_DIR."""
    return run_c_api_in(dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml")),
                        body)


def make_region_with_item(run_dir, region, item, region_size, item_size):
    """Creates REGION (mode 0755) with a named ITEM (mode 0640) on the cluster."""
    run_c_api(run_dir, f"""
region = lib.c_fam_create_region(fam, {region!r}.encode(), {region_size}, 0o755, None)
assert region, "create_region failed"
assert lib.c_fam_allocate_named(fam, {item!r}.encode(), {item_size}, 0o640, region)
""")


def remove_regions(run_dir, *regions):
    """`fampool rm -r` of each of REGIONS that exists (a test's cleanup on the shared cluster)."""
    for region in regions:
        if fampool("ls", region, "--run-dir", run_dir).returncode == 0:
            removed = fampool("rm", "-r", region, "--run-dir", run_dir)
            assert removed.returncode == 0, removed.stderr


def test_ls_stat_and_status_show_a_region_and_its_item(shared_cluster):
    run_dir, _ = shared_cluster
    try:
        check_region_with_item_is_shown(run_dir)
    finally:
        remove_regions(run_dir, "results")


def check_region_with_item_is_shown(run_dir):
    make_region_with_item(run_dir, "results", "histogram", 64 << 20, 1 << 20)
    listing = fampool("ls", "--run-dir", run_dir)
    assert listing.returncode == 0, listing.stderr
    assert "results" in listing.stdout and "(no regions)" not in listing.stdout
    items = fampool("ls", "results", "--run-dir", run_dir)
    assert items.returncode == 0, items.stderr
    assert "histogram" in items.stdout
    stat = fampool("stat", "results", "histogram", "--run-dir", run_dir)
    assert stat.returncode == 0, stat.stderr
    assert "histogram" in stat.stdout and "640" in stat.stdout
    assert re.search(r"1(\.0)? ?MiB|1048576", stat.stdout), stat.stdout
    status = fampool("status", "--run-dir", run_dir)
    assert status.returncode == 0, status.stderr
    assert "results" in status.stdout


def test_status_names_a_memory_server_that_died(cluster):
    run_dir, base = cluster
    pids = pids_of(run_dir)
    victim = pids["memory1"]
    os.kill(victim, 9)
    deadline = time.monotonic() + 30
    while running(victim) and time.monotonic() < deadline:
        time.sleep(0.1)
    status = fampool("status", "--run-dir", run_dir)
    assert "2 memory servers (1 reachable)" in status.stdout, status.stdout + status.stderr
    rows = [line.split() for line in status.stdout.splitlines()]
    reachable = {row[1]: row[2] for row in rows if len(row) >= 3 and row[0] in ("0", "1")}
    assert reachable == {f"127.0.0.1:{base + 1}": "yes", f"127.0.0.1:{base + 2}": "NO"}, \
        status.stdout
    assert "memory server 1" in status.stdout and "memory1.log" in status.stdout


def test_status_shows_memory_kinds_and_stat_shows_an_intent_and_its_reasoning(shared_cluster):
    run_dir, _ = shared_cluster
    try:
        check_memory_kinds_and_intent_are_shown(run_dir)
    finally:
        remove_regions(run_dir, "placed", "plain")


def check_memory_kinds_and_intent_are_shown(run_dir):
    status = fampool("status", "--run-dir", run_dir)
    assert status.returncode == 0, status.stderr
    header = next(line for line in status.stdout.splitlines() if line.strip().startswith("ID"))
    assert header.split()[-4:] == ["KIND", "BANDWIDTH", "LATENCY", "DOMAIN"], header
    rows = [line.split() for line in status.stdout.splitlines()]
    servers = [row for row in rows if row and row[0] in ("0", "1") and len(row) > 8]
    assert len(servers) == 2 and all("dram" in row for row in servers), status.stdout
    assert all(re.search(r"[GM]B/s", " ".join(row)) for row in servers), status.stdout
    # A region placed by intent (FAM_HINT_LATENCY | FAM_HINT_PERSISTENT) through the C API.
    run_c_api(run_dir, """
class Attributes(ctypes.Structure):
    _fields_ = [("redundancy", ctypes.c_int), ("memory_type", ctypes.c_int),
                ("interleave", ctypes.c_int), ("permission_level", ctypes.c_int),
                ("hints", ctypes.c_uint32), ("kind", ctypes.c_int),
                ("server_count", ctypes.c_uint32), ("servers", ctypes.c_uint64 * 16),
                ("failure_domain", ctypes.c_char * 64)]
lib.c_fam_create_region_intent.restype = ctypes.c_void_p
lib.c_fam_create_region_intent.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.c_uint, ctypes.POINTER(Attributes)]
attributes = Attributes(hints=(1 << 1) | (1 << 17))
assert lib.c_fam_create_region_intent(fam, b"placed", 1 << 20, 0o755, ctypes.byref(attributes))
assert lib.c_fam_create_region(fam, b"plain", 1 << 20, 0o755, None)
""")
    placed = fampool("stat", "placed", "--run-dir", run_dir)
    assert placed.returncode == 0, placed.stderr
    assert re.search(r"intent:\s+hints latency\+persistent; constraints none", placed.stdout), \
        placed.stdout
    assert re.search(r"placement:\s+persistent memory: 0, 1; latency: ", placed.stdout), \
        placed.stdout
    assert re.search(r"memory type:\s+PERSISTENT|persistent", placed.stdout), placed.stdout
    plain = fampool("stat", "plain", "--run-dir", run_dir)
    assert plain.returncode == 0, plain.stderr
    assert not re.search(r"^\s*intent:", plain.stdout, re.M), plain.stdout
    assert re.search(r"placement:\s+no intent: placed by the cluster's placement policy",
                     plain.stdout), plain.stdout
