// The implementation behind openfam::fam and openfam::fam_context. The facade (src/api/fam.cc)
// forwards each call here under its name; FamImpl checks the object's state and the arguments,
// resolves descriptors, and dispatches to the metadata service, the memory server or the
// transport. A context is a FamImpl with its own non-blocking queue sharing its parent's session.
#ifndef FAMPOOL_CLIENT_FAM_IMPL_H_
#define FAMPOOL_CLIENT_FAM_IMPL_H_

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "client/aggregation_queues.h"
#include "client/descriptor_state.h"
#include "client/session.h"
#include "common/error.h"
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

class FamImpl {
  public:
    FamImpl() = default;
    FamImpl(std::shared_ptr<Session> session, FamImpl *parent)
        : session_(std::move(session)),
          parent_(parent),
          channel_(session_->transport->OpenChannel()) {}
    ~FamImpl();

    // Life cycle and options.
    void Initialize(const char *group, Fam_Options *options);
    void Finalize(const char *group);
    [[noreturn]] void Abort(int status);
    void Barrier();
    const char **ListOptions();
    const void *GetOption(const char *name);

    // Regions.
    Fam_Region_Descriptor *LookupRegion(const char *name);
    // `intent` null: a plain region.
    Fam_Region_Descriptor *CreateRegion(const char *name, uint64_t size, mode_t perm,
                                        Fam_Region_Attributes *attributes,
                                        const Fam_Region_Intent *intent);
    Fam_Region_Descriptor *CreateRegion(const char *name, uint64_t size, mode_t perm,
                                        Fam_Region_Attributes *attributes);
    void DestroyRegion(Fam_Region_Descriptor *region);
    void ResizeRegion(Fam_Region_Descriptor *region, uint64_t nbytes);
    void ChangePermissions(Fam_Region_Descriptor *region, mode_t perm);
    void Stat(Fam_Region_Descriptor *region, Fam_Stat *info, Fam_Placement *placement = nullptr);

    // Items.
    Fam_Descriptor *Lookup(const char *item, const char *region);
    Fam_Descriptor *Allocate(const char *name, uint64_t nbytes, mode_t perm,
                             Fam_Region_Descriptor *region);
    void Deallocate(Fam_Descriptor *item);
    void Close(Fam_Descriptor *item);
    void ChangePermissions(Fam_Descriptor *item, mode_t perm);
    void Stat(Fam_Descriptor *item, Fam_Stat *info);

    // Data path.
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
    void *Copy(Fam_Descriptor *src, uint64_t src_offset, Fam_Descriptor *dest, uint64_t dest_offset,
               uint64_t nbytes);
    void *Map(Fam_Descriptor *item);
    void Unmap(void *local, Fam_Descriptor *item);

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

    // Memory-side operations (fam_aggregation.cc): element operations queued per descriptor
    // (AggregationQueues) and shipped in batches to the memory servers, which apply them.
    void QueueOperation(int op, void *local, Fam_Descriptor *item, uint64_t count,
                        const uint64_t *index, uint64_t element_size);
    void AggregateFlush(Fam_Descriptor *item);

    // Ordering and contexts.
    void Fence();
    // Waits for this object's (or context's) non-blocking operations; throws the first failure
    // among them, those found when they were issued (Defer) first.
    void Quiet();
    // Keeps `failure`, found while issuing the non-blocking call or non-fetching atomic `call`,
    // for the next Quiet, which throws it with the call's name in front, as OpenFAM programs
    // expect. False when it must be thrown now instead: a NULL argument, or an object that is
    // not initialized (no Quiet could report it).
    bool Defer(const char *call, const Failure &failure);
    uint64_t Progress();
    openfam::fam_context *ContextOpen();
    void ContextClose(openfam::fam_context *context);

    // Backup and restore.
    void *Backup(Fam_Descriptor *src, const char *name, Fam_Backup_Options *options);
    void *Restore(const char *name, Fam_Descriptor *dest);
    void *Restore(const char *name, Fam_Region_Descriptor *region, const char *item, mode_t perm,
                  Fam_Descriptor **dest);
    void *DeleteBackup(const char *name);
    char *ListBackup(const char *name);
    // Waits for the operation behind a wait object from Copy, Backup, Restore or DeleteBackup.
    void Wait(void *wait_object);

  private:
    // The session of an initialized, not finalized object; throws FAM_ERR_INVALIDOP otherwise.
    Session &Live();
    // Live(), and not a context (control-path calls).
    Session &Control();
    // The item behind a descriptor, fetched from the metadata service on first use.
    DescriptorState &Resolve(Session &session, Fam_Descriptor *item);
    RegionDescriptorState &ResolveRegion(Session &session, Fam_Region_Descriptor *region);
    RegionInfo DefaultRegion(Session &session);
    // Bounds and permission checks of the data path.
    DescriptorState &Access(Session &session, Fam_Descriptor *item, unsigned access,
                            uint64_t offset, uint64_t nbytes);
    // Access(), then the item as the metadata service describes it now, with the keys it
    // grants now (the descriptor's may have been revoked by a permission change since): what
    // memory-side operations hand the memory servers, which check those keys.
    ItemInfo Granted(Session &session, Fam_Descriptor *item, unsigned access, uint64_t offset,
                     uint64_t nbytes);
    // Runs `move(binding)`, a blocking transfer on `state`'s item needing `access`. When it
    // fails on the fabric and the item's keys have been replaced since the descriptor was bound
    // (its or its region's permissions changed, here or in another process: that revokes the
    // old keys), binds the descriptor again and, if the transfer is `repeatable` (doing it
    // twice leaves what doing it once does), runs it once more. A transfer that is not
    // repeatable throws its failure; the next one uses the new keys. When the item is gone or
    // the caller's permission was withdrawn, throws FAM_ERR_NOTFOUND / FAM_ERR_NOPERM.
    template <typename Move>  // void(const std::shared_ptr<Binding> &)
    void Transfer(Session &session, DescriptorState &state, unsigned access, bool repeatable,
                  const Move &move);
    // Binds `state` again with the keys the metadata service hands out now (for the same item
    // only) and puts what the caller may do now in `now`; false when nothing was revoked (the
    // keys of `used` are still the item's) or the descriptor was closed or deallocated.
    bool Rebind(Session &session, DescriptorState &state, const Binding *used, ItemInfo *now);
    void AtomicBytes(AtomicOp op, bool fetching, DataType type, size_t size, Fam_Descriptor *item,
                     uint64_t offset, const void *operand, const void *compare, void *result);
    // Brings `state` (an aggregation queue's own copy) up to date: the item's record and the
    // caller's rights as they are now, bound with the keys granted now.
    void RefreshQueued(Session &session, DescriptorState &state);
    // Channel::ApplyElements on the item of `state`, with Transfer's recovery from keys
    // replaced meanwhile (an add is not made again: twice is not once).
    void ApplyElements(Session &session, DescriptorState &state, ElementOp op, unsigned access,
                       const uint64_t *index, uint64_t count, uint64_t element_size, char *data);
    // The one implementation of gather and scatter, strided or indexed.
    void Elements(void *local, Fam_Descriptor *item, uint64_t count, uint64_t element_size,
                  ElementPlan plan, bool to_fam, bool blocking);

    std::shared_ptr<Session> session_;
    FamImpl *parent_ = nullptr;  // set for contexts
    // This object's (or context's) stream of data-path operations, from session_->transport
    // (Session::transport says which classes serve it). After session_: closed before it.
    std::unique_ptr<Channel> channel_;

    // Failures found while issuing non-blocking calls, for the next Quiet (the first few word
    // for word; the rest counted).
    std::mutex deferred_mutex_;
    std::vector<Failure> deferred_;
    uint64_t deferred_dropped_ = 0;
    std::atomic<bool> has_deferred_{false};

    // fam_queue_operation's queues, shipped through this object's channel.
    AggregationQueues queues_{AggregationQueues::Shipper{
        [this](DescriptorState &state) { RefreshQueued(*session_, state); },
        [this](DescriptorState &state, ElementOp op, unsigned access, const uint64_t *index,
               uint64_t count, uint64_t element_size, char *data) {
            ApplyElements(*session_, state, op, access, index, count, element_size, data);
        }}};

    std::mutex finalize_mutex_;
    std::mutex contexts_mutex_;
    std::set<openfam::fam_context *> contexts_;
    std::mutex resolve_mutex_;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_FAM_IMPL_H_
