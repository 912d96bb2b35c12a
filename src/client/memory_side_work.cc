#include "client/memory_side_work.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include "client/descriptor_state.h"
#include "common/error.h"
#include "memserver/archive.h"
#include "transport/redundant/redundant_channel.h"

namespace fampool {
namespace {

struct WaitObject {
    static constexpr uint64_t kMagic = 0x74696177706d6166ull;  // "fampwait"
    uint64_t magic = kMagic;
    std::future<void> done;
};

void *Launch(std::function<void()> operation) {
    auto *wait = new WaitObject();
    wait->done = std::async(std::launch::async, std::move(operation));
    return wait;
}

// An item as the memory servers see it, with the fabric keys this client was granted for it
// (read-only or read-write, as the permission check decided): a memory server that moves the
// item's bytes to or from another server for this client uses them, and so can do no more than
// the client could.
ItemLayout LayoutOf(const ItemInfo &item) {
    const RegionInfo &region = item.region;
    ItemLayout layout;
    layout.extent = ExtentRef{item.region_id, region.attributes.memoryType == PERSISTENT};
    layout.offset = item.offset;
    layout.size = item.size;
    layout.interleave = region.memory_servers.size() > 1 ? region.interleave_size : 0;
    layout.name = item.name;
    for (size_t index = 0; index < region.memory_servers.size(); ++index) {
        ItemLayout::Server &server = layout.servers.emplace_back();
        server.id = region.memory_servers[index];
        if (index < item.access.size() && item.access[index].server_id == server.id) {
            server.fabric_address = item.access[index].fabric_address;
            server.key = item.access[index].key;
            server.base = item.access[index].base;
            server.incarnation = item.access[index].incarnation;
        }
    }
    if (layout.servers.empty()) {
        Fail(openfam::FAM_ERR_INVALID, "{} is in a region with no memory servers", Describe(item));
    }
    return layout;
}

void RunAll(std::vector<std::function<void()>> calls);

// The memory server holding an item's first byte: it writes the item's backups and restores
// into it.
MemoryServer &HomeOf(Session &session, const ItemLayout &item) {
    return session.Server(item.servers.at(item.Locate(0).index).id);
}

// A redundant item as the memory servers see it (memory_server.h, ItemLayout). RAID5: its
// members (refused while one is not healthy: a backup or restore would need the lost one's
// bytes). RAID1, `copy` 0: for each extent, the healthy member (the first copy's when both
// are); `copy` 1: the other member where it takes writes, else that same one again (a second
// restore of the same bytes there changes nothing).
ItemLayout RedundantLayout(const ItemInfo &item, int copy) {
    const RegionInfo &region = item.region;
    ItemLayout layout;
    layout.extent = ExtentRef{item.region_id, region.attributes.memoryType == PERSISTENT};
    layout.offset = item.offset;
    layout.size = item.size;
    layout.name = item.name;
    size_t k = region.memory_servers.size();
    auto add = [&](size_t m) {
        ItemLayout::Server &server = layout.servers.emplace_back();
        server.id = MemberServer(region, m);
        server.copy = region.attributes.redundancyLevel == RAID1 && m >= k;
        if (MemberReachable(item, m)) {
            server.fabric_address = item.member_access[m].fabric_address;
            server.key = item.member_access[m].key;
            server.base = item.member_access[m].base;
            server.incarnation = item.member_access[m].incarnation;
        }
    };
    if (region.attributes.redundancyLevel == RAID5) {
        for (size_t m = 0; m < k; ++m) {
            if (!MemberHealthy(item, m)) {
                Fail(openfam::FAM_ERR_RESOURCE,
                     "{} is in RAID5 region \"{}\", whose member {} (memory server {}) is lost: "
                     "copy, backup and restore wait for its rebuild (fampool rebuild)",
                     Describe(item), region.name, m, MemberServer(region, m));
            }
        }
        layout.interleave = region.interleave_size;
        layout.raid5_members = k;
        for (size_t m = 0; m < k; ++m) add(m);
        return layout;
    }
    layout.interleave = k > 1 ? region.interleave_size : 0;
    for (size_t s = 0; s < k; ++s) {
        size_t first = MemberHealthy(item, s) ? s : k + s;
        if (!MemberHealthy(item, first)) NoMemberLeft(item, 0, {s, k + s});
        size_t other = first == s ? k + s : s;
        add(copy == 1 && MemberWritable(item, other) ? other : first);
    }
    return layout;
}

// After a restore into a RAID5 item: every member recomputes the parity of the item's stripes
// it holds parity of, from the data just written.
void RecomputeParity(Session &session, const ItemInfo &item) {
    uint64_t unit = item.region.interleave_size, row = unit * DataColumns(item.region);
    std::vector<std::function<void()>> calls;
    for (size_t m = 0; m < MemberCount(item.region); ++m) {
        calls.push_back([&session, &item, row, m] {
            StripeCall call = StripeCallOf(item, StripeCall::Op::kRebuild, m);
            call.lost = static_cast<uint32_t>(m);
            call.first = item.offset / row;
            call.end = (item.offset + item.size + row - 1) / row;
            session.Server(MemberServer(item.region, m)).Stripe(call, std::chrono::minutes(10));
        });
    }
    RunAll(std::move(calls));
}

// Whether a memory-side operation on a redundant item that failed this way may succeed on its
// members as the metadata service describes them after a check: a member's server died under
// it (the call or a transfer between servers failed), or restarted (its old keys are refused).
bool Recoverable(const Failure &failure) {
    switch (failure.fam_error()) {
        // A key a server refused: revoked when a member was lost or began its rebuild (a
        // permission really withdrawn is refused by the metadata service when the item is
        // fetched again, below).
        case openfam::FAM_ERR_NOPERM:
        case openfam::FAM_ERR_RPC:
        case openfam::FAM_ERR_LIBFABRIC:
        case openfam::FAM_ERR_TIMEOUT:
            return true;
        default:
            return false;
    }
}

// Runs `operation` on a redundant item as it is now (on a wait object's thread). After a
// recoverable failure, has the item's servers checked (a dead one's members are marked lost),
// fetches the item again (its healthy members, the keys granted now) and runs it once more
// while its RecoveryBudget lasts: backup and restore are repeatable, as the data path's
// transfers are.
void WithRecovery(Session &session, const ItemInfo &item,
                  const std::function<void(const ItemInfo &)> &operation) {
    ItemInfo now = item;
    RecoveryBudget budget(std::chrono::milliseconds(session.config.fabric_timeout_ms));
    for (;;) {
        std::optional<Failure> failed;
        try {
            return operation(now);
        } catch (const Failure &failure) {
            if (!Recoverable(failure)) throw;
            failed = failure;
        }
        std::vector<uint64_t> servers;
        for (size_t m = 0; m < MemberCount(now.region); ++m) {
            uint64_t id = MemberServer(now.region, m);
            if (std::find(servers.begin(), servers.end(), id) == servers.end()) {
                servers.push_back(id);
            }
        }
        session.metadata->ReportFailure(servers);
        ItemInfo fresh = session.metadata->GetItem(now.region_id, now.offset, session.caller);
        RequireSameItem(fresh, now);
        if (failed->fam_error() == openfam::FAM_ERR_NOPERM) {
            // Made again only with keys granted since (the refused one was revoked); the same
            // keys: the permission itself is missing.
            bool new_keys = false;
            for (size_t m = 0; m < fresh.member_access.size() && m < now.member_access.size(); ++m)
                new_keys |= fresh.member_access[m].key != now.member_access[m].key;
            if (!new_keys) throw *failed;
        }
        bool changed = fresh.region.member_state != now.region.member_state;
        if (!changed) std::this_thread::sleep_for(kUnchangedRecoveryPause);
        budget.Recovered(changed);
        if (!changed && budget.Spent()) throw *failed;  // (see RecoveryBudget)
        now = std::move(fresh);
    }
}

// What restoring backup `name` into `item` takes (on a wait object's thread): the item's home
// server writes it into every server of the item; for RAID1 into each copy in turn, for RAID5
// into the data units, then the members recompute the parity. A redundant item's layout is
// checked here, so that a RAID5 item with a lost member fails at the call.
std::function<void()> RestoreInto(const std::shared_ptr<Session> &session, const std::string &name,
                                  const ItemInfo &item) {
    if (!IsRedundant(item.region)) {
        ItemLayout layout = LayoutOf(item);
        MemoryServer *home = &HomeOf(*session, layout);
        return [session, name, home, layout] { home->Restore(name, layout, session->caller); };
    }
    RedundantLayout(item, 0);
    return [session, name, item] {
        WithRecovery(*session, item, [&](const ItemInfo &given) {
            // Again on the item as it is after, while a member it left out takes writes now:
            // a rebuild begun meanwhile may have copied the healthy member before the restore
            // reached it (redundant_transport.h).
            for (ItemInfo now = given;;) {
                ItemLayout layout = RedundantLayout(now, 0);
                HomeOf(*session, layout).Restore(name, layout, session->caller);
                if (now.region.attributes.redundancyLevel == RAID1) {
                    ItemLayout second = RedundantLayout(now, 1);
                    HomeOf(*session, second).Restore(name, second, session->caller);
                } else {
                    RecomputeParity(*session, now);
                }
                if (!Degraded(now.region)) return;
                ItemInfo after =
                    session->metadata->GetItem(now.region_id, now.offset, session->caller);
                RequireSameItem(after, now);
                if (!Rejoined(SkippedBy(now), after)) return;
                now = std::move(after);
            }
        });
    };
}

// The memory servers holding item bytes [offset, offset + nbytes), each once.
std::vector<uint64_t> HoldersOf(const ItemLayout &item, uint64_t offset, uint64_t nbytes) {
    std::vector<uint64_t> ids;
    for (uint64_t at = offset, end = offset + nbytes;
         at < end && ids.size() < item.servers.size();) {
        BytePlace place = item.Locate(at);
        uint64_t id = item.servers.at(place.index).id;
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        at += std::min(end - at, place.contiguous);
    }
    return ids;
}

// Runs the calls at once and waits for all of them; then rethrows the first failure.
void RunAll(std::vector<std::function<void()>> calls) {
    if (calls.size() == 1) return calls.front()();
    std::vector<std::future<void>> running;
    for (auto &call : calls) running.push_back(std::async(std::launch::async, std::move(call)));
    std::exception_ptr first;
    for (std::future<void> &call : running) {
        try {
            call.get();
        } catch (...) {
            if (!first) first = std::current_exception();
        }
    }
    if (first) std::rethrow_exception(first);
}

// The archive is one directory every memory server reaches; any server answers for it.
MemoryServer &Archivist(Session &session) { return session.Server(0); }

// A name as a listing shows it: one line per backup, whatever bytes its item's name holds
// (control characters and DEL as \xHH; backup names cannot hold them, item names can).
std::string Printable(const std::string &name) {
    std::string out;
    for (unsigned char c : name) {
        if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string FormatBackup(const BackupInfo &info) {
    char when[32] = "";
    time_t seconds = static_cast<time_t>(info.time);
    struct tm utc;
    if (gmtime_r(&seconds, &utc)) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return fmt::format("name={} size={} uid={} gid={} mode={:04o} time={} item={} crc32c={:08x}\n",
                       Printable(info.name), info.size, info.uid, info.gid, info.mode, when,
                       info.item_name.empty() ? "-" : Printable(info.item_name), info.checksum);
}

}  // namespace

const char *CheckBackupName(const char *name) {
    if (!name) Fail(openfam::FAM_ERR_NULLPTR, "backup name is NULL");
    Archive::CheckName(name);
    return name;
}

void MemorySideWork::Wait(void *wait_object) {
    if (!wait_object) Fail(openfam::FAM_ERR_NULLPTR, "wait object is NULL");
    auto *wait = static_cast<WaitObject *>(wait_object);
    if (wait->magic != WaitObject::kMagic) {
        Fail(openfam::FAM_ERR_INVALID, "not a wait object of fampool (already waited for?)");
    }
    wait->magic = 0;
    std::unique_ptr<WaitObject> owned(wait);
    owned->done.get();
}

void *MemorySideWork::Copy(const ItemInfo &source, std::shared_ptr<Binding> from,
                           uint64_t src_offset, const ItemInfo &target, std::shared_ptr<Binding> to,
                           uint64_t dest_offset, uint64_t nbytes) {
    Session &session = *session_;
    if (IsRedundant(source.region) || IsRedundant(target.region)) {
        // Through this process, so that the copies and parity of a redundant item are
        // written as a put writes them.
        return Launch([session = session_, from, to, src_offset, dest_offset, nbytes] {
            std::unique_ptr<Channel> channel = session->transport->OpenChannel();
            std::vector<char> buffer(std::min<uint64_t>(nbytes, uint64_t{4} << 20));
            for (uint64_t done = 0; done < nbytes;) {
                uint64_t n = std::min<uint64_t>(buffer.size(), nbytes - done);
                channel->Read(from, src_offset + done, buffer.data(), n, true);
                channel->Write(to, dest_offset + done, buffer.data(), n, true);
                done += n;
            }
        });
    }
    ItemLayout source_layout = LayoutOf(source);
    ItemLayout target_layout = LayoutOf(target);
    // Each server holding source bytes copies them: within itself, or to the destination's
    // servers over the fabric. The servers work in parallel.
    std::vector<std::function<void()>> calls;
    for (uint64_t id : HoldersOf(source_layout, src_offset, nbytes)) {
        MemoryServer *server = &session.Server(id);
        calls.push_back([server, source_layout, target_layout, src_offset, dest_offset, nbytes] {
            server->Copy(source_layout, src_offset, target_layout, dest_offset, nbytes);
        });
    }
    return Launch([session = session_, calls = std::move(calls)] {
        if (!calls.empty()) RunAll(calls);
    });
}

void *MemorySideWork::Backup(const ItemInfo &item, const char *name) {
    Session &session = *session_;
    bool redundant = IsRedundant(item.region);
    ItemLayout layout = redundant ? RedundantLayout(item, 0) : LayoutOf(item);
    MemoryServer *home = &HomeOf(session, layout);
    try {
        Archivist(session).DescribeBackup(name, session.caller);
        Fail(openfam::FAM_BACKUP_NOT_CREATED, "backup \"{}\" already exists", name);
    } catch (const Failure &failure) {
        if (failure.fam_error() == openfam::FAM_ERR_NOPERM) {
            Fail(openfam::FAM_BACKUP_NOT_CREATED,
                 "backup \"{}\" already exists (another user's: backup names are shared by "
                 "every user of the cluster)",
                 name);
        }
        if (failure.fam_error() != openfam::FAM_BACKUP_NOTFOUND) throw;
    }
    // The backup keeps the permissions that govern reading the item: its region's in a
    // REGION-level region, its own in a DATAITEM one.
    const bool region_level = item.region.attributes.permissionLevel != DATAITEM;
    BackupInfo info;
    info.name = name;
    info.size = item.size;
    info.uid = region_level ? item.region.uid : item.uid;
    info.gid = region_level ? item.region.gid : item.gid;
    info.mode = region_level ? item.region.perm : item.perm;
    info.item_name = item.name;
    if (!redundant) {
        return Launch([session = session_, home, layout, info] { home->Backup(layout, info); });
    }
    return Launch([session = session_, item, info] {
        WithRecovery(*session, item, [&](const ItemInfo &now) {
            ItemLayout layout = RedundantLayout(now, 0);
            HomeOf(*session, layout).Backup(layout, info);
        });
    });
}

BackupInfo MemorySideWork::DescribeBackup(const char *name) {
    return Archivist(*session_).DescribeBackup(name, session_->caller);
}

void *MemorySideWork::Restore(const char *name, const ItemInfo &item) {
    BackupInfo info = DescribeBackup(name);
    if (info.size > item.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "backup \"{}\" holds {} bytes but {} has only {}", name,
             info.size, Describe(item), item.size);
    }
    return Launch(RestoreInto(session_, name, item));
}

void *MemorySideWork::RestoreNew(const char *name, const ItemInfo &created) {
    std::function<void()> restore = RestoreInto(session_, name, created);
    // A restore that fails (a damaged backup) takes the item it allocated with it.
    return Launch([session = session_, restore, created] {
        try {
            restore();
        } catch (...) {
            session->metadata->DeallocateItem(created.region_id, created.offset, session->caller);
            throw;
        }
    });
}

void *MemorySideWork::Delete(const char *name) {
    Session &session = *session_;
    // Unknown names, and backups of another owner, fail here, at the call.
    BackupInfo info = DescribeBackup(name);
    if (info.uid != session.caller.uid) {
        Archivist(session).DeleteBackup(name, session.caller);  // refused unless cluster user
        return Launch([] {});
    }
    return Launch([session = session_, name = std::string(name)] {
        Archivist(*session).DeleteBackup(name, session->caller);
    });
}

char *MemorySideWork::List(const char *name) {
    Session &session = *session_;
    std::string text;
    if (std::string(name) == "*") {
        for (const BackupInfo &info : Archivist(session).ListBackups(session.caller)) {
            text += FormatBackup(info);
        }
    } else {
        text = FormatBackup(DescribeBackup(name));
    }
    char *copy = strdup(text.c_str());
    if (!copy) Fail(openfam::FAM_ERR_MEMORY, "out of memory");
    return copy;
}

}  // namespace fampool
