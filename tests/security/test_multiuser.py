"""Several users on one fampool, each trying to reach another's data around the permission
checks (issue 29). The suite makes Unix users for the run and removes them afterwards: a
cluster user that runs the servers (`fampool up` as that user), alice who owns the data, bob
who attacks it, and carol, outside the embedded store's sharing group. For every path it tries
the attack and the owner's own use of the same path: the attack must be refused (or be
impossible), the owner's use must work.

Clusters: MUNGE over tcp, MUNGE over shm (the same-node descriptor path), TLS with client
certificates; and the embedded model with a sharing group. Needs root (it makes users, and runs
programs as them); skipped with the reason otherwise. Every command is bounded in time.
"""
import glob
import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_cli import free_base_port  # noqa: E402  (tests/cli: ports `fampool up` may take)

BUILD_DIR = os.path.abspath(os.environ.get("FAMPOOL_BUILD_DIR", "build"))
FAMPOOL = os.path.join(BUILD_DIR, "tools", "fampool")
WORKER = os.path.join(BUILD_DIR, "tests", "workers", "security_worker")
ATTACKER = os.path.join(BUILD_DIR, "tests", "workers", "raw_attacker")
FORGER = os.path.join(BUILD_DIR, "tests", "workers", "message_forger")
TIMEOUT_S = 90
NOPERM = 2  # FAM_ERR_NOPERM (include/fam/fam_exception.h)
ALREADY_EXISTS = 9  # FAM_ERR_ALREADYEXIST
SIGSEGV_EXIT = -11

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="makes Unix users (useradd) and runs programs as them: needs root")


class User:
    def __init__(self, name, groups=()):
        self.name = name
        entry = pwd.getpwnam(name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.groups = [grp.getgrnam(g).gr_gid for g in groups]


@pytest.fixture(scope="module")
def users():
    """The suite's users and sharing group, removed (with what they own) at the end."""
    tag = f"{os.getpid() % 100000:05d}"
    share = f"fpshare{tag}"
    names = {"cluster": f"fpsvc{tag}", "alice": f"fpalice{tag}", "bob": f"fpbob{tag}",
             "carol": f"fpcarol{tag}"}
    subprocess.run(["groupadd", "--system", share], check=True, timeout=30)
    made = []
    try:
        for role, name in names.items():
            extra = ["--groups", share] if role in ("alice", "bob") else []
            subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir",
                            "/nonexistent", "--shell", "/usr/sbin/nologin", "--user-group",
                            *extra, name], check=True, timeout=30)
            made.append(name)
        yield {role: User(name, [share] if role in ("alice", "bob") else [])
               for role, name in names.items()}, share
    finally:
        for name in made:
            subprocess.run(["userdel", name], timeout=30)
        subprocess.run(["groupdel", share], timeout=30)


def run_as(user, argv, env, cwd="/", timeout=TIMEOUT_S):
    """ARGV as USER (its own uid, gid and groups), in ENV; the finished process."""
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout, stdin=subprocess.DEVNULL, user=user.uid,
                          group=user.gid, extra_groups=user.groups)


def worker(user, env, *args):
    """security_worker ARGS as USER: ("ok", text) or ("error", code, message)."""
    done = run_as(user, [WORKER, *args], env)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if line.startswith("ok"):
        return ("ok", line[3:])
    words = line.split(" ", 2)
    assert words[0] == "error", done.stdout + done.stderr
    return ("error", int(words[1]), words[2] if len(words) > 2 else "")


def attacker(user, env, *args):
    """raw_attacker ARGS as USER: {attempt: (code, message)}."""
    done = run_as(user, [ATTACKER, *args], env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = {}
    for line in done.stdout.splitlines():
        name, code, message = (line.split(" ", 2) + [""])[:3]
        results[name] = (int(code), message)
    return results


def forger(user, env, *args):
    """message_forger ARGS as USER, started: the process (its output is read by forged())."""
    return subprocess.Popen([FORGER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd="/", stdin=subprocess.DEVNULL,
                            user=user.uid, group=user.gid, extra_groups=user.groups)


def forged(process):
    """What a message_forger process sent: {what: count}."""
    out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, out + err
    return {line.split()[0]: int(line.split()[2]) for line in out.splitlines()}


def can_open(user, path, mode):
    """Whether USER may open PATH for reading ("r") or writing ("w"), with cat/dd."""
    argv = ["cat", path] if mode == "r" else ["dd", "if=/dev/zero", f"of={path}", "bs=1",
                                              "count=1", "conv=notrunc"]
    return run_as(user, argv, {"PATH": "/usr/bin:/bin"}).returncode == 0


def base_env(config=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMPOOL_", "OPENFAM_"))}
    env["PATH"] = "/usr/bin:/bin"
    # A refused TLS handshake is retried like a service still starting: not for a minute here.
    env["FAMPOOL_CONNECT_TIMEOUT_MS"] = "3000"
    if config:
        env["FAMPOOL_CONFIG"] = config
    return env


class Cluster:
    """A cluster that the cluster user started with `fampool up` in a run directory of its own."""

    def __init__(self, owner, *up_args):
        self.owner = owner
        self.dir = tempfile.mkdtemp(prefix="fampool-multiuser-")
        os.chown(self.dir, owner.uid, owner.gid)
        os.chmod(self.dir, 0o711)
        self.config = os.path.join(self.dir, "cluster.yaml")
        up = run_as(owner, [FAMPOOL, "up", "--run-dir", self.dir, "--base-port",
                            str(free_base_port(2)), *up_args], base_env(), cwd=self.dir)
        if up.returncode != 0:
            self.stop()
            pytest.fail("fampool up as the cluster user failed:\n" + up.stdout + up.stderr)
        self.env = base_env(self.config)

    def files(self, pattern):
        return glob.glob(os.path.join(self.dir, pattern), recursive=True)

    def heap_files(self):
        shm = glob.glob(f"/dev/shm/fampool-{self.owner.uid}-*/ms*/fampool-ms*.r*")
        return shm + self.files("heaps*/fampool-ms*.r*")

    def stop(self):
        run_as(self.owner, [FAMPOOL, "down", "--run-dir", self.dir], base_env(), cwd=self.dir,
               timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def tcp_cluster(users):
    people, _ = users
    cluster = Cluster(people["cluster"], "--memservers", "2", "--provider", "tcp")
    yield cluster
    cluster.stop()


@pytest.fixture
def scratch():
    """A directory every user of the suite may write into (like /tmp), removed afterwards."""
    path = tempfile.mkdtemp(prefix="fampool-multiuser-scratch-")
    os.chmod(path, 0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def make_data(alice, env):
    """alice's regions: "secret" (0700, item 0600) and "shared" (0755, item readable by all)."""
    assert worker(alice, env, "make", "secret", "700", "item", "600", "alice secret") == ("ok", "")
    assert worker(alice, env, "make", "shared", "755", "item", "644", "alice shared") == ("ok", "")


@pytest.fixture
def tcp_data(users, tcp_cluster):
    """alice's regions (make_data) and bob's "bobs" (0700, item 0600) on the tcp cluster, made
    by whichever test comes first."""
    people, _ = users
    alice, bob = people["alice"], people["bob"]
    env = tcp_cluster.env
    if worker(alice, env, "get", "secret", "item", "1")[0] != "ok":
        make_data(alice, env)
    if worker(bob, env, "get", "bobs", "item", "1")[0] != "ok":
        assert worker(bob, env, "make", "bobs", "700", "item", "600", "bob") == ("ok", "")
    return alice, bob, env


def assert_refused(result, code=NOPERM):
    assert result[0] == "error" and result[1] == code, result


# ---------------------------------------------------------------------------------------------
# A MUNGE cluster over tcp


def test_tcp_files_api_backups_and_calls(tcp_data, tcp_cluster):
    alice, bob, env = tcp_data
    # The API: bob is refused the 0600 item; alice reads it.
    assert_refused(worker(bob, env, "get", "secret", "item", "12"))
    assert worker(alice, env, "get", "secret", "item", "12") == ("ok", "alice secret")

    # Heap files and the metadata store: the cluster user's alone.
    heaps = tcp_cluster.heap_files()
    assert heaps, "no heap files found"
    for path in heaps:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
        assert not can_open(bob, path, "r") and not can_open(bob, path, "w"), path
    store = tcp_cluster.files("meta/*.mdb")
    assert len(store) == 2
    for path in store:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
        assert not can_open(bob, path, "w"), path
    assert worker(alice, env, "get", "secret", "item", "12") == ("ok", "alice secret")
    for sub in ("logs", "pids", "meta", "backup"):
        path = os.path.join(tcp_cluster.dir, sub)
        if os.path.isdir(path):
            assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0, path

    # Backups keep the item's permissions: bob may not describe, list, restore or delete alice's.
    assert worker(alice, env, "backup", "secret", "item", "alice-bk") == ("ok", "")
    assert_refused(worker(bob, env, "describe", "alice-bk"))
    listing = worker(bob, env, "list")
    assert listing[0] == "ok" and "alice-bk" not in listing[1], listing
    assert_refused(worker(bob, env, "restore", "alice-bk", "bobs", "item"))
    assert_refused(worker(bob, env, "restore-new", "alice-bk", "bobs", "stolen"))
    assert_refused(worker(bob, env, "delete", "alice-bk"))
    assert worker(bob, env, "get", "bobs", "item", "3") == ("ok", "bob")
    for argv in (["backup", "--list"], ["backup", "--list", "alice-bk"],
                 ["restore", "alice-bk", "bobs", "cli-stolen"], ["backup", "--delete", "alice-bk"]):
        done = run_as(bob, [FAMPOOL, *argv], env)
        assert "alice-bk" not in done.stdout, (argv, done.stdout)
        if argv != ["backup", "--list"]:
            assert done.returncode != 0 and "permission denied" in done.stderr, (argv, done.stderr)
    archives = tcp_cluster.files("backup/*")
    assert archives, "no archive file"
    for path in archives:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
        assert not can_open(bob, path, "r"), path
    described = worker(alice, env, "describe", "alice-bk")
    assert described[0] == "ok" and "mode=0700" in described[1], described
    assert "alice-bk" in worker(alice, env, "list")[1]
    assert worker(alice, env, "restore-new", "alice-bk", "secret", "copy") == ("ok", "")
    assert worker(alice, env, "get", "secret", "copy", "12") == ("ok", "alice secret")
    listing = run_as(alice, [FAMPOOL, "backup", "--list"], env)
    assert "alice-bk" in listing.stdout, listing.stdout + listing.stderr
    assert worker(alice, env, "delete", "alice-bk") == ("ok", "")

    # Listings: bob does not see alice's private region; alice does.
    for command in ("status", "ls"):
        assert "secret" not in run_as(bob, [FAMPOOL, command], env).stdout
        assert "secret" in run_as(alice, [FAMPOOL, command], env).stdout


def test_tcp_memory_server_and_metadata_calls_of_another_user(tcp_data, scratch):
    alice, bob, env = tcp_data
    mine, theirs = os.path.join(scratch, "alice.key"), os.path.join(scratch, "bob.key")
    assert attacker(alice, env, "key", "secret", "item", mine)["key"][0] == 0
    assert attacker(bob, env, "key", "bobs", "item", theirs)["key"][0] == 0
    # bob aims at alice's region with his own key (what he has): every call is refused.
    victim = os.path.join(scratch, "victim.key")
    with open(mine) as f:
        fields = f.read().split()
    with open(theirs) as f:
        fields[4] = f.read().split()[4]  # bob's key
    with open(victim, "w") as f:
        f.write(" ".join(fields) + "\n")
    os.chmod(victim, 0o644)
    results = attacker(bob, env, "memserver", victim)
    for call in ("CreateExtent", "ResizeExtent", "Zero", "ZeroExtents", "GrantKey", "RevokeKeys",
                 "Resync", "DestroyExtent"):
        assert results[call][0] == NOPERM and "only from uid" in results[call][1], (call, results)
    for call in ("Copy", "Backup", "Atomic", "ApplyElements", "Mirror", "Stripe", "Populate"):
        assert results[call][0] != 0, (call, results)
    assert worker(alice, env, "get", "secret", "item", "12") == ("ok", "alice secret")
    # The owner's own key works for the calls clients make (a copy within her item).
    own = attacker(alice, env, "memserver", mine)
    assert own["Copy"][0] == 0, own
    assert own["GrantKey"][0] == NOPERM, "not the cluster user either"

    # bob's own item backed up by the memory server that does not hold it, with alice named
    # as its owner: that server holds no grant for the key, and refuses instead of taking
    # bob's word (alice would have restored bob's bytes as her own backup).
    with open(theirs) as f:
        elsewhere = str(1 - int(f.read().split()[3]))
    forged_backup = attacker(bob, env, "elsewhere", theirs, elsewhere, str(alice.uid), "alice-2")
    assert forged_backup["BackupElsewhere"][0] == NOPERM, forged_backup
    assert "holds no grant" in forged_backup["BackupElsewhere"][1], forged_backup
    assert worker(alice, env, "describe", "alice-2")[0] == "error"

    metadata = attacker(bob, env, "metadata", "secret", "0")
    assert metadata["RebuildAll"][0] == NOPERM, metadata
    assert metadata["RebuildRegion"][0] == NOPERM, metadata
    assert metadata["ReportFailure"][0] == 0, "a report only makes the service probe"
    assert metadata["ReportUsage"][0] == 0, "a usage report only adds to the known kinds' counters"
    assert metadata["ServerLost"][0] == 1, "a live server is not declared dead on bob's word"
    assert metadata["StatusListsRegion"][0] == 1, "bob's status does not list alice's region"
    assert attacker(alice, env, "metadata", "secret", "0")["StatusListsRegion"][0] == 0

    sessions = attacker(bob, env, "sessions", "secret")
    for attempt in ("ClaimUidZero", "NoToken", "ReplayCredential", "EndedToken"):
        assert sessions[attempt][0] == NOPERM, (attempt, sessions)
    own = attacker(alice, env, "sessions", "secret")
    assert own["ClaimUidZero"][0] == 0, "alice's token is alice whatever uid she states"


def test_tcp_forged_and_relayed_replies_are_not_taken(tcp_data):
    """bob sends alice's message endpoints replies for call ids 1-120 (and random ones) naming
    his own item, and makes the metadata service answer his own lookups to her endpoints,
    while alice allocates items in her 0700 region and writes a secret into each: every item
    she gets is in her region, and bob's item still holds his bytes."""
    alice, bob, env = tcp_data
    attack = forger(bob, env, "replies", str(alice.uid), "bobs", "item", "7")
    try:
        allocated = worker(alice, env, "secrets", "secret", "30", "alice secret")
    finally:
        sent = forged(attack)
    assert allocated == ("ok", "misplaced 0")
    assert sent["victim-endpoints"] > 0, sent  # alice's endpoints were found and attacked
    assert sent["forged"] > 0 and sent["relayed"] > 0, sent
    assert worker(bob, env, "get", "bobs", "item", "3") == ("ok", "bob")


def test_tcp_calls_without_a_session_hold_nothing_for_others(tcp_data):
    """bob floods the metadata service's and the memory servers' message endpoints with calls
    that name no live session and a reply endpoint that never accepts, while alice allocates
    and writes: each of those calls is dropped as it is read, holding no reply slot, and every
    call of alice's succeeds (before, each took a slot for a second: her allocations failed
    after 10 s, "may or may not have been done")."""
    alice, bob, env = tcp_data
    flood = forger(bob, env, "flood", "6")
    try:
        allocated = worker(alice, env, "secrets", "secret", "30", "alice secret")
    finally:
        sent = forged(flood)
    assert allocated == ("ok", "misplaced 0")
    assert sent["endpoints"] == 3 and sent["flood"] > 1000, sent


def median(values):
    return sorted(values)[len(values) // 2]


def test_tcp_a_sessionless_flood_leaves_others_calls_as_fast(tcp_data):
    """alice's allocations (metadata service) and RAID1 atomics (memory servers), timed while
    bob floods every message endpoint with calls that name no session, 6,400 a second (ten
    times the flood that once made every user's calls wait 10 s), in bursts of 250 ms with
    250 ms of quiet between: the median of alice's calls during the bursts within 2x of their
    median in the quiet halves, taken in the same run so that the machine's drift cancels. The
    flood costs the services the reading of each message only."""
    alice, bob, env = tcp_data
    made = worker(alice, env, "region", "timed", str(8 << 20), "raid1")
    assert made == ("ok", "") or made[:2] == ("error", ALREADY_EXISTS), made
    period_ns = 500 * 1000 * 1000
    flood = forger(bob, env, "flood", "8", "6400", str(period_ns // 1000000))
    try:
        time.sleep(1)  # the flood under way (the forger finds the endpoints first)
        result = worker(alice, env, "time", "timed", "600")
    finally:
        sent = forged(flood)
    assert result[0] == "ok" and sent["flood"] > 10000, (result, sent)
    loud, quiet = ([], []), ([], [])
    for entry in result[1].split():
        start, allocation, atomic = entry.split(":")
        phase = (int(start) - sent["start_ns"]) % period_ns / period_ns
        if 0.05 < phase < 0.45:
            loud[0].append(float(allocation)), loud[1].append(float(atomic))
        elif 0.55 < phase < 0.95:
            quiet[0].append(float(allocation)), quiet[1].append(float(atomic))
    assert min(len(quiet[0]), len(loud[0])) > 50, (len(quiet[0]), len(loud[0]))
    for kind, during, without in zip(("allocation", "atomic"), loud, quiet):
        assert median(during) <= 2 * median(without), (kind, median(during), median(without))


def test_tcp_fabric_keys_cannot_be_guessed_and_die_with_the_permission(tcp_data, scratch):
    alice, bob, env = tcp_data
    own = os.path.join(scratch, "bob.key")
    assert attacker(bob, env, "key", "bobs", "item", own)["key"][0] == 0
    assert attacker(bob, env, "read", own)["read0"] == (0, "bob")
    guess = attacker(bob, env, "guess", own, "500")
    assert guess["guess"][0] == 0, guess  # no key near bob's reaches any memory

    # bob may read "shared": his key works until alice withdraws the permission.
    shared = os.path.join(scratch, "shared.key")
    assert attacker(bob, env, "key", "shared", "item", shared)["key"][0] == 0
    assert attacker(bob, env, "read", shared)["read0"] == (0, "alice shared")
    assert worker(alice, env, "chmod", "shared", "-", "700") == ("ok", "")
    stale = attacker(bob, env, "read", shared)["read0"]
    assert stale[0] != 0, stale
    assert worker(alice, env, "get", "shared", "item", "12") == ("ok", "alice shared")
    assert worker(alice, env, "chmod", "shared", "-", "755") == ("ok", "")


# ---------------------------------------------------------------------------------------------
# A MUNGE cluster over shm: the same-node descriptor path


def test_shm_descriptors_follow_the_permissions(users, scratch):
    people, _ = users
    alice, bob = people["alice"], people["bob"]
    cluster = Cluster(people["cluster"], "--memservers", "1", "--provider", "shm")
    try:
        env = cluster.env
        make_data(alice, env)
        for path in cluster.heap_files():
            assert not can_open(bob, path, "r") and not can_open(bob, path, "w"), path
        # Without read permission: no mapping, through the API or the socket itself, even
        # with alice's own key in hand.
        assert_refused(worker(bob, env, "map", "secret", "item", "read", "12"))
        key = os.path.join(scratch, "alice.key")
        assert attacker(alice, env, "key", "secret", "item", key)["key"][0] == 0
        os.chmod(key, 0o644)
        leaked = attacker(bob, env, "socket", key, "read")["SocketRead"]
        assert leaked[0] == NOPERM and "may not read" in leaked[1], leaked
        mine = attacker(alice, env, "socket", key, "write")
        assert mine["SocketWrite"][0] == 0 and mine["SocketBytes"][1] == "alice secret", mine
        # Read permission: a read-only mapping that faults on a store and cannot be made writable.
        assert worker(bob, env, "map", "shared", "item", "read", "12") == ("ok", "alice shared")
        wrote = run_as(bob, [WORKER, "map", "shared", "item", "write", "bob was here"], env)
        assert wrote.returncode == SIGSEGV_EXIT, wrote.stdout + wrote.stderr
        assert worker(bob, env, "map", "shared", "item", "mprotect")[1].startswith(
            "mprotect refused")
        assert worker(alice, env, "map", "shared", "item", "write", "ALICE") == ("ok", "written")
        assert worker(alice, env, "get", "shared", "item", "12") == ("ok", "ALICE shared")
    finally:
        cluster.stop()


# ---------------------------------------------------------------------------------------------
# The embedded model: private by default, shared only through a group


def test_embedded_store_is_private_unless_shared_with_a_group(users, scratch):
    people, share = users
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    private_home = os.path.join(scratch, "private")
    env = base_env()
    env.update(FAMPOOL_HOME=private_home, FAMPOOL_SHM_DIR=os.path.join(scratch, "shm-private"))
    os.makedirs(env["FAMPOOL_SHM_DIR"], mode=0o1777)
    os.chmod(env["FAMPOOL_SHM_DIR"], 0o1777)
    os.makedirs(private_home)
    os.chown(private_home, alice.uid, alice.gid)
    assert worker(alice, env, "make", "secret", "700", "item", "600", "alice secret") == ("ok", "")
    failed = worker(bob, env, "get", "secret", "item", "12")
    assert failed[0] == "error" and "sharing_group" in failed[2], failed
    for path in glob.glob(private_home + "/**/*", recursive=True):
        if os.path.isfile(path):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path

    shared_home = os.path.join(scratch, "shared")
    env = dict(env, FAMPOOL_HOME=shared_home, FAMPOOL_SHARING_GROUP=share,
               FAMPOOL_SHM_DIR=os.path.join(scratch, "shm-shared"))
    os.makedirs(env["FAMPOOL_SHM_DIR"], mode=0o1777)
    os.chmod(env["FAMPOOL_SHM_DIR"], 0o1777)
    assert worker(alice, env, "make", "secret", "700", "item", "600", "alice secret") == ("ok", "")
    assert worker(alice, env, "backup", "secret", "item", "alice-bk") == ("ok", "")
    # bob, a member, shares the store, and its permission checks hold him to alice's bits.
    assert_refused(worker(bob, env, "get", "secret", "item", "12"))
    assert_refused(worker(bob, env, "describe", "alice-bk"))
    assert worker(alice, env, "get", "secret", "item", "12") == ("ok", "alice secret")
    # carol, not a member, reaches nothing: not the store, not a heap, not an archive.
    failed = worker(carol, env, "get", "secret", "item", "12")
    assert failed[0] == "error", failed
    files = [p for p in glob.glob(shared_home + "/**/*", recursive=True) if os.path.isfile(p)]
    files += glob.glob(env["FAMPOOL_SHM_DIR"] + "/*")
    assert any(p.endswith(".fambackup") for p in files), files
    for path in files:
        st = os.stat(path)
        assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == grp.getgrnam(share).gr_gid, path
        assert not can_open(carol, path, "r") and not can_open(carol, path, "w"), path


# ---------------------------------------------------------------------------------------------
# TLS on the control path


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def test_tls_cluster_refuses_plaintext_and_foreign_certificates(users, scratch):
    people, _ = users
    alice, bob = people["alice"], people["bob"]
    cluster = Cluster(people["cluster"], "--memservers", "1", "--provider", "tcp", "--tls",
                      "--tls-client-certificates", "require")
    try:
        tls = os.path.join(cluster.dir, "tls")
        with open(cluster.config) as f:
            text = f.read()
        assert "tls_ca:" in text and "tls_client_certificates: require" in text
        # alice gets a client certificate of the cluster's CA; bob makes himself a CA.
        def certificate(name, ca, ca_key, owner):
            key, pem = os.path.join(scratch, f"{name}.key"), os.path.join(scratch, f"{name}.pem")
            csr = os.path.join(scratch, f"{name}.csr")
            openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
            openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                    "-out", pem, "-days", "2")
            for path in (key, pem):
                os.chown(path, owner.uid, owner.gid)
                os.chmod(path, 0o600)
            return pem, key
        alice_pem, alice_key = certificate("alice", tls + "/ca.pem", tls + "/ca.key", alice)
        other_ca = os.path.join(scratch, "other-ca.pem")
        other_key = os.path.join(scratch, "other-ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", other_key, "-out", other_ca, "-days", "2", "-subj",
                "/CN=another CA")
        bob_pem, bob_key = certificate("bob", other_ca, other_key, bob)

        env = dict(cluster.env, FAMPOOL_TLS_CLIENT_CERTIFICATE=alice_pem,
                   FAMPOOL_TLS_CLIENT_KEY=alice_key)
        assert worker(alice, env, "make", "secret", "700", "item", "600", "alice secret") == (
            "ok", "")
        assert worker(alice, env, "get", "secret", "item", "12") == ("ok", "alice secret")
        # Another CA's certificate, none at all, and a plaintext client are all refused.
        foreign = dict(cluster.env, FAMPOOL_TLS_CLIENT_CERTIFICATE=bob_pem,
                       FAMPOOL_TLS_CLIENT_KEY=bob_key)
        for refused in (worker(bob, foreign, "get", "secret", "item", "12"),
                        worker(bob, cluster.env, "get", "secret", "item", "12")):
            assert refused[0] == "error" and "TLS handshake failed" in refused[2], refused
        plain = os.path.join(scratch, "plain.yaml")
        with open(plain, "w") as f:
            f.write("".join(line + "\n" for line in text.splitlines()
                            if not line.startswith("tls_")))
        os.chmod(plain, 0o644)
        plaintext = worker(alice, base_env(plain), "get", "secret", "item", "12")
        assert plaintext[0] == "error" and "this client must use it too" in plaintext[2], plaintext
        # Metadata calls stay on gRPC: the service opened no fabric endpoint for them.
        log = open(os.path.join(cluster.dir, "logs", "metadata.log")).read()
        assert "metadata calls over the fabric are off" in log, log
    finally:
        cluster.stop()


def test_tls_cluster_offers_no_message_endpoint_to_forge_or_flood(users):
    """The forged-reply and flood probes against a TLS cluster (client certificates not
    required, MUNGE on): its services take no fabric messages (their calls stay on gRPC over
    TLS), so the flood finds no endpoint and relays nothing, and replies forged to alice's
    ports are not taken while she allocates."""
    people, _ = users
    alice, bob = people["alice"], people["bob"]
    cluster = Cluster(people["cluster"], "--memservers", "1", "--provider", "tcp", "--tls")
    try:
        env = cluster.env
        make_data(alice, env)
        assert worker(bob, env, "make", "bobs", "700", "item", "600", "bob") == ("ok", "")
        attack = forger(bob, env, "replies", str(alice.uid), "bobs", "item", "7")
        try:
            allocated = worker(alice, env, "secrets", "secret", "30", "alice secret")
        finally:
            sent = forged(attack)
        assert allocated == ("ok", "misplaced 0")
        assert sent["victim-endpoints"] > 0 and sent["forged"] > 0, sent  # alice's data endpoint
        assert sent["relayed"] == 0, sent  # no message endpoint to relay through
        flood = forged(forger(bob, env, "flood", "2"))
        assert flood["endpoints"] == 0 and flood["flood"] == 0, flood
        assert worker(bob, env, "get", "bobs", "item", "3") == ("ok", "bob")
    finally:
        cluster.stop()
