#include "meta/client/metadata_fabric_client.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "common/error.h"
#include "meta/client/metadata_client_calls.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

using Clock = std::chrono::steady_clock;

// A caller polls for its reply for kSpin (a round trip takes 3 us over shm, 30-40 us over tcp
// here), then sleeps on the queue's descriptor (tcp) or, with none (shm), yields the core
// between polls until kYield and naps kNap between polls after that. A waiting caller must not
// stay runnable: with more callers than cores it takes the service's CPU (the allocation rate
// at 16 clients on 2 cores fell to 0.55 of one client's with callers that only yielded and
// napped).
//
// The poll adapts: a reply that says the service is serving other callers too halves the
// caller's next poll, any other restores it. Polling callers take CPU the service may need:
// on two cores, 2-4 callers that polled lowered the lookup rate to 0.7-0.9 of one caller's.
// (Halving it after slow replies instead kept a lone caller asleep: its own wake-up and
// every allocation made replies slow, and its lookups went from 45 to 75 us.) Without a
// descriptor (shm), such a caller yields for kSharedYield rather than kYield before it naps:
// 20 us naps cost a timer wake-up each, and 16 callers that napped brought 16 clients'
// allocation rate to 0.08-0.38 of one client's; yielding, 0.72-0.88.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kYield = std::chrono::microseconds(200);
constexpr auto kSharedYield = std::chrono::milliseconds(2);  // for a caller told it is shared
constexpr auto kNap = std::chrono::microseconds(20);
// A caller with no reply after this asks (over gRPC) whether the service is still the same.
constexpr auto kAskAfter = std::chrono::milliseconds(100);
// A caller whose message the provider has not taken within this (no connection to the service)
// gives up on the fabric and makes the call over gRPC; one whose message was taken but not sent
// within it asks whether the service is still the same, and waits on if it is.
constexpr auto kConnectWait = std::chrono::seconds(1);

}  // namespace

using metadata_requests::ItemRequest;
using metadata_requests::LookupRequest;
using metadata_requests::RegionRequest;

MetadataFabricClient::MetadataFabricClient(const FabricConfig &config,
                                           const std::string &service_address,
                                           const std::string &incarnation,
                                           std::chrono::milliseconds timeout)
    : domain_(config, FabricDomain::Role::kMessages),
      av_(domain_.OpenAddressVector()),
      endpoint_(OpenEndpoint(domain_, av_.get(), MessageEndpointOptions(domain_))),
      queue_fd_(QueueDescriptor(endpoint_.queue.get())),
      address_(EndpointAddress(endpoint_.endpoint.get(), domain_.provider())),
      service_address_(service_address),
      incarnation_(incarnation),
      timeout_(timeout),
      last_answer_(Clock::now().time_since_epoch().count()),
      call_(domain_, endpoint_.endpoint.get(), 1, kMaxFabricMessage),
      reply_(domain_, endpoint_.endpoint.get(), 1, kReceiveBuffer),
      spin_(kSpin) {
    if (fi_av_insert(av_.get(), service_address.data(), 1, &service_, 0, nullptr) != 1) {
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_av_insert: the metadata service's fabric address is not one of provider {}",
             domain_.provider());
    }
    if (!PostReceive()) {
        Fail(openfam::FAM_ERR_LIBFABRIC, "fi_recv: the provider refused a receive (provider {})",
             domain_.provider());
    }
}

bool MetadataFabricClient::PostReceive() {
    ssize_t ret = fi_recv(endpoint_.endpoint.get(), reply_.slot(0), reply_.size(),
                          reply_.descriptor(), FI_ADDR_UNSPEC, &receive_context_);
    if (ret != 0) broken_ = true;
    return ret == 0;
}

MetadataFabricClient::~MetadataFabricClient() {
    // The endpoint goes first: the provider may still own the buffers (a reply that came late).
    endpoint_.Close();
}

bool MetadataFabricClient::Call(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method,
                                bool idempotent, const std::function<bool()> &same_service) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || broken_) return false;
    uint64_t id = next_call_++;
    call.set_call_id(id);
    call.set_reply_to(address_);
    size_t size = call.ByteSizeLong();
    if (size > kMaxFabricMessage) return false;
    call.SerializeToArray(call_.slot(0), static_cast<int>(size));

    // From the moment the provider takes the message the service may run the call: a failure
    // after that sends an idempotent call to gRPC and fails any other.
    auto give_up = [&](const std::string &why) {
        broken_ = true;
        if (idempotent) return false;
        Fail(openfam::FAM_ERR_RPC,
             "{} over the fabric (provider {}): {}; it may or may not have been done", method,
             domain_.provider(), why);
    };
    fid_cq *queue = endpoint_.queue.get();
    // Let the provider see what happened since the last call first (a connection the service
    // closed when it died), so that the message does not go to a connection that is gone.
    fi_cq_msg_entry stale[2];
    fi_cq_read(queue, stale, 0);
    auto start = Clock::now();
    auto deadline = start + timeout_;
    auto connect_deadline = start + std::min<Clock::duration>(timeout_, kConnectWait);
    bool sent = false, answered = false, posted = false, asked = false, connect_checked = false;
    while (!answered || !sent) {
        if (!posted) {
            ssize_t ret = fi_send(endpoint_.endpoint.get(), call_.slot(0), size, call_.descriptor(),
                                  service_, &send_context_);
            if (ret == 0) {
                posted = true;
            } else if (ret != -FI_EAGAIN || Clock::now() > connect_deadline) {
                // Never left this process: the service has not seen the call.
                broken_ = true;
                return false;
            }
        }
        fi_cq_msg_entry entries[2];
        ssize_t n = fi_cq_read(queue, entries, 2);
        fi_cq_err_entry error{};
        if (n == -FI_EAVAIL && fi_cq_readerr(queue, &error, 0) > 0) {
            if (error.op_context == &send_context_) {
                if (answered) break;  // the reply came: the send did its work
                return give_up(fmt::format("the message failed ({})",
                                           fi_strerror(static_cast<int>(error.err))));
            }
            // A message that did not fit: not ours (the service keeps replies smaller).
            if (error.op_context == &receive_context_ && !PostReceive()) {
                return answered || give_up("the provider refused a receive");
            }
            continue;
        }
        for (ssize_t i = 0; i < n; ++i) {
            if (entries[i].op_context == &send_context_) {
                sent = true;
                continue;
            }
            if (entries[i].op_context != &receive_context_) continue;
            bool parsed = reply->ParseFromArray(reply_.slot(0), static_cast<int>(entries[i].len));
            if (parsed && reply->call_id() == id) answered = true;  // else a stale reply
            // Without a receive posted the client cannot be used again (it is then broken);
            // this call's reply is in hand all the same.
            if (!PostReceive() && !answered) return give_up("the provider refused a receive");
        }
        if (n > 0) continue;
        auto now = Clock::now();
        if (!sent && now > connect_deadline && !connect_checked) {
            if (answered) {
                broken_ = true;  // the buffer may still be the provider's: never reuse it
                break;
            }
            // Taken but not sent: the provider keeps trying to reach an endpoint that is gone,
            // or is still setting the connection up under load (128 PEs connecting at once on
            // 2 cores took more than 1 s now and then, and their allocations failed). Asked
            // again now: a service that is still the same gets the rest of the call's time.
            connect_checked = true;
            if (!same_service()) {
                return give_up(
                    "the message was not sent within 1 s, and the metadata service stopped or "
                    "restarted meanwhile");
            }
        }
        if (!asked && !answered && now - start > kAskAfter) {
            // Slow: the service may have died with the call (shm delivers into a dead
            // service's queue). Ask over gRPC whether the endpoint still has its service.
            asked = true;
            if (!same_service()) {
                return give_up(
                    "the metadata service stopped or restarted with the call in "
                    "flight");
            }
        }
        if (now > deadline) {
            return give_up(
                fmt::format("no answer from the metadata service in {} ms", timeout_.count()));
        }
        if (now - start <= spin_) continue;
        if (queue_fd_ >= 0) {
            fid *waiting = &queue->fid;
            if (fi_trywait(domain_.fabric(), &waiting, 1) == FI_SUCCESS) {
                // Bounded: the descriptor does not wake for everything the provider must
                // progress (a connection being set up), so the queue is polled every 1 ms.
                pollfd poll_fd{queue_fd_, POLLIN, 0};
                poll(&poll_fd, 1, 1);
            }
        } else if (now - start > (spin_ == kSpin ? kYield : kSharedYield)) {
            std::this_thread::sleep_for(kNap);
        } else {
            std::this_thread::yield();
        }
    }
    spin_ = reply->shared() ? spin_ / 2 : kSpin;
    calls_.fetch_add(1, std::memory_order_relaxed);
    Confirmed();
    return !reply->use_grpc();
}

std::chrono::steady_clock::duration MetadataFabricClient::quiet_for() const {
    return Clock::now().time_since_epoch() - Clock::duration(last_answer_.load());
}

void MetadataFabricClient::Confirmed() { last_answer_ = Clock::now().time_since_epoch().count(); }

// MetadataClient's calls that go over the fabric first (metadata_client.h): each makes its
// request, and Call below sends it through the MetadataFabricClient above, or over gRPC when
// the fabric is not in use, busy or gone.

template <typename Request, typename Reply>
bool MetadataClient::Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *,
                                                                      const Request &, Reply *),
                          const char *name, const Request &request, Reply *reply,
                          Request *(rpc::FabricCall::*call_field)(),
                          Reply *(rpc::FabricReply::*reply_field)(), bool idempotent) {
    for (int attempt = 0;; ++attempt) {
        std::shared_ptr<MetadataFabricClient> fabric = Fabric();
        if (!fabric) break;  // over gRPC, below
        rpc::FabricCall call;
        Request *sent = (call.*call_field)();
        *sent = request;
        std::optional<std::string> token;
        if (munge_) token = Stamp(sent->mutable_caller());
        rpc::FabricReply answer;
        auto same_service = [&] { return fabric->Reaches(AskFabricEndpoint()); };
        if (!fabric->Call(call, &answer, name, idempotent, same_service)) break;
        grpc::Status status(static_cast<grpc::StatusCode>(answer.code()), answer.message(),
                            answer.details());
        if (attempt == 0 && token && Reauthenticated(status, *token)) continue;
        CheckStatus(status, name, address_);
        reply->Swap((answer.*reply_field)());
        return answer.item_partial() || answer.region_partial();
    }
    Call(method, name, request, reply);
    return false;
}

ItemInfo MetadataClient::LookupItem(const std::string &item, const std::string &region,
                                    const Caller &caller) {
    rpc::Item reply;
    Call(&rpc::Metadata::Stub::LookupItem, "Metadata.LookupItem",
         LookupRequest(item, region, caller), &reply, &rpc::FabricCall::mutable_lookup_item,
         &rpc::FabricReply::mutable_item,
         /*idempotent=*/true);
    return FromProto(reply);
}

RegionInfo MetadataClient::LookupRegion(const std::string &name, const Caller &caller) {
    rpc::Region reply;
    Call(&rpc::Metadata::Stub::LookupRegion, "Metadata.LookupRegion",
         LookupRequest(name, "", caller), &reply, &rpc::FabricCall::mutable_lookup_region,
         &rpc::FabricReply::mutable_region,
         /*idempotent=*/true);
    return FromProto(reply);
}

RegionInfo MetadataClient::GetRegion(uint64_t region_id, const Caller &caller) {
    rpc::Region reply;
    Call(&rpc::Metadata::Stub::GetRegion, "Metadata.GetRegion", RegionRequest(region_id, caller),
         &reply, &rpc::FabricCall::mutable_get_region, &rpc::FabricReply::mutable_region,
         /*idempotent=*/true);
    return FromProto(reply);
}

ItemInfo MetadataClient::GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::Item reply;
    Call(&rpc::Metadata::Stub::GetItem, "Metadata.GetItem", ItemRequest(region_id, offset, caller),
         &reply, &rpc::FabricCall::mutable_get_item, &rpc::FabricReply::mutable_item,
         /*idempotent=*/true);
    return FromProto(reply);
}

RegionInfo MetadataClient::CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                        const Fam_Region_Attributes &attributes,
                                        const RegionIntent &intent, const Caller &caller) {
    rpc::CreateRegionRequest request;
    if (!intent.empty()) ToProto(intent, request.mutable_intent());
    ToProto(caller, request.mutable_caller());
    request.set_name(name);
    request.set_size(size);
    request.set_perm(perm);
    ToProto(attributes, request.mutable_attributes());
    rpc::Region reply;
    bool partial =
        Call(&rpc::Metadata::Stub::CreateRegion, "Metadata.CreateRegion", request, &reply,
             &rpc::FabricCall::mutable_create_region, &rpc::FabricReply::mutable_region,
             /*idempotent=*/false);
    // Created, but the whole record did not fit in a message: read it over gRPC.
    if (partial) return GetRegionOverGrpc(reply.id(), caller);
    return FromProto(reply);
}

void MetadataClient::DestroyRegion(uint64_t region_id, const Caller &caller) {
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::DestroyRegion, "Metadata.DestroyRegion",
         RegionRequest(region_id, caller), &reply, &rpc::FabricCall::mutable_destroy_region,
         &rpc::FabricReply::mutable_empty,
         /*idempotent=*/false);
}

ItemInfo MetadataClient::AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                                      uint32_t perm, const Caller &caller) {
    rpc::AllocateRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_region_id(region_id);
    request.set_name(name);
    request.set_size(size);
    request.set_perm(perm);
    rpc::Item reply;
    bool partial =
        Call(&rpc::Metadata::Stub::AllocateItem, "Metadata.AllocateItem", request, &reply,
             &rpc::FabricCall::mutable_allocate_item, &rpc::FabricReply::mutable_item,
             /*idempotent=*/false);
    // Allocated, but the whole record did not fit in a message: read it over gRPC.
    if (partial) {
        rpc::Item whole;
        Call(&rpc::Metadata::Stub::GetItem, "Metadata.GetItem",
             ItemRequest(reply.region_id(), reply.offset(), caller), &whole);
        return FromProto(whole);
    }
    return FromProto(reply);
}

void MetadataClient::DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::DeallocateItem, "Metadata.DeallocateItem",
         ItemRequest(region_id, offset, caller), &reply, &rpc::FabricCall::mutable_deallocate_item,
         &rpc::FabricReply::mutable_empty,
         /*idempotent=*/false);
}

void MetadataClient::UseFabric(const FabricConfig &config) {
    std::lock_guard<std::mutex> lock(fabric_mutex_);
    fabric_config_ = config;
    fabric_wanted_ = true;
    fabric_tried_ = {};  // connect at the next call
}

std::shared_ptr<MetadataFabricClient> MetadataClient::Fabric() {
    using std::chrono::seconds;
    std::unique_lock<std::mutex> lock(fabric_mutex_);
    if (!fabric_wanted_) return nullptr;
    bool usable = fabric_ && !fabric_->broken();
    // In use lately: the service is the one that answered.
    if (usable && fabric_->quiet_for() < seconds(1)) return fabric_;
    // A quiet client asks the service (over gRPC) where its endpoint is before using it: a
    // restarted service has a new one, and a message to the old one may vanish (shm delivers
    // it into the dead service's queue). A broken client (or none) does so at most once a
    // second; gRPC carries the calls meanwhile, and while another thread asks.
    auto now = std::chrono::steady_clock::now();
    if (connecting_ || (!usable && now - fabric_tried_ < seconds(1))) return nullptr;
    fabric_tried_ = now;
    connecting_ = true;
    lock.unlock();
    rpc::FabricEndpoint endpoint = AskFabricEndpoint();
    lock.lock();
    connecting_ = false;
    if (endpoint.address().empty() || endpoint.provider() != fabric_config_.provider) {
        fabric_.reset();
    } else if (fabric_ && !fabric_->broken() && fabric_->Reaches(endpoint)) {
        fabric_->Confirmed();
    } else {
        try {
            fabric_ = std::make_shared<MetadataFabricClient>(fabric_config_, endpoint.address(),
                                                             endpoint.incarnation(), timeout_);
        } catch (const Failure &) {
            fabric_.reset();  // cannot reach that endpoint over this provider
        }
    }
    return fabric_;
}

rpc::FabricEndpoint MetadataClient::AskFabricEndpoint() {
    rpc::FabricEndpoint endpoint;
    try {
        rpc::Empty request;
        Call(&rpc::Metadata::Stub::MetadataEndpoint, "Metadata.MetadataEndpoint", request,
             &endpoint);
    } catch (const Failure &) {
        endpoint.Clear();  // unreachable: gRPC it is (its calls report the service being gone)
    }
    return endpoint;
}

uint64_t MetadataClient::fabric_calls() {
    std::lock_guard<std::mutex> lock(fabric_mutex_);
    return fabric_ ? fabric_->calls() : 0;
}

}  // namespace fampool
