"""Messages that say what to do, tried as a new user would (issue 33): a misspelt key or
FAMPOOL_* variable names the closest real one; a run directory below one `mktemp -d` made
(mode 0700) gets `chmod 755` from `fampool up`, not munged's words; a program against a
stopped cluster fails within seconds and says `fampool up`; `fampool run` keeps the caller's
PATH, so the PEs run the caller's `python3` (a venv's, with its packages)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from test_cli import (BUILD_DIR, COMMAND_TIMEOUT_S, fampool, free_base_port, pids_of, running,
                      run_dir)  # noqa: F401 (fixture)


def test_a_misspelt_key_names_the_closest_one(run_dir):
    config = os.path.join(run_dir, "mine.yaml")
    with open(config, "w") as f:
        f.write("provder: tcp\n")
    up = fampool("up", "--config", config, "--run-dir", run_dir)
    assert up.returncode != 0, up.stdout + up.stderr
    assert 'unknown key "provder"; did you mean "provider"?' in up.stderr, up.stderr


def test_a_misspelt_variable_is_named_with_the_closest_one(run_dir):
    env = dict(os.environ, FAMPOOL_PROVDER="tcp", FAMPOOL_SOMETHING_OF_A_HARNESS="1")
    status = fampool("status", "--run-dir", run_dir, env=env)
    assert "FAMPOOL_PROVDER" in status.stderr and "FAMPOOL_PROVIDER?" in status.stderr, \
        status.stderr
    # A variable close to no name fampool reads is another program's: not mentioned.
    assert "FAMPOOL_SOMETHING_OF_A_HARNESS" not in status.stderr, status.stderr


def test_up_below_a_directory_mktemp_made_says_chmod_755():
    parent = tempfile.mkdtemp(prefix="fampool-private-")  # mode 0700, as `mktemp -d` makes
    run = os.path.join(parent, "run")
    try:
        up = fampool("up", "--memservers", "1", "--run-dir", run, "--base-port",
                     str(free_base_port(servers=1)))
        assert up.returncode == 1, up.stdout + up.stderr
        assert f"`chmod 755 {parent}`" in up.stderr and "0700" in up.stderr, up.stderr
        assert not any(running(pid) for pid in pids_of(run).values())
    finally:
        fampool("down", "--run-dir", run, timeout=30)
        shutil.rmtree(parent, ignore_errors=True)


def test_a_program_against_a_stopped_cluster_says_fampool_up(run_dir):
    up = fampool("up", "--memservers", "1", "--run-dir", run_dir, "--base-port",
                 str(free_base_port(servers=1)), "--authentication", "none")
    assert up.returncode == 0, up.stdout + up.stderr
    assert fampool("down", "--run-dir", run_dir, timeout=30).returncode == 0
    env = dict(os.environ, FAMPOOL_CONFIG=os.path.join(run_dir, "cluster.yaml"))
    script = f"""
import ctypes
lib = ctypes.CDLL({os.path.join(BUILD_DIR, "src", "libfampool.so")!r})
lib.c_fam_create.restype = ctypes.c_void_p
lib.c_fam_initialize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
lib.c_fam_error_msg.restype = ctypes.c_char_p
fam = lib.c_fam_create()
if lib.c_fam_initialize(fam, b"default", None) != 0:
    raise SystemExit(lib.c_fam_error_msg().decode())
"""
    start = time.monotonic()
    program = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=COMMAND_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    assert program.returncode != 0, program.stdout
    assert "`fampool up`" in program.stdout + program.stderr, program.stdout + program.stderr
    assert seconds < 20, f"{seconds:.1f} s against a cluster that is down (connect_timeout 60 s)"


def test_run_keeps_the_callers_python_and_its_packages(run_dir):
    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun: fampool run -n 2 needs one (scripts/setup installs Open MPI)")
    try:
        import numpy  # noqa: F401
    except ImportError:
        pytest.skip("this Python has no numpy for the venv to see")
    venv = os.path.join(run_dir, "venv")
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    assert made.returncode == 0, made.stderr
    program = os.path.join(run_dir, "which.py")
    with open(program, "w") as f:
        f.write("import sys, numpy\nprint('PE python', sys.prefix, numpy.__name__)\n")
    up = fampool("up", "--memservers", "1", "--run-dir", run_dir, "--base-port",
                 str(free_base_port(servers=1)), "--authentication", "none")
    assert up.returncode == 0, up.stdout + up.stderr
    env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    run = fampool("run", "-n", "2", "--run-dir", run_dir, "python3", program, env=env,
                  timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if line.startswith("PE python")]
    assert lines == [f"PE python {venv} numpy"] * 2, run.stdout + run.stderr
