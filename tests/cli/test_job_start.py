"""A job's PEs all start at once: 128 PEs on a cluster of two memory servers start, work and
finish, three jobs in a row. Their fam_initialize calls reach the metadata service together;
each must ride out the burst (it asks again, with growing pauses, within connect_timeout_ms)
rather than fail."""
import os

from test_cli import BUILD_DIR, cluster_logs, fampool, run_dir, up_on_free_ports  # noqa: F401

WORKER = os.path.join(BUILD_DIR, "tests", "workers", "pmix_worker")
PES = 128
JOBS = 3


def test_jobs_of_128_pes_start_and_finish_three_times_in_a_row(run_dir):
    up_on_free_ports(run_dir, servers=2)
    for job in range(JOBS):
        run = fampool("run", "-n", str(PES), "--run-dir", run_dir, WORKER, "burst",
                      f"burst{job}", timeout=400)
        assert run.returncode == 0, \
            f"job {job}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n{cluster_logs(run_dir)}"
        assert f"pmix_worker: OK {PES} PEs" in run.stdout, run.stdout[-3000:]
