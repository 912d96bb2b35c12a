// Allocates items inside an extent (a region's space on one memory server).
//
// Free space is kept in two ordered tables of the metadata store: by offset (to coalesce on
// free) and by (size, offset) (best fit). Because the tables are LMDB, every change is part of
// the caller's transaction: a process killed mid-allocation leaves either the old or the new
// state, never a leak or a double allocation, and every process of the node sees one truth.
#ifndef FAMPOOL_META_EXTENT_ALLOCATOR_H_
#define FAMPOOL_META_EXTENT_ALLOCATOR_H_

#include <cstdint>

#include "meta/lmdb.h"

namespace fampool {

class ExtentAllocator {
  public:
    // Items start on this boundary and their space is rounded up to it.
    static constexpr uint64_t kAlignment = 64;
    static uint64_t Rounded(uint64_t nbytes) {
        return (nbytes + kAlignment - 1) & ~(kAlignment - 1);
    }

    // Makes [0, size) of a new extent free.
    static void AddExtent(Txn &txn, uint64_t extent, uint64_t size);
    // Forgets every free range of the extent.
    static void DropExtent(Txn &txn, uint64_t extent);
    // Best fit; returns the offset. Throws Failure(FAM_ERR_NO_SPACE) when nothing fits.
    static uint64_t Allocate(Txn &txn, uint64_t extent, uint64_t nbytes);
    // Returns [offset, offset + Rounded(nbytes)) to the free space, coalescing with neighbours.
    // Throws Failure(FAM_ERR_ALLOCATOR) if any of it is already free.
    static void Free(Txn &txn, uint64_t extent, uint64_t offset, uint64_t nbytes);
    // Extends the extent from old_size to new_size.
    static void Grow(Txn &txn, uint64_t extent, uint64_t old_size, uint64_t new_size);
    // Cuts the extent to new_size; false (and no change) when allocated space lies past it.
    static bool Shrink(Txn &txn, uint64_t extent, uint64_t old_size, uint64_t new_size);
    // Total free bytes and the largest free range.
    static void Usage(const Txn &txn, uint64_t extent, uint64_t *free_bytes, uint64_t *largest);
};

}  // namespace fampool

#endif  // FAMPOOL_META_EXTENT_ALLOCATOR_H_
