"""Quotas and capacity on a cluster several users share: one user at the bound of what the
cluster file lets them hold (bytes, regions, sessions), or a group at its bound, is refused
with a message that names the quota, while every other user goes on. Needs root (it makes
Unix users and runs programs as them; the users are removed afterwards); skipped with the
reason otherwise. Every command is bounded in time.
"""
import os
import subprocess

import pytest

from test_multiuser import (Cluster, attacker, base_env, run_as, users, worker,  # noqa: F401
                            User, FAMPOOL)

NO_SPACE = 14  # FAM_ERR_NO_SPACE (include/fam/fam_exception.h)
RESOURCE = 17  # FAM_ERR_RESOURCE
MIB = 1 << 20

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="makes Unix users (useradd) and runs programs as them: needs root")


@pytest.fixture(scope="module")
def team():
    """dave and erin, whose primary group is one they share (a group quota counts the regions
    of that group), removed at the end."""
    tag = f"{os.getpid() % 100000:05d}"
    group = f"fpteam{tag}"
    subprocess.run(["groupadd", "--system", group], check=True, timeout=30)
    made = []
    try:
        for name in (f"fpdave{tag}", f"fperin{tag}"):
            subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir",
                            "/nonexistent", "--shell", "/usr/sbin/nologin", "--gid", group,
                            name], check=True, timeout=30)
            made.append(name)
        yield [User(name) for name in made], group
    finally:
        for name in made:
            subprocess.run(["userdel", name], timeout=30)
        subprocess.run(["groupdel", group], timeout=30)


def with_quotas(owner, quotas, *up_args):
    """A MUNGE cluster over tcp started by `fampool up` as OWNER, stopped, given QUOTAS (the
    text of the key) and started again from its own file."""
    cluster = Cluster(owner, "--provider", "tcp", *up_args)
    try:
        down = run_as(owner, [FAMPOOL, "down", "--run-dir", cluster.dir], base_env(),
                      cwd=cluster.dir, timeout=60)
        assert down.returncode == 0, down.stdout + down.stderr
        with open(cluster.config, "a") as f:
            f.write(quotas)
        up = run_as(owner, [FAMPOOL, "up", "--run-dir", cluster.dir, "--config",
                            cluster.config], base_env(), cwd=cluster.dir)
        assert up.returncode == 0, up.stdout + up.stderr
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="module")
def quota_cluster(users, team):
    """2 memory servers; bob bound to 64 MiB, 3 regions and 500 sessions, the team's group to
    2 regions."""
    people, _ = users
    (_, _), group = team
    cluster = with_quotas(people["cluster"],
                          f"quotas:\n  users:\n    {people['bob'].name}: "
                          f"{{bytes: 64MiB, regions: 3, sessions: 500}}\n"
                          f"  groups:\n    {group}: {{regions: 2}}\n", "--memservers", "2")
    yield cluster
    cluster.stop()


def refused(result, code, *words):
    assert result[0] == "error" and result[1] == code, result
    for word in words:
        assert word in result[2], result


def test_capacity_is_set_from_the_node_memory(quota_cluster):
    """`fampool up` gives each memory server the node's memory (MemTotal or /dev/shm's size,
    whichever is less) over the servers, which `fampool status` shows."""
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    shm = os.statvfs("/dev/shm")
    expected = min(total, shm.f_blocks * shm.f_frsize) // 2
    with open(quota_cluster.config) as f:
        text = f.read()
    assert text.count(f"capacity: {expected}\n") == 2, text
    status = subprocess.run([FAMPOOL, "status", "--bytes"], capture_output=True, text=True,
                            env=quota_cluster.env, timeout=60)
    assert status.returncode == 0 and str(expected) in status.stdout, status.stdout


def test_bytes_and_regions_bound_one_user_not_the_others(users, quota_cluster):
    people, _ = users
    alice, bob, env = people["alice"], people["bob"], quota_cluster.env
    assert worker(bob, env, "region", "b1", str(48 * MIB)) == ("ok", "")
    refused(worker(bob, env, "region", "b2", str(32 * MIB)), NO_SPACE, bob.name,
            "quotas: bytes", "67108864 bytes")
    assert worker(bob, env, "region", "b2", str(16 * MIB)) == ("ok", "")  # 64 MiB: at the bound
    refused(worker(bob, env, "resize", "b2", str(32 * MIB)), NO_SPACE, "quotas: bytes")
    assert worker(bob, env, "destroy", "b1") == ("ok", "")
    # A RAID1 region takes its size twice: 2 x 32 MiB do not fit beside b2's 16 MiB.
    refused(worker(bob, env, "region", "b3", str(32 * MIB), "raid1"), NO_SPACE, "quotas: bytes")
    assert worker(bob, env, "region", "b3", str(16 * MIB), "raid1") == ("ok", "")
    assert worker(bob, env, "region", "b4", str(MIB)) == ("ok", "")
    refused(worker(bob, env, "region", "b5", str(MIB)), NO_SPACE, "quotas: regions",
            "3 regions")
    # alice has no quota: a region four times bob's bound.
    assert worker(alice, env, "region", "a1", str(256 * MIB)) == ("ok", "")
    for name in ("b2", "b3", "b4"):
        assert worker(bob, env, "destroy", name) == ("ok", "")
    assert worker(bob, env, "region", "b5", str(MIB)) == ("ok", "")  # room again
    assert worker(bob, env, "destroy", "b5") == ("ok", "")
    assert worker(alice, env, "destroy", "a1") == ("ok", "")


def test_a_group_quota_counts_every_member(team, quota_cluster):
    (dave, erin), group = team
    env = quota_cluster.env
    assert worker(dave, env, "region", "d1", str(MIB)) == ("ok", "")
    assert worker(erin, env, "region", "e1", str(MIB)) == ("ok", "")
    refused(worker(erin, env, "region", "e2", str(MIB)), NO_SPACE, f"group", group,
            "quotas: regions")
    refused(worker(dave, env, "region", "d2", str(MIB)), NO_SPACE, group)
    assert worker(dave, env, "destroy", "d1") == ("ok", "")
    assert worker(erin, env, "region", "e2", str(MIB)) == ("ok", "")
    for name in ("e1", "e2"):
        assert worker(erin, env, "destroy", name) == ("ok", "")


def test_20000_sessions_from_one_user_are_refused_past_the_bound(users, quota_cluster):
    """bob asks the metadata service and a memory server for 20,000 sessions each: 500 (his
    quota) open, the rest are refused naming the quota; alice's program still runs, and bob's
    next program is refused at fam_initialize until his sessions end."""
    people, _ = users
    alice, bob, env = people["alice"], people["bob"], quota_cluster.env
    for server in ([], ["0"]):
        result = attacker(bob, env, "open", "20000", *server)
        assert result["Opened"] == (0, "500"), result
        code, message = result["Refused"]
        assert code == RESOURCE and message.startswith("19500 ") and "quotas: sessions" in message
        assert bob.name in message, message
    assert worker(alice, env, "make", "q", "700", "item", "600", "alice") == ("ok", "")
    assert worker(alice, env, "get", "q", "item", "5") == ("ok", "alice")
    assert worker(alice, env, "destroy", "q") == ("ok", "")
    refused(worker(bob, env, "region", "b9", str(MIB)), RESOURCE, "quotas: sessions")


def shard_of(name, shards):
    """common/shards.h ShardOfName: FNV-1a of the name, mixed (splitmix64), modulo SHARDS."""
    mask = (1 << 64) - 1
    h = 1469598103934665603
    for byte in name.encode():
        h = ((h ^ byte) * 1099511628211) & mask
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & mask
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & mask
    return (h ^ (h >> 31)) % shards


def test_quotas_count_every_metadata_shard(users):
    """Two metadata shards, bob bound to 2 regions: one region on each shard, and the third
    is refused whichever shard it falls to (each shard asks the other what bob holds there)."""
    people, _ = users
    bob = people["bob"]
    cluster = with_quotas(people["cluster"],
                          f"quotas:\n  users:\n    {bob.name}: {{regions: 2}}\n",
                          "--memservers", "1", "--metadata-shards", "2")
    try:
        names = [f"s{i}" for i in range(40)]
        first = next(n for n in names if shard_of(n, 2) == 0)
        second = next(n for n in names if shard_of(n, 2) == 1)
        third = [n for n in names if n not in (first, second)][:2]
        assert {shard_of(n, 2) for n in (first, second)} == {0, 1}
        for name in (first, second):
            assert worker(bob, cluster.env, "region", name, str(MIB)) == ("ok", "")
        for name in third:
            refused(worker(bob, cluster.env, "region", name, str(MIB)), NO_SPACE,
                    "quotas: regions", "2 regions")
        assert worker(bob, cluster.env, "destroy", first) == ("ok", "")
        assert worker(bob, cluster.env, "region", third[0], str(MIB)) == ("ok", "")
    finally:
        cluster.stop()
