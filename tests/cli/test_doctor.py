"""`fampool doctor` (issue 33 part 5): on a healthy cluster every check passes and the exit
status is 0; each broken set-up below fails with status 1, naming the cause and its fix: a
provider this node does not offer, munged stopped, a cluster that is down, too little room for
volatile heaps (a 16 MiB tmpfs, as root)."""
import os
import re
import subprocess

import pytest

from test_cli import fampool, pids_of, cluster, run_dir  # noqa: F401 (fixtures)


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
                  "memory server 0 listens", "memory server 1 listens", "munged answers"):
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
