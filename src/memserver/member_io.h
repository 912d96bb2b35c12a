// Reads and writes of a redundant region's members' physical bytes for one request of the
// redundancy service (redundancy.h): this server's own member through its heap (after checking
// the client's key), the others over the fabric with the client's keys, in the background
// until Finish. Declare it after every buffer its transfers use: when a transfer fails, its
// destructor ends the others (waits, or closes the endpoint) before those buffers go.
#ifndef FAMPOOL_MEMSERVER_MEMBER_IO_H_
#define FAMPOOL_MEMSERVER_MEMBER_IO_H_

#include <map>
#include <memory>

#include "common/atomic_apply.h"
#include "common/error.h"
#include "memserver/local_memory_server.h"
#include "memserver/peers.h"
#include "rpc/convert.h"
#include "rpc/fampool.pb.h"

namespace fampool {

class MemberIo {
  public:
    MemberIo(LocalMemoryServer *local, Peers *peers, const rpc::StripeRequest &request)
        : local_(local), peers_(peers), members_(request.members()), self_(request.self()) {}

    void Read(size_t m, uint64_t p, char *to, uint64_t n) {
        if (m == self_) {
            CopyFamBytes(to, Local(p, n, false), n);
        } else {
            Peer(m).Read(p, to, n);
        }
    }
    void Write(size_t m, uint64_t p, const char *from, uint64_t n) {
        if (m == self_) {
            CopyFamBytes(Local(p, n, true), from, n);
        } else {
            Peer(m).Write(p, from, n);
        }
    }
    char *Local(uint64_t p, uint64_t n, bool write) {
        const rpc::Member &me = members_[static_cast<int>(self_)];
        return local_->Reach(FromProto(me.extent()), me.key(), p, n, write, "a RAID5 stripe",
                             &hold_);
    }
    void Finish() {
        for (auto &[m, transfers] : transfers_) transfers->Finish();
    }

  private:
    PeerTransfers &Peer(size_t m) {
        auto found = transfers_.find(m);
        if (found != transfers_.end()) return *found->second;
        const rpc::Member &member = members_[static_cast<int>(m)];
        if (member.fabric_address().empty() && member.state() == kLost) {
            Fail(openfam::FAM_ERR_RESOURCE, "member {} of the region is lost (memory server {})", m,
                 member.server_id());
        }
        if (member.fabric_address().empty()) {  // the client's view had no key for it
            Fail(openfam::FAM_ERR_RPC,
                 "member {} of the region (memory server {}) has no key in the request (its "
                 "server did not answer the metadata service)",
                 m, member.server_id());
        }
        ItemLayout layout;
        layout.extent = FromProto(member.extent());
        layout.size = uint64_t{1} << 47;  // physical addressing: the member's whole extent
        layout.name = fmt::format("member {} of region {}", m, layout.extent.region_id);
        layout.servers.push_back({member.server_id(), member.fabric_address(), member.key(),
                                  member.base(), false, member.incarnation()});
        return *transfers_.emplace(m, peers_->Open(layout)).first->second;
    }

    LocalMemoryServer *local_;
    Peers *peers_;
    const google::protobuf::RepeatedPtrField<rpc::Member> &members_;
    size_t self_;
    std::map<size_t, std::unique_ptr<PeerTransfers>> transfers_;
    std::shared_ptr<HeapMapping> hold_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_MEMBER_IO_H_
