// The data path of one fam object or context: get, put, gather, scatter, the element operations
// memory-side aggregation ships, and atomics, each checked (DescriptorResolver::Access) before
// the first byte moves, so that a call that fails writes nothing; then handed to the object's
// Channel (Session::transport says which classes serve it: transport/shm, transport/fabric,
// transport/redundant). The facade (api/fam.cc) calls it through FamImpl::Data(). A blocking
// transfer that fails because the item's keys were replaced meanwhile is bound again and, when
// doing it twice leaves what doing it once does, made again (Transfer).
#ifndef FAMPOOL_CLIENT_FAM_DATA_H_
#define FAMPOOL_CLIENT_FAM_DATA_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "client/descriptor_resolver.h"
#include "client/session.h"
#include "fam/fam.h"

namespace fampool {

template <typename T>
constexpr DataType TypeOf();
template <>
constexpr DataType TypeOf<int32_t>() {
    return DataType::kInt32;
}
template <>
constexpr DataType TypeOf<int64_t>() {
    return DataType::kInt64;
}
template <>
constexpr DataType TypeOf<__int128>() {
    return DataType::kInt128;
}
template <>
constexpr DataType TypeOf<uint32_t>() {
    return DataType::kUint32;
}
template <>
constexpr DataType TypeOf<uint64_t>() {
    return DataType::kUint64;
}
template <>
constexpr DataType TypeOf<float>() {
    return DataType::kFloat;
}
template <>
constexpr DataType TypeOf<double>() {
    return DataType::kDouble;
}

class DataPath {
  public:
    explicit DataPath(DescriptorResolver &descriptors) : descriptors_(descriptors) {}

    // The object's session and its channel, from fam_initialize (or the context's opening) on.
    void Open(std::shared_ptr<Session> session) {
        channel_ = session->transport->OpenChannel();
        session_ = std::move(session);
    }
    // Null before Open.
    Channel *channel() const { return channel_.get(); }

    void Get(void *local, Fam_Descriptor *item, uint64_t offset, uint64_t nbytes, bool blocking);
    void Put(void *local, Fam_Descriptor *item, uint64_t offset, uint64_t nbytes, bool blocking);
    void Gather(void *local, Fam_Descriptor *item, uint64_t count, uint64_t first, uint64_t stride,
                uint64_t element_size, bool blocking);
    void Gather(void *local, Fam_Descriptor *item, uint64_t count, const uint64_t *index,
                uint64_t element_size, bool blocking);
    void Scatter(void *local, Fam_Descriptor *item, uint64_t count, uint64_t first, uint64_t stride,
                 uint64_t element_size, bool blocking);
    void Scatter(void *local, Fam_Descriptor *item, uint64_t count, const uint64_t *index,
                 uint64_t element_size, bool blocking);

    // Atomics: one implementation for every operation and type.
    // `fetching`: the caller wants the old value (needs read permission as well as write).
    template <typename T>
    T Atomic(AtomicOp op, bool fetching, Fam_Descriptor *item, uint64_t offset, T operand = T(),
             T compare = T()) {
        T result{};
        AtomicBytes(op, fetching, TypeOf<T>(), sizeof(T), item, offset, &operand, &compare,
                    &result);
        return result;
    }

    // Channel::ApplyElements on the item of `state` (an aggregation queue's), with Transfer's
    // recovery from keys replaced meanwhile (an add is not made again: twice is not once).
    void ApplyElements(DescriptorState &state, ElementOp op, unsigned access, const uint64_t *index,
                       uint64_t count, uint64_t element_size, char *data);

  private:
    // Runs `move(binding)`, a blocking transfer on `state`'s item needing `access`. When it
    // fails on the fabric and the item's keys have been replaced since the descriptor was bound
    // (its or its region's permissions changed, here or in another process: that revokes the
    // old keys), binds the descriptor again and, if the transfer is `repeatable` (doing it
    // twice leaves what doing it once does), runs it again: while the keys keep being replaced
    // under it (permission changes in a row), up to 16 times. A transfer that is not
    // repeatable throws its failure; the next one uses the new keys. When the item is gone or
    // the caller's permission was withdrawn, throws FAM_ERR_NOTFOUND / FAM_ERR_NOPERM.
    template <typename Move>  // void(const std::shared_ptr<Binding> &)
    void Transfer(Session &session, DescriptorState &state, unsigned access, bool repeatable,
                  const Move &move);
    void AtomicBytes(AtomicOp op, bool fetching, DataType type, size_t size, Fam_Descriptor *item,
                     uint64_t offset, const void *operand, const void *compare, void *result);
    // The one implementation of gather and scatter, strided or indexed.
    void Elements(void *local, Fam_Descriptor *item, uint64_t count, uint64_t element_size,
                  ElementPlan plan, bool to_fam, bool blocking);

    DescriptorResolver &descriptors_;
    std::shared_ptr<Session> session_;
    // This object's (or context's) stream of data-path operations. After session_: closed
    // before it.
    std::unique_ptr<Channel> channel_;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_FAM_DATA_H_
