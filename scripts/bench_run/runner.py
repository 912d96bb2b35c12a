"""What every suite of scripts/bench uses: running a benchmark program with a bound in time,
starting and stopping local clusters, and the record of what was skipped or retried."""
import csv
import os
import subprocess
import tempfile
import time

STEP_TIMEOUT_S = 1200


class Runner:
    """One run of scripts/bench: the build tree it takes programs from, a work directory for run
    directories (removed at the end), and the clusters still up (stopped whatever happens)."""

    def __init__(self, build_dir, smoke):
        self.build = os.path.abspath(build_dir)
        self.smoke = smoke
        self.fampool_bin = os.path.join(self.build, "tools", "fampool")
        self.work = tempfile.mkdtemp(prefix="fampool-bench-")
        os.chmod(self.work, 0o755)  # munged refuses a socket below a directory others cannot search
        self.started = time.monotonic()
        self.clusters = []
        self.skipped = []  # reasons, for the suite being run
        self.unmade = set()  # the files of the suite's skipped parts

    def say(self, text):
        print(f"bench [{time.monotonic() - self.started:6.0f} s] {text}", flush=True)

    def skip(self, reason, *files):
        """A part of the suite that cannot run here: `reason` goes to skipped.txt and the
        report, and the suite is not expected to leave `files`."""
        self.skipped.append(reason)
        self.unmade.update(files)

    def bench(self, name):
        return os.path.join(self.build, "bench", name)

    def run(self, argv, env=None, timeout=STEP_TIMEOUT_S, capture=False, launcher=()):
        """Runs argv (after `launcher`, e.g. an oshrun line), with `env` over this process's
        environment (a value None unsets the variable); the output when `capture`. Raises
        RuntimeError naming the program when it exits other than 0."""
        merged = dict(os.environ)
        for key, value in (env or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = str(value)
        argv = [str(a) for a in (*launcher, *argv)]
        self.say("$ " + " ".join(argv))
        result = subprocess.run(argv, env=merged, timeout=timeout, text=True,
                                stdout=subprocess.PIPE if capture else None,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            name = os.path.basename(argv[len(launcher)])
            raise RuntimeError(f"{name} exited with {result.returncode}")
        return result.stdout

    # Clusters ---------------------------------------------------------------------------------

    def up(self, name, *options, authentication="none"):
        """Starts a cluster in a run directory of its own on free ports; returns the directory."""
        run_dir = os.path.join(self.work, name)
        os.makedirs(run_dir, exist_ok=True)
        os.chmod(run_dir, 0o755)
        self.clusters.append(run_dir)
        self.run([self.fampool_bin, "up", "--run-dir", run_dir, "--base-port", "auto",
                  "--authentication", authentication, *options], capture=True)
        return run_dir

    def down(self, run_dir):
        subprocess.run([self.fampool_bin, "down", "--run-dir", run_dir], timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if run_dir in self.clusters:
            self.clusters.remove(run_dir)

    def down_all(self):
        for run_dir in list(self.clusters):
            self.down(run_dir)

    @staticmethod
    def config(run_dir):
        return os.path.join(run_dir, "cluster.yaml")

    @staticmethod
    def client_namespaces(run_dir):
        names = []
        with open(os.path.join(run_dir, "emulation.yaml")) as f:
            for line in f:
                if "name: client" in line:
                    names.append(line.split("netns: ")[1].split(",")[0])
        return ",".join(names)

    @staticmethod
    def pids(run_dir, prefix):
        found = []
        pid_dir = os.path.join(run_dir, "pids")
        for name in sorted(os.listdir(pid_dir)):
            if name.startswith(prefix):
                with open(os.path.join(pid_dir, name)) as f:
                    found.append(f.read().strip())
        return ",".join(found)

    @staticmethod
    def emulation_missing():
        """Why the emulated fabric cannot run here, or None when it can."""
        if os.geteuid() != 0:
            return "not root: the emulated fabric needs network namespaces (CAP_SYS_ADMIN)"
        probe = f"fampool-bench-probe-{os.getpid()}"
        made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        if made.returncode != 0:
            return f"`ip netns add` fails here: {made.stderr.strip()}"
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        return None

    def launcher(self, kind, env):
        """An oshrun or mpirun line for two processes of this node, exporting `env`'s names."""
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        exports = sum((["-x", k] for k in env), [])
        return [kind, *root, "--oversubscribe", "-np", "2", *exports]


def parse_rate(text):
    """Bits per second of a tc rate such as 200mbit or 1gbit."""
    units = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3, "bit": 1}
    for unit, scale in units.items():
        if text.endswith(unit):
            return int(float(text[:-len(unit)]) * scale)
    raise ValueError(f"--link-rate {text}: give it as e.g. 200mbit or 1gbit")


def merge_csv(paths, out, extra=None):
    """Concatenates CSV files with one header into `out`; `extra(path)` gives columns
    (name -> value) put in front of each file's rows."""
    with open(out, "w", newline="") as f:
        writer = None
        for path in paths:
            with open(path, newline="") as source:
                for row in csv.DictReader(source):
                    row = {**(extra(path) if extra else {}), **row}
                    if writer is None:
                        writer = csv.DictWriter(f, fieldnames=list(row))
                        writer.writeheader()
                    writer.writerow(row)
