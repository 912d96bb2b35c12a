// A raw libfabric baseline: the fastest simple way to move bytes with fi_read / fi_write over a
// provider, with nothing of fampool in between. A RawTarget opens an RDM endpoint, registers a
// buffer and drives its endpoint from a thread that polls without sleeping; a RawClient posts
// one operation at a time and polls its completion queue until the operation completes. The
// cluster benchmarks compare fampool's data path against this loop.
//
// Semantics::kDefault is what libfabric does unasked: a write completes once its bytes left
// (tcp, shm), and shm serves RMA by copying straight between the processes without checking
// the key. Semantics::kFampool asks for what fampool needs, and pays for: writes complete once
// the bytes are in the target's memory (FI_DELIVERY_COMPLETE), and RMA is ordered per target
// (FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAW), which keeps shm on its key-checking path.
//
// Header-only so that any benchmark can include it; links with libfabric only.
#ifndef FAMPOOL_BENCH_FABRIC_RAW_H_
#define FAMPOOL_BENCH_FABRIC_RAW_H_

#include <rdma/fabric.h>
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
    uint64_t base = 0;    // remote address of the buffer's first byte
};

enum class Semantics { kDefault, kFampool };

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
        hints->caps = FI_RMA | (target ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_READ | FI_WRITE);
        hints->domain_attr->mr_mode =
            FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL | FI_MR_ENDPOINT;
        hints->domain_attr->threading = FI_THREAD_SAFE;
        if (!target && semantics == Semantics::kFampool) {
            hints->tx_attr->msg_order = FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAW;
            write_flags_ = FI_DELIVERY_COMPLETE;
        }
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
        Check(fi_mr_reg(domain_, buffer, size, access, 0, 0x5eed, 0, &mr_, nullptr),
              "fi_mr_reg");
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

    fi_addr_t Insert(const std::string &address) {
        fi_addr_t peer = FI_ADDR_UNSPEC;
        if (fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr) != 1) {
            throw std::runtime_error("fi_av_insert failed");
        }
        return peer;
    }

    // One pass over the completion queue; returns completions seen, throws on an error.
    int Poll() {
        fi_cq_entry entry;
        ssize_t n = fi_cq_read(cq_, &entry, 1);
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
    uint64_t write_flags() const { return write_flags_; }

  private:
    uint64_t write_flags_ = 0;
    fi_info *info_ = nullptr;
    fid_fabric *fabric_ = nullptr;
    fid_domain *domain_ = nullptr;
    fid_av *av_ = nullptr;
    fid_cq *cq_ = nullptr;
    fid_ep *ep_ = nullptr;
    fid_mr *mr_ = nullptr;
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
            while (!stop_.load(std::memory_order_relaxed)) endpoint_.Poll();
        });
    }

    ~RawTarget() {
        stop_ = true;
        thread_.join();
    }

    const Target &target() const { return target_; }

  private:
    std::vector<char> buffer_;
    RawEndpoint endpoint_;
    Target target_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Posts one fi_read or fi_write of `size` bytes at a time and polls until it completes.
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
    Result Run(const Target &target, bool write, size_t size, size_t count,
               size_t warmup = 10) {
        if (size > buffer_.size()) throw std::runtime_error("size larger than the buffer");
        fi_addr_t peer = endpoint_.Insert(target.address);
        auto one = [&] {
            for (;;) {
                ssize_t ret;
                if (write) {
                    iovec iov{buffer_.data(), size};
                    void *desc = endpoint_.desc();
                    fi_rma_iov rma{target.base, size, target.key};
                    fi_msg_rma message{&iov, &desc, 1, peer, &rma, 1, nullptr, 0};
                    ret = fi_writemsg(endpoint_.ep(), &message,
                                      FI_COMPLETION | endpoint_.write_flags());
                } else {
                    ret = fi_read(endpoint_.ep(), buffer_.data(), size, endpoint_.desc(), peer,
                                  target.base, target.key, nullptr);
                }
                if (ret == 0) break;
                if (ret != -FI_EAGAIN) Check(static_cast<int>(ret), write ? "fi_write" : "fi_read");
                endpoint_.Poll();
            }
            while (endpoint_.Poll() == 0) {
            }
        };
        for (size_t i = 0; i < warmup; ++i) one();
        auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < count; ++i) one();
        double ns = std::chrono::duration<double, std::nano>(
                        std::chrono::steady_clock::now() - start).count();
        Result result;
        result.ns_per_op = ns / static_cast<double>(count);
        result.gb_per_s = static_cast<double>(size) / result.ns_per_op;
        return result;
    }

  private:
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
