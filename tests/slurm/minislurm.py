"""A one-node SLURM of its own for tests: Debian's slurmctld and slurmd, run in the foreground
as children of the test from a configuration in a temporary directory, with a munged of their
own (AuthInfo=socket=...), and stopped by their PIDs at the end.

Nothing outside the directory is used or changed: state, spool, PID and log files are in it,
the daemons listen on free ports of 127.0.0.1 only (CommunicationParameters NoInAddrAny and
NoCtldInAddrAny), and clients (srun, sbatch, squeue, ...) find the cluster through SLURM_CONF.
The node is this host, named `localhost` (so that addresses SLURM hands to jobs are loopback
ones), with the CPUs and memory `slurmd -C` finds. No cgroups (proctrack/linuxproc,
task/none), no accounting, no job completion log.
"""
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time

DAEMON_PROGRAMS = ("slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "scontrol",
                   "sinfo")
MUNGED = "/usr/sbin/munged"
COMMAND_TIMEOUT_S = 30
START_TIMEOUT_S = 30
# Seconds between the SIGTERM of a cancelled job and its SIGKILL (SLURM's default is 30): a
# job's clean-up must fit in it.
KILL_WAIT_S = 10


def missing_programs():
    """Why a SLURM of its own cannot run here, or None."""
    if os.geteuid() != 0:
        return ("not root: the test's SLURM runs slurmctld and slurmd as root (SlurmUser=root; "
                "slurmd starts jobs as their users)")
    absent = [name for name in DAEMON_PROGRAMS if not shutil.which(name, path=search_path())]
    if not os.access(MUNGED, os.X_OK):
        absent.append(MUNGED)
    if absent:
        return f"not installed: {', '.join(absent)} (Debian: slurmctld slurmd slurm-client munge)"
    return None


def search_path():
    return os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


def free_port(low=30000, high=32700):
    """A TCP port of 127.0.0.1 nobody listens on now, below the kernel's ephemeral ports."""
    for _ in range(100):
        port = random.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free port in {low}-{high}")


def running(pid):
    """Whether pid runs (a zombie has stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def wait_until(condition, timeout_s, pause_s=0.1):
    """condition() once it is true, or its last (false) value after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(pause_s)


class MiniSlurm:
    """slurmctld, slurmd and their munged, configured in ROOT (a directory of the caller's)."""

    def __init__(self, root):
        self.root = root
        self.conf = os.path.join(root, "slurm.conf")
        self.munge_socket = os.path.join(root, "munge", "munge.socket")
        self.daemons = {}  # name -> subprocess.Popen of the daemons this object started

    # Bring-up.

    def start(self):
        self._start_munged()
        self._write_conf()
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        # -N: the node's name in slurm.conf, which is not this host's name.
        self._spawn("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", "localhost"])
        idle = wait_until(lambda: self._node_state() == "idle", START_TIMEOUT_S, 0.2)
        if not idle:
            raise RuntimeError(f"the node is `{self._node_state()}`, not idle, "
                               f"{START_TIMEOUT_S} s after starting SLURM\n{self.logs()}")

    def _start_munged(self):
        munge_dir = os.path.dirname(self.munge_socket)
        os.makedirs(munge_dir, mode=0o755)
        key = os.path.join(munge_dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(128))
        os.chmod(key, 0o400)  # munged refuses a key others may read
        self._spawn("munged", [
            MUNGED, "--foreground", "--key-file", key, "--socket", self.munge_socket,
            "--pid-file", os.path.join(munge_dir, "munged.pid"),
            "--seed-file", os.path.join(munge_dir, "munged.seed"),
            "--log-file", os.path.join(self.root, "munged.log")])
        if not wait_until(lambda: os.path.exists(self.munge_socket), START_TIMEOUT_S):
            raise RuntimeError(f"munged made no socket {self.munge_socket}\n{self.logs()}")

    def _write_conf(self):
        # This host's CPUs, boards, sockets, cores, threads and memory as slurmd finds them: a
        # node configured with more memory than it has would be drained.
        found = subprocess.run(["slurmd", "-C"], capture_output=True, text=True,
                               timeout=COMMAND_TIMEOUT_S, env=self.env()).stdout
        hardware = " ".join(word for word in found.split("\n")[0].split()
                            if not word.startswith("NodeName="))
        if "CPUs=" not in hardware:
            raise RuntimeError(f"`slurmd -C` did not describe this node: {found!r}")
        for sub in ("state", "spool"):
            os.makedirs(os.path.join(self.root, sub))
        plugstack = os.path.join(self.root, "plugstack.conf")
        open(plugstack, "w").close()  # no SPANK plugins (not /etc/slurm's)
        path = self.root
        lines = [
            "ClusterName=fampooltest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "CredType=cred/munge",
            "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
            f"StateSaveLocation={path}/state",
            f"SlurmdSpoolDir={path}/spool",
            f"SlurmctldPidFile={path}/slurmctld.pid",
            f"SlurmdPidFile={path}/slurmd.pid",
            f"SlurmctldLogFile={path}/slurmctld.log",
            f"SlurmdLogFile={path}/slurmd.log",
            f"PlugStackConfig={plugstack}",
            "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "ReturnToService=2",
            f"KillWait={KILL_WAIT_S}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"NodeName=localhost NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
            f"{hardware} State=UNKNOWN",
            "PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _spawn(self, name, argv):
        out = open(os.path.join(self.root, f"{name}.out"), "w")
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, env=self.env())
        out.close()
        self.daemons[name] = process

    def _node_state(self):
        shown = self.command("sinfo", "-h", "-N", "-o", "%T")
        return shown.stdout.strip() if shown.returncode == 0 else ""

    # Use.

    def env(self, **extra):
        """The environment of a SLURM client of this cluster, with EXTRA variables set."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SLURM_") and k not in ("FAMPOOL_CONFIG", "FAMPOOL_RUN_DIR")}
        env["SLURM_CONF"] = self.conf
        env["PATH"] = search_path()
        env.update(extra)
        return env

    def command(self, *argv, timeout=COMMAND_TIMEOUT_S, env=None):
        """Runs a SLURM command (or any other) against this cluster; the finished process."""
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env or self.env())

    def job(self, job_id):
        """`scontrol show job` of JOB_ID as a dict (JobState, ExitCode, ...), {} if unknown."""
        shown = self.command("scontrol", "show", "job", "-o", str(job_id))
        return dict(re.findall(r"(\w+)=(\S*)", shown.stdout)) if shown.returncode == 0 else {}

    def wait_for_job_end(self, job_id, timeout_s):
        """Waits until the job has ended and its processes are gone (squeue no longer lists it,
        as completing either); its final `scontrol show job` fields."""
        def ended():
            fields = self.job(job_id)
            if fields.get("JobState") in (None, "PENDING", "RUNNING", "COMPLETING"):
                return None
            listed = self.command("squeue", "-h", "-j", str(job_id), "-o", "%T")
            return None if listed.stdout.strip() else fields
        fields = wait_until(ended, timeout_s, 0.2)
        if not fields:
            raise AssertionError(f"job {job_id} still runs {timeout_s} s on: {self.job(job_id)}"
                                 f"\n{self.logs()}")
        return fields

    def processes(self):
        """The PIDs of the processes this cluster's jobs started, and of those started by them,
        that still run: every process whose environment names this cluster's slurm.conf, but
        the daemons and their own children (slurmctld's slurmscriptd)."""
        marker = f"SLURM_CONF={self.conf}".encode()
        daemons = {process.pid for process in self.daemons.values()}
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in daemons:
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environment = f.read().split(b"\0")
            except (OSError, IndexError):
                continue
            state, parent = fields[0], int(fields[1])
            if marker in environment and state not in ("Z", "X") and parent not in daemons:
                found.append(int(entry))
        return found

    def logs(self, lines=30):
        """The ends of the daemons' logs, for a failure's message."""
        text = []
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out",
                     "munged.log"):
            path = os.path.join(self.root, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
                text.append(f"--- {path}\n" + "\n".join(tail))
        return "\n".join(text)

    # Tear-down.

    def stop(self):
        """Cancels every job, stops the daemons and munged by their PIDs (SIGTERM, SIGKILL
        after 10 s), then kills what the jobs left; returns the PIDs it had to kill that way."""
        if "slurmctld" in self.daemons and self.daemons["slurmctld"].poll() is None:
            listed = self.command("squeue", "-h", "-o", "%i")
            for job_id in listed.stdout.split():
                self.command("scancel", job_id)
            wait_until(lambda: not self.command("squeue", "-h", "-o", "%i").stdout.strip(),
                       KILL_WAIT_S + 10, 0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            self._stop(name)
        left = self.processes()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left

    def _stop(self, name):
        process = self.daemons.get(name)
        if not process or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
