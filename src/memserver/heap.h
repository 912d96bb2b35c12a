// A heap: the file behind an extent, under /dev/shm for volatile regions and under the data
// directory for persistent ones. Files are sparse: a 64 TiB region costs nothing until written.
#ifndef FAMPOOL_MEMSERVER_HEAP_H_
#define FAMPOOL_MEMSERVER_HEAP_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/file_access.h"

namespace fampool {

// One shared mapping of a heap file, [base, base + length). Kept alive by every descriptor that
// uses it, so a remap after growth never pulls memory from under a running copy.
class HeapMapping {
  public:
    // Registered with the server's truncation guard (memserver/heap_guard.h) while it lives.
    HeapMapping(char *base, uint64_t length);
    ~HeapMapping();
    HeapMapping(const HeapMapping &) = delete;
    HeapMapping &operator=(const HeapMapping &) = delete;

    char *base() const { return base_; }
    uint64_t length() const { return length_; }
    // Set when this process destroys the heap's region: descriptors still holding the mapping
    // then fail instead of touching memory that no longer belongs to the region.
    bool revoked() const { return revoked_.load(std::memory_order_relaxed); }
    void Revoke() { revoked_.store(true, std::memory_order_relaxed); }

  private:
    char *base_;
    uint64_t length_;
    std::atomic<bool> revoked_{false};
};

namespace heap {

// Creates the file with the given size (sparse), failing if it exists; its mode and group are
// `access`'s (private to this user unless a sharing group is set).
void Create(const std::string &path, uint64_t size, const FileAccess &access);
// Makes the file at least `size` bytes long.
void Extend(const std::string &path, uint64_t size);
// Releases the memory of [offset, offset + length) and makes it read as zeros.
void Zero(const std::string &path, HeapMapping *mapping, uint64_t offset, uint64_t length);
void Remove(const std::string &path);
// The parts of [begin, end) of the file that hold data, in order, as [first, last) pairs: the
// rest are holes (never written, or zeroed), which read as zeros. The whole range when the
// file system cannot tell (no SEEK_DATA) or the file cannot be opened.
std::vector<std::pair<uint64_t, uint64_t>> DataRanges(const std::string &path, uint64_t begin,
                                                      uint64_t end);
// Makes the pages of [at, at + length) of a mapping present and writable (MADV_POPULATE_WRITE,
// 16 MiB at a time), so that writes into them take no page fault; their bytes stay as they are.
// Does nothing where the kernel cannot (before Linux 5.14) or memory is short.
void PopulateForWrite(char *at, uint64_t length);
// The same for several ranges, on `threads` threads (this one among them) taking their steps of
// 16 MiB in order: the pages are made from the first onwards `threads` times as fast as one
// thread makes them (a single thread, 1.9-2.8 GB/s here, was slower than a put's bytes over
// tcp, which then caught up with it and faulted pages in one at a time).
void PopulateForWrite(const std::vector<std::pair<char *, uint64_t>> &ranges, unsigned threads);
// Maps the whole file (shared, no swap reservation).
std::shared_ptr<HeapMapping> Map(const std::string &path);

}  // namespace heap

// This process's mappings of heap files, one per file, remapped when a heap has grown.
class HeapCache {
  public:
    // A mapping of `path` covering at least [0, min_length).
    std::shared_ptr<HeapMapping> Get(const std::string &path, uint64_t min_length);
    // Drops the mapping of `path` and revokes it for everyone still holding it.
    void Revoke(const std::string &path);

  private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<HeapMapping>> mappings_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_HEAP_H_
