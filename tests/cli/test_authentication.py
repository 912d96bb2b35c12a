"""`fampool up` and authentication: by default it starts a munged for the cluster (a key of its
own, the socket in RUN_DIR/munge) and writes `authentication: munge`; `fampool down` stops it;
`ls` and `stat` are made as the user munged vouches for; `--authentication none` starts none;
munged's own refusal (a run directory below one others may write) and a munged that does not
answer are reported with the reason."""
import os
import shutil
import stat
import subprocess
import tempfile

from test_cli import (COMMAND_TIMEOUT_S, FAMPOOL, fampool, free_base_port, pids_of, run_c_api,
                      running, cluster, run_dir, up_on_free_ports)  # noqa: F401 (fixtures)

NOBODY = 65534


def as_nobody(*args, env=None):
    """`fampool ARGS` run as uid/gid 65534 (real and effective), in environment ENV."""
    def drop():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return subprocess.run([FAMPOOL, *args], capture_output=True, text=True, env=env,
                          timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL, preexec_fn=drop)


def test_up_starts_a_munged_and_down_stops_it(cluster):
    run_dir, _ = cluster
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        text = f.read()
    socket = os.path.join(run_dir, "munge", "munge.socket")
    assert "authentication: munge" in text
    assert f'munge_socket: "{socket}"' in text
    key = os.stat(os.path.join(run_dir, "munge", "munge.key"))
    assert stat.S_IMODE(key.st_mode) == 0o400
    assert stat.S_IMODE(os.stat(os.path.join(run_dir, "munge")).st_mode) == 0o755
    pids = pids_of(run_dir)
    assert running(pids["munged"])
    listing = fampool("ls", "--run-dir", run_dir)
    assert listing.returncode == 0, listing.stderr
    down = fampool("down", "--run-dir", run_dir, timeout=30)
    assert down.returncode == 0, down.stderr
    assert f"munged (pid {pids['munged']})" in down.stdout, down.stdout
    assert not running(pids["munged"])


def test_ls_is_made_as_the_user_munged_vouches_for(cluster):
    run_dir, _ = cluster
    run_c_api(run_dir, """
assert lib.c_fam_create_region(fam, b"private", 1 << 20, 0o700, None)
""")
    assert fampool("ls", "private", "--run-dir", run_dir).returncode == 0
    denied = as_nobody("ls", "private", "--run-dir", run_dir)
    assert denied.returncode == 1, denied.stdout + denied.stderr
    assert "no read or write permission" in denied.stderr, denied.stderr
    # The list of regions shows another user only what it may look up; root (the cluster
    # user here) sees every region.
    listing = as_nobody("ls", "--run-dir", run_dir)
    assert listing.returncode == 0, listing.stderr
    assert "private" not in listing.stdout
    assert "private" in fampool("ls", "--run-dir", run_dir).stdout


def test_up_with_authentication_none_starts_no_munged(run_dir):
    up_on_free_ports(run_dir, "--authentication", "none", servers=1)
    assert sorted(pids_of(run_dir)) == ["memory0", "metadata"]
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        text = f.read()
    assert "authentication: none" in text and "munge_socket" not in text


def test_up_below_a_directory_others_may_write_says_why_munged_refused():
    parent = tempfile.mkdtemp(prefix="fampool-open-")
    os.chmod(parent, 0o777)
    run_dir = os.path.join(parent, "run")
    try:
        up = fampool("up", "--memservers", "1", "--run-dir", run_dir, "--base-port",
                     str(free_base_port(servers=1)))
        assert up.returncode == 1, up.stdout + up.stderr
        assert "munged" in up.stderr and "insecure" in up.stderr, up.stderr
        assert "--authentication none" in up.stderr, up.stderr
        assert not any(running(pid) for pid in pids_of(run_dir).values())
    finally:
        fampool("down", "--run-dir", run_dir, timeout=30)
        shutil.rmtree(parent, ignore_errors=True)


def test_up_with_a_munge_socket_nobody_serves_fails_naming_it(run_dir):
    missing = os.path.join(run_dir, "no-munged.socket")
    up = fampool("up", "--memservers", "1", "--run-dir", run_dir, "--base-port",
                 str(free_base_port(servers=1)), "--munge-socket", missing)
    assert up.returncode == 1, up.stdout + up.stderr
    assert "cannot reach munged" in up.stderr and missing in up.stderr, up.stderr
    assert pids_of(run_dir) == {}


def test_up_again_from_its_own_cluster_file_starts_its_munged(run_dir):
    base = str(free_base_port(servers=1))
    first = fampool("up", "--memservers", "1", "--run-dir", run_dir, "--base-port", base)
    assert first.returncode == 0, first.stdout + first.stderr
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    config = os.path.join(run_dir, "cluster.yaml")
    again = fampool("up", "--config", config, "--run-dir", run_dir)
    assert again.returncode == 0, again.stdout + again.stderr
    assert running(pids_of(run_dir)["munged"])
    listing = fampool("ls", "--run-dir", run_dir)
    assert listing.returncode == 0, listing.stderr
