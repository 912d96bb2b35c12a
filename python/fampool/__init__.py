"""fampool for Python: the OpenFAM API over fabric-attached memory, with numpy.

    import numpy as np
    import fampool

    with fampool.Fam() as fam:                        # fam_initialize / fam_finalize
        region = fam.create_region("data", 1 << 30)   # or fam.lookup_region("data")
        item = fam.allocate(region, "x", 8 << 20)
        fam.put(item, np.arange(1 << 20, dtype=np.float64))
        x = fam.get(item, dtype=np.float64)           # a new array, read in place
        fam.get_into(item, x)                         # or into an array of yours

Data moves through the buffer protocol (numpy arrays, bytearray, memoryview) without a copy.
Errors are FamError, carrying the Fam_Error code (`error`, `name`) and the message. The
embedded model is the default; a cluster is used when FAMPOOL_CONFIG names its file, as for
C and C++ programs (docs/python.md).
"""

import threading

import numpy as np

from ._fampool import Fam as _Fam, Item, Region

__all__ = ["Fam", "FamError", "Item", "Region", "ERRORS", "FamArray", "array", "empty", "zeros",
           "open_array"]

# Fam_Error, in its order (fam/fam_exception.h).
ERRORS = [
    "FAM_NO_ERROR", "FAM_ERR_UNKNOWN", "FAM_ERR_NOPERM", "FAM_ERR_TIMEOUT", "FAM_ERR_INVALID",
    "FAM_ERR_LIBFABRIC", "FAM_ERR_SHM", "FAM_ERR_NOT_CREATED", "FAM_ERR_NOTFOUND",
    "FAM_ERR_ALREADYEXIST", "FAM_ERR_ALLOCATOR", "FAM_ERR_RPC", "FAM_ERR_PMI",
    "FAM_ERR_OUTOFRANGE", "FAM_ERR_NO_SPACE", "FAM_ERR_NULLPTR", "FAM_ERR_UNIMPL",
    "FAM_ERR_RESOURCE", "FAM_ERR_INVALIDOP", "FAM_ERR_RPC_CLIENT_NOTFOUND",
    "FAM_ERR_MEMSERV_LIST_EMPTY", "FAM_ERR_METADATA", "FAM_ERR_MEMORY", "FAM_ERR_NAME_TOO_LONG",
    "FAM_ERR_ATL_QUEUE_FULL", "FAM_ERR_ATL_QUEUE_INSERT", "FAM_ERR_ATL_NOT_ENABLED",
    "FAM_ERR_ATL", "FAM_BACKUP_NOT_CREATED", "FAM_BACKUP_NOTFOUND", "FAM_BACKUP_INFO_NOTFOUND",
    "FAM_ERR_NOT_PWR_TWO",
]


class FamError(Exception):
    """A failed fampool call: `error` is the Fam_Error code, `name` its name ("FAM_ERR_NOPERM"),
    `message` what fampool said (the call, the object, the cause)."""

    def __init__(self, error, message):
        super().__init__(message)
        self.error = error
        self.name = ERRORS[error] if 0 <= error < len(ERRORS) else f"Fam_Error({error})"
        self.message = message

    def __str__(self):
        return f"{self.name}: {self.message}"


class Fam(_Fam):
    """An openfam::fam. As a context manager it is initialized on entry (group "default",
    `options`: Fam_Options fields by name, e.g. {"runtime": "NONE"}) and finalized on exit."""

    def __init__(self, group="default", options=None):
        super().__init__()
        self._group = group
        self._options = dict(options or {})
        # The `out` arrays of queued gathers, per FAM item (its global descriptor), until the
        # item is flushed.
        self._queued = {}
        self._queued_lock = threading.Lock()

    def __enter__(self):
        self.initialize(self._group, self._options)
        return self

    def __exit__(self, *exc):
        self.finalize(self._group)
        return False

    def get(self, item, offset=0, count=None, dtype="uint8"):
        """A new numpy array of `count` elements of `dtype` read from `item` at byte `offset`
        (count None: to the end of the item)."""
        dtype = np.dtype(dtype)
        if count is None:
            count = (item.size - offset) // dtype.itemsize
        out = np.empty(count, dtype=dtype)
        self.get_into(item, out, offset)
        return out

    def gather(self, item, indexes, dtype="uint8"):
        """The elements of `dtype` at `indexes` (element indexes, any integer array) of `item`."""
        dtype = np.dtype(dtype)
        index = np.ascontiguousarray(indexes, dtype=np.uint64)
        out = np.empty(len(index), dtype=dtype)
        self.gather_into(item, out, index, dtype.itemsize)
        return out

    def scatter_array(self, item, values, indexes):
        """Writes `values` (a numpy array) to the elements at `indexes` of `item`."""
        values = np.ascontiguousarray(values)
        index = np.ascontiguousarray(indexes, dtype=np.uint64)
        if len(values) != len(index):
            raise ValueError(f"fampool: scatter_array on item \"{item.name}\" needs as many "
                             f"values as indexes ({len(values)} and {len(index)})")
        self.scatter(item, values, index, values.dtype.itemsize)

    # Memory-side aggregation (docs/semantics.md, "Memory-side operations"): operations on indexed
    # elements are queued and applied by the memory servers in batches; aggregate_flush(item)
    # returns when all queued for the item are applied (and queue_gather's results are in
    # `out`). The library copies what an add or scatter writes when it is queued; a gather's
    # `out` is written at the flush, so it is kept alive here until then, per FAM item.
    def _queue(self, item, op, data, indexes):
        index = np.ascontiguousarray(indexes, dtype=np.uint64)
        if len(data) != len(index):
            raise ValueError(f"fampool: queue_{op} on item \"{item.name}\" needs as many values "
                             f"as indexes ({len(data)} and {len(index)})")
        if op == "add" and (data.dtype.kind not in "iu" or data.dtype.itemsize not in (4, 8)):
            raise TypeError(f"fampool: queue_add on item \"{item.name}\" adds 4- or 8-byte "
                            f"integers, not {data.dtype}")
        with self._queued_lock:
            self.queue_operation(item, op, data, index, data.dtype.itemsize)
            if op == "gather":
                self._queued.setdefault(item.global_descriptor, []).append(data)

    def queue_add(self, item, indexes, values):
        """Queues adding `values` (an array of 4- or 8-byte integers, the item's element type)
        to the elements at `indexes`, atomically per element; duplicates add up."""
        self._queue(item, "add", np.ascontiguousarray(values), indexes)

    def queue_scatter(self, item, indexes, values):
        """Queues writing `values` (an array of the item's element type) at `indexes`."""
        self._queue(item, "scatter", np.ascontiguousarray(values), indexes)

    def queue_gather(self, item, indexes, out):
        """Queues reading the elements at `indexes` into `out` (a C-contiguous numpy array,
        filled when aggregate_flush(item) returns)."""
        if not (isinstance(out, np.ndarray) and out.flags.c_contiguous and out.flags.writeable):
            raise ValueError(f"fampool: queue_gather on item \"{item.name}\" needs a writable "
                             f"C-contiguous numpy array")
        self._queue(item, "gather", out, indexes)

    def aggregate_flush(self, item):
        """Applies what is queued for `item`; returns when the memory servers have."""
        with self._queued_lock:
            try:
                super().aggregate_flush(item)
            finally:
                self._queued.pop(item.global_descriptor, None)

    def finalize(self, group="default"):
        """fam_finalize, which ships what is still queued first."""
        with self._queued_lock:
            try:
                super().finalize(group)
            finally:
                self._queued.clear()


from ._array import FamArray, array, empty, open_array, zeros  # noqa: E402
