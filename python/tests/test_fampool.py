"""The Python package on the embedded model (each test with a data directory of its own) and on
a one-server cluster of `fampool up`."""
import os
import textwrap

import numpy as np
import pytest

import fampool
from conftest import run_python


def test_numpy_arrays_round_trip_without_a_copy(fam):
    region = fam.create_region("r", 64 << 20)
    item = fam.allocate(region, "x", 8 << 20)
    data = np.arange(1 << 20, dtype=np.float64)
    fam.put(item, data)
    assert np.array_equal(fam.get(item, dtype=np.float64), data)
    # get_into writes the caller's array in place.
    mine = np.zeros(1000, dtype=np.float64)
    fam.get_into(item, mine, offset=8 * 500)
    assert np.array_equal(mine, data[500:1500])
    # Any buffer: a bytearray, a memoryview slice.
    raw = bytearray(b"fampool!")
    fam.put(item, memoryview(raw)[0:4], offset=16)
    assert bytes(fam.get(item, offset=16, count=4)) == b"famp"
    assert item.size == 8 << 20 and item.name == "x" and region.name == "r"


def test_gather_and_scatter_take_numpy_index_arrays(fam):
    item = fam.allocate(fam.create_region("r", 16 << 20), "v", 1 << 20)
    fam.put(item, np.arange(1 << 17, dtype=np.int64))
    indexes = np.array([5, 1000, 3, 77777], dtype=np.int32)
    assert list(fam.gather(item, indexes, dtype=np.int64)) == [5, 1000, 3, 77777]
    fam.scatter_array(item, np.array([-1, -2], dtype=np.int64), [7, 9])
    assert list(fam.get(item, offset=7 * 8, count=3, dtype=np.int64)) == [-1, 8, -2]


def test_atomics_of_each_type(fam):
    item = fam.allocate(fam.create_region("r", 16 << 20), "a", 4096)
    fam.set(item, 0, 40, dtype="int64")
    assert fam.fetch_add(item, 0, 2, dtype="int64") == 40
    assert fam.get(item, count=1, dtype=np.int64)[0] == 42
    fam.set(item, 8, 1.5, dtype="float64")
    assert fam.fetch_add(item, 8, 2.25, dtype="float64") == 1.5
    fam.set(item, 16, 7, dtype="uint32")
    assert fam.compare_swap(item, 16, 7, 9, dtype="uint32") == 7
    assert fam.get(item, offset=16, count=1, dtype=np.uint32)[0] == 9
    with pytest.raises(ValueError, match="dtype"):
        fam.fetch_add(item, 0, 1, dtype="int8")


def test_errors_carry_the_fam_error_and_the_message(fam):
    with pytest.raises(fampool.FamError) as caught:
        fam.lookup_region("absent")
    assert caught.value.name == "FAM_ERR_NOTFOUND" and caught.value.error == 8
    assert "absent" in caught.value.message and "fam_lookup_region" in caught.value.message
    item = fam.allocate(fam.create_region("r", 16 << 20), "x", 4096)
    with pytest.raises(fampool.FamError) as caught:
        fam.put(item, np.zeros(8192, dtype=np.uint8))
    assert caught.value.name == "FAM_ERR_OUTOFRANGE"
    with pytest.raises(ValueError, match="C-contiguous"):
        fam.get_into(item, np.zeros((8, 8), dtype=np.uint8)[:, 0])
    with pytest.raises(ValueError, match="unknown option"):
        fampool.Fam(options={"colour": "blue"}).__enter__()


def test_copy_backup_and_restore(fam):
    region = fam.create_region("r", 16 << 20)
    src, dest = fam.allocate(region, "src", 1 << 20), fam.allocate(region, "dest", 1 << 20)
    data = np.random.default_rng(1).integers(0, 255, 1 << 20, dtype=np.uint8)
    fam.put(src, data)
    fam.copy(src, 0, dest, 0, 1 << 20)
    assert np.array_equal(fam.get(dest), data)
    fam.backup(src, "snapshot")
    fam.put(src, np.zeros(1 << 20, dtype=np.uint8))
    fam.restore("snapshot", src)
    assert np.array_equal(fam.get(src), data)
    fam.delete_backup("snapshot")
    assert fam.stat(src)["size"] == 1 << 20


def test_a_later_process_reads_a_persistent_region(tmp_path):
    env = dict(os.environ, FAMPOOL_HOME=str(tmp_path / "home"),
               FAMPOOL_SHM_DIR=str(tmp_path / "shm"))
    env.pop("FAMPOOL_CONFIG", None)
    write = textwrap.dedent("""
        import numpy as np, fampool
        with fampool.Fam() as fam:
            region = fam.create_region("kept", 16 << 20, memory_type="persistent")
            fam.put(fam.allocate(region, "x", 8000, 0o644), np.arange(1000.0))
    """)
    read = textwrap.dedent("""
        import numpy as np, fampool
        with fampool.Fam() as fam:
            x = fam.get(fam.lookup("x", "kept"), dtype=np.float64)
            print(x.sum())
    """)
    for script in (write, read):
        done = run_python(script, env)
    assert float(done.stdout) == sum(range(1000))


def test_on_a_cluster_of_fampool_up(cluster):
    script = textwrap.dedent("""
        import numpy as np, fampool
        with fampool.Fam() as fam:
            region = fam.create_region("c", 16 << 20, interleave=False)
            item = fam.allocate(region, "x", 1 << 20)
            data = np.arange(1 << 17, dtype=np.int64)
            fam.put(item, data)
            assert np.array_equal(fam.get(item, dtype=np.int64), data)
            assert fam.fetch_add(item, 0, 5) == 0
            print(fam.stat(item)["memory_servers"])
            fam.destroy_region(region)
    """)
    done = run_python(script, cluster.env)
    assert done.stdout.strip() in ("[0]", "[1]")
