"""fampool under a real SLURM (issue 33 part 4): a one-node SLURM of the module's own
(minislurm.py: Debian's slurmctld and slurmd from a configuration in a temporary directory)
runs fampool PEs with `srun --mpi=pmi2` and `srun --mpi=pmix` against a cluster of `fampool
up`, and runs packaging/slurm/fampool-job.sbatch, the batch script of a job-scoped pool, to
completion and cancelled with scancel while its PEs run: either way the job must leave no
process, heap file, run directory or network namespace of its pool behind.

The batch script is run in both of its layouts on the one node: `fampool up` (a one-node job)
and a memory server per node started by `srun --overlap` (the layout of a job of several
nodes, forced with --per-node). Needs root and SLURM; skipped, with the reason, otherwise
(but the check that docs/deployment.md quotes the script as it is). Every command is bounded
in time, and the daemons and anything the jobs left are stopped by their PIDs at the end.
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

import pytest

import minislurm
from minislurm import MiniSlurm, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_cli import (BUILD_DIR, free_base_port, cluster, run_dir,  # noqa: E402,F401 (fixtures)
                      build_present)

SCRIPT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "packaging",
                                      "slurm", "fampool-job.sbatch"))
TOOLS = os.path.join(BUILD_DIR, "tools")
WORKER = os.path.join(BUILD_DIR, "tests", "workers", "pmix_worker")
PES = 4
SRUN_TIMEOUT_S = 120
JOB_TIMEOUT_S = 120
OK_LINE = f"pmix_worker: OK {PES} PEs"

DOCS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "docs",
                                    "deployment.md"))


@pytest.fixture(scope="module")
def slurm():
    """The module's running one-node SLURM; stopped, and its directory removed, at the end.
    Fails if a job of it left a process running (those are killed by their PIDs). Skips the
    test, with the reason, where SLURM cannot run."""
    missing = minislurm.missing_programs()
    if missing:
        pytest.skip(missing)
    root = tempfile.mkdtemp(prefix="fampool-slurm-")
    os.chmod(root, 0o755)  # munged (ours, and those of `fampool up` in jobs) needs o+x above it
    mini = MiniSlurm(root)
    try:
        mini.start()
        yield mini
    finally:
        left = mini.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert not left, f"processes of SLURM jobs were still running at the end: {left}"


# srun of PEs against a cluster of `fampool up`.

def srun_pes(slurm, cluster_dir, mpi):
    """`srun --mpi=MPI -n 4` of pmix_worker's check, with the environment `fampool run` gives
    PEs (FAMPOOL_CONFIG). 4 tasks on a node of fewer CPUs: --overcommit."""
    env = slurm.env(FAMPOOL_CONFIG=os.path.join(cluster_dir, "cluster.yaml"))
    return slurm.command("srun", f"--mpi={mpi}", "-n", str(PES), "--overcommit", WORKER, "ok",
                         timeout=SRUN_TIMEOUT_S, env=env)


def test_srun_mpi_pmi2_starts_pes_that_pass_their_check(slurm, cluster):
    """PMI2 (libpmi2.so.0, loaded by fampool when PMI_FD is set): rank, size, barriers."""
    run = srun_pes(slurm, cluster[0], "pmi2")
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{slurm.logs()}"
    assert OK_LINE in run.stdout, run.stdout + run.stderr


def skip_unless_pmix_is_offered(slurm):
    offered = slurm.command("srun", "--mpi=list")
    if "pmix" not in offered.stdout + offered.stderr:
        pytest.skip(f"this SLURM offers no PMIx plugin (srun --mpi=list: {offered.stdout})")


def test_srun_mpi_pmix_starts_pes_that_pass_their_check(slurm, cluster):
    """PMIx: SLURM's mpi/pmix plugin serves the PEs' PMIx client (Debian: mpi_pmix_v4)."""
    skip_unless_pmix_is_offered(slurm)
    run = srun_pes(slurm, cluster[0], "pmix")
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{slurm.logs()}"
    assert OK_LINE in run.stdout, run.stdout + run.stderr


# The job-scoped pool of packaging/slurm/fampool-job.sbatch.

class Job:
    """A submitted fampool-job.sbatch: its id, output file and run directory."""

    def __init__(self, job_id, jobs_dir):
        self.id = job_id
        self.output_path = os.path.join(jobs_dir, f"job-{job_id}.out")
        self.run_dir = os.path.join(jobs_dir, f"fampool-job-{job_id}")

    def output(self):
        try:
            with open(self.output_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def heap_dirs(self):
        """The volatile heap directories the job reported (from its cluster file), and the
        directory `fampool up` holds those of its memory servers in (fampool-UID-HASH)."""
        found = re.search(r"^fampool-job: cluster file \S+; volatile heaps in (.*)$",
                          self.output(), re.M)
        dirs = found.group(1).split() if found else []
        parents = {os.path.dirname(path) for path in dirs}
        return sorted(p for p in parents if os.path.basename(p).startswith("fampool-")) + dirs


@pytest.fixture
def submit(slurm):
    """submit(LAYOUT, PROGRAM..., mpi=): sbatch of fampool-job.sbatch, 4 tasks, in LAYOUT `up`
    or `per-node`, PEs started by srun --mpi MPI. Afterwards any job still running is cancelled
    and what it left is removed."""
    jobs_dir = os.path.join(slurm.root, "jobs")
    os.makedirs(jobs_dir, mode=0o755, exist_ok=True)
    jobs = []

    def submit(layout, *program, mpi="pmi2"):
        options = ["--dir", jobs_dir, "--mpi", mpi]
        if layout == "up":
            options += ["--memservers", "2"]
        else:
            options += ["--per-node", "--base-port", str(free_base_port(servers=1)),
                        "--munge-socket", slurm.munge_socket]
        env = slurm.env(PATH=f"{TOOLS}:{minislurm.search_path()}")
        done = slurm.command("sbatch", "--parsable", "-n", str(PES), "--overcommit", "-o",
                             os.path.join(jobs_dir, "job-%j.out"), SCRIPT, *options, *program,
                             env=env)
        assert done.returncode == 0, f"sbatch failed:\n{done.stdout}{done.stderr}"
        job = Job(done.stdout.strip().split(";")[0], jobs_dir)
        jobs.append(job)
        return job

    yield submit
    for job in jobs:
        if slurm.job(job.id).get("JobState") in ("PENDING", "RUNNING", "COMPLETING"):
            slurm.command("scancel", job.id)
            slurm.wait_for_job_end(job.id, JOB_TIMEOUT_S)
        for pid in set(processes_naming(job.run_dir)) & set(slurm.processes()):
            os.kill(pid, signal.SIGKILL)  # left by the job: its servers, say
        for path in job.heap_dirs() + [job.run_dir]:
            shutil.rmtree(path, ignore_errors=True)


def fnv1a(text):
    """FNV-1a of 64 bits, as src/common/hash.h: `fampool up` names a run directory's heap
    directory and network namespaces from it (tools/cli/common.cc, emulate.cc)."""
    value = 1469598103934665603
    for byte in text.encode():
        value = ((value ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return value


def processes_naming(path):
    """PIDs of running processes whose command line names PATH or a file below it."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
            if any(word == path.encode() or word.startswith(path.encode() + b"/")
                   for word in words) and minislurm.running(int(entry)):
                found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


def namespaces_of(run_dir):
    """Network namespaces named as `fampool up --emulate` names those of RUN_DIR."""
    prefix = f"fp{fnv1a(run_dir) & 0xFFFFFF:06x}-"
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            timeout=30).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(prefix)]


def assert_nothing_left(slurm, job, heaps):
    """No process, heap directory, run directory or network namespace of the job's pool."""
    def leftovers():
        return {"processes naming the run directory": processes_naming(job.run_dir),
                "processes of SLURM jobs": slurm.processes(),
                "heap directories": [path for path in heaps if os.path.exists(path)],
                "run directory": [job.run_dir] if os.path.exists(job.run_dir) else [],
                "network namespaces": namespaces_of(job.run_dir)}
    # A process SIGKILLed at the job's end may take a moment to go.
    left = wait_until(lambda: not any(leftovers().values()), 10, 0.2)
    assert left, f"job {job.id} left {leftovers()}\n{job.output()}"


def heap_files(dirs):
    """The files but sockets in DIRS (a memory server's same-node socket is there too)."""
    found = []
    for top in dirs:
        for current, _, names in os.walk(top):
            paths = [os.path.join(current, name) for name in names]
            found += [path for path in paths if not stat.S_ISSOCK(os.lstat(path).st_mode)]
    return sorted(set(found))  # `fampool up`'s directory holds those of its servers


def pool_heaps(job):
    """The heap directories of a running job's pool. With `fampool up`, the directory of its
    memory servers' is checked to be named from the hash that names a run directory's network
    namespaces (so that namespaces_of looks for the right names)."""
    dirs = job.heap_dirs()
    assert dirs, f"the job did not report its heaps:\n{job.output()}"
    if dirs[0] != os.path.dirname(dirs[-1]):
        return dirs  # one directory per node: no directory of `fampool up`
    expected = f"/dev/shm/fampool-{os.getuid()}-{fnv1a(job.run_dir) & 0xFFFFFFFFFFFF:012x}"
    assert dirs[0] == expected, (dirs, expected)
    return dirs


@pytest.mark.parametrize("layout,mpi", [("up", "pmi2"), ("per-node", "pmix")])
def test_a_job_scoped_pool_runs_its_pes_and_removes_itself(slurm, submit, layout, mpi):
    if mpi == "pmix":
        skip_unless_pmix_is_offered(slurm)
    job = submit(layout, WORKER, "ok", mpi=mpi)
    fields = slurm.wait_for_job_end(job.id, JOB_TIMEOUT_S)
    output = job.output()
    assert fields.get("JobState") == "COMPLETED" and fields.get("ExitCode") == "0:0", \
        f"{fields}\n{output}\n{slurm.logs()}"
    assert OK_LINE in output, output
    assert f"fampool-job: removed the pool of job {job.id}" in output, output
    assert_nothing_left(slurm, job, pool_heaps(job))


@pytest.mark.parametrize("layout", ["up", "per-node"])
def test_a_job_scoped_pool_cancelled_while_its_pes_run_removes_itself(slurm, submit, layout):
    """scancel: SLURM sends SIGTERM to the batch script (and to every step), which removes the
    pool before KillWait ends. The PEs pass their check, then sleep until cancelled."""
    job = submit(layout, "sh", "-c", '"$0" ok && exec sleep 120', WORKER)
    running = wait_until(lambda: OK_LINE in job.output(), JOB_TIMEOUT_S, 0.2)
    assert running, f"the PEs did not pass their check:\n{job.output()}\n{slurm.logs()}"
    heaps = pool_heaps(job)
    assert heap_files(heaps), f"no heap in the pool's heap directories {heaps} while its PEs run"
    assert processes_naming(job.run_dir), "no server of the pool runs while its PEs run"

    cancelled = slurm.command("scancel", job.id)
    assert cancelled.returncode == 0, cancelled.stderr
    fields = slurm.wait_for_job_end(job.id, minislurm.KILL_WAIT_S + JOB_TIMEOUT_S)
    assert_nothing_left(slurm, job, heaps)
    output = job.output()
    assert fields.get("JobState") == "CANCELLED", f"{fields}\n{output}"
    assert "fampool-job: stopped by a signal: removing the pool" in output, output
    assert f"fampool-job: removed the pool of job {job.id}" in output, output


def test_the_deployment_guide_quotes_the_batch_script_as_it_is():
    """docs/deployment.md explains fampool-job.sbatch from excerpts of it (```bash blocks of its
    SLURM section): each line of them, but `...` and `# ` notes, is a line of the script."""
    with open(DOCS) as f:
        guide = f.read()
    section = guide[guide.index("\n## SLURM\n"):]
    section = section[:section.index("\n## ", 1)]
    excerpts = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert excerpts, "docs/deployment.md's SLURM section quotes no part of the script"
    with open(SCRIPT) as f:
        script = {line.strip() for line in f}
    quoted = [line.strip() for block in excerpts for line in block.splitlines()]
    wrong = [line for line in quoted
             if line and line != "..." and not line.startswith("# ") and line not in script]
    assert not wrong, f"docs/deployment.md quotes lines fampool-job.sbatch does not have: {wrong}"
