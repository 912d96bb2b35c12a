#include "memserver/heap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "memserver/heap_guard.h"

namespace fampool {
namespace {

// Zeroing by memset is cheaper than a hole punch below this size.
constexpr uint64_t kPunchThreshold = 256 * 1024;
constexpr uint64_t kPage = 4096;

class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

[[noreturn]] void FailErrno(const char *what, const std::string &path) {
    int err = errno;
    Fail(err == ENOSPC || err == EFBIG ? openfam::FAM_ERR_NO_SPACE : openfam::FAM_ERR_RESOURCE,
         "heap {}: {} failed: {}", path, what, std::strerror(err));
}

}  // namespace

HeapMapping::HeapMapping(char *base, uint64_t length) : base_(base), length_(length) {
    if (base_) RegisterHeapRange(base_, length_);
}

HeapMapping::~HeapMapping() {
    if (base_) {
        UnregisterHeapRange(base_);
        munmap(base_, length_);
    }
}

namespace heap {

namespace {
// MADV_POPULATE_WRITE's step: a step is where a writer may wait for the pages being made.
constexpr uint64_t kPopulateStep = 16 << 20;
}  // namespace

void Create(const std::string &path, uint64_t size, const FileAccess &access) {
    Fd fd(open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (fd.get() < 0) FailErrno("create", path);
    try {
        access.Apply(fd.get(), path);
    } catch (...) {
        unlink(path.c_str());
        throw;
    }
    if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
        int err = errno;
        unlink(path.c_str());
        errno = err;
        FailErrno("ftruncate", path);
    }
}

std::vector<std::pair<uint64_t, uint64_t>> DataRanges(const std::string &path, uint64_t begin,
                                                      uint64_t end) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    if (begin >= end) return ranges;
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return {{begin, end}};
    for (uint64_t at = begin; at < end;) {
        off_t data = lseek(fd.get(), static_cast<off_t>(at), SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO) break;  // nothing but holes from here to the file's end
            return {{begin, end}};      // the file system cannot tell: all of it
        }
        if (static_cast<uint64_t>(data) >= end) break;
        off_t hole = lseek(fd.get(), data, SEEK_HOLE);
        uint64_t last = hole < 0 ? end : std::min<uint64_t>(end, static_cast<uint64_t>(hole));
        ranges.emplace_back(static_cast<uint64_t>(data), last);
        at = last;
    }
    return ranges;
}

void PopulateForWrite(char *at, uint64_t length) {
#ifndef MADV_POPULATE_WRITE
    constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t first = reinterpret_cast<uint64_t>(at) / page * page;
    uint64_t end = reinterpret_cast<uint64_t>(at) + length;
    for (uint64_t p = first; p < end; p += kPopulateStep) {
        if (madvise(reinterpret_cast<void *>(p), std::min(kPopulateStep, end - p),
                    MADV_POPULATE_WRITE)) {
            return;  // EINVAL: an older kernel; ENOMEM, EFAULT: leave the pages to the writes
        }
    }
}

void PopulateForWrite(const std::vector<std::pair<char *, uint64_t>> &ranges, unsigned threads) {
    std::vector<std::pair<char *, uint64_t>> steps;
    for (const auto &[at, length] : ranges) {
        for (uint64_t done = 0; done < length; done += kPopulateStep) {
            steps.emplace_back(at + done, std::min(kPopulateStep, length - done));
        }
    }
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < steps.size();) {
            PopulateForWrite(steps[i].first, steps[i].second);
        }
    };
    std::vector<std::thread> helpers;
    for (unsigned k = 1; k < threads && k < steps.size(); ++k) helpers.emplace_back(work);
    work();
    for (std::thread &helper : helpers) helper.join();
}

void Extend(const std::string &path, uint64_t size) {
    Fd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) FailErrno("open", path);
    struct stat st;
    if (fstat(fd.get(), &st) != 0) FailErrno("fstat", path);
    if (static_cast<uint64_t>(st.st_size) >= size) return;
    if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) FailErrno("ftruncate", path);
}

void Zero(const std::string &path, HeapMapping *mapping, uint64_t offset, uint64_t length) {
    if (length < kPunchThreshold) {
        std::memset(mapping->base() + offset, 0, length);
        return;
    }
    uint64_t first = (offset + kPage - 1) & ~(kPage - 1);
    uint64_t last = (offset + length) & ~(kPage - 1);
    Fd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0 ||
        fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(first),
                  static_cast<off_t>(last - first)) != 0) {
        std::memset(mapping->base() + offset, 0, length);  // no hole punching: zero by hand
        return;
    }
    std::memset(mapping->base() + offset, 0, first - offset);
    std::memset(mapping->base() + last, 0, offset + length - last);
}

void Remove(const std::string &path) { unlink(path.c_str()); }

std::shared_ptr<HeapMapping> Map(const std::string &path) {
    Fd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) FailErrno("open", path);
    struct stat st;
    if (fstat(fd.get(), &st) != 0) FailErrno("fstat", path);
    uint64_t length = static_cast<uint64_t>(st.st_size);
    void *base =
        mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd.get(), 0);
    if (base == MAP_FAILED) FailErrno("mmap", path);
    return std::make_shared<HeapMapping>(static_cast<char *>(base), length);
}

}  // namespace heap

std::shared_ptr<HeapMapping> HeapCache::Get(const std::string &path, uint64_t min_length) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = mappings_.find(path);
    if (found != mappings_.end() && found->second->length() >= min_length) return found->second;
    // Mapped before it enters the cache: a heap that cannot be mapped, or is too short, leaves
    // no empty entry behind (one did, and Revoke dereferenced it: tests/fuzz found it).
    auto mapping = heap::Map(path);
    if (mapping->length() < min_length) {
        Fail(openfam::FAM_ERR_RESOURCE, "heap {} is {} bytes, expected at least {}", path,
             mapping->length(), min_length);
    }
    mappings_[path] = mapping;
    return mapping;
}

void HeapCache::Revoke(const std::string &path) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = mappings_.find(path);
    if (it == mappings_.end()) return;
    it->second->Revoke();
    mappings_.erase(it);
}

}  // namespace fampool
