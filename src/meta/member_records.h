// The members of redundant regions (Members in common/fam_objects.h) as memory servers die and
// members are rebuilt: each member's state and server, kept in its region's record, so that a
// restarted metadata service knows which members are lost and where each copy is. The health
// monitor (metadata_health.cc) drives it. Internal to the metadata service.
#ifndef FAMPOOL_META_MEMBER_RECORDS_H_
#define FAMPOOL_META_MEMBER_RECORDS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "common/fam_objects.h"
#include "common/memory_server.h"
#include "meta/lmdb.h"
#include "meta/placement_options.h"
#include "meta/store_caches.h"
#include "meta/store_internals.h"

namespace fampool {

class MemberRecords {
  public:
    // `servers`: how many memory servers the cluster has; `server` reaches each by id.
    MemberRecords(std::shared_ptr<LmdbEnv> env, size_t servers, ServerLookup server,
                  KeyGrants &grants, const PlacementOptions &options)
        : env_(std::move(env)),
          servers_(servers),
          server_(std::move(server)),
          grants_(grants),
          options_(options) {}
    MemberRecords(const MemberRecords &) = delete;
    MemberRecords &operator=(const MemberRecords &) = delete;

    // Every redundant region.
    std::vector<RegionInfo> RedundantRegions();
    // Memory server `server_id` died: each member on it is lost (its bytes are read from the
    // others from now on), after the keys of every other member of those regions were revoked
    // (a server declared dead that was only stopped cannot write with the old ones when it
    // goes on). Returns the regions that changed.
    std::vector<RegionInfo> ServerLost(uint64_t server_id);
    // A server declared dead answers again (it was stopped, not killed): the keys of its lost
    // members stop working, so that a client that did not notice cannot read their stale bytes.
    void FenceLostMembers(uint64_t server_id);
    // Where a lost member may be rebuilt, among the servers `alive`: its own server back (a
    // replacement), else a spare, else (unless `automatic`) any server that holds no member
    // its loss could take along (RAID1: not the other copy's server; RAID5: no member at
    // all), in another failure domain first. None: no such server is alive.
    std::optional<uint64_t> RebuildTarget(const RegionInfo &region, size_t member,
                                          const std::set<uint64_t> &alive, bool automatic);
    // A member lost intact (kLostIntact, see fam_objects.h) whose server answers again with
    // its extent: healthy again as it is, with no copy. False, and nothing changed, when it is
    // no longer lost intact or its server holds no heap for it (a volatile region's, or a
    // replaced disk): it stays lost.
    bool TakeBack(uint64_t region_id, size_t member);
    // Puts the member on `target`, in a fresh extent, as kRebuilding: from now on clients
    // write there too. The keys of its partners are revoked then, so that no client goes on
    // with a view that leaves it out.
    RegionInfo StartRebuild(uint64_t region_id, size_t member, uint64_t target);
    // The member, still on `target`, holds its bytes again: kHealthy.
    void FinishRebuild(uint64_t region_id, size_t member, uint64_t target);
    // Its rebuild failed: the member, if still being rebuilt on `target`, is lost again (to be
    // rebuilt by a later attempt).
    void AbortRebuild(uint64_t region_id, size_t member, uint64_t target);
    // A member's whole extent, writable: what memory servers rebuilding it reach it with.
    ServerAccess MemberKey(const RegionInfo &region, size_t member);
    // Bytes each member's extent spans.
    static uint64_t ExtentSize(const RegionInfo &region);

  private:
    // The keys of the region's members that `revoke` picks stop working at their servers, and
    // none of the region's is granted across it (KeyGrants::Forget before and after).
    void RevokeMemberKeys(const RegionInfo &region,
                          const std::function<bool(const store::PlacedExtent &)> &revoke);
    // A rebuild of `member` on `target` ends: the member gets `state`, if it is still being
    // rebuilt there (false otherwise).
    bool EndRebuild(uint64_t region_id, size_t member, uint64_t target, uint8_t state);

    std::shared_ptr<LmdbEnv> env_;
    size_t servers_;
    ServerLookup server_;
    KeyGrants &grants_;
    const PlacementOptions &options_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_MEMBER_RECORDS_H_
