"""examples/python: the seed-002 workflow as separate jobs under mpirun (statistics checked
against numpy over the regenerated readings, and the incremental analysis reading only new
samples), on a cluster under `fampool run`, and its notebook, run cell by cell."""
import json
import os
import shutil
import sys
import textwrap

import numpy as np
import pytest

from conftest import embedded_env, mpirun_launch, run_python

pytest.importorskip("matplotlib")  # the plot stage and the notebook draw with it

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")
WORKFLOW = os.path.join(EXAMPLES, "workflow.py")
MPIRUN = shutil.which("mpirun")

# Reads the region the stages wrote and compares it with the readings made again.
CHECK = textwrap.dedent("""
    import sys
    import numpy as np, fampool
    sys.path.insert(0, sys.argv[1])
    import workflow
    with fampool.Fam() as fam:
        state = fampool.open_array(fam, "workflow", "state")[:]
        stats = fampool.open_array(fam, "workflow", "stats").read()
        counts = fampool.open_array(fam, "workflow", "histogram").read()
        n = int(state[0])
        data = workflow.readings(0, n).astype(np.float64)
        assert list(state) == [n, n], state
        assert np.array_equal(fampool.open_array(fam, "workflow", "readings")[:, :n],
                              workflow.readings(0, n))
        assert np.array_equal(stats[:, 0], [n] * workflow.CHANNELS)
        assert np.allclose(stats[:, 1], data.sum(axis=1))
        assert np.allclose(stats[:, 2], (data * data).sum(axis=1))
        assert np.array_equal(stats[:, 3], data.min(axis=1))
        assert np.array_equal(stats[:, 4], data.max(axis=1))
        for c in range(workflow.CHANNELS):
            bins = np.clip(((data[c] - workflow.LOW) / (workflow.HIGH - workflow.LOW)
                            * workflow.BINS).astype(np.int64), 0, workflow.BINS - 1)
            assert np.array_equal(counts[c], np.bincount(bins, minlength=workflow.BINS))
        print(n)
""")

# After `clean`: the region and the backup are gone.
GONE = textwrap.dedent("""
    import fampool
    with fampool.Fam() as fam:
        for call in (lambda: fam.lookup_region("workflow"),
                     lambda: fam.delete_backup("workflow-readings")):
            try:
                call()
            except fampool.FamError as e:
                print(e.name)
""")


def stages(launch, env, tmp_path):
    """ingest 300000, analyse, ingest 200000, analyse, check, plot, archive, clean."""
    def stage(*args):
        return run_python(None, env, launch + [sys.executable, WORKFLOW, *args]).stdout
    assert "ingested 300000" in stage("ingest", "--samples", "300000")
    assert "analysed 300000 new samples" in stage("analyse")
    assert "(500000 in the region)" in stage("ingest", "--samples", "200000")
    assert "analysed 200000 new samples" in stage("analyse")
    assert run_python(CHECK, env, [sys.executable, "-c", CHECK, EXAMPLES]).stdout.strip() == \
        "500000"
    picture = tmp_path / "workflow.png"
    stage("plot", "--out", str(picture))
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 20000
    assert "backed up" in stage("archive")
    stage("clean")
    gone = run_python(GONE, env).stdout.split()
    assert gone == ["FAM_ERR_NOTFOUND", "FAM_BACKUP_NOTFOUND"], gone


@pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (openmpi-bin)")
def test_workflow_stages_under_mpirun(tmp_path):
    stages(mpirun_launch(2), embedded_env(str(tmp_path)), tmp_path)


def test_workflow_stages_on_a_cluster(cluster, tmp_path):
    env = dict(cluster.env)
    stages([cluster.cli, "run", "-n", "2", "--run-dir", cluster.run_dir], env, tmp_path)


def test_the_notebook_runs_cell_by_cell(tmp_path):
    notebook = json.load(open(os.path.join(EXAMPLES, "workflow.ipynb")))
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 6
    runner = tmp_path / "run_notebook.py"
    runner.write_text("import sys\nsys.path.insert(0, '.')\nnamespace = {}\n" + "".join(
        f"exec(compile({cell!r}, 'cell {k}', 'exec'), namespace)\n"
        for k, cell in enumerate(cells)) + "namespace['fig'].savefig(sys.argv[1])\n")
    env = dict(embedded_env(str(tmp_path)), MPLBACKEND="Agg")
    picture = tmp_path / "notebook.png"
    done = run_python(None, env, [sys.executable, str(runner), str(picture)], cwd=EXAMPLES)
    assert "analysed 1000000 new samples" in done.stdout
    assert "analysed 500000 new samples" in done.stdout
    assert picture.stat().st_size > 20000
