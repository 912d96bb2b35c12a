"""fampool.FamArray: numpy indexing that reads and writes FAM, checked against the same
operations on a numpy array; memory-side aggregation; the streaming reductions; a later
process opening an array by name; the same on a two-server cluster."""
import textwrap

import numpy as np
import pytest

import fampool
from conftest import embedded_env, run_python

# Every kind of key FamArray takes, on a (60, 70, 3) array.
KEYS = [
    (5,), (-1,), (slice(2, 9),), (slice(None), 3), (slice(None), slice(4, 20), 1), (..., 2),
    (slice(None, None, -3), slice(1, 60, 7)), ([3, 1, 59],), (slice(None), [5, 0, 69]),
    (np.arange(60) % 2 == 0,), (-1, -1, -1), (Ellipsis,), (slice(10, 10),), (7, 8),
    (slice(1, 59), slice(None), slice(0, 2)), (np.int64(4), Ellipsis, np.int32(0)),
    (np.array([-1, -60, 5, 5], dtype=np.int8),), (slice(None), np.array([3, 3, 69], np.uint8)),
    ([],), (2, [0, 1]), (slice(None), 4, [2, 0]),
]


@pytest.fixture
def region(fam):
    return fam.create_region("arrays", 64 << 20)


def test_indexing_reads_what_numpy_reads(fam, region):
    reference = np.arange(60 * 70 * 3, dtype=np.float32).reshape(60, 70, 3)
    a = fampool.array(fam, region, "grid", reference)
    assert (a.shape, a.dtype, a.ndim, a.size, len(a)) == ((60, 70, 3), np.float32, 3, 12600, 60)
    assert a.nbytes == reference.nbytes
    for key in KEYS:
        got, expected = a[key], reference[key]
        assert np.shape(got) == np.shape(expected), key
        assert np.array_equal(got, expected), key
    assert np.array_equal(np.asarray(a), reference) and np.array_equal(a.read(), reference)
    mine = np.zeros_like(reference)
    assert a.read(out=mine) is mine and np.array_equal(mine, reference)
    with pytest.raises(ValueError, match="needs 12600 elements of float32"):
        a.read(out=np.zeros(12600, dtype=np.float64))


def test_assignment_writes_what_numpy_writes(fam, region):
    rng = np.random.default_rng(7)
    reference = np.zeros((60, 70, 3), dtype=np.int32)
    a = fampool.zeros(fam, region, "grid", reference.shape, dtype=np.int32)
    for key in KEYS:
        values = rng.integers(-1000, 1000, np.shape(reference[key]), dtype=np.int32)
        a[key] = values
        reference[key] = values
        assert np.array_equal(a.read(), reference), key
    a[:, 0, :] = 5  # a scalar broadcasts
    reference[:, 0, :] = 5
    a[3] = np.arange(3)  # so does a row
    reference[3] = np.arange(3)
    assert np.array_equal(a.read(), reference)
    a.fill(2)
    assert a.min() == 2 and a.max() == 2 and a.sum() == 2 * a.size


def test_bad_indexes_are_refused_like_numpy(fam, region):
    a = fampool.zeros(fam, region, "v", (10, 4), dtype=np.float64)
    for key in [(10,), (-11,), (0, 4), (1, 2, 3), ([0, 10],), ([0.5],), (..., ...), (True,),
                (None,), (np.array(1),)]:
        with pytest.raises(IndexError):
            a[key]
    with pytest.raises(IndexError, match="one index array"):
        a[[0, 1], [0, 1]]
    b = fampool.zeros(fam, region, "b", (3, 4, 5), dtype=np.float64)
    with pytest.raises(IndexError, match="parted by a slice"):
        b[0, :, [1, 2]]  # numpy's result would be (2, 4): the array's axis moved first
    with pytest.raises(ValueError):
        a[0:2] = np.zeros((3, 4))  # does not broadcast
    with pytest.raises(TypeError, match="numbers"):
        fampool.empty(fam, region, "s", 4, dtype="U8")
    with pytest.raises(TypeError, match="byte order"):
        fampool.empty(fam, region, "s", 4, dtype=">i8")


def test_add_at_aggregates_memory_side(fam, region):
    counts = fampool.zeros(fam, region, "counts", 1000, dtype=np.int64)
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 1000, 50000)
    counts.add_at(keys, 1)
    expected = np.bincount(keys, minlength=1000)
    assert np.array_equal(counts.read(), expected)
    assert counts.fetch_add(7, 100) == expected[7] and counts[7] == expected[7] + 100
    assert np.array_equal(counts.take([7, 0, 999]), [expected[7] + 100, expected[0],
                                                     expected[999]])
    counts.put([1, 2], [-5, -6])
    assert list(counts[:3]) == [expected[0], -5, -6]
    with pytest.raises(TypeError, match="integers"):
        fampool.zeros(fam, region, "f", 4, dtype=np.float32).add_at([0], 1.0)
    with pytest.raises(TypeError, match="not float64"):
        counts.add_at([0], 1.9)  # np.add.at refuses to truncate too
    assert counts.take([[7, 0], [1, 2]]).shape == (2, 2)


def test_queued_operations_of_the_fam_object(fam, region):
    item = fam.allocate(region, "q", 8 * 100)
    fam.queue_scatter(item, [1, 2, 3], np.array([10, 20, 30], dtype=np.int64))
    fam.queue_add(item, [2, 2], np.array([1, 1], dtype=np.int64))
    fam.aggregate_flush(item)
    out = np.zeros(3, dtype=np.int64)
    fam.queue_gather(item, [3, 2, 1], out)
    fam.aggregate_flush(item)
    assert list(out) == [30, 22, 10]
    # The out array is kept until the item is flushed, through another handle of it too,
    # even when the caller drops it.
    fam.queue_gather(item, [1], np.zeros(1, dtype=np.int64))
    fam.aggregate_flush(fam.lookup("q", "arrays"))
    assert not fam._queued
    with pytest.raises(ValueError, match="as many values"):
        fam.queue_add(item, [1, 2], np.array([1], dtype=np.int64))
    with pytest.raises(TypeError, match="4- or 8-byte integers"):
        fam.queue_add(item, [1], np.array([1.5]))


def test_streaming_reductions_read_in_chunks(fam, region, monkeypatch):
    monkeypatch.setattr(fampool._array, "_CHUNK_BYTES", 1 << 20)
    data = np.random.default_rng(5).random(3_000_000)  # 24 MB: chunks of 1 MB
    a = fampool.array(fam, region, "big", data)
    parts = [part.copy() for part in a.chunks()]
    assert len(parts) == 23 and np.array_equal(np.concatenate(parts), data)
    assert np.isclose(a.sum(), data.sum()) and a.min() == data.min() and a.max() == data.max()
    assert np.isclose(a.mean(), data.mean()) and np.isclose(np.sum(a), data.sum())
    assert np.max(a) == data.max() and np.isclose(np.mean(a), data.mean())
    with pytest.raises(NotImplementedError, match="whole array"):
        a.sum(axis=0)
    # Integers: the mean does not overflow; fill writes a chunk at a time.
    big = fampool.zeros(fam, region, "ints", 300_000, dtype=np.int64)
    big.fill(2 ** 62)
    assert big.mean() == 2.0 ** 62 and big.min() == 2 ** 62
    assert np.array_equal(big[-3:], [2 ** 62] * 3)


def test_long_runs_and_large_index_batches(fam, region, monkeypatch):
    # Runs of 16 KiB and more are one get/put each; shorter ones are gathered in batches.
    monkeypatch.setattr(fampool._array, "_RUN_BYTES", 64)
    monkeypatch.setattr(fampool._array, "_INDEX_BATCH", 100)
    reference = np.arange(50 * 40, dtype=np.int64).reshape(50, 40)
    a = fampool.array(fam, region, "m", reference)
    for key in [(slice(3, 30), slice(5, 30)), (slice(None), 7), (slice(None, None, 2), [1, 2, 3])]:
        assert np.array_equal(a[key], reference[key]), key
        a[key] = -reference[key]
        reference[key] = -reference[key]
        assert np.array_equal(a.read(), reference), key
    counts = fampool.zeros(fam, region, "c", 10, dtype=np.int32)
    counts.add_at(np.arange(1000) % 10, 1)  # ten batches of 100
    assert list(counts[:]) == [100] * 10


def test_zero_dimensional_arrays_and_leading_ones(fam, region):
    scalar = fampool.array(fam, region, "s", np.float64(2.5))
    assert scalar.shape == () and scalar[()] == 2.5
    scalar[...] = 4.0
    assert float(np.asarray(scalar)) == 4.0
    a = fampool.zeros(fam, region, "row", (3, 4), dtype=np.int16)
    a[1] = np.ones((1, 1, 4))  # leading 1s dropped, as numpy does
    assert a[1].tolist() == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="copy"):
        np.asarray(a, copy=False) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else \
            a.__array__(copy=False)


def test_a_view_of_an_item_without_a_header(fam, region):
    item = fam.allocate(region, "raw", 8 * 64)
    fam.put(item, np.arange(64, dtype=np.int64))
    view = fampool.FamArray(fam, item, np.int64, (8, 8))
    assert np.array_equal(view[:, 1], np.arange(1, 64, 8))
    tail = fampool.FamArray(fam, item, np.int64, offset=8 * 60)
    assert list(tail[:]) == [60, 61, 62, 63]
    with pytest.raises(ValueError, match="need"):
        fampool.FamArray(fam, item, np.int64, (9, 8))
    with pytest.raises(ValueError, match="non-negative multiple"):
        fampool.FamArray(fam, item, np.int64, offset=-8)
    with pytest.raises(ValueError, match="not a FamArray"):
        fampool.open_array(fam, region, "raw")


def test_a_later_process_opens_the_array_by_name(tmp_path):
    env = embedded_env(str(tmp_path))
    run_python(textwrap.dedent("""
        import numpy as np, fampool
        with fampool.Fam() as fam:
            region = fam.create_region("kept", 16 << 20, memory_type="persistent")
            fampool.array(fam, region, "m", np.arange(12, dtype=np.uint16).reshape(3, 4))
    """), env)
    done = run_python(textwrap.dedent("""
        import fampool
        with fampool.Fam() as fam:
            m = fampool.open_array(fam, "kept", "m")
            print(m.shape, m.dtype, m[1:, 2].tolist())
    """), env)
    assert done.stdout.strip() == "(3, 4) uint16 [6, 10]"


def test_arrays_on_a_cluster_striped_over_two_servers(cluster):
    done = run_python(textwrap.dedent("""
        import numpy as np, fampool
        with fampool.Fam() as fam:
            region = fam.create_region("striped", 32 << 20, interleave=True)
            reference = np.arange(256 * 512, dtype=np.float64).reshape(256, 512)
            a = fampool.array(fam, region, "g", reference)
            assert np.array_equal(a[:, 7], reference[:, 7])
            assert np.array_equal(a[100:200:3, 10:500], reference[100:200:3, 10:500])
            a[::2, :] = -1.0
            reference[::2, :] = -1.0
            assert np.array_equal(a.read(), reference)
            counts = fampool.zeros(fam, region, "n", 4096, dtype=np.int64)
            counts.add_at(np.arange(4096).repeat(3), 2)
            assert (counts.read() == 6).all()
            print(sorted(fam.stat(a.item)["memory_servers"]))
            fam.destroy_region(region)
    """), cluster.env)
    assert done.stdout.strip() == "[0, 1]"
