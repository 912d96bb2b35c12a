"""Fixtures of the Python tests: an embedded-model fam with a data directory of its own, and a
cluster of `fampool up` on loopback, once per test module: two memory servers over which
regions are striped in 4 KiB blocks."""
import os
import random
import shutil
import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest

import fampool

BUILD_DIR = os.environ.get("FAMPOOL_BUILD_DIR", "")
TIMEOUT_S = 120


def embedded_env(directory):
    """The environment of a process on the embedded model, its data under `directory`."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("FAMPOOL_") and name != "OPENFAM_ROOT"}
    env.update(FAMPOOL_HOME=os.path.join(directory, "home"),
               FAMPOOL_SHM_DIR=os.path.join(directory, "shm"))
    return env


def run_python(script, env, argv=None, timeout=TIMEOUT_S, cwd=None):
    """Runs `script` (or the command `argv`) in a new process; fails the test if it fails."""
    command = argv if argv else [sys.executable, "-c", script]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


def mpirun_launch(pes):
    """The start of an mpirun command line for `pes` PEs on the embedded model: the variables
    of embedded_env and the package's path reach every PE."""
    launch = [shutil.which("mpirun"), "-n", str(pes), "--oversubscribe"]
    if os.geteuid() == 0:
        launch.append("--allow-run-as-root")
    for name in ("FAMPOOL_HOME", "FAMPOOL_SHM_DIR", "PYTHONPATH"):
        launch += ["-x", name]
    return launch


@pytest.fixture
def fam_env(tmp_path, monkeypatch):
    """This process's environment made embedded_env's; the data directory."""
    env = embedded_env(str(tmp_path))
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return tmp_path


@pytest.fixture
def fam(fam_env):
    with fampool.Fam(options={"runtime": "NONE"}) as f:
        yield f


def free_base_port(servers):
    """A base port P in 30000-32000 with the ports `fampool up` takes for `servers` memory
    servers (P..P+servers, P+100..P+99+servers) free on loopback right now."""
    for _ in range(50):
        base = random.randint(30000, 32000)
        ports = list(range(base, base + servers + 1)) + list(range(base + 100,
                                                                  base + 100 + servers))
        try:
            for port in ports:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no free range of loopback ports for fampool up")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A cluster of `fampool up` with two memory servers: .cli (the fampool program), .run_dir,
    .env (FAMPOOL_CONFIG set)."""
    if not BUILD_DIR:
        pytest.skip("FAMPOOL_BUILD_DIR not set (CTest sets it)")
    cli = os.path.join(BUILD_DIR, "tools", "fampool")
    run_dir = str(tmp_path_factory.mktemp("cluster") / "run")
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    try:
        # A port found free may be taken before `up` binds it: then up again, elsewhere.
        for attempt in range(3):
            up = subprocess.run([cli, "up", "--run-dir", run_dir, "--base-port",
                                 str(free_base_port(2)), "--authentication", "none",
                                 "--memservers", "2", "--interleave", "4096"],
                                capture_output=True, text=True, timeout=TIMEOUT_S)
            if up.returncode == 0:
                break
        assert up.returncode == 0, up.stdout + up.stderr
        yield SimpleNamespace(cli=cli, run_dir=run_dir, env=env)
    finally:
        subprocess.run([cli, "down", "--run-dir", run_dir], capture_output=True,
                       timeout=TIMEOUT_S)
