"""The suites of scripts/bench that run on this machine's loopback: each writes its CSV files
into `out` (its own directory under bench/results) and measures every figure against a baseline
run in the same suite. `r` is the Runner; r.smoke asks for a CI-sized run."""
import glob
import os
import re
import shutil
import subprocess
import sys
import time

from .runner import merge_csv

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def embedded(r, out):
    """fam_microbench on the embedded model: latency, atomics and metadata against plain memory;
    and transfer_bench's get/put of one thread against memcpy at issue 2's sizes, over a 256 MiB
    item (out of cache), median of 9 alternating trials."""
    home = os.path.join(r.work, "embedded-home")
    shm = os.path.join("/dev/shm", os.path.basename(r.work) + "-embedded")
    os.makedirs(shm, exist_ok=True)
    env = {"FAMPOOL_HOME": home, "FAMPOOL_SHM_DIR": shm, "FAMPOOL_CONFIG": None,
           "OPENFAM_ROOT": None}
    transfers = os.path.join(out, "transfers.csv")
    if os.path.exists(transfers):
        os.remove(transfers)  # transfer_bench appends
    try:
        r.run([r.bench("fam_microbench"), *(["--quick"] if r.smoke else []), "--csv",
               os.path.join(out, "microbench.csv")], env=env)
        sizes = [256, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
        shape = ["--item", str(8 << 20), "--trials", "1", "--seconds", "0.02"] if r.smoke else \
            ["--item", str(256 << 20), "--trials", "9", "--seconds", "0.25"]
        if r.smoke:
            sizes = sizes[:4]
        r.run([r.bench("transfer_bench"), "api", "--label", "embedded", "--threads", "1",
               "--sizes", ",".join(map(str, sizes)), *shape, "--csv", transfers], env=env)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def transfer(r, out):
    """transfer_bench (api) on the embedded model and one-server clusters over tcp and shm, and
    the peers (OpenSHMEM, MPI-3 RMA) between two processes of this node."""
    common = ["--csv", os.path.join(out, "transfer.csv")]
    if r.smoke:
        common += ["--sizes", "4096,1048576", "--threads", "1,2", "--seconds", "0.05",
                   "--item", str(8 << 20)]
    r.say("transfer: the embedded model against memcpy")
    r.run([r.bench("transfer_bench"), "api", "--label", "embedded", *common],
          env={"FAMPOOL_HOME": os.path.join(r.work, "transfer-home"), "FAMPOOL_CONFIG": None,
               "OPENFAM_ROOT": None})
    for provider in ("tcp", "shm"):
        baseline = "memcpy" if provider == "shm" else "raw libfabric"
        r.say(f"transfer: one memory server over {provider} against {baseline}")
        run_dir = r.up(f"transfer-{provider}", "--memservers", "1", "--provider", provider)
        try:
            r.run([r.bench("transfer_bench"), "api", "--label", provider, *common],
                  env={"FAMPOOL_CONFIG": r.config(run_dir)})
        finally:
            r.down(run_dir)
    peers_of_transfer(r, out)


def peers_of_transfer(r, out):
    sizes = "4096,1048576" if r.smoke else \
        "256,1024,4096,16384,65536,262144,1048576,4194304,16777216,67108864"
    seconds = "0.05" if r.smoke else "0.25"
    peers = r.bench("peers")
    rows = []
    if not os.path.exists(peers):
        r.skip("peers: bench/peers was not built (no oshcc): OpenSHMEM and MPI RMA", "peers.csv")
    classes = {"tcp": {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo"},
               "shm": {"UCX_TLS": "sm,self"}}
    for label, ucx in classes.items() if os.path.exists(peers) else ():
        env = dict(ucx, SHMEM_SYMMETRIC_HEAP_SIZE="512M", OMPI_MCA_spml="ucx", OMPI_MCA_osc="ucx")
        r.say(f"peers: OpenSHMEM over {label}")
        text = r.run([peers, "shmem", "--label", label, "--sizes", sizes, "--seconds", seconds],
                     env=env, capture=True, launcher=r.launcher("oshrun", env))
        rows += [line for line in text.splitlines() if line.startswith("openshmem,")]
        env = dict(ucx, OMPI_MCA_osc="ucx" if label == "tcp" else "sm")
        r.say(f"peers: MPI RMA over {label} (osc/{env['OMPI_MCA_osc']})")
        text = r.run([peers, "mpi-rma", "--label", label, "--sizes", sizes, "--seconds", seconds],
                     env=env, capture=True, launcher=r.launcher("mpirun", env))
        rows += [line for line in text.splitlines() if line.startswith("mpi-rma,")]
    with open(os.path.join(out, "peers.csv"), "w") as f:
        f.write("peer,label,op,size_bytes,seconds,bytes,gbps\n")
        f.write("".join(row + "\n" for row in rows))


def cluster(r, out):
    """The memory-server model on local clusters: the libfabric channel against raw libfabric
    (in-process), metadata calls and rates on one server, an item striped over three servers
    against one on one server, and authentication none against munge."""
    provider = os.environ.get("FAMPOOL_BENCH_PROVIDER", "tcp")
    smoke = r.smoke
    r.say("cluster: the libfabric channel against raw libfabric")
    r.run([r.bench("transfer_bench"), "channel", "--providers",
           "tcp" if smoke else "shm,tcp,sockets", "--trials", "1" if smoke else "5",
           *(["--quick"] if smoke else []), "--csv", os.path.join(out, "channel.csv")])
    r.say(f"cluster: one memory server over {provider}: metadata calls and rates")
    run_dir = r.up("cluster-one", "--memservers", "1", "--provider", provider)
    try:
        env = {"FAMPOOL_CONFIG": r.config(run_dir)}
        r.run([r.bench("fam_microbench"), "--cluster", *(["--quick"] if smoke else []), "--csv",
               os.path.join(out, "microbench.csv")], env=env)
        r.run([r.bench("metadata_bench"), "scaling", "--clients", "1,2" if smoke else
               "1,2,4,8,16", "--seconds", "0.3" if smoke else "2", "--rounds",
               "1" if smoke else "3", "--csv", os.path.join(out, "metadata_scaling.csv")], env=env)
    finally:
        r.down(run_dir)
    # Striped against one server: 4 KiB interleaving over the suite's provider, and (full run)
    # 64 KiB over tcp and over shm.
    striped = [(provider, 4096, "striped.csv")]
    if not smoke:
        r.say("cluster: the same metadata rates over shm")
        run_dir = r.up("cluster-one-shm", "--memservers", "1", "--provider", "shm")
        try:
            r.run([r.bench("metadata_bench"), "scaling", "--seconds", "2", "--rounds", "3",
                   "--csv", os.path.join(out, "metadata_scaling_shm.csv")],
                  env={"FAMPOOL_CONFIG": r.config(run_dir)})
        finally:
            r.down(run_dir)
        striped += [("tcp", 65536, "striped_tcp_64k.csv"), ("shm", 65536, "striped_shm_64k.csv")]
    for over, interleave, csv_name in striped:
        r.say(f"cluster: three memory servers over {over}, {interleave} B interleaving: an item "
              f"striped over them against one on one server")
        run_dir = r.up(f"cluster-three-{over}-{interleave}", "--memservers", "3", "--interleave",
                       interleave, "--provider", over)
        try:
            r.run([r.bench("transfer_bench"), "striped", "--trials", "1" if smoke else "3",
                   *(["--sizes", "65536", "--total-mib", "4"] if smoke else []), "--csv",
                   os.path.join(out, csv_name)], env={"FAMPOOL_CONFIG": r.config(run_dir)})
        finally:
            r.down(run_dir)
    r.say(f"cluster: authentication, two one-server clusters over {provider}, none and munge")
    none = r.up("cluster-none", "--memservers", "1", "--provider", provider)
    munge = r.up("cluster-munge", "--memservers", "1", "--provider", provider,
                 authentication="munge")
    try:
        r.run([r.bench("metadata_bench"), "auth", "--none", r.config(none), "--munge",
               r.config(munge), "--seconds", "0.3" if smoke else "2", "--rounds",
               "1" if smoke else "5", "--csv", os.path.join(out, "auth.csv")])
    finally:
        r.down(munge)
        r.down(none)


def large(r, out):
    """transfer_bench large: the first write, a write again and a read of one large item, on
    the embedded model and a 3-server tcp cluster (no interleaving: one server holds the item),
    each beside memcpy into a fresh mapping of the same kind of memory in the same run."""
    csv = os.path.join(out, "large.csv")
    if os.path.exists(csv):
        os.remove(csv)  # transfer_bench appends
    shape = ["--sizes", str(64 << 20), "--trials", "1"] if r.smoke else \
        ["--sizes", ",".join(str(n) for n in (256 << 20, 1 << 30, 4 << 30)), "--trials", "3"]
    shm = os.path.join("/dev/shm", os.path.basename(r.work) + "-large")
    os.makedirs(shm, exist_ok=True)
    try:
        r.say("large: the embedded model against memcpy into a fresh /dev/shm mapping")
        r.run([r.bench("transfer_bench"), "large", "--label", "embedded", *shape, "--csv", csv],
              env={"FAMPOOL_HOME": os.path.join(r.work, "large-home"), "FAMPOOL_SHM_DIR": shm,
                   "FAMPOOL_CONFIG": None, "OPENFAM_ROOT": None})
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    r.say("large: three memory servers over tcp against memcpy into a fresh /dev/shm mapping")
    run_dir = r.up("large-tcp", "--memservers", "3", "--provider", "tcp")
    try:
        r.run([r.bench("transfer_bench"), "large", "--label", "tcp", *shape, "--csv", csv],
              env={"FAMPOOL_CONFIG": r.config(run_dir)})
    finally:
        r.down(run_dir)


def small_ops(r, out):
    """small_ops_bench on the embedded model and one-server clusters (shm with and without
    fabric_direct, tcp), and OpenSHMEM's rate (peers shmem-rate); on each cluster also
    transfer_bench api's large transfers of one thread against a raw libfabric loop with as
    many in flight (transfers.csv, label = the cluster)."""
    quick = ["--quick", "--threads", "1"] if r.smoke else []
    transfers = os.path.join(out, "transfers.csv")
    if os.path.exists(transfers):
        os.remove(transfers)  # transfer_bench appends
    large = ["--threads", "1", "--sizes", "65536,1048576,4194304", "--baseline", "raw",
             "--csv", transfers,
             *(["--seconds", "0.02", "--item", str(16 << 20)] if r.smoke else
               ["--seconds", "0.25", "--trials", "3"])]
    shm = os.path.join("/dev/shm", os.path.basename(r.work) + "-small")
    os.makedirs(shm, exist_ok=True)
    try:
        r.run([r.bench("small_ops_bench"), *quick, "--csv", os.path.join(out, "embedded.csv")],
              env={"FAMPOOL_HOME": os.path.join(r.work, "small-home"), "FAMPOOL_SHM_DIR": shm,
                   "FAMPOOL_CONFIG": None, "OPENFAM_ROOT": None})
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    # shm twice: fabric_direct (loads and stores on the server's heap, the default) and shm's
    # RMA (what the raw loop measures too).
    for run in ("shm", "shm-rma", "tcp"):
        provider = run.replace("-rma", "")
        r.say(f"small-ops: one memory server over {provider} ({run})")
        run_dir = r.up(f"small-{run}", "--memservers", "1", "--provider", provider)
        try:
            env = {"FAMPOOL_CONFIG": r.config(run_dir),
                   "FAMPOOL_FABRIC_DIRECT": "0" if run == "shm-rma" else "1"}
            r.run([r.bench("small_ops_bench"), "--cluster", *quick, "--model", f"cluster-{run}",
                   "--csv", os.path.join(out, f"{run}.csv")], env=env)
            r.run([r.bench("transfer_bench"), "api", "--label", f"cluster-{run}", *large],
                  env=env)
        finally:
            r.down(run_dir)
    peers = r.bench("peers")
    if not os.path.exists(peers):
        r.skip("OpenSHMEM rate: bench/peers was not built (no oshcc)", "openshmem.csv")
        return
    env = {"OMPI_MCA_spml": "ucx", "OMPI_MCA_osc": "ucx"}
    text = r.run([peers, "shmem-rate", *quick], env=env, capture=True, timeout=600,
                 launcher=r.launcher("oshrun", env))
    with open(os.path.join(out, "openshmem.csv"), "w") as f:
        f.write("model,kind,op,size_bytes,threads,context,mops\n")
        f.writelines(line + "\n" for line in text.splitlines() if line.startswith("openshmem,"))


def redundancy(r, out):
    """RAID1 and RAID5 against NONE on one 3-server tcp cluster with 64 KiB interleaving:
    bandwidth, latency, atomics; failover after a SIGKILL; the heap bytes each level takes; the
    rebuild of the killed server's members when it comes back."""
    total = 4 if r.smoke else 64
    run_dir = r.up("redundancy", "--memservers", "3", "--interleave", "65536", "--provider", "tcp")
    try:
        env = {"FAMPOOL_CONFIG": r.config(run_dir)}
        r.say("redundancy: RAID1 and RAID5 against NONE")
        r.run([r.bench("redundancy_bench"), "--total-mib", total, "--trials",
               1 if r.smoke else 5, "--csv", os.path.join(out, "bench.csv")], env=env)
        r.say("redundancy: atomics again over gRPC (FAMPOOL_MEMSERVER_FABRIC=0)")
        r.run([r.bench("redundancy_bench"), "--atomics-only", "--total-mib", total, "--csv",
               os.path.join(out, "atomics_grpc.csv")],
              env={**env, "FAMPOOL_MEMSERVER_FABRIC": "0"})
        r.say("redundancy: failover, SIGKILL of memory server 2")
        with open(os.path.join(run_dir, "pids", "memory2.pid")) as f:
            victim = f.read().strip()
        r.run([r.bench("redundancy_bench"), "--failover", victim, "--total-mib", total * 4,
               "--trials", 1 if r.smoke else 3, "--csv", os.path.join(out, "failover.csv")],
              env=env)
        regions = r.run([r.fampool_bin, "ls", "--bytes"], env=env, capture=True)
        heap_bytes_per_level(regions, run_dir, os.path.join(out, "memory.csv"))
        rebuild(r, run_dir, env, os.path.join(out, "rebuild.csv"), item_mib=total * 4)
    finally:
        r.down(run_dir)


def heap_bytes_per_level(regions, run_dir, csv_path):
    """The bytes of the heap files each bench- region takes on every memory server."""
    ids = {}
    for line in regions.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[0].startswith("bench-") and fields[1].isdigit():
            ids[fields[0][len("bench-"):]] = (fields[1], int(fields[2]))
    with open(os.path.join(run_dir, "cluster.yaml")) as f:
        shm_dirs = {d.strip('"') for d in re.findall(r"shm_path:\s*(\S+)", f.read())}
    shm_dirs = shm_dirs or {"/dev/shm"}
    with open(csv_path, "w") as csv:
        csv.write("level,region_bytes,heap_bytes,ratio_to_none\n")
        none = None
        for level in ("NONE", "RAID1", "RAID5"):
            region_id, size = ids[level]
            heap = 0
            for d in shm_dirs:
                for suffix in ("", "c"):
                    for path in glob.glob(os.path.join(d, f"fampool-ms*.r{region_id}{suffix}")):
                        heap += os.path.getsize(path)
            none = none or heap
            csv.write(f"{level},{size},{heap},{heap / none:.4f}\n")
            print(f"{level}: region {size} B, heap files {heap} B, {heap / none:.2f}x of NONE")


def rebuild(r, run_dir, env, csv_path, item_mib):
    """Restarts memory server 2 and waits (at most 60 s) until no member is degraded or
    rebuilding; the rebuild times come from the metadata service's log. A RAID1 member's data
    is its third of the failover step's item (`item_mib`, interleaved over the 3 servers): a
    RAID1 rebuild copies that and skips the member's holes; RAID5's recomputes every stripe."""
    r.say("redundancy: memory server 2 back, its members rebuilt on it")
    start = time.monotonic()
    with open(os.path.join(run_dir, "logs", "memory2.log"), "a") as log:
        server = subprocess.Popen([os.path.join(r.build, "tools", "fampool-server"), "--config",
                                   r.config(run_dir), "--role", "memory", "--id", "2"],
                                  stdout=log, stderr=log, start_new_session=True)
    with open(os.path.join(run_dir, "pids", "memory2.pid"), "w") as f:
        f.write(f"{server.pid}\n")
    while time.monotonic() - start < 60:
        status = r.run([r.fampool_bin, "status"], env=env, capture=True)
        if "degraded" not in status and "rebuilding" not in status:
            break
        time.sleep(0.1)
    else:
        raise RuntimeError("redundancy: still degraded 60 s after memory server 2 restarted")
    r.say(f"redundancy: healthy again {time.monotonic() - start:.2f} s after the restart")
    pattern = re.compile(r'region "(\S+)" member (\d+): rebuilt on memory server \d+ '
                         r'\(([\d.]+) MB in ([\d.]+) s\)')
    with open(os.path.join(run_dir, "logs", "metadata.log")) as log, open(csv_path, "w") as csv:
        csv.write("region,member,megabytes,seconds,data_megabytes\n")
        for line in log:
            found = pattern.search(line)
            if found:
                region, member, megabytes, seconds = found.groups()
                data = item_mib * 2**20 / 3 / 1e6 if "RAID1" in region else float(megabytes)
                csv.write(f"{region},{member},{megabytes},{seconds},{data:.1f}\n")


def security(r, out):
    """What the same-node descriptor path and TLS cost: small_ops_bench rounds on each
    same-node path, transfer_bench same-node, and metadata rates plaintext against TLS."""
    rounds = 1 if r.smoke else 9
    run_dir = r.up("security-shm", "--memservers", "1", "--provider", "shm")
    try:
        parts = []
        for number in range(1, rounds + 1):
            order = ("true", "path") if number % 2 else ("path", "true")
            for direct in order:
                part = os.path.join(r.work, f"security-{direct}_{number}.csv")
                r.run([r.bench("small_ops_bench"), "--cluster", "--threads", "1",
                       *(["--quick"] if r.smoke else []), "--model", f"shm-{direct}", "--csv",
                       part], env={"FAMPOOL_CONFIG": r.config(run_dir),
                                   "FAMPOOL_FABRIC_DIRECT": direct}, capture=True)
                parts.append(part)
        merge_csv(sorted(parts), os.path.join(out, "small_ops.csv"), extra=lambda path: dict(
            zip(("fabric_direct", "round"), os.path.basename(path)[9:-4].split("_"))))
        r.run([r.bench("transfer_bench"), "same-node", "--rounds", "3" if r.smoke else "21",
               *(["--seconds", "0.05"] if r.smoke else []), "--csv",
               os.path.join(out, "same_node.csv")], env={"FAMPOOL_CONFIG": r.config(run_dir)})
    finally:
        r.down(run_dir)
    plain = r.up("security-plain", "--memservers", "1", "--provider", "tcp",
                 authentication="munge")
    tls = r.up("security-tls", "--memservers", "1", "--provider", "tcp", "--tls",
               authentication="munge")
    try:
        r.run([r.bench("metadata_bench"), "auth", "--plain", r.config(plain), "--tls",
               r.config(tls), "--seconds", "0.3" if r.smoke else "2", "--rounds",
               "1" if r.smoke else "5", "--csv", os.path.join(out, "tls.csv")])
    finally:
        r.down(tls)
        r.down(plain)


def python(r, out):
    """bench/python_bench.py on the embedded model and on a one-server tcp cluster."""
    small = ["--sizes", "1048576", "--seconds", "0.1", "--rounds", "1"] if r.smoke else []
    script = os.path.join(SOURCE, "bench", "python_bench.py")
    env = {"PYTHONPATH": os.path.join(r.build, "python"), "FAMPOOL_CONFIG": None,
           "OPENFAM_ROOT": None, "FAMPOOL_HOME": os.path.join(r.work, "python-home")}
    r.run([sys.executable, script, *small, "--csv", os.path.join(out, "embedded.csv")], env=env)
    run_dir = r.up("python", "--memservers", "1", "--provider", "tcp")
    try:
        r.run([sys.executable, script, *small, "--label",
               "cluster: 1 memory server, tcp on loopback", "--csv",
               os.path.join(out, "cluster.csv")], env=dict(env, FAMPOOL_CONFIG=r.config(run_dir)))
    finally:
        r.down(run_dir)


def metrics(r, out):
    """metrics_bench on two one-server tcp clusters alike but for `fampool up --metrics`."""
    off = r.up("metrics-off", "--memservers", "1", "--provider", "tcp", "--metrics", "off")
    on = r.up("metrics-on", "--memservers", "1", "--provider", "tcp", "--metrics", "on")
    try:
        r.run([r.bench("metrics_bench"), "--off", r.config(off), "--on", r.config(on),
               "--seconds", "0.2" if r.smoke else "1", "--rounds", "1" if r.smoke else "15",
               "--csv", os.path.join(out, "cost.csv")])
    finally:
        r.down(on)
        r.down(off)


def apps(r, out):
    """scripts/apps --bench: the seed applications at benchmark sizes (apps.json)."""
    if r.smoke:
        r.skip("apps: no smoke run (the default tests run scripts/apps --small)", "apps.json")
        return
    r.run([sys.executable, os.path.join(SOURCE, "scripts", "apps"), "--bench", "--build-dir",
           r.build, "--results", os.path.join(out, "apps.json")], timeout=3600)
