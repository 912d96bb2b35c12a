// The memory server's interface: what the metadata service and the client ask of the side that
// owns the heaps. The embedded model calls LocalMemoryServer in-process; the cluster model puts
// the same calls behind gRPC.
#ifndef FAMPOOL_COMMON_MEMORY_SERVER_H_
#define FAMPOOL_COMMON_MEMORY_SERVER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/data_path.h"
#include "common/fam_objects.h"
#include "common/memory_kind.h"

namespace fampool {

// A region's space on one memory server.
struct ExtentRef {
    uint64_t region_id = 0;
    bool persistent = false;
    bool copy = false;  // a RAID1 region's copy extent (a server may hold both of a region)
};

// Byte ranges of one extent: what ZeroExtents clears there.
struct ExtentRanges {
    ExtentRef extent;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (offset, nbytes)
};

// An item as the memory side sees it for copy, backup and restore: where it lies in its
// region's (possibly interleaved) space, and per server of the region how the other memory
// servers reach that server's part over the fabric, with the keys the client was granted after
// the permission check (so a memory server acting for the client never gets more access than
// the client has).
struct ItemLayout {
    struct Server {
        uint64_t id = 0;
        std::string fabric_address;  // empty: no fabric access (embedded model, or no key)
        uint64_t key = 0;
        uint64_t base = 0;  // remote address of the extent's physical offset p: base + p
        bool copy = false;  // the bytes are in the region's RAID1 copy extent on that server
        // The server's life (MemoryServerInfo::incarnation), when the caller knows it: a peer
        // that reached an earlier life drops its connections to it first. Empty: unknown.
        std::string incarnation;
    };
    ExtentRef extent;
    uint64_t offset = 0;  // virtual offset of the item in its region
    uint64_t size = 0;
    uint64_t interleave = 0;  // block size; 0: not interleaved
    // RAID5: the region's member count N (servers lists the N members), whose data bytes lie
    // as PlaceOfRaid5Byte says; 0 otherwise.
    uint64_t raid5_members = 0;
    std::vector<Server> servers;  // in the region's memory_servers order
    std::string name;             // for messages

    // Where item byte `at` lies (see PlaceOfByte in meta/client/metadata_service.h).
    BytePlace Locate(uint64_t at) const {
        if (raid5_members) return PlaceOfRaid5Byte(offset, interleave, raid5_members, at);
        return PlaceOfByte(offset, interleave, servers.size(), at);
    }
};

// The calls of redundant regions (RAID1, RAID5: memserver/redundancy.h does them), in the
// data path's own terms.

// A member of a redundant region as a memory server acting for a client reaches it: over the
// fabric, with the client's key for it.
struct MemberRef {
    uint64_t server_id = 0;
    ExtentRef extent;
    std::string fabric_address;  // empty: the member is lost (or the caller has no key)
    uint64_t key = 0;
    uint64_t base = 0;        // remote address of the extent's physical offset p: base + p
    uint32_t state = 0;       // MemberState (common/fam_objects.h)
    std::string incarnation;  // as ItemLayout::Server's
};

// RAID1: an atomic applied by the server of the first healthy member, which writes the word's
// new value to `mirror` (the copy; absent when it is lost) before it answers, holding the word
// meanwhile. `op_id` names the operation: a server that applied it already, or was sent its
// result as a copy, answers that result again instead of applying it twice.
struct MirroredAtomicCall {
    ExtentRef extent;
    uint64_t key = 0;  // the caller's fabric key for the word
    uint64_t offset = 0;
    AtomicOp op = AtomicOp::kSet;
    DataType type = DataType::kInt64;
    std::string operand, compare;  // SizeOf(type) bytes each; compare empty unless needed
    std::optional<MemberRef> mirror;
    std::string op_id;
};
struct MirroredAtomicResult {
    std::string result;          // the word's old value
    bool mirror_failed = false;  // the copy could not be written: its server did not answer
    bool busy = false;           // the copy's word was held by another operation: not applied
    std::string value;           // the word's value after the operation
    bool repeat = false;         // answered from memory: applied before, by an earlier call
};

// RAID1: the new value of a word a mirrored atomic changed, as the copy's server gets it.
// With `value` empty: no word, the atomics in `remembered` (op id, result, value after), which
// the extent holds (a rebuild copied them), for the copy's server to answer retries of.
struct MirrorWrite {
    ExtentRef extent;
    uint64_t key = 0;
    uint64_t offset = 0;
    std::string value;
    std::string op_id, result;  // the atomic's identity and what it returned (for a retry)
    struct Remembered {
        std::string op_id, result, value;
    };
    std::vector<Remembered> remembered;
};

// RAID5 work done by the memory server holding the parity of the stripes concerned, under its
// locks of those stripes: every change of a stripe and every read of a lost or rebuilding
// member goes through there, so parity always matches the data.
struct StripeCall {
    enum class Op : uint8_t {
        kRead,     // the pieces' bytes (a lost member's rebuilt from the others)
        kWrite,    // writes `data` into the pieces, updating parity
        kAtomic,   // one piece the size of `type`: applies the atomic, updating parity
        kRebuild,  // of stripes [first, end), those whose parity `self` holds: recomputes
                   // member `lost`'s unit there (when self is lost: its parity, from the data)
        kLease,    // takes the pieces' stripes for `lease_owner` (all or none, waiting at most
                   // `wait_ms`) until kRelease or `lease_ms`; replies "\1" when taken, else "\0"
        kRelease,  // gives back the pieces' stripes that `lease_owner` holds; replies "\1" when
                   // it held them all still ("\0": a lease ended first)
    };
    struct Piece {
        uint64_t stripe = 0;
        uint32_t column = 0;  // the data unit (0 <= column < N - 1)
        uint64_t within = 0;  // first byte in the unit
        uint64_t length = 0;
    };
    Op op = Op::kRead;
    uint64_t interleave = 0;
    std::vector<MemberRef> members;  // all N, in member order
    uint32_t self = 0;               // the receiving server's member index
    std::vector<Piece> pieces;
    std::string data;
    AtomicOp atomic_op = AtomicOp::kSet;
    DataType type = DataType::kInt64;
    std::string operand, compare;
    uint32_t lost = 0;
    uint64_t first = 0, end = 0;
    uint64_t lease_owner = 0;
    uint32_t lease_ms = 0, wait_ms = 0;
    bool incomplete = false;    // kRelease: the transfers to the stripes did not all end well
    bool target_empty = false;  // kRebuild: the lost member's extent as created at its marking
    std::string op_id;          // kAtomic: the operation's identity (MirroredAtomicCall::op_id)
};

// RAID1 rebuild: the server holding a healthy member copies bytes [begin, end) of it to the
// rebuilding member `target`, again until a chunk did not change while it was copied. Only the
// parts that hold data: `target` must be a new extent, whose holes read as zeros already.
struct ResyncCall {
    ExtentRef extent;
    MemberRef target;
    uint64_t begin = 0, end = 0;
};

// What a backup records besides the bytes. uid, gid and mode are the permissions that governed
// reading the item it copies (its region's in a REGION-level region): describing, listing and
// restoring the backup needs read permission by them, deleting it needs its owner (uid).
struct BackupInfo {
    std::string name;
    uint64_t size = 0;
    uint32_t uid = 0, gid = 0, mode = 0;
    uint64_t time = 0;  // seconds since the epoch
    uint32_t checksum = 0;
    std::string item_name;
};

// A key for remote access to part of an extent; the remote address of the extent's byte at
// physical offset p is base + p.
struct KeyGrant {
    uint64_t key = 0;
    uint64_t base = 0;
    std::string fabric_address;  // empty: the server has no fabric endpoint (embedded model)
    std::string heap_path;       // the extent's heap file (fabric_direct: path)
    std::string node;            // the server host's boot id
    // The server's same-node socket, where a client of its node presenting the key gets the
    // heap's descriptor for loads and stores (memserver/heap_socket.h); "": none.
    std::string socket;
    // The uid the server runs as: a client sends its key only to a socket that uid answers.
    uint32_t server_uid = 0;
    // The life of the server that granted it (MemoryServerInfo::incarnation); "": unknown.
    std::string incarnation;
};

// The owner, group and mode behind a grant: the region's in a REGION-level region, the item's
// in a DATAITEM one. `known` false: none given (the grant then opens no same-node descriptor).
struct Permissions {
    uint32_t uid = 0, gid = 0, mode = 0;
    bool known = false;
};

// This host's boot id: two processes with the same one run on the same node.
std::string NodeIdentity();

// RevokeKeys offset that closes every grant of the extent, whole-extent ones included.
constexpr uint64_t kAllGrants = ~uint64_t{0};

class MemoryServer {
  public:
    virtual ~MemoryServer() = default;
    virtual uint64_t id() const = 0;
    // Its memory's kind and speed (intent-based placement). Unknown (known false) by default.
    virtual MemoryProfile Profile() { return MemoryProfile{}; }
    // Whether its calls travel to another process (a round trip each) rather than run here.
    virtual bool remote() const { return false; }

    // Creates the extent's heap, `size` bytes long and sparse. `reserve` is what the region
    // counts on there (its share of the region's size): with a capacity set, refused with
    // FAM_ERR_NO_SPACE unless the bytes the server's heaps hold (written pages) plus reserve
    // fit in it. ResizeExtent's reserve is what a grown share adds (0 when it shrinks).
    virtual void CreateExtent(ExtentRef extent, uint64_t size, uint64_t reserve) = 0;
    virtual void DestroyExtent(ExtentRef extent) = 0;
    virtual void ResizeExtent(ExtentRef extent, uint64_t old_size, uint64_t new_size,
                              uint64_t reserve) = 0;
    // Makes [offset, offset + nbytes) read as zeros (done to every deallocated item).
    virtual void Zero(ExtentRef extent, uint64_t offset, uint64_t nbytes) = 0;
    // The same for many ranges of many extents; a remote server takes them in one call (the
    // metadata service clears every item deallocated in a round, whatever its region, in one
    // call per memory server).
    virtual void ZeroExtents(const std::vector<ExtentRanges> &extents) {
        for (const ExtentRanges &each : extents) {
            for (auto [offset, nbytes] : each.ranges) Zero(each.extent, offset, nbytes);
        }
    }
    // FAM-to-FAM copy of src bytes [src_offset, src_offset + nbytes) to dest bytes from
    // dest_offset: the part whose source bytes lie on this server. Destination bytes on this
    // server are copied within its heaps; those on other servers are written there over the
    // fabric. The bytes never pass through the client, which calls each server holding source
    // bytes.
    virtual void Copy(const ItemLayout &src, uint64_t src_offset, const ItemLayout &dest,
                      uint64_t dest_offset, uint64_t nbytes) = 0;

    // Backup of the item's info.size first bytes into the archive under info.name, with a
    // checksum; stripes on other servers are read from there over the fabric. Throws
    // FAM_BACKUP_NOT_CREATED when the name is taken.
    virtual BackupInfo Backup(const ItemLayout &item, const BackupInfo &info) = 0;
    // The calls below act for `caller` as the backup's recorded permissions allow (BackupInfo):
    // FAM_ERR_NOPERM otherwise, naming the backup and the permissions.
    // Reads a backup's description; throws FAM_BACKUP_NOTFOUND when it does not exist.
    virtual BackupInfo DescribeBackup(const std::string &name, const Caller &caller) = 0;
    // Verifies the checksum, then writes the backup into the item from its first byte (parts
    // on other servers over the fabric). Throws FAM_ERR_RESOURCE on a checksum mismatch and
    // FAM_ERR_OUTOFRANGE when the item is too small, in both cases writing nothing.
    virtual void Restore(const std::string &name, const ItemLayout &item, const Caller &caller) = 0;
    virtual void DeleteBackup(const std::string &name, const Caller &caller) = 0;
    // The backups `caller` may read.
    virtual std::vector<BackupInfo> ListBackups(const Caller &caller) = 0;

    // Applies an atomic at a physical offset of the extent, with the server's CPU: for what
    // the fabric provider cannot do (128-bit operations, types or operations missing from its
    // atomics table). `op` and `type` are AtomicOp and DataType values (transport/transport.h).
    // `key` is the caller's fabric key for those bytes, checked as the fabric would check it:
    // a revoked or read-only key is refused with FAM_ERR_NOPERM (servers without keys, as in
    // the embedded model, ignore it).
    virtual void Atomic(ExtentRef extent, uint64_t key, uint64_t offset, int op, int type,
                        const void *operand, const void *compare, void *result) = 0;

    // Memory-side element operations (ElementOp) on elements of this server's part of an
    // extent: element i at physical offset offsets[i], `data` as in Channel::ApplyElements.
    // `key` must grant the span of the elements (write access unless kGather), checked as
    // Atomic checks it, before any element is touched.
    virtual void ApplyElements(ExtentRef extent, uint64_t key, ElementOp op, uint64_t element_size,
                               const std::vector<uint64_t> &offsets, char *data) = 0;

    // Registers [offset, offset + size) of the extent (the whole extent when size is 0) for
    // remote reads, or reads and writes, and returns its key. The metadata service calls this
    // only after checking the caller's permission, which `permissions` records. Grants are
    // cached and shared.
    virtual KeyGrant GrantKey(ExtentRef extent, uint64_t offset, uint64_t size, bool writable,
                              const Permissions &permissions) = 0;
    // GrantKey, failing (FAM_ERR_RPC) when the server does not answer within `bound`: for the
    // members of redundant regions, whose clients wait for a member that gave no key until
    // it answers or is declared lost, where a lookup must not wait the control path's whole
    // timeout for one server that is stopped.
    virtual KeyGrant GrantKeyWithin(ExtentRef extent, uint64_t offset, uint64_t size, bool writable,
                                    const Permissions &permissions,
                                    std::chrono::milliseconds bound) {
        (void)bound;
        return GrantKey(extent, offset, size, writable, permissions);
    }
    // Closes the item-level grants that start at `offset` (their keys stop working), or every
    // grant of the extent when offset is kAllGrants.
    virtual void RevokeKeys(ExtentRef extent, uint64_t offset) = 0;
    // This process is done with the server (fam_finalize): a session it opened there ends.
    virtual void EndSession() {}
    // Redundant regions (the calls above). Memory servers that keep none (the embedded model's,
    // which places no redundant region) refuse them with FAM_ERR_INVALIDOP.
    // Applies a RAID1 atomic and mirrors it; the copy's loss is reported, not thrown.
    virtual MirroredAtomicResult MirroredAtomic(const MirroredAtomicCall &call);
    virtual void Mirror(const MirrorWrite &call);
    // The bytes kRead reads, or the old value kAtomic replaced; "" otherwise. A zero timeout:
    // the server's usual bound, lengthened for the bytes carried.
    virtual std::string Stripe(const StripeCall &call,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
    virtual void Resync(const ResyncCall &call, std::chrono::milliseconds timeout);
    // Makes the pages of `extent` for `ranges` ([first, last) pairs) present ahead of writes
    // there (a rebuild's, a large put's), in the background; returns once `key` is checked.
    virtual void Populate(ExtentRef extent, uint64_t key,
                          const std::vector<std::pair<uint64_t, uint64_t>> &ranges);
    // A stripe call whose reply the caller does not need (a release of leases it held
    // throughout): sent without waiting for the reply where the client can, else as Stripe.
    virtual void StripeUnanswered(const StripeCall &call) { Stripe(call); }
};

}  // namespace fampool

#endif  // FAMPOOL_COMMON_MEMORY_SERVER_H_
