"""The package under mpirun: PEs launched by Open MPI's mpirun (embedded model) and by
`fampool run` (a cluster) meet at fam barriers through the PMIx runtime and share a
FamArray."""
import os
import shutil
import textwrap

import pytest

from conftest import embedded_env, mpirun_launch, run_python

MPIRUN = shutil.which("mpirun")

# Each PE fills its row, all add to one counter memory-side, PE 0 checks after a barrier.
PROGRAM = textwrap.dedent("""
    import numpy as np, fampool
    with fampool.Fam() as fam:
        me, n = fam.pe_id, fam.pe_count
        if me == 0:
            fampool.zeros(fam, fam.create_region("mpi", 16 << 20), "v", (n, 1000), "int64")
        fam.barrier_all()
        a = fampool.open_array(fam, "mpi", "v")
        a[me, :] = np.arange(1000) * (me + 1)
        fam.barrier_all()  # PE 0's row, element 999 included, is written before the adds
        a.add_at(np.full(10, 999), 1)
        fam.barrier_all()
        if me == 0:
            rows = all(np.array_equal(a[k, :999], np.arange(999) * (k + 1)) for k in range(n))
            print(n, fam.get_option("RUNTIME"), rows, a[0, 999])
            fam.destroy_region(fam.lookup_region("mpi"))
        fam.barrier_all()
""")


def write_program(tmp_path):
    path = tmp_path / "pe.py"
    path.write_text(PROGRAM)
    return str(path)


@pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)")
def test_three_pes_under_mpirun_on_the_embedded_model(tmp_path):
    env = embedded_env(str(tmp_path))
    done = run_python(None, env, mpirun_launch(3) + [os.sys.executable,
                                                     write_program(tmp_path)])
    # Row 0 keeps 999 at [0, 999], plus 10 adds from each of the 3 PEs.
    assert done.stdout.split() == ["3", "PMIX", "True", str(999 + 30)]


@pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)")
def test_two_pes_of_fampool_run_on_a_cluster(cluster, tmp_path):
    env = dict(cluster.env)
    env.pop("FAMPOOL_CONFIG")  # `fampool run` sets it for each PE
    done = run_python(None, env, [cluster.cli, "run", "-n", "2", "--run-dir", cluster.run_dir,
                                  os.sys.executable, write_program(tmp_path)])
    assert done.stdout.split() == ["2", "PMIX", "True", str(999 + 20)]
