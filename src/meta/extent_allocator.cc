#include "meta/extent_allocator.h"

#include <string>

#include "common/error.h"

namespace fampool {
namespace {

std::string OffsetKey(uint64_t extent, uint64_t offset) {
    std::string key;
    key.reserve(16);
    AppendU64(key, extent);
    AppendU64(key, offset);
    return key;
}

std::string SizeKey(uint64_t extent, uint64_t size, uint64_t offset) {
    std::string key;
    key.reserve(24);
    AppendU64(key, extent);
    AppendU64(key, size);
    AppendU64(key, offset);
    return key;
}

std::string Encode(uint64_t value) {
    std::string bytes;
    AppendU64(bytes, value);
    return bytes;
}

void Insert(Txn &txn, uint64_t extent, uint64_t offset, uint64_t size) {
    txn.Put(Table::kFreeByOffset, OffsetKey(extent, offset), Encode(size));
    txn.Put(Table::kFreeBySize, SizeKey(extent, size, offset), {});
}

void Remove(Txn &txn, uint64_t extent, uint64_t offset, uint64_t size) {
    txn.Del(Table::kFreeByOffset, OffsetKey(extent, offset));
    txn.Del(Table::kFreeBySize, SizeKey(extent, size, offset));
}

bool SameExtent(std::string_view key, uint64_t extent) {
    return key.size() >= 8 && ReadU64(key) == extent;
}

// The last free range of the extent (the one with the highest offset), if any.
bool LastFree(const Txn &txn, uint64_t extent, uint64_t *offset, uint64_t *size) {
    Cursor cursor(txn, Table::kFreeByOffset);
    bool found = cursor.Seek(OffsetKey(extent + 1, 0)) ? cursor.Prev() : cursor.Last();
    if (!found || !SameExtent(cursor.key(), extent)) return false;
    *offset = ReadU64(cursor.key(), 8);
    *size = ReadU64(cursor.value());
    return true;
}

}  // namespace

void ExtentAllocator::AddExtent(Txn &txn, uint64_t extent, uint64_t size) {
    if (size > 0) Insert(txn, extent, 0, size);
}

void ExtentAllocator::DropExtent(Txn &txn, uint64_t extent) {
    for (Table table : {Table::kFreeByOffset, Table::kFreeBySize}) {
        Cursor cursor(txn, table);
        for (bool ok = cursor.Seek(OffsetKey(extent, 0)); ok && SameExtent(cursor.key(), extent);) {
            cursor.Delete();
            ok = cursor.Seek(OffsetKey(extent, 0));
        }
    }
}

uint64_t ExtentAllocator::Allocate(Txn &txn, uint64_t extent, uint64_t nbytes) {
    uint64_t need = Rounded(nbytes);
    if (need < nbytes) Fail(openfam::FAM_ERR_NO_SPACE, "{} bytes can never fit", nbytes);
    uint64_t offset, size;
    {
        Cursor cursor(txn, Table::kFreeBySize);
        if (!cursor.Seek(SizeKey(extent, need, 0)) || !SameExtent(cursor.key(), extent)) {
            Fail(openfam::FAM_ERR_NO_SPACE, "no free range of {} bytes", need);
        }
        size = ReadU64(cursor.key(), 8);
        offset = ReadU64(cursor.key(), 16);
    }
    Remove(txn, extent, offset, size);
    if (size > need) Insert(txn, extent, offset + need, size - need);
    return offset;
}

void ExtentAllocator::Free(Txn &txn, uint64_t extent, uint64_t offset, uint64_t nbytes) {
    uint64_t start = offset, size = Rounded(nbytes);
    uint64_t next_offset = 0, next_size = 0, prev_offset = 0, prev_size = 0;
    bool has_next = false, has_prev = false;
    {
        Cursor cursor(txn, Table::kFreeByOffset);
        bool at = cursor.Seek(OffsetKey(extent, offset));
        if (at && SameExtent(cursor.key(), extent)) {
            next_offset = ReadU64(cursor.key(), 8);
            next_size = ReadU64(cursor.value());
            has_next = true;
        }
        if (at ? cursor.Prev() : cursor.Last()) {
            if (SameExtent(cursor.key(), extent)) {
                prev_offset = ReadU64(cursor.key(), 8);
                prev_size = ReadU64(cursor.value());
                has_prev = true;
            }
        }
    }
    if ((has_next && next_offset < offset + size) ||
        (has_prev && prev_offset + prev_size > offset)) {
        Fail(openfam::FAM_ERR_ALLOCATOR, "range [{}, {}) of extent {} is already free", offset,
             offset + size, extent);
    }
    if (has_next && next_offset == offset + size) {
        Remove(txn, extent, next_offset, next_size);
        size += next_size;
    }
    if (has_prev && prev_offset + prev_size == offset) {
        Remove(txn, extent, prev_offset, prev_size);
        start = prev_offset;
        size += prev_size;
    }
    Insert(txn, extent, start, size);
}

void ExtentAllocator::Grow(Txn &txn, uint64_t extent, uint64_t old_size, uint64_t new_size) {
    if (new_size <= old_size) return;
    uint64_t offset, size;
    if (LastFree(txn, extent, &offset, &size) && offset + size == old_size) {
        Remove(txn, extent, offset, size);
        Insert(txn, extent, offset, new_size - offset);
    } else {
        Insert(txn, extent, old_size, new_size - old_size);
    }
}

bool ExtentAllocator::Shrink(Txn &txn, uint64_t extent, uint64_t old_size, uint64_t new_size) {
    if (new_size >= old_size) return true;
    uint64_t offset, size;
    if (!LastFree(txn, extent, &offset, &size) || offset + size != old_size || offset > new_size) {
        return false;
    }
    Remove(txn, extent, offset, size);
    if (offset < new_size) Insert(txn, extent, offset, new_size - offset);
    return true;
}

void ExtentAllocator::Usage(const Txn &txn, uint64_t extent, uint64_t *free_bytes,
                            uint64_t *largest) {
    *free_bytes = 0;
    *largest = 0;
    Cursor cursor(txn, Table::kFreeByOffset);
    for (bool ok = cursor.Seek(OffsetKey(extent, 0)); ok && SameExtent(cursor.key(), extent);
         ok = cursor.Next()) {
        uint64_t size = ReadU64(cursor.value());
        *free_bytes += size;
        if (size > *largest) *largest = size;
    }
}

}  // namespace fampool
