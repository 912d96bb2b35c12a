// One stream of fabric operations (a fam object's or a fam_context's): its own RDM endpoint, a
// completion counter that says how many of its operations are done, and a completion queue that
// only receives failures, so that quiet waits for this channel's operations only and can say
// which operation failed and why.
//
// Every wait is bounded by the configured timeout. Two providers here never report an operation
// the target refuses (an invalid or revoked key, an address outside the registration): tcp
// drops the connection with the operation, shm drops the operation. For tcp the channel finds
// out by probing, when its operations stall, the same keys and address ranges with one-byte
// atomics, which tcp does report; for shm the operation can only time out.
#ifndef FAMPOOL_TRANSPORT_FABRIC_FABRIC_CHANNEL_H_
#define FAMPOOL_TRANSPORT_FABRIC_FABRIC_CHANNEL_H_

#include <chrono>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/async_queue.h"
#include "fabric/connection_reset.h"
#include "fabric/fabric_context.h"
#include "fam/fam_exception.h"

namespace fampool {

class FabricChannel : public Channel {
  public:
    // Opens the endpoint at once unless `lazily`: then the first fabric operation opens it
    // (a channel whose items all lie on mapped heaps never needs one).
    explicit FabricChannel(std::shared_ptr<FabricContext> context, bool lazily = false);
    ~FabricChannel() override;

    void Read(const std::shared_ptr<Binding> &item, uint64_t offset, void *local, uint64_t nbytes,
              bool blocking) override;
    void Write(const std::shared_ptr<Binding> &item, uint64_t offset, const void *local,
               uint64_t nbytes, bool blocking) override;
    // One tag and one wait for all the copies' writes (RAID1's two round trips overlap).
    void WriteCopies(const std::vector<std::shared_ptr<Binding>> &items, uint64_t offset,
                     const void *local, uint64_t nbytes) override;
    void Elements(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                  uint64_t count, uint64_t element_size, bool to_fam, bool blocking) override;
    void ApplyElements(const std::shared_ptr<Binding> &item, ElementOp op, const uint64_t *index,
                       uint64_t count, uint64_t element_size, char *data) override;
    void Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type, const void *operand,
                const void *compare, void *result) override;
    void Fence() override;
    void Quiet() override;
    void Drain() override;
    uint64_t Pending() override;
    // The most bytes of callers' buffers this channel held registered at once (where the
    // provider wants local buffers registered; else 0): at most kRegistrationCache windows
    // of kRegistrationWindow bytes (and a piece) whatever the size of a call.
    uint64_t MostRegistered();

  private:
    using Clock = std::chrono::steady_clock;
    // What an operation was, kept in its context value (kProbe: a stall probe).
    enum Kind : uint8_t { kProbe = 0, kRead = 1, kWrite = 2, kAtomic = 3 };
    enum class Outcome { kDone, kTimedOut, kRefused };
    struct Failed {
        openfam::Fam_Error error;
        std::string message;
    };
    // A key and remote address range this channel's RMA used since everything last completed:
    // what a probe checks.
    struct Touched {
        uint64_t server_id;
        fi_addr_t address;
        uint64_t key;
        bool write;
        uint64_t low, high;
    };
    // Registered scratch space: atomic operands and results, probe results, and the bounce
    // buffer of small blocking transfers when the provider wants local buffers registered.
    static constexpr size_t kBounce = 4096;
    static constexpr size_t kProbeSlots = 64;
    // Non-fetching atomics in flight at most: each keeps its operand in a slot of its own.
    static constexpr size_t kOperandSlots = 64;
    struct alignas(64) Scratch {
        unsigned char operands[kOperandSlots][16];
        unsigned char results[kOperandSlots][16];  // of those sent as fetching (shm)
        unsigned char operand[16];
        unsigned char compare[16];
        unsigned char result[16];
        unsigned char zero[8];
        unsigned char probe[kProbeSlots];
        char bounce[kBounce];
    };
    struct LocalRegistration {
        const char *start;
        uint64_t length;
        FidPtr<fid_mr> mr;
    };

    void Open();
    // Starts a call: `blocking` calls collect their own failures; others leave them to Quiet.
    void Begin(bool blocking);
    // Starts a fence, quiet or drain.
    void BeginWait();
    // Before a transfer: waits for the channel's non-fetching atomics in flight.
    void AfterAtomics(Clock::time_point deadline);
    Clock::time_point Deadline() const;
    // Posts the transfer of item bytes [offset, offset + nbytes), split at interleave blocks.
    void Transfer(const FabricBinding &item, uint64_t offset, char *local, uint64_t nbytes,
                  void *desc, bool write, Clock::time_point deadline);
    // Whether a blocking transfer of `nbytes` of the item goes through StagedTransfer: a
    // striped item whose blocks would take enough more operations by iov than staged to pay
    // for the copy (small blocks).
    bool Stages(const FabricBinding &item, uint64_t nbytes) const;
    // A blocking transfer of a striped item through stage_, one operation per server and
    // chunk of kStageBytes; waits for it (fabric_channel_striped.cc).
    void StagedTransfer(const FabricBinding &item, uint64_t offset, char *local, uint64_t nbytes,
                        bool write, Clock::time_point deadline);
    // Transfer for an item striped over several servers.
    void TransferStriped(const FabricBinding &item, uint64_t offset, char *local, uint64_t nbytes,
                         void *desc, bool write, Clock::time_point deadline);
    // Before a put of kPagesAheadFrom bytes or more: asks each server it reaches to make the
    // pages of its part present (MemoryServer::Populate), unless this channel asked for them
    // before (fabric_channel_pages.cc).
    void MakePagesAhead(const FabricBinding &item, uint64_t offset, uint64_t nbytes);
    // The most bytes one operation moves: the provider's largest message, at most
    // kLargestOperation.
    uint64_t LargestOperation() const;
    // Posts one operation: `count` local pieces to or from [physical, physical + length) of
    // server `index` of the item.
    void PostPieces(const FabricBinding &item, size_t index, uint64_t physical, uint64_t length,
                    iovec *pieces, void **descs, size_t count, bool write,
                    Clock::time_point deadline);
    // Calls `post` until the provider takes the operation, driving progress while it is full.
    template <typename PostCall>
    void Post(PostCall &&post, const char *call, const FabricBinding::Server &server,
              Clock::time_point deadline);
    // `post`; when it is this endpoint's first operation to the server and the domain needs
    // to know the endpoint's sockets (drops_connections_at_close), notes in sockets_ which
    // ones it opened (its connection to the server).
    template <typename PostCall>
    ssize_t PostNotingSockets(PostCall &post, uint64_t server_id);
    void Touch(const FabricBinding::Server &server, bool write, uint64_t remote, uint64_t length);
    const FabricBinding::Server &Reachable(const FabricBinding &item, size_t index) const;
    // The descriptor of a caller's buffer where the provider wants local buffers registered
    // (else null): a registration of the whole buffer, from registrations_ or made now; for a
    // buffer of more than kRegistrationWindow bytes, kByWindow: PostPieces registers it window by
    // window (WindowDescriptor).
    void *LocalDescriptor(const void *local, uint64_t length, Clock::time_point deadline);
    // The descriptor of a registration of [start, start + length), from registrations_ or made
    // now (the least recently used ones dropped, once what is in flight completed, when
    // kRegistrationCache are held).
    void *Registered(const char *start, uint64_t length, Clock::time_point deadline);
    // The descriptor for a piece of the buffer LocalDescriptor last answered kByWindow for: a
    // registration of the window of kRegistrationWindow bytes of that buffer around it.
    void *WindowDescriptor(const char *piece, uint64_t length, Clock::time_point deadline);
    void Fallback(const FabricBinding &item, const FabricBinding::Place &place, AtomicOp op,
                  DataType type, const void *operand, const void *compare, void *result,
                  Clock::time_point deadline);

    // Waits until every posted operation completed (well or not), the deadline passed, or a
    // probe found an operation the target refused.
    Outcome WaitAll(Clock::time_point deadline);
    void Probe();
    // WaitAll, and when it does not end in kDone: reopens the endpoint (what was in flight is
    // lost) and throws the timeout or refusal (`raise`), or keeps it for Quiet. After failures
    // it reopens the endpoint too, failures kept.
    void Settle(Clock::time_point deadline, bool raise);
    // A fresh endpoint: what was in flight on the old one is gone. Returns why a fresh one could
    // not be opened (the channel is then closed until the next call), or "".
    std::string Reopen();
    // Closes the endpoint and what is bound to it, endpoint first (a counter or queue still
    // bound cannot close, and would leak its file descriptors).
    void CloseEndpoint();
    // Before CloseEndpoint with operations not all completed, where closing could then crash
    // (reads, half_received_reads_crash) or leak them (closing_leaks_operations): aborts this
    // endpoint's connections to the busy servers and drives the provider until it has failed
    // what they carried and closed them (fabric_channel_completion.cc).
    void EndInFlight();
    // Ends a non-blocking call: remembers how many operations had been posted when it ended.
    void EndNonBlocking(bool blocking);
    [[noreturn]] void GiveUp(Outcome outcome);
    std::string GiveUpMessage(Outcome outcome) const;
    // Moves failures from the queue to the current call, to Quiet's list, or to refusals_.
    void Reap();
    // Counted failures that never reached the queue: they cannot be attributed.
    void CollectUnreported(std::vector<Failed> *into);
    // Settles, then throws the current blocking call's failures.
    void Finish(Clock::time_point deadline);
    [[noreturn]] void ThrowFirst(std::vector<Failed> failures, uint64_t dropped = 0);

    // Element operations done by the memory servers' CPUs (fabric_elements.cc): one request per
    // server holding any of the elements (more when a server's part is larger than one request
    // carries), sent to all of them at once. Unlocked: it reaches the servers over gRPC only.
    // Elements that cross from one server's interleave block to another's (an element size
    // that does not divide the interleave) go by RmaElements.
    void MemorySide(const FabricBinding &item, ElementOp op, const uint64_t *index, uint64_t count,
                    uint64_t element_size, char *data);
    // A gather or scatter by one RMA per run of adjacent elements (blocking: waits for them).
    void RmaElements(const FabricBinding &item, const ElementPlan &plan, char *local,
                     uint64_t count, uint64_t element_size, bool to_fam, bool blocking);
    // A gather or scatter done by MemorySide: at once when `blocking`, after the channel's
    // earlier operations; otherwise on the background queue, which fence and quiet wait for.
    void ElementsOnServers(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                           uint64_t count, uint64_t element_size, bool to_fam, bool blocking);
    // Whether the plan's elements are adjacent in the item (one RMA moves them all).
    static bool Adjacent(const ElementPlan &plan, uint64_t count);
    // Whether a gather or scatter of `count` elements goes to MemorySide.
    bool ToMemorySide(uint64_t count) const;

    // Non-blocking copies larger than kDirectInline for items on same-node heaps
    // (FabricBinding::direct): they overlap the caller, as on the embedded model.
    static constexpr uint64_t kDirectInline = 64 * 1024;
    void CopyDirect(const std::shared_ptr<Binding> &item, uint64_t offset, char *local,
                    uint64_t nbytes, bool write, bool blocking);

    std::shared_ptr<FabricContext> context_;
    FabricDomain &domain_;
    AsyncQueue direct_queue_;
    std::mutex mutex_;
    FabricEndpoint endpoint_;
    std::unique_ptr<Scratch> scratch_;
    // StagedTransfer's buffer, allocated at its first use.
    static constexpr uint64_t kStageBytes = 1 << 20;
    // What one operation costs, in bytes copied in the same time (Stages).
    static constexpr uint64_t kOperationBytes = 64 << 10;
    std::unique_ptr<char[]> stage_;
    FidPtr<fid_mr> scratch_mr_;
    void *scratch_desc_ = nullptr;
    std::list<LocalRegistration> registrations_;           // most recently used first
    uint64_t registered_bytes_ = 0, most_registered_ = 0;  // by registrations_ (MostRegistered)
    const char *window_buffer_ = nullptr;                  // LocalDescriptor's last kByWindow
    uint64_t window_buffer_length_ = 0;
    bool counter_waits_ = true;  // false: the counter has no wait object; poll and nap

    // On the current endpoint:
    uint64_t posted_ = 0;    // operations posted
    uint64_t probes_ = 0;    // of them, stall probes (their completions are not progress)
    uint64_t settled_ = 0;   // posted_ when all had last completed
    uint64_t reported_ = 0;  // failures read from the queue
    uint64_t failures_seen_ = 0;
    bool writes_in_flight_ = false;  // writes or atomics posted since all last completed
    bool reads_in_flight_ = false;   // reads posted since all last completed
    // The sockets each server's first operation on this endpoint opened (PostNotingSockets):
    // its connection to that server, among others the process opened meanwhile.
    std::map<uint64_t, std::vector<SocketName>> sockets_;
    // The ranges (first byte, end) of each extent (server, region, persistent) whose pages
    // MakePagesAhead had its server make.
    std::map<std::tuple<uint64_t, uint64_t, bool>, std::map<uint64_t, uint64_t>> pages_made_;
    size_t atomics_in_flight_ = 0;  // non-fetching atomics posted since all last completed
    // posted_ at the end of each non-blocking call not known to be complete, oldest first:
    // Pending counts calls, not the operations they were split into.
    std::deque<uint64_t> call_ends_;
    // Servers with operations since all last completed, and their addresses.
    std::map<uint64_t, fi_addr_t> busy_servers_;
    std::vector<Touched> touched_;
    std::vector<Failed> refusals_;

    uint64_t next_tag_ = 0;
    uint64_t current_tag_ = 0;      // the blocking call in progress; 0: none
    std::vector<Failed> mine_;      // its failures
    std::vector<Failed> deferred_;  // failures of non-blocking operations, for Quiet
    uint64_t deferred_dropped_ = 0;
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_FABRIC_FABRIC_CHANNEL_H_
