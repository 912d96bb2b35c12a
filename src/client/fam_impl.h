// The implementation behind openfam::fam and openfam::fam_context. The facade (src/api/fam.cc)
// forwards each call here under its name: FamImpl checks the object's state and the arguments
// and serves the life cycle, the control path (regions and items: fam_control.cc), ordering and
// contexts (fam_lifecycle.cc), memory-side work (fam_backup.cc, fam_aggregation.cc), each a
// class of its own beside it: descriptors (DescriptorResolver), the data path (DataPath, which
// the facade calls through Data() for get, put, gather, scatter and atomics), aggregation
// queues (AggregationQueues) and copy/backup (MemorySideWork). A context is a FamImpl with its
// own channel and non-blocking queue sharing its parent's session.
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
#include "client/descriptor_resolver.h"
#include "client/descriptor_state.h"
#include "client/fam_data.h"
#include "client/session.h"
#include "common/error.h"
#include "fam/fam.h"

namespace fampool {

class FamImpl {
  public:
    FamImpl() = default;
    FamImpl(std::shared_ptr<Session> session, FamImpl *parent)
        : session_(std::move(session)), parent_(parent) {
        data_.Open(session_);
    }
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

    // Data path: get, put, gather, scatter and atomics (fam_data.h). fam_map and fam_unmap
    // are the object's, not a context's (fam_control.cc).
    DataPath &Data() { return data_; }
    void *Copy(Fam_Descriptor *src, uint64_t src_offset, Fam_Descriptor *dest, uint64_t dest_offset,
               uint64_t nbytes);
    void *Map(Fam_Descriptor *item);
    void Unmap(void *local, Fam_Descriptor *item);

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
    RegionInfo DefaultRegion(Session &session);
    std::shared_ptr<Session> session_;
    FamImpl *parent_ = nullptr;  // set for contexts

    // Failures found while issuing non-blocking calls, for the next Quiet (the first few word
    // for word; the rest counted).
    std::mutex deferred_mutex_;
    std::vector<Failure> deferred_;
    uint64_t deferred_dropped_ = 0;
    std::atomic<bool> has_deferred_{false};

    // From descriptors to their items, checked (descriptor_resolver.h).
    DescriptorResolver descriptors_;
    // This object's (or context's) data path and its channel. After session_: closed before it.
    DataPath data_{descriptors_};

    // fam_queue_operation's queues, shipped through this object's channel.
    AggregationQueues queues_{AggregationQueues::Shipper{
        [this](DescriptorState &state) { descriptors_.RefreshQueued(*session_, state); },
        [this](DescriptorState &state, ElementOp op, unsigned access, const uint64_t *index,
               uint64_t count, uint64_t element_size, char *data) {
            data_.ApplyElements(state, op, access, index, count, element_size, data);
        }}};

    std::mutex finalize_mutex_;
    std::mutex contexts_mutex_;
    std::set<openfam::fam_context *> contexts_;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_FAM_IMPL_H_
