// A raw libfabric baseline: the fastest simple way to move bytes with fi_read / fi_write (and
// to add with fi_atomic) over a provider, with nothing of fampool in between. A RawTarget opens
// an RDM endpoint, registers a buffer and drives its endpoint from a thread that polls without
// sleeping; a RawClient posts one operation at a time and polls its completion queue until the
// operation completes, or keeps a window of operations in flight. The cluster benchmarks
// compare fampool's data path against these loops.
//
// Semantics::kDefault is what libfabric does unasked: a write completes once its bytes left
// (tcp, shm), and shm serves a read by copying straight from the target process
// (process_vm_readv) without checking the key. Semantics::kDelivery passes FI_DELIVERY_COMPLETE
// with every operation: a write completes once its bytes are in the target's memory (what
// fampool's writes need), and shm serves a read through the target, which checks the key (2x
// faster than its direct copy at 4 KiB and less, 1.6x slower from 32 KiB). The benchmarks
// compare fampool against the faster of the two for each read, and against kDelivery for
// writes.
//
// Header-only so that any benchmark can include it; links with libfabric only.
#ifndef FAMPOOL_BENCH_FABRIC_RAW_H_
#define FAMPOOL_BENCH_FABRIC_RAW_H_

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fabric_raw {

struct Result {
    double ns_per_op = 0;
    double gb_per_s = 0;  // 1e9 bytes per second
};

// Where a client finds the target's buffer.
struct Target {
    std::string address;  // fi_getname bytes
    uint64_t key = 0;
    uint64_t base = 0;  // remote address of the buffer's first byte
};

enum class Semantics { kDefault, kDelivery };

inline void Check(int ret, const char *call) {
    if (ret < 0) {
        throw std::runtime_error(std::string(call) + ": " + fi_strerror(-ret));
    }
}

// A fabric, domain, address vector and RDM endpoint with a polled completion queue.
class RawEndpoint {
  public:
    RawEndpoint(const std::string &provider, const std::string &host, const std::string &port,
                bool target, Semantics semantics = Semantics::kDefault) {
        fi_info *hints = fi_allocinfo();
        hints->ep_attr->type = FI_EP_RDM;
        hints->caps =
            FI_RMA | FI_ATOMIC | (target ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_READ | FI_WRITE);
        hints->domain_attr->mr_mode =
            FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL | FI_MR_ENDPOINT;
        hints->domain_attr->threading = FI_THREAD_SAFE;
        if (!target && semantics == Semantics::kDelivery) flags_ = FI_DELIVERY_COMPLETE;
        hints->fabric_attr->prov_name = strdup(provider.c_str());
        // A client of a string-named provider (shm) lets it pick a unique name.
        bool named = provider == "shm";
        const char *node = target || !named ? host.c_str() : nullptr;
        const char *service = target ? port.c_str() : nullptr;
        int ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, service,
                             node ? FI_SOURCE : 0, hints, &info_);
        fi_freeinfo(hints);
        Check(ret, "fi_getinfo");
        Check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
        Check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
        fi_av_attr av_attr{};
        av_attr.type = FI_AV_TABLE;
        Check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
        fi_cq_attr cq_attr{};
        cq_attr.format = FI_CQ_FORMAT_CONTEXT;
        cq_attr.wait_obj = FI_WAIT_NONE;
        Check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
        Check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
        Check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind");
        Check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind");
        Check(fi_enable(ep_), "fi_enable");
    }

    ~RawEndpoint() {
        if (mr_) fi_close(&mr_->fid);
        if (ep_) fi_close(&ep_->fid);
        if (cq_) fi_close(&cq_->fid);
        if (av_) fi_close(&av_->fid);
        if (domain_) fi_close(&domain_->fid);
        if (fabric_) fi_close(&fabric_->fid);
        if (info_) fi_freeinfo(info_);
    }

    RawEndpoint(const RawEndpoint &) = delete;
    RawEndpoint &operator=(const RawEndpoint &) = delete;

    // Registers the one buffer this endpoint uses (remote access for a target, local for a
    // client when the provider wants local registration).
    void Register(void *buffer, size_t size, uint64_t access) {
        Check(fi_mr_reg(domain_, buffer, size, access, 0, 0x5eed, 0, &mr_, nullptr), "fi_mr_reg");
        if (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) {
            Check(fi_mr_bind(mr_, &ep_->fid, 0), "fi_mr_bind");
            Check(fi_mr_enable(mr_), "fi_mr_enable");
        }
    }

    void *desc() const { return mr_ ? fi_mr_desc(mr_) : nullptr; }
    uint64_t key() const { return fi_mr_key(mr_); }
    bool virtual_addressing() const { return info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR; }
    bool local_registration() const { return info_->domain_attr->mr_mode & FI_MR_LOCAL; }

    std::string Name() const {
        char name[256];
        size_t length = sizeof(name);
        Check(fi_getname(&ep_->fid, name, &length), "fi_getname");
        return std::string(name, length);
    }

    // The peer's address in this endpoint's address vector, inserted the first time only
    // (shm's vector holds a few hundred entries, and a loop calls this per batch).
    fi_addr_t Insert(const std::string &address) {
        auto known = peers_.find(address);
        if (known != peers_.end()) return known->second;
        fi_addr_t peer = FI_ADDR_UNSPEC;
        if (fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr) != 1) {
            throw std::runtime_error("fi_av_insert failed");
        }
        peers_.emplace(address, peer);
        return peer;
    }

    // One pass over the completion queue, reaping up to kPollBatch completions; returns how
    // many it saw, throws on an error.
    static constexpr size_t kPollBatch = 64;
    int Poll() {
        fi_cq_entry entries[kPollBatch];
        ssize_t n = fi_cq_read(cq_, entries, kPollBatch);
        if (n == -FI_EAGAIN) return 0;
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry error{};
            fi_cq_readerr(cq_, &error, 0);
            throw std::runtime_error(std::string("completion error: ") + fi_strerror(error.err));
        }
        Check(static_cast<int>(n), "fi_cq_read");
        return static_cast<int>(n);
    }

    fid_ep *ep() const { return ep_; }
    // Flags of every operation (FI_DELIVERY_COMPLETE for Semantics::kDelivery).
    uint64_t flags() const { return flags_; }

  private:
    uint64_t flags_ = 0;
    fi_info *info_ = nullptr;
    fid_fabric *fabric_ = nullptr;
    fid_domain *domain_ = nullptr;
    fid_av *av_ = nullptr;
    fid_cq *cq_ = nullptr;
    fid_ep *ep_ = nullptr;
    fid_mr *mr_ = nullptr;
    std::map<std::string, fi_addr_t> peers_;  // inserted into av_
};

// A buffer of `size` bytes others can read and write, served by a polling thread.
class RawTarget {
  public:
    RawTarget(const std::string &provider, const std::string &host, const std::string &port,
              size_t size)
        : buffer_(size, 1), endpoint_(provider, host, port, true) {
        endpoint_.Register(buffer_.data(), size, FI_REMOTE_READ | FI_REMOTE_WRITE);
        target_.address = endpoint_.Name();
        target_.key = endpoint_.key();
        target_.base =
            endpoint_.virtual_addressing() ? reinterpret_cast<uint64_t>(buffer_.data()) : 0;
        thread_ = std::thread([this] {
            while (!stop_.load(std::memory_order_relaxed)) {
                if (paused_.load(std::memory_order_relaxed)) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                } else {
                    endpoint_.Poll();
                }
            }
        });
    }

    ~RawTarget() {
        stop_ = true;
        thread_.join();
    }

    const Target &target() const { return target_; }
    // While paused (no operation of a client in flight), the thread sleeps instead of polling,
    // leaving the cores to whatever else the program measures.
    void Pause() { paused_ = true; }
    void Resume() { paused_ = false; }

  private:
    std::vector<char> buffer_;
    RawEndpoint endpoint_;
    Target target_;
    std::atomic<bool> stop_{false}, paused_{false};
    std::thread thread_;
};

// What a client posts: a read, a write, or an 8-byte atomic add (kFetchAdd: fetching the old
// value, into the second half of the client's buffer).
enum class Op { kRead, kWrite, kAdd, kFetchAdd };

// Posts fi_read / fi_write / fi_atomic operations of `size` bytes against one target: one at a
// time, polling until each completes (Run), or with up to `window` of them in flight, reaping
// completions in batches (RunWindowed: the shape of fi_rma_bw, and of a program that issues
// non-blocking operations and quiets).
class RawClient {
  public:
    RawClient(const std::string &provider, const std::string &host, size_t size,
              Semantics semantics = Semantics::kDefault)
        : buffer_(size, 2), endpoint_(provider, host, "", false, semantics) {
        if (endpoint_.local_registration()) {
            endpoint_.Register(buffer_.data(), size, FI_READ | FI_WRITE);
        }
    }

    // `count` operations after `warmup` unmeasured ones; each waits for completion.
    Result Run(const Target &target, bool write, size_t size, size_t count, size_t warmup = 10) {
        return RunWindowed(target, write ? Op::kWrite : Op::kRead, size, count, 1, warmup);
    }

    // `count` operations, at most `window` in flight; operation i works on the i-th `size`
    // bytes of the buffers (cycling), so that operations in flight touch different bytes.
    // `batches`: post `window` operations, wait for all of them, and so on (what a program
    // that issues non-blocking calls and then quiets does) instead of keeping `window` in
    // flight.
    Result RunWindowed(const Target &target, Op op, size_t size, size_t count, size_t window,
                       size_t warmup = 10, bool batches = false) {
        if (size > buffer_.size()) throw std::runtime_error("size larger than the buffer");
        fi_addr_t peer = endpoint_.Insert(target.address);
        const size_t slots = buffer_.size() / size / (op == Op::kFetchAdd ? 2 : 1);
        auto run = [&](size_t total) {
            size_t posted = 0, done = 0;
            auto progress_at = std::chrono::steady_clock::now();
            while (done < total) {
                bool may_post = !batches || posted == done;  // a batch starts when all are done
                while (may_post && posted < total && posted - done < window &&
                       Post(peer, target, op, (posted % slots) * size, size) == 0) {
                    ++posted;
                }
                int completed = endpoint_.Poll();
                done += static_cast<size_t>(completed);
                auto now = std::chrono::steady_clock::now();
                if (completed > 0) {
                    progress_at = now;
                } else if (now - progress_at > std::chrono::seconds(30)) {
                    throw std::runtime_error("no completion for 30 s");
                }
            }
        };
        run(warmup);
        auto start = std::chrono::steady_clock::now();
        run(count);
        double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                .count();
        Result result;
        result.ns_per_op = ns / static_cast<double>(count);
        result.gb_per_s = static_cast<double>(size) / result.ns_per_op;
        return result;
    }

  private:
    // Posts one operation at `offset` of both buffers; 0 or -FI_EAGAIN (the queue is full).
    ssize_t Post(fi_addr_t peer, const Target &target, Op op, size_t offset, size_t size) {
        void *desc = endpoint_.desc();
        char *local = buffer_.data() + offset;
        uint64_t remote = target.base + offset;
        uint64_t flags = FI_COMPLETION | endpoint_.flags();
        ssize_t ret;
        if (op == Op::kAdd) {
            fi_ioc ioc{local, 1};
            fi_rma_ioc rma{remote, 1, target.key};
            fi_msg_atomic message{&ioc, &desc, 1, peer, &rma, 1, FI_UINT64, FI_SUM, nullptr, 0};
            ret = fi_atomicmsg(endpoint_.ep(), &message, flags);
        } else if (op == Op::kFetchAdd) {
            ret = fi_fetch_atomic(endpoint_.ep(), local, 1, desc, local + buffer_.size() / 2, desc,
                                  peer, remote, target.key, FI_UINT64, FI_SUM, nullptr);
        } else {
            iovec iov{local, size};
            fi_rma_iov rma{remote, size, target.key};
            fi_msg_rma message{&iov, &desc, 1, peer, &rma, 1, nullptr, 0};
            ret = op == Op::kWrite ? fi_writemsg(endpoint_.ep(), &message, flags)
                                   : fi_readmsg(endpoint_.ep(), &message, flags);
        }
        if (ret != 0 && ret != -FI_EAGAIN) {
            Check(static_cast<int>(ret), op == Op::kWrite  ? "fi_write"
                                         : op == Op::kRead ? "fi_read"
                                                           : "fi_atomic");
        }
        return ret;
    }

    std::vector<char> buffer_;
    RawEndpoint endpoint_;
};

// The whole baseline: a target on host:port in a thread, a client in the caller's thread.
inline Result RunRawLoop(const std::string &provider, const std::string &host,
                         const std::string &port, bool write, size_t size, size_t count,
                         Semantics semantics = Semantics::kDefault) {
    RawTarget target(provider, host, port, size);
    RawClient client(provider, host, size, semantics);
    return client.Run(target.target(), write, size, count);
}

}  // namespace fabric_raw

#endif  // FAMPOOL_BENCH_FABRIC_RAW_H_
