// A fabric-message endpoint of a test's own, on which it sends anything and sees what comes
// back: what a user's process can do around the client library (authentication_test).
#ifndef FAMPOOL_TESTS_SUPPORT_RAW_ENDPOINT_H_
#define FAMPOOL_TESTS_SUPPORT_RAW_ENDPOINT_H_

#include <gtest/gtest.h>
#include <rdma/fi_endpoint.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "fabric/fabric.h"
#include "messages/fabric_messages.h"
#include "messages/message_seal.h"
#include "rpc/authentication.h"
#include "rpc/fampool.pb.h"

namespace fampool_test {

namespace rpc = fampool::rpc;

// Over tcp, two message slots: one to send from, one to receive into.
class RawEndpoint {
  public:
    RawEndpoint()
        : domain_(Config(), fampool::FabricDomain::Role::kMessages),
          av_(domain_.OpenAddressVector()),
          endpoint_(
              fampool::OpenEndpoint(domain_, av_.get(), fampool::MessageEndpointOptions(domain_))),
          address_(fampool::EndpointAddress(endpoint_.endpoint.get(), domain_.provider())),
          slots_(domain_, endpoint_.endpoint.get(), 2, 8192) {
        EXPECT_EQ(fi_recv(endpoint_.endpoint.get(), slots_.slot(1), 8192, slots_.descriptor(),
                          FI_ADDR_UNSPEC, &receive_),
                  0);
    }
    ~RawEndpoint() { endpoint_.Close(); }
    const std::string &address() const { return address_; }

    // `call` sealed with `seal` (naming its session), its reply_to `reply_to`, sent to `to`.
    void Send(const std::string &to, rpc::FabricCall call, const fampool::SessionSeal &seal,
              const std::string &reply_to) {
        call.set_call_id(fampool::RandomCallId());
        call.set_reply_to(reply_to);
        call.set_session(seal.id);
        std::string bytes = call.SerializeAsString();
        size_t body = bytes.size();
        bytes.resize(body + fampool::kSealBytes);
        fampool::SealMessage(seal.key, bytes.data(), body);
        fi_addr_t peer = FI_ADDR_UNSPEC;
        ASSERT_EQ(fi_av_insert(av_.get(), to.data(), 1, &peer, 0, nullptr), 1);
        std::memcpy(slots_.slot(0), bytes.data(), bytes.size());
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        ssize_t ret;
        while ((ret = fi_send(endpoint_.endpoint.get(), slots_.slot(0), bytes.size(),
                              slots_.descriptor(), peer, &send_)) == -FI_EAGAIN &&
               std::chrono::steady_clock::now() < until) {
            Poll();
        }
        ASSERT_EQ(ret, 0);
        while (!sent_ && std::chrono::steady_clock::now() < until) Poll();
        ASSERT_TRUE(sent_);
        sent_ = false;
    }
    // The reply that came within `wait`, its seal checked with `seal` and taken off; nothing
    // when none came.
    std::optional<rpc::FabricReply> Receive(const fampool::SessionSeal &seal,
                                            std::chrono::milliseconds wait) {
        auto until = std::chrono::steady_clock::now() + wait;
        while (!received_ && std::chrono::steady_clock::now() < until) Poll();
        if (!received_) return std::nullopt;
        size_t length = *received_;
        received_.reset();
        rpc::FabricReply reply;
        EXPECT_TRUE(fampool::SealHolds(seal.key, slots_.slot(1), length));
        EXPECT_TRUE(
            reply.ParseFromArray(slots_.slot(1), static_cast<int>(length - fampool::kSealBytes)));
        EXPECT_EQ(fi_recv(endpoint_.endpoint.get(), slots_.slot(1), 8192, slots_.descriptor(),
                          FI_ADDR_UNSPEC, &receive_),
                  0);
        return reply;
    }

  private:
    static fampool::FabricConfig Config() {
        fampool::FabricConfig config;
        config.provider = "tcp";
        return config;
    }
    void Poll() {
        fi_cq_msg_entry entry{};
        ssize_t n = fi_cq_read(endpoint_.queue.get(), &entry, 1);
        if (n == 1 && entry.op_context == &send_) sent_ = true;
        if (n == 1 && entry.op_context == &receive_) received_ = entry.len;
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry error{};
            fi_cq_readerr(endpoint_.queue.get(), &error, 0);
        }
    }
    fampool::FabricDomain domain_;
    fampool::FidPtr<fid_av> av_;
    fampool::FabricEndpoint endpoint_;
    std::string address_;
    fampool::MessageSlots slots_;
    fi_context2 send_{}, receive_{};
    bool sent_ = false;
    std::optional<size_t> received_;
};

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_RAW_ENDPOINT_H_
