"""rm, backup, restore and bench on a cluster (tests/cli/test_embedded.py has them on the
embedded model): one cluster of two interleaved memory servers that authenticates callers with
MUNGE, started once for the module and stopped at its end; each test uses regions of its own."""
import os
import re
import tempfile
import time

import pytest

from test_authentication import as_nobody
from test_cli import fampool, run_c_api, stop_cluster, up_on_free_ports


@pytest.fixture(scope="module")
def run_dir():
    """The run directory of a running cluster (2 memory servers, 4 KiB interleave, munge)."""
    path = tempfile.mkdtemp(prefix="fampool-cli-data-")
    os.chmod(path, 0o755)  # other users' clients read the cluster file and reach munged
    try:
        up_on_free_ports(path, "--interleave", "4096", servers=2)
        yield path
    finally:
        stop_cluster(path)


def items_of(run_dir, region):
    listing = fampool("ls", region, "--run-dir", run_dir)
    assert listing.returncode == 0, listing.stderr
    return [line.split()[0] for line in listing.stdout.splitlines()[1:]]


PATTERN = "bytes(range(256)) * 1024"  # 256 KiB: striped over both servers


def test_backup_restore_and_rm_on_a_cluster(run_dir):
    run_c_api(run_dir, f"""
region = lib.c_fam_create_region(fam, b"kept", 16 << 20, 0o755, None)
item = lib.c_fam_allocate_named(fam, b"table", 262144, 0o640, region)
data = {PATTERN}
assert lib.c_fam_put_blocking(fam, data, item, 0, len(data)) == 0
""")
    backup = fampool("backup", "kept", "table", "kept-table", "--run-dir", run_dir)
    assert backup.returncode == 0, backup.stderr
    listing = fampool("backup", "--list", "kept-table", "--run-dir", run_dir)
    # The backup keeps the permissions that governed reading the item: its REGION-level
    # region's 0755, not the item's own 0640.
    assert re.search(r"\n  kept-table\s+256.0 KiB\s+0\s+0\s+0755\s", listing.stdout), listing.stdout
    restored = fampool("restore", "kept-table", "kept", "again", "--run-dir", run_dir)
    assert restored.returncode == 0, restored.stderr
    assert "a new item, mode 0755" in restored.stdout
    run_c_api(run_dir, f"""
item = lib.c_fam_lookup(fam, b"again", b"kept")
out = ctypes.create_string_buffer(262144)
assert lib.c_fam_get_blocking(fam, out, item, 0, 262144) == 0
assert out.raw == {PATTERN}
""")
    refused = fampool("rm", "kept", "--run-dir", run_dir)
    assert refused.returncode == 1 and "holds 2 data items" in refused.stderr
    item = fampool("rm", "kept", "table", "--run-dir", run_dir)
    assert item.returncode == 0, item.stderr
    assert items_of(run_dir, "kept") == ["again"]
    region = fampool("rm", "-r", "kept", "--run-dir", run_dir)
    assert region.returncode == 0 and 'destroyed region "kept"' in region.stdout, region.stderr
    gone = fampool("stat", "kept", "--run-dir", run_dir)
    assert gone.returncode == 1 and 'region "kept" not found' in gone.stderr
    deleted = fampool("backup", "--delete", "kept-table", "--run-dir", run_dir)
    assert deleted.returncode == 0, deleted.stderr
    again = fampool("backup", "--delete", "kept-table", "--run-dir", run_dir)
    assert again.returncode == 1 and 'backup "kept-table" not found' in again.stderr


def test_rm_on_a_cluster_is_made_as_the_user_munged_vouches_for(run_dir):
    run_c_api(run_dir, """
assert lib.c_fam_create_region(fam, b"roots", 1 << 20, 0o700, None)
region = lib.c_fam_create_region(fam, b"open", 1 << 20, 0o755, None)
assert lib.c_fam_allocate_named(fam, b"x", 4096, 0o644, region)
""")
    private = as_nobody("rm", "roots", "--run-dir", run_dir)
    assert private.returncode == 1
    assert 'permission denied: no read or write permission on region "roots"' in private.stderr
    region = as_nobody("rm", "-r", "open", "--run-dir", run_dir)
    assert region.returncode == 1
    assert 'only the owner (uid 0) of region "open" may destroy it' in region.stderr
    item = as_nobody("rm", "open", "x", "--run-dir", run_dir)
    assert item.returncode == 1 and "permission denied" in item.stderr, item.stderr
    assert items_of(run_dir, "open") == ["x"]
    for region in ("roots", "open"):
        assert fampool("rm", "-r", region, "--run-dir", run_dir).returncode == 0


def test_bench_on_a_cluster(run_dir):
    bench = fampool("bench", "--seconds", "0.02", "--item-size", "1MiB", "--run-dir", run_dir)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    assert f"fampool bench: cluster {run_dir}/cluster.yaml (2 memory servers" in bench.stdout
    assert re.search(r"fetch_add uint64\s+8 B\s+\d+\s", bench.stdout), bench.stdout
    assert "checked:" in bench.stdout
    listing = fampool("ls", "--run-dir", run_dir)
    assert "fampool-bench" not in listing.stdout, listing.stdout


def test_data_commands_of_a_stopped_cluster_exit_2(run_dir):
    """Last in the module: a cluster that does not answer is told apart from a refusal, within
    the 5 s the commands that call fam_initialize wait for it (a program waits a minute)."""
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    started = time.monotonic()
    listing = fampool("backup", "--list", "--run-dir", run_dir)
    assert listing.returncode == 2, listing.stderr
    assert "does not answer" in listing.stderr and "fampool up --run-dir" in listing.stderr
    assert time.monotonic() - started < 20
