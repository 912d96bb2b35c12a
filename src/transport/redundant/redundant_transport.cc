#include "transport/redundant/redundant_transport.h"

#include <random>
#include <thread>

#include "common/error.h"

namespace fampool {

void NoMemberLeft(const ItemInfo &item, uint64_t at, const std::vector<size_t> &members) {
    RequireMemberKeys(item, members);
    Fail(openfam::FAM_ERR_RESOURCE,
         "item \"{}\" of region \"{}\": byte {} has no live member left (more memory servers "
         "lost than its redundancy survives)",
         item.name, item.region.name, at);
}

void RequireMemberKeys(const ItemInfo &item, const std::vector<size_t> &members) {
    for (size_t m : members) {
        if (StateOf(item.region, m) != kLost && !MemberReachable(item, m)) {
            Fail(openfam::FAM_ERR_RPC,
                 "item \"{}\" of region \"{}\": member {} on memory server {} has no key (its "
                 "server did not answer the metadata service)",
                 item.name, item.region.name, m, MemberServer(item.region, m));
        }
    }
}

Skipped SkippedBy(const ItemInfo &item) {
    Skipped skipped;
    for (size_t m = 0; m < MemberCount(item.region); ++m) {
        if (!MemberHealthy(item, m)) {
            skipped.push_back({m, StateOf(item.region, m), MemberServer(item.region, m)});
        }
    }
    return skipped;
}

bool Rejoined(const Skipped &skipped, const ItemInfo &now) {
    for (const SkippedMember &then : skipped) {
        if (!MemberWritable(now, then.member)) continue;
        if (then.state == kLost || MemberServer(now.region, then.member) != then.server) {
            return true;
        }
    }
    return false;
}

bool RedundantBinding::valid() const {
    std::shared_ptr<const View> now = view();
    for (const auto &binding : now->copies) {
        if (binding && !binding->valid()) return false;
    }
    for (const auto &binding : now->columns) {
        if (binding && !binding->valid()) return false;
    }
    return true;
}

RedundantTransport::RedundantTransport(std::unique_ptr<Transport> inner,
                                       std::unique_ptr<Transport> members,
                                       RedundancyServices services)
    : inner_(std::move(inner)), members_(std::move(members)), services_(std::move(services)) {
    std::random_device random;
    client_id_ = (static_cast<uint64_t>(random()) << 32) ^ random();
}

std::string RedundantTransport::NextOpId() {
    uint64_t id[2] = {client_id_, sequence_.fetch_add(1)};
    return std::string(reinterpret_cast<const char *>(id), sizeof id);
}

std::shared_ptr<const RedundantBinding::View> RedundantTransport::MakeView(const ItemInfo &item) {
    auto view = std::make_shared<RedundantBinding::View>();
    view->item = item;
    view->fetched = std::chrono::steady_clock::now();
    view->dead_generation = dead_generation_.load();
    const RegionInfo &region = item.region;
    size_t k = region.memory_servers.size();
    // Members are reached over the fabric even on their own node: a dead server's heap file
    // would still take loads and stores.
    auto fabric_only = [](ServerAccess access) {
        access.heap_path.clear();
        access.node.clear();
        return access;
    };
    if (region.attributes.redundancyLevel == RAID1) {
        for (size_t c = 0; c < 2; ++c) {
            ItemInfo copy = item;
            copy.member_access.clear();
            copy.access.clear();
            copy.region.memory_servers = c == 0 ? region.memory_servers : region.copy_servers;
            for (size_t s = 0; s < k && c * k + s < item.member_access.size(); ++s) {
                copy.access.push_back(fabric_only(item.member_access[c * k + s]));
            }
            view->copies.push_back(members_->Attach(copy));
        }
    } else {
        for (size_t m = 0; m < k; ++m) {
            ItemInfo column;
            column.region_id = item.region_id;
            column.size = uint64_t{1} << 47;  // physical addressing of the member's extent
            column.name = item.name;
            column.region = region;
            column.region.memory_servers = {region.memory_servers[m]};
            column.region.interleave_size = 0;
            if (m < item.member_access.size()) {
                column.access.push_back(fabric_only(item.member_access[m]));
            }
            view->columns.push_back(members_->Attach(column));
        }
    }
    return view;
}

std::shared_ptr<Binding> RedundantTransport::Attach(const ItemInfo &item) {
    if (!IsRedundant(item.region)) return inner_->Attach(item);
    auto binding = std::make_shared<RedundantBinding>();
    binding->current = MakeView(item);
    return binding;
}

void *RedundantTransport::Map(Binding &item, bool writable) {
    if (auto *redundant = dynamic_cast<RedundantBinding *>(&item)) {
        const ItemInfo &info = redundant->view()->item;
        Fail(openfam::FAM_ERR_INVALIDOP,
             "fam_map of item \"{}\": its region \"{}\" is {}, and loads and stores through a "
             "mapping would reach one of its members only; use fam_get and fam_put",
             info.name, info.region.name,
             info.region.attributes.redundancyLevel == RAID1 ? "RAID1" : "RAID5");
    }
    return inner_->Map(item, writable);
}

std::shared_ptr<const RedundantBinding::View> RedundantTransport::Fresh(RedundantBinding &binding,
                                                                        bool stale) {
    std::shared_ptr<const RedundantBinding::View> view = binding.view();
    if (!stale && view->dead_generation != dead_generation_.load()) {
        std::lock_guard<std::mutex> lock(dead_mutex_);
        for (size_t m = 0; m < MemberCount(view->item.region) && !stale; ++m) {
            stale = StateOf(view->item.region, m) != kLost &&
                    dead_.count(MemberServer(view->item.region, m));
        }
    }
    bool young = std::chrono::steady_clock::now() - view->fetched < kViewLease;
    if (!stale && (young || !Degraded(view->item.region))) return view;
    ItemInfo item = services_.refresh(view->item.region_id, view->item.offset);
    std::shared_ptr<const RedundantBinding::View> fresh = MakeView(item);
    if (item.region.member_state != view->item.region.member_state) NoteChange();
    {
        // What this view says is lost, the other views learn.
        std::lock_guard<std::mutex> lock(dead_mutex_);
        bool grew = false;
        for (size_t m = 0; m < MemberCount(item.region); ++m) {
            if (StateOf(item.region, m) == kLost) {
                grew |= dead_.insert(MemberServer(item.region, m)).second;
            } else {
                dead_.erase(MemberServer(item.region, m));  // back (rebuilt, or being rebuilt)
            }
        }
        if (grew) dead_generation_.fetch_add(1);
    }
    std::lock_guard<std::mutex> lock(binding.mutex);
    binding.current = fresh;
    return fresh;
}

void RedundantTransport::NoteChange() {
    changed_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count());
}

bool RedundantTransport::Recover(RedundantBinding &binding, bool redo) {
    std::shared_ptr<const RedundantBinding::View> view = binding.view();
    std::set<uint64_t> servers;
    for (size_t m = 0; m < MemberCount(view->item.region); ++m) {
        servers.insert(MemberServer(view->item.region, m));
    }
    std::shared_ptr<const RedundantBinding::View> fresh;
    try {
        services_.report(std::vector<uint64_t>(servers.begin(), servers.end()));
        fresh = Fresh(binding, /*stale=*/true);
    } catch (const Failure &failure) {
        // The item itself refused (gone, or no longer the caller's): that is the answer. The
        // metadata service slow or restarting: a round that found nothing changed.
        int code = failure.fam_error();
        if (code != openfam::FAM_ERR_RPC && code != openfam::FAM_ERR_TIMEOUT &&
            code != openfam::FAM_ERR_LIBFABRIC) {
            throw;
        }
        if (redo) std::this_thread::sleep_for(kUnchangedRecoveryPause);
        return false;
    }
    // Against this thread's view before: another thread's Fresh may have fetched the change
    // already (and noted it, which the budgets see).
    bool changed = fresh->item.region.member_state != view->item.region.member_state;
    if (redo && !changed) std::this_thread::sleep_for(kUnchangedRecoveryPause);
    return changed;
}

}  // namespace fampool
