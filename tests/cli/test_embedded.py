"""The fampool command on the embedded model: with no cluster configured, status, ls, stat, rm,
backup, restore and bench work on the store a program here would use ($FAMPOOL_HOME), read in
place and safely beside a program using it; rm is made as the caller's real uid and gid.

Each test has a FAMPOOL_HOME and volatile heap directory of its own (a temporary directory,
removed afterwards) and no cluster configuration in its environment."""
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

from test_authentication import as_nobody
from test_cli import COMMAND_TIMEOUT_S, FAMPOOL, c_api_script, fampool, run_c_api_in

# Variables that would point the CLI or the library at a cluster or another configuration.
CLUSTER_VARIABLES = ("FAMPOOL_CONFIG", "FAMPOOL_RUN_DIR", "OPENFAM_ROOT", "FAMPOOL_MODEL",
                     "FAMPOOL_HOME", "FAMPOOL_SHM_DIR", "FAMPOOL_ARCHIVE_DIR")


@pytest.fixture
def home(request):
    """(directory, environment): a fresh data directory for the embedded model. The directory
    is searchable by all (the tests run fampool as another user too)."""
    path = tempfile.mkdtemp(prefix="fampool-cli-embedded-")
    os.chmod(path, 0o755)
    request.addfinalizer(lambda: shutil.rmtree(path, ignore_errors=True))
    env = {k: v for k, v in os.environ.items() if k not in CLUSTER_VARIABLES}
    env.update(FAMPOOL_HOME=os.path.join(path, "home"), FAMPOOL_SHM_DIR=os.path.join(path, "shm"))
    return path, env


def make(env, body):
    """Runs BODY through the C API on the embedded model of ENV (a program of its own)."""
    return run_c_api_in(env, body)


def make_region_with_items(env, region, items, mode=0o755, item_mode=0o640):
    """REGION (4 MiB, MODE) holding named ITEMS of 64 KiB each (ITEM_MODE)."""
    lines = [f"region = lib.c_fam_create_region(fam, {region!r}.encode(), 4 << 20, {mode}, None)",
             "assert region"]
    for item in items:
        lines.append(f"assert lib.c_fam_allocate_named(fam, {item!r}.encode(), 65536, "
                     f"{item_mode}, region)")
    make(env, "\n".join(lines))


def rows(listing):
    """The first column of each row of a table `fampool` printed."""
    return [line.split()[0] for line in listing.splitlines()[1:] if line.strip()]


def test_commands_on_a_fresh_home_report_nothing_and_make_nothing(home):
    path, env = home
    status = fampool("status", env=env)
    assert status.returncode == 0, status.stderr
    assert f"embedded model: store {path}/home/meta" in status.stdout
    assert "no store yet" in status.stdout and "(no regions)" in status.stdout
    listing = fampool("ls", env=env)
    assert listing.returncode == 0 and "(no regions)" in listing.stdout, listing.stderr
    stat = fampool("stat", "results", env=env)
    assert stat.returncode == 1
    assert 'fampool stat: region "results": not found' in stat.stderr, stat.stderr
    remove = fampool("rm", "results", env=env)
    assert remove.returncode == 1 and 'fampool rm: region "results"' in remove.stderr
    assert not os.path.exists(os.path.join(path, "home")), "a query made the store"


def test_ls_stat_and_status_show_what_a_program_made(home):
    path, env = home
    make_region_with_items(env, "results", ["histogram", "counts"])
    listing = fampool("ls", env=env)
    assert listing.returncode == 0, listing.stderr
    fields = next(line.split() for line in listing.stdout.splitlines()
                  if line.split()[:1] == ["results"])
    # NAME ID SIZE(2 words) USED(2) ITEMS TYPE REDUNDANCY PERM UID GID SERVERS
    assert fields[4:] == ["128.0", "KiB", "2", "volatile", "NONE", "0755", "0", "0", "0"], fields
    items = fampool("ls", "results", "--bytes", env=env)
    assert items.returncode == 0, items.stderr
    assert rows(items.stdout) == ["histogram", "counts"]
    assert "65536  0640" in items.stdout
    stat = fampool("stat", "results", env=env)
    assert stat.returncode == 0, stat.stderr
    assert re.search(r"data items:\s+2\n", stat.stdout)
    assert re.search(r"memory servers:\s+0 \(default heaps\)", stat.stdout)
    item = fampool("stat", "results", "histogram", env=env)
    assert item.returncode == 0, item.stderr
    assert re.search(r"you may write:\s+yes", item.stdout)
    assert "embedded model: loads and stores on the mapped heap" in item.stdout
    status = fampool("status", env=env)
    assert status.returncode == 0, status.stderr
    assert f"heaps: volatile in {path}/shm, persistent in {path}/home/heaps" in status.stdout
    assert re.search(r"\n  0\s+default heaps\s+dram\s", status.stdout), status.stdout
    assert "1 regions of 4.0 MiB, 128.0 KiB used by 2 items" in status.stdout


def test_the_configuration_file_chooses_the_store_and_its_memory_tiers(home):
    """FAMPOOL_CONFIG naming an embedded configuration (fampool_home, memory_tiers) is read as
    a program would read it."""
    path, env = home
    config = os.path.join(path, "embedded.yaml")
    with open(config, "w") as f:
        f.write(f"openfam_model: shared_memory\nfampool_home: {path}/elsewhere\n"
                f"memory_tiers:\n  - {{kind: far, dir: {path}/far, capacity: 1GiB}}\n")
    env = dict(env, FAMPOOL_CONFIG=config)
    del env["FAMPOOL_HOME"]
    make(env, """
class Intent(ctypes.Structure):
    _fields_ = [("attributes", ctypes.c_int * 4), ("hints", ctypes.c_uint32),
                ("kind", ctypes.c_int), ("server_count", ctypes.c_uint32),
                ("servers", ctypes.c_uint64 * 16), ("failure_domain", ctypes.c_char * 64)]
lib.c_fam_create_region_intent.restype = ctypes.c_void_p
lib.c_fam_create_region_intent.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.c_uint, ctypes.POINTER(Intent)]
intent = Intent(kind=3)  # FAM_KIND_FAR: only the far tier
assert lib.c_fam_create_region_intent(fam, b"cold", 2 << 20, 0o755, ctypes.byref(intent))
""")
    status = fampool("status", env=env)
    assert status.returncode == 0, status.stderr
    assert f"store {path}/elsewhere/meta, configuration {config}" in status.stdout
    assert re.search(rf"\n  1\s+memory tier far at {path}/far\s+far\s+2.0 MiB\s+1.0 GiB",
                     status.stdout), status.stdout
    stat = fampool("stat", "cold", env=env)
    assert re.search(rf"memory servers:\s+1 \(memory tier far at {path}/far\)", stat.stdout)
    assert re.search(r"intent:\s+hints none; constraints kind far", stat.stdout), stat.stdout


def test_a_cluster_run_directory_here_is_named_but_not_used(home):
    """Without FAMPOOL_CONFIG a program uses the embedded model even beside ./fampool-run; so
    does the CLI, and it says how to reach that cluster."""
    path, env = home
    os.makedirs(os.path.join(path, "fampool-run"))
    with open(os.path.join(path, "fampool-run", "cluster.yaml"), "w") as f:
        f.write("openfam_model: memory_server\n")
    listing = subprocess.run([FAMPOOL, "ls"], capture_output=True,
                             text=True, env=env, cwd=path, timeout=COMMAND_TIMEOUT_S)
    assert listing.returncode == 0, listing.stderr
    assert "(no regions)" in listing.stdout
    assert f"--config {path}/fampool-run/cluster.yaml" in listing.stderr


def test_rm_refuses_a_region_with_items_unless_recursive(home):
    _, env = home
    make_region_with_items(env, "results", ["histogram", "counts"])
    refused = fampool("rm", "results", env=env)
    assert refused.returncode == 1
    assert 'fampool rm: region "results" holds 2 data items' in refused.stderr
    assert "fampool rm -r results" in refused.stderr
    item = fampool("rm", "results", "counts", env=env)
    assert item.returncode == 0, item.stderr
    assert 'deallocated data item "counts" in region "results"' in item.stdout
    assert rows(fampool("ls", "results", env=env).stdout) == ["histogram"]
    again = fampool("rm", "results", "counts", env=env)
    assert again.returncode == 1
    assert 'fampool rm: item "counts" not found in region "results"' in again.stderr
    recursive = fampool("rm", "-r", "results", env=env)
    assert recursive.returncode == 0, recursive.stderr
    assert 'destroyed region "results" (4.0 MiB, with its 1 data item)' in recursive.stdout
    assert "(no regions)" in fampool("ls", env=env).stdout
    make_region_with_items(env, "empty", [])
    assert fampool("rm", "empty", env=env).returncode == 0
    missing = fampool("rm", "empty", env=env)
    assert missing.returncode == 1
    assert 'fampool rm: region "empty" not found' in missing.stderr


def test_another_user_cannot_open_a_private_store(home):
    """Without a sharing group the store is root's alone: uid 65534 cannot even read it, and
    is told whose it is and how stores are shared."""
    path, env = home
    make_region_with_items(env, "shared", ["x"], mode=0o755, item_mode=0o644)
    meta = os.path.join(path, "home", "meta")
    assert stat.S_IMODE(os.stat(meta).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(meta, "data.mdb")).st_mode) == 0o600
    listing = as_nobody("ls", "shared", env=env)
    assert listing.returncode != 0
    assert "sharing_group" in listing.stderr, listing.stderr
    assert rows(fampool("ls", "shared", env=env).stdout) == ["x"]


def test_rm_by_another_user_is_refused_and_removes_nothing(home):
    """Root's regions in a store shared with group 65534, removed by uid 65534 (a member): the
    store's permission checks refuse each."""
    _, env = home
    env = dict(env, FAMPOOL_SHARING_GROUP="65534")
    make_region_with_items(env, "private", [], mode=0o700)
    make_region_with_items(env, "shared", ["x"], mode=0o755, item_mode=0o644)
    private = as_nobody("rm", "private", env=env)
    assert private.returncode == 1
    assert ('fampool rm: permission denied: no read or write permission on region "private"'
            in private.stderr), private.stderr
    region = as_nobody("rm", "-r", "shared", env=env)
    assert region.returncode == 1
    assert ('permission denied: only the owner (uid 0) of region "shared" may destroy it'
            in region.stderr), region.stderr
    item = as_nobody("rm", "shared", "x", env=env)
    assert item.returncode == 1
    assert 'data item "x" in region "shared": permission denied: no write' in item.stderr
    assert rows(fampool("ls", env=env).stdout) == ["private", "shared"]
    assert rows(fampool("ls", "shared", env=env).stdout) == ["x"]
    # Another user may look at what its mode lets it see.
    assert rows(as_nobody("ls", "shared", env=env).stdout) == ["x"]


def test_volatile_regions_of_an_earlier_boot_are_shown_lost_and_left_to_programs(home):
    """The store says it was last prepared in another boot (written with lmdb-utils' mdb_load,
    as a reboot would leave it): ls and status mark its volatile regions, and leave releasing
    them to the next program, which does."""
    path, env = home
    make_region_with_items(env, "scratch", ["x"])
    earlier = subprocess.run(["mdb_load", "-T", "-s", "meta", os.path.join(path, "home", "meta")],
                             input="boot_id\nan-earlier-boot\n", capture_output=True, text=True,
                             timeout=COMMAND_TIMEOUT_S)
    assert earlier.returncode == 0, earlier.stderr
    for _ in range(2):
        listing = fampool("ls", env=env)
        assert re.search(r"\n  scratch\s.*\svolatile \(lost at reboot\)\s", listing.stdout), \
            listing.stdout
    assert "the machine rebooted since a program last opened the store" in \
        fampool("status", env=env).stdout
    item = fampool("rm", "scratch", "x", env=env)
    assert item.returncode == 1
    assert "the volatile region's heap went with the reboot" in item.stderr, item.stderr
    make(env, "")
    assert "(no regions)" in fampool("ls", env=env).stdout


PATTERN = "bytes(range(256)) * 256"  # 64 KiB


def test_backup_list_restore_and_delete(home):
    path, env = home
    make(env, f"""
region = lib.c_fam_create_region(fam, b"results", 4 << 20, 0o755, None)
item = lib.c_fam_allocate_named(fam, b"histogram", 65536, 0o640, region)
assert lib.c_fam_allocate_named(fam, b"small", 4096, 0o600, region)
data = {PATTERN}
assert lib.c_fam_put_blocking(fam, data, item, 0, len(data)) == 0
""")
    backup = fampool("backup", "results", "histogram", "day 1", env=env)
    assert backup.returncode == 0, backup.stderr
    assert 'backed up data item "histogram" in region "results" to backup "day 1"' in backup.stdout
    listing = fampool("backup", "--list", "--bytes", env=env)
    assert listing.returncode == 0, listing.stderr
    # The region's 0755 (it governs reading the item in a REGION-level region).
    assert re.search(r"\n  day 1\s+65536\s+0\s+0\s+0755\s+\S+Z\s+histogram\s+[0-9a-f]{8}\n",
                     listing.stdout), listing.stdout
    assert os.listdir(os.path.join(path, "home", "backup"))
    twice = fampool("backup", "results", "histogram", "day 1", env=env)
    assert twice.returncode == 1 and 'backup "day 1" already exists' in twice.stderr

    restored = fampool("restore", "day 1", "results", "copy", "--mode", "0600", env=env)
    assert restored.returncode == 0, restored.stderr
    assert "a new item, mode 0600" in restored.stdout
    kept_mode = fampool("restore", "day 1", "results", "histogram", "--mode", "0600", env=env)
    assert kept_mode.returncode == 1
    assert '--mode sets the mode of an item restore makes, but data item "histogram"' in \
        kept_mode.stderr, kept_mode.stderr
    over = fampool("restore", "day 1", "results", "histogram", env=env)
    assert over.returncode == 0 and "the existing item of 64.0 KiB" in over.stdout, over.stderr
    too_small = fampool("restore", "day 1", "results", "small", env=env)
    assert too_small.returncode == 1
    assert 'holds 65536 bytes but item "small" has only 4096' in too_small.stderr
    make(env, f"""
for name in (b"copy", b"histogram"):
    item = lib.c_fam_lookup(fam, name, b"results")
    out = ctypes.create_string_buffer(65536)
    assert lib.c_fam_get_blocking(fam, out, item, 0, 65536) == 0
    assert out.raw == {PATTERN}, name
""")
    items = fampool("ls", "results", env=env).stdout
    assert re.search(r"\n  copy\s+0x\S+\s+64.0 KiB\s+0600", items), items

    missing = fampool("restore", "no such", "results", "x", env=env)
    assert missing.returncode == 1 and 'backup "no such" not found' in missing.stderr
    deleted = fampool("backup", "--delete", "day 1", env=env)
    assert deleted.returncode == 0 and 'deleted backup "day 1"' in deleted.stdout
    assert "(no backups)" in fampool("backup", "--list", env=env).stdout
    usage = fampool("backup", "results", env=env)
    assert usage.returncode == 1 and "REGION ITEM NAME" in usage.stderr


def test_bench_measures_against_memcpy_and_leaves_no_region(home):
    _, env = home
    started = time.monotonic()
    bench = fampool("bench", "--seconds", "0.02", "--item-size", "1MiB", env=env)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    assert time.monotonic() - started < 30
    assert "fampool bench: embedded model" in bench.stdout
    table = bench.stdout.split("OPERATION", 1)[1]
    for operation in ("put (blocking)", "get (blocking)", "fetch_add uint64", "add uint64"):
        assert operation in table, bench.stdout
    for size in ("256 B", "4.0 KiB", "64.0 KiB", "1.0 MiB"):
        assert re.search(rf"get \(blocking\)\s+{re.escape(size)}\s+\d+\s.*memcpy\s.*\s[\d.e-]+\n",
                         table), bench.stdout
    assert "checked: the item holds what the puts wrote" in bench.stdout
    assert "(no regions)" in fampool("ls", env=env).stdout
    bad = fampool("bench", "--seconds", "60", env=env)
    assert bad.returncode == 1 and "--seconds 60" in bad.stderr


def test_commands_are_safe_beside_a_program_using_the_store(home):
    """A program holds a region and its bytes, and keeps allocating, writing, checking and
    freeing items in it, while ls, stat, status, backup, bench and rm of another region run;
    every round of the program finds its bytes, and afterwards its kept bytes are intact and
    the store still serves it."""
    _, env = home
    make_region_with_items(env, "other", ["x"])
    program = subprocess.Popen(
        ["python3", "-c", c_api_script(f"""
import sys
region = lib.c_fam_create_region(fam, b"busy", 4 << 20, 0o755, None)
item = lib.c_fam_allocate_named(fam, b"data", 65536, 0o640, region)
data = {PATTERN}
assert lib.c_fam_put_blocking(fam, data, item, 0, len(data)) == 0
print("ready", flush=True)
import select
lib.c_fam_deallocate.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
rounds = 0
out = ctypes.create_string_buffer(65536)
while not select.select([sys.stdin], [], [], 0)[0]:
    name = b"churn%d" % rounds
    churn = lib.c_fam_allocate_named(fam, name, 65536, 0o600, region)
    assert churn, name
    assert lib.c_fam_put_blocking(fam, data, churn, 0, len(data)) == 0
    assert lib.c_fam_get_blocking(fam, out, churn, 0, 65536) == 0
    assert out.raw == data, name
    assert lib.c_fam_deallocate(fam, churn) == 0
    rounds += 1
sys.stdin.readline()
print("rounds", rounds, flush=True)
assert lib.c_fam_get_blocking(fam, out, item, 0, 65536) == 0
assert out.raw == data
assert lib.c_fam_allocate_named(fam, b"after", 4096, 0o640, region)
""")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert program.stdout.readline().strip() == "ready"
        for args in (("ls",), ("ls", "busy"), ("stat", "busy", "data"), ("status",),
                     ("backup", "busy", "data", "snapshot"),
                     ("bench", "--seconds", "0.02", "--item-size", "1MiB"),
                     ("rm", "-r", "other")):
            done = fampool(*args, env=env)
            assert done.returncode == 0, f"fampool {' '.join(args)}: {done.stderr}"
        program.stdin.write("go\n")
        program.stdin.flush()
        assert program.wait(timeout=COMMAND_TIMEOUT_S) == 0, program.stderr.read()
        rounds = int(program.stdout.read().split()[-1])
        assert rounds > 0  # the program worked the store while the commands ran
    finally:
        if program.poll() is None:
            program.kill()
            program.wait()
    assert rows(fampool("ls", env=env).stdout) == ["busy"]
    assert rows(fampool("ls", "busy", env=env).stdout) == ["data", "after"]
