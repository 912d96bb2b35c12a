"""fampool.FamArray: an n-dimensional numpy-like array held in a FAM data item.

Indexing reads FAM and returns numpy arrays; assigning to an index writes FAM. Nothing is
cached: every read sees what other processes wrote before it (after their quiet or barrier).

    with fampool.Fam() as fam:
        region = fam.create_region("data", 1 << 30, memory_type="persistent")
        a = fampool.zeros(fam, region, "grid", (4096, 4096), dtype="float32")
        a[10, :] = 1.0                 # one put of a row
        block = a[100:200, 50:60]      # a (100, 10) numpy array, gathered
        a.add_at([3, 3, 7], [1, 1, 1]) # memory-side aggregation (integer arrays)
        total = a.sum()                # streamed in chunks, never all in DRAM

An array made by `array`, `empty` or `zeros` starts with a 256-byte header (shape and dtype),
so that `open_array` in a later process finds them. `FamArray(fam, item, dtype, shape,
offset)` views any item, a C program's included, without a header.
"""
import math
import operator
import struct

import numpy as np

_MAGIC = b"fampool.array\0\0\0"
_HEADER = 256  # a multiple of every element size, so element indexes start on a boundary
_MAX_DIMS = 16
_FORMAT = "<16sII16s"  # magic, version, ndim, dtype.str; then ndim uint64 extents
# Reads of runs at least this long are one get each; shorter ones are gathered by index.
_RUN_BYTES = 16 << 10
# Elements gathered or scattered by index per call (bounds the index array: 8 bytes each).
_INDEX_BATCH = 1 << 20
# Bytes read per chunk by the streaming reductions.
_CHUNK_BYTES = 64 << 20


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc" or dtype.itemsize not in (1, 2, 4, 8, 16):
        raise TypeError(f"fampool: a FamArray holds numbers (bool, int, uint, float, complex), "
                        f"not {dtype}")
    if not dtype.isnative:  # FAM's atomics and other programs read the host's byte order
        raise TypeError(f"fampool: a FamArray holds numbers in this host's byte order, not "
                        f"{dtype.str}")
    return dtype


def _shape_of(shape):
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(n) for n in shape)
    if len(shape) > _MAX_DIMS or any(n < 0 for n in shape):
        raise ValueError(f"fampool: bad shape {shape} (at most {_MAX_DIMS} non-negative "
                         f"extents)")
    return shape


def _ascending_by_one(vector):
    """True for a non-empty run of consecutive indexes."""
    if isinstance(vector, range):
        return len(vector) > 0 and (vector.step == 1 or len(vector) == 1)
    return len(vector) > 0 and bool(np.all(np.diff(vector) == 1))


class FamArray:
    """`shape` elements of `dtype`, C order, from byte `offset` of `item`."""

    def __init__(self, fam, item, dtype, shape=None, offset=0):
        self.fam = fam
        self.item = item
        self.dtype = _check_dtype(dtype)
        if offset < 0 or offset % self.dtype.itemsize:
            raise ValueError(f"fampool: offset {offset} of a FamArray over item \"{item.name}\" "
                             f"is not a non-negative multiple of the element size "
                             f"{self.dtype.itemsize}")
        if shape is None:
            shape = ((item.size - offset) // self.dtype.itemsize,)
        self.shape = _shape_of(shape)
        self.offset = offset
        if offset + self.nbytes > item.size:
            raise ValueError(f"fampool: {self.shape} elements of {self.dtype} from byte {offset} "
                             f"need {offset + self.nbytes} bytes; item \"{item.name}\" has "
                             f"{item.size}")
        self._first = offset // self.dtype.itemsize  # element index of element 0 in the item

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    name = property(lambda self: self.item.name)

    def __len__(self):
        if not self.shape:
            raise TypeError("fampool: len() of a 0-d FamArray")
        return self.shape[0]

    def __repr__(self):
        return f"FamArray(\"{self.item.name}\", shape={self.shape}, dtype={self.dtype})"

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("fampool: a FamArray is in FAM; numpy can only have a copy of it")
        data = self.read()
        return data if dtype is None else data.astype(dtype, copy=False)

    def read(self, out=None):
        """The whole array, read into a new numpy array, or into `out` (a C-contiguous array
        of the same size and dtype: no allocation, so repeated reads cost no page faults)."""
        if out is None:
            out = np.empty(self.shape, dtype=self.dtype)
        elif out.dtype != self.dtype or out.size != self.size:
            raise ValueError(f"fampool: read(out=) needs {self.size} elements of {self.dtype}, "
                             f"not {out.size} of {out.dtype}")
        if out.size:
            self.fam.get_into(self.item, out, self.offset)
        return out

    def write(self, values):
        """Writes `values` (broadcast to the array's shape) over the whole array."""
        self[...] = values

    def fill(self, value):
        """Writes `value` to every element, a chunk at a time."""
        self[...] = value

    # Indexing: each axis's key becomes a vector of indexes (or one index, dropping the axis).
    # Slices and ints become ranges (no index array is made for them unless needed).
    def _axes(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise IndexError("fampool: an index can only have one ellipsis")
        if any(k is Ellipsis for k in key):
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = self.ndim - (len(key) - 1)
            key = key[:at] + (slice(None),) * fill + key[at + 1:]
        if len(key) > self.ndim:
            raise IndexError(f"fampool: too many indices for an array of {self.ndim} "
                             f"dimension(s)")
        key = key + (slice(None),) * (self.ndim - len(key))
        axes, arrays, dropped = [], [], []
        for axis, (extent, k) in enumerate(zip(self.shape, key)):
            if isinstance(k, (bool, np.bool_)) or k is None:
                raise IndexError(f"fampool: {self!r} takes no {k!r} index (numpy's new axis)")
            if isinstance(k, slice):
                axes.append((range(*k.indices(extent)), True))
                continue
            if isinstance(k, (int, np.integer)):
                i = operator.index(k)
                if not -extent <= i < extent:
                    raise IndexError(f"fampool: index {i} is out of bounds for axis {axis} of "
                                     f"{self!r}")
                dropped.append(axis)
                axes.append((range(i % extent, i % extent + 1), False))
                continue
            vector = np.asarray(k)
            if vector.dtype == bool:
                if vector.shape != (extent,):
                    raise IndexError(f"fampool: a boolean index of axis {axis} of {self!r} "
                                     f"must have its {extent} entries")
                vector = np.flatnonzero(vector)
            elif vector.size == 0 and vector.ndim == 1:
                vector = vector.astype(np.int64)  # [] is float64 to numpy
            elif vector.ndim != 1 or vector.dtype.kind not in "iu":
                raise IndexError(f"fampool: indexes of {self!r} are ints, slices, ..., or one "
                                 f"1-d array of ints or bools, not {k!r}")
            vector = vector.astype(np.int64)
            if vector.size and (vector.max() >= extent or vector.min() < -extent):
                raise IndexError(f"fampool: an index in {k!r} is out of bounds for axis {axis} "
                                 f"of {self!r}")
            axes.append((vector % extent if extent else vector, True))
            arrays.append(axis)
        if len(arrays) > 1:
            raise IndexError(f"fampool: indexing {self!r} takes at most one index array")
        # numpy moves an index array's axis to the front when a slice parts it from an int
        # index; FamArray keeps axes in order, so it refuses those keys.
        advanced = sorted(arrays + dropped)
        if arrays and advanced[-1] - advanced[0] + 1 != len(advanced):
            raise IndexError(f"fampool: an int index and an index array parted by a slice "
                             f"(numpy would move the array's axis first): index {self!r} in "
                             f"two steps")
        return axes

    def _plan(self, key):
        """(result shape, starts of contiguous runs as element indexes, run length)."""
        axes = self._axes(key)
        shape = tuple(len(v) for v, kept in axes if kept)
        # The run: trailing whole axes, and the next axis if it is an ascending step-1 range.
        run, inner = 1, len(axes)
        while inner > 0:
            vector = axes[inner - 1][0]
            extent = self.shape[inner - 1]
            whole = isinstance(vector, range) and vector == range(extent)
            if whole:
                run *= extent
                inner -= 1
                continue
            if _ascending_by_one(vector):
                run *= len(vector)
                inner -= 1
                base = [v for v, _ in axes[:inner]] + [vector[:1]]
                return shape, self._starts(base, inner + 1), run
            break
        base = [v for v, _ in axes[:inner]]
        return shape, self._starts(base, inner), run

    def _starts(self, vectors, axes):
        """Element indexes (in the item) of the first element of each run: the outer product
        of the index vectors of the first `axes` axes."""
        strides = [math.prod(self.shape[d + 1:]) for d in range(axes)]
        starts = np.array([self._first], dtype=np.uint64)
        for vector, stride in zip(vectors, strides):
            if isinstance(vector, range):
                vector = np.arange(vector.start, vector.stop, vector.step, dtype=np.int64)
            step = vector.astype(np.uint64) * np.uint64(stride)
            starts = (starts[:, None] + step[None, :]).ravel()
        return starts

    def _transfer(self, flat, starts, run, reading):
        """Moves `flat` (a contiguous 1-d numpy array of len(starts) * run elements) from or to
        the runs."""
        size = self.dtype.itemsize
        if len(starts) == 1 or run * size >= _RUN_BYTES:
            for k, start in enumerate(starts.tolist()):
                part = flat[k * run:(k + 1) * run]
                if reading:
                    self.fam.get_into(self.item, part, start * size)
                else:
                    self.fam.put(self.item, part, start * size)
            return
        per = max(1, _INDEX_BATCH // run)  # runs per call
        within = np.arange(run, dtype=np.uint64)
        for first in range(0, len(starts), per):
            some = starts[first:first + per]
            index = (some[:, None] + within[None, :]).ravel()
            part = flat[first * run:first * run + len(index)]
            if reading:
                self.fam.gather_into(self.item, part, index, size)
            else:
                self.fam.scatter(self.item, part, index, size)

    def __getitem__(self, key):
        shape, starts, run = self._plan(key)
        out = np.empty(len(starts) * run, dtype=self.dtype)
        if out.size:
            self._transfer(out, starts, run, reading=True)
        out = out.reshape(shape)
        return out[()] if not shape else out

    def __setitem__(self, key, values):
        shape, starts, run = self._plan(key)
        if len(starts) * run == 0:
            return
        data = values
        if not (isinstance(values, np.ndarray) and values.shape == shape and
                values.dtype == self.dtype and values.flags.c_contiguous):
            data = np.asarray(values, dtype=self.dtype)
            while data.ndim > len(shape) and data.shape[0] == 1:  # as numpy: leading 1s go
                data = data[0]
            if data.size == 1:
                return self._write_constant(data.reshape(-1)[0], starts, run)
            data = np.ascontiguousarray(np.broadcast_to(data, shape))
        self._transfer(data.reshape(-1), starts, run, reading=False)

    def _write_constant(self, value, starts, run):
        """Writes `value` to every element of the runs from one buffer of at most a chunk (a
        fill of an array larger than DRAM needs no more)."""
        total = len(starts) * run
        constant = np.full(min(total, max(1, _CHUNK_BYTES // self.itemsize)), value, self.dtype)
        if run >= len(constant):
            size = self.itemsize
            for start in starts.tolist():
                for done in range(0, run, len(constant)):
                    part = constant[:min(len(constant), run - done)]
                    self.fam.put(self.item, part, (start + done) * size)
            return
        per = len(constant) // run
        for first in range(0, len(starts), per):
            some = starts[first:first + per]
            self._transfer(constant[:len(some) * run], some, run, reading=False)

    # Element indexes for the flat (C-order) positions `indexes` of the array.
    def _flat(self, indexes):
        index = np.asarray(indexes)
        if index.size and index.dtype.kind not in "iu":
            raise IndexError(f"fampool: flat indexes of {self!r} are integers, not "
                             f"{index.dtype}")
        index = index.astype(np.int64).reshape(-1)
        if index.size and (index.max() >= self.size or index.min() < -self.size):
            raise IndexError(f"fampool: a flat index is out of bounds for {self!r} "
                             f"({self.size} elements)")
        return (index % max(self.size, 1)).astype(np.uint64) + np.uint64(self._first)

    def take(self, indexes):
        """The elements at flat positions `indexes` (one gather), shaped as `indexes`."""
        values = self.fam.gather(self.item, self._flat(indexes), dtype=self.dtype)
        return values.reshape(np.shape(indexes))

    def put(self, indexes, values):
        """Writes `values` at flat positions `indexes` (one scatter)."""
        index = self._flat(indexes)
        data = np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=self.dtype),
                                                    index.shape))
        self.fam.scatter(self.item, data, index, self.dtype.itemsize)

    def add_at(self, indexes, values):
        """Adds `values` to the elements at flat positions `indexes`, memory-side and
        atomically per element (np.add.at in FAM; integer arrays of 4- or 8-byte elements)."""
        if self.dtype.kind not in "iu" or self.dtype.itemsize not in (4, 8):
            raise TypeError(f"fampool: add_at adds 4- or 8-byte integers, not {self.dtype}")
        index = self._flat(indexes)
        values = np.asarray(values)
        if not np.can_cast(values.dtype, self.dtype, "same_kind"):
            raise TypeError(f"fampool: add_at adds integers to {self!r}, not {values.dtype}")
        data = np.ascontiguousarray(np.broadcast_to(values.astype(self.dtype), index.shape))
        # In batches: the memory servers' queues hold a bounded number of elements.
        for first in range(0, len(index), _INDEX_BATCH):
            self.fam.queue_add(self.item, index[first:first + _INDEX_BATCH],
                               data[first:first + _INDEX_BATCH])
            self.fam.aggregate_flush(self.item)

    def fetch_add(self, position, value):
        """Adds `value` to the element at flat `position` atomically; its value before."""
        (element,) = self._flat([position]).tolist()
        return self.fam.fetch_add(self.item, element * self.itemsize, value,
                                  dtype=self.dtype.name)

    # Streaming: reductions over arrays larger than DRAM, a chunk at a time.
    def chunks(self, nbytes=None):
        """Yields the array flattened, as consecutive 1-d numpy arrays of about `nbytes`
        (default 64 MiB; one buffer, refilled for each: copy a chunk to keep it)."""
        per = max(1, (nbytes or _CHUNK_BYTES) // self.dtype.itemsize)
        buffer = np.empty(min(per, self.size), dtype=self.dtype)
        for first in range(0, self.size, per):
            part = buffer[:min(per, self.size - first)]
            self.fam.get_into(self.item, part, self.offset + first * self.dtype.itemsize)
            yield part

    # The reductions take numpy's arguments (np.sum(a) passes them) over the whole array only.
    def _reduce(self, ufunc, empty, axis, dtype, out, keepdims, wide=None):
        if axis is not None or out is not None or keepdims:
            raise NotImplementedError(f"fampool: {ufunc.__name__}.reduce of {self!r} is over "
                                      f"the whole array only (no axis, out or keepdims)")
        if self.size == 0:
            if empty is None:
                raise ValueError(f"fampool: {ufunc.__name__} of the empty {self!r}")
            return empty
        dtype = dtype or wide
        return ufunc.reduce([ufunc.reduce(part, dtype=dtype) for part in self.chunks()],
                            dtype=dtype)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        total = np.zeros(1, self.dtype).sum(dtype=dtype)  # numpy's type of the sum
        return self._reduce(np.add, total, axis, total.dtype, out, keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return self._reduce(np.minimum, None, axis, None, out, keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return self._reduce(np.maximum, None, axis, None, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        if not self.size:
            return np.nan
        wide = np.float64 if self.dtype.kind in "biu" else None  # integers overflow
        return self._reduce(np.add, None, axis, dtype, out, keepdims, wide) / self.size

    def deallocate(self):
        """Frees the item holding the array."""
        self.fam.deallocate(self.item)


def _region(fam, region):
    return fam.lookup_region(region) if isinstance(region, str) else region


def empty(fam, region, name, shape, dtype="float64", perm=0o600):
    """A new FamArray (data item `name` of `region`, a Region or its name) of `shape` and
    `dtype`, uninitialised (what the heap held: zeros for a new heap)."""
    dtype, shape = _check_dtype(dtype), _shape_of(shape)
    nbytes = _HEADER + math.prod(shape) * dtype.itemsize
    item = fam.allocate(_region(fam, region), name, nbytes, perm)
    header = struct.pack(_FORMAT, _MAGIC, 1, len(shape), dtype.str.encode())
    header += struct.pack(f"<{len(shape)}Q", *shape)
    fam.put(item, np.frombuffer(header.ljust(_HEADER, b"\0"), dtype=np.uint8))
    return FamArray(fam, item, dtype, shape, _HEADER)


def zeros(fam, region, name, shape, dtype="float64", perm=0o600):
    """As `empty`, filled with zeros."""
    a = empty(fam, region, name, shape, dtype, perm)
    a.fill(0)
    return a


def array(fam, region, name, data, dtype=None, perm=0o600):
    """A new FamArray holding a copy of `data` (any array-like)."""
    data = np.asarray(data, dtype=dtype, order="C")  # keeps a 0-d array 0-d
    a = empty(fam, region, name, data.shape, data.dtype, perm)
    if data.size:
        fam.put(a.item, data, a.offset)
    return a


def open_array(fam, region, name):
    """The FamArray `name` of `region` (a Region or its name) made by `array`, `empty` or
    `zeros`, in this process or an earlier one."""
    region_name = region if isinstance(region, str) else region.name
    item = fam.lookup(name, region_name)
    head = bytes(fam.get(item, 0, min(_HEADER, item.size)))
    fixed = struct.calcsize(_FORMAT)
    if len(head) < fixed or head[:16] != _MAGIC:
        raise ValueError(f"fampool: item \"{name}\" of region \"{region_name}\" is not a "
                         f"FamArray (no header; view it with FamArray(fam, item, dtype))")
    _, version, ndim, dtype = struct.unpack_from(_FORMAT, head)
    if version != 1 or ndim > _MAX_DIMS:
        raise ValueError(f"fampool: item \"{name}\" has a FamArray header of version {version} "
                         f"and {ndim} dimensions, which this fampool does not read")
    shape = struct.unpack_from(f"<{ndim}Q", head, fixed)
    return FamArray(fam, item, np.dtype(dtype.rstrip(b"\0").decode()), shape, _HEADER)
