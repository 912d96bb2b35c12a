// MetadataRpcService: memory servers' heartbeats, their deaths, and the rebuild of the members
// of redundant regions they held (see metadata_rpc_service.h).
#include <algorithm>
#include <cstdio>
#include <future>
#include <optional>

#include "common/error.h"
#include "common/network.h"
#include "common/test_hold.h"
#include "meta/metadata_rpc_service.h"
#include "meta/store_internals.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

// How long a probe of a server's port waits for the connection (see Refused).
constexpr std::chrono::milliseconds kPortProbe{200};

// Whether a control-path call to `server` that failed did so because nothing listens on its
// port (its process is gone), rather than because a process that listens is stopped or busy.
// Asked of the kernel with a TCP connection of its own, not read from gRPC's wording of the
// failure: a stopped server's calls fail as deadlines, handshakes that did not finish, or at
// once while the channel backs off after them, and words that counted as a refusal declared a
// SIGSTOPped server dead after two heartbeats in loaded test runs.
bool Refused(const MemoryServerClient &server) { return PortRefuses(server.address(), kPortProbe); }

// The store's key of memory server `id`'s life as last seen (MemoryServerInfo::incarnation).
std::string IncarnationKey(uint64_t id) { return "incarnation/" + std::to_string(id); }

}  // namespace

void MetadataRpcService::StartMonitor(std::chrono::milliseconds period) {
    CheckServers();
    monitor_ = std::thread([this, period] {
        std::unique_lock<std::mutex> lock(monitor_mutex_);
        while (!monitor_wake_.wait_for(lock, period, [this] { return stopping_; })) {
            lock.unlock();
            CheckServers();
            MaybeRebuild();
            lock.lock();
        }
    });
}

void MetadataRpcService::CheckServers() {
    // The monitor and a Rebuild call may check at once: one at a time (a restart must be
    // handled once, before any rebuild on the restarted server).
    std::lock_guard<std::mutex> checking(check_mutex_);
    // Every server at once: a dead one must not delay the others' heartbeats.
    // An answer, or how the heartbeat failed: refused (true) or timed out (false).
    using Answer = std::pair<std::optional<MemoryServerInfo>, bool>;
    std::vector<std::future<Answer>> answers;
    for (MemoryServerClient *server : servers_) {
        answers.push_back(std::async(std::launch::async, [server] {
            try {
                return Answer(server->Info(kHeartbeatTimeout), false);
            } catch (const Failure &) {
                return Answer(std::nullopt, Refused(*server));
            }
        }));
    }
    for (size_t i = 0; i < servers_.size(); ++i) {
        uint64_t id = servers_[i]->id();
        auto [info, refused] = answers[i].get();
        if (!info && !refused && SlowToDeath(id)) {
            // About to be declared dead for heartbeats that timed out: one more, with time to
            // answer. A server that answers it was only slow (its clients' operations waited
            // for it; see RecoveryBudget); one that does not is dead as before.
            std::fprintf(stderr,
                         "fampool-server: memory server %llu missed %d heartbeats; one more, with "
                         "%lld ms to answer, before it is declared dead\n",
                         static_cast<unsigned long long>(id), kSlowHeartbeats - 1,
                         static_cast<long long>(kConfirmTimeout.count()));
            try {
                info = servers_[i]->Info(kConfirmTimeout, /*wait_for_connection=*/true);
            } catch (const Failure &) {
            }
            if (info) {
                std::fprintf(stderr, "fampool-server: memory server %llu answered: alive (slow)\n",
                             static_cast<unsigned long long>(id));
            }
        }
        if (!info) {
            bool dies;
            {
                // Counted in timed-out heartbeats: a refused one weighs as many as make
                // kMissedHeartbeats of them reach kSlowHeartbeats, once the server has
                // answered this service (before that it may still be starting: a loaded node
                // took more than two heartbeats to bring one up).
                std::lock_guard<std::mutex> lock(health_mutex_);
                int &missed = missed_[id];
                int before = missed;
                missed += refused && answered_.count(id) ? kSlowHeartbeats / kMissedHeartbeats : 1;
                dies = before < kSlowHeartbeats && missed >= kSlowHeartbeats;
            }
            if (dies) ServerDied(id);
            continue;
        }
        bool back;
        {
            std::lock_guard<std::mutex> lock(health_mutex_);
            missed_[id] = 0;
            answered_.insert(id);
            last_heartbeat_[id] = std::chrono::steady_clock::now();
            back = dead_.erase(id) != 0;
        }
        if (back) {
            std::fprintf(stderr, "fampool-server: memory server %llu answers again\n",
                         static_cast<unsigned long long>(id));
            store_->Members().FenceLostMembers(id);
        }
        NoteLife(servers_[i], info->incarnation);
    }
}

void MetadataRpcService::NoteLife(MemoryServerClient *server, const std::string &incarnation) {
    uint64_t id = server->id();
    std::string name = IncarnationKey(id);
    std::string known = store_->GetValue(name);
    if (known != incarnation) {
        if (!known.empty()) {
            HoldAt("meta.new-life");
            std::fprintf(stderr,
                         "fampool-server: memory server %llu restarted; releasing its volatile "
                         "regions (members of redundant ones are rebuilt)\n",
                         static_cast<unsigned long long>(id));
            store_->ServerRestarted(id);
        }
        store_->SetValue(name, incarnation);
    }
    server->KnowLife(incarnation);
}

void MetadataRpcService::AdoptLives(bool all) {
    auto asked = [all](MemoryServerClient *server) { return all || !server->KnowsLife(); };
    if (std::none_of(servers_.begin(), servers_.end(), asked)) return;  // no lock taken
    std::lock_guard<std::mutex> checking(check_mutex_);
    std::vector<std::future<std::optional<MemoryServerInfo>>> answers(servers_.size());
    for (size_t i = 0; i < servers_.size(); ++i) {
        MemoryServerClient *server = servers_[i];
        if (!asked(server)) continue;
        answers[i] = std::async(std::launch::async, [server]() -> std::optional<MemoryServerInfo> {
            try {
                return server->Info(kHeartbeatTimeout);
            } catch (const Failure &) {
                return std::nullopt;  // a dead server makes no extent: nothing to adopt
            }
        });
    }
    for (size_t i = 0; i < servers_.size(); ++i) {
        if (!answers[i].valid()) continue;
        if (std::optional<MemoryServerInfo> info = answers[i].get()) {
            NoteLife(servers_[i], info->incarnation);
        }
    }
}

bool MetadataRpcService::SlowToDeath(uint64_t id) {
    std::lock_guard<std::mutex> lock(health_mutex_);
    auto missed = missed_.find(id);
    int before = missed == missed_.end() ? 0 : missed->second;
    return before < kSlowHeartbeats && before + 1 >= kSlowHeartbeats;
}

void MetadataRpcService::ServerDied(uint64_t id) {
    {
        std::lock_guard<std::mutex> lock(health_mutex_);
        if (!dead_.insert(id).second) return;
    }
    std::vector<RegionInfo> changed;
    {
        auto members = store_->HoldMembers();
        changed = store_->Members().ServerLost(id);
    }
    std::fprintf(stderr,
                 "fampool-server: memory server %llu is not answering: declared dead; %zu "
                 "redundant region(s) degraded\n",
                 static_cast<unsigned long long>(id), changed.size());
}

std::set<uint64_t> MetadataRpcService::Alive() {
    std::lock_guard<std::mutex> lock(health_mutex_);
    std::set<uint64_t> alive;
    for (MemoryServerClient *server : servers_) {
        auto missed = missed_.find(server->id());
        if (!dead_.count(server->id()) && (missed == missed_.end() || missed->second == 0)) {
            alive.insert(server->id());
        }
    }
    return alive;
}

grpc::Status MetadataRpcService::ReportFailure(grpc::ServerContext *,
                                               const rpc::ServerReport *request, rpc::Empty *) {
    return Serve([&] {
        // Any caller with a session: the report only makes the service probe the servers.
        Identify(request->caller(), "Metadata.ReportFailure");
        std::vector<uint64_t> reported;
        for (uint64_t id : request->servers()) {
            if (id < servers_.size()) reported.push_back(id);
        }
        // Dead when its port refuses the probe; one that only does not answer in time is
        // left to the heartbeats (it may be overloaded).
        std::vector<std::future<bool>> answers;
        for (uint64_t id : reported) {
            answers.push_back(std::async(std::launch::async, [this, id] {
                try {
                    servers_[id]->Info(kHeartbeatTimeout);
                    return true;
                } catch (const Failure &) {
                    return !Refused(*servers_[id]);
                }
            }));
        }
        // A client saw it fail, and it does not answer now: dead without waiting for the
        // heartbeats.
        for (size_t i = 0; i < reported.size(); ++i) {
            if (!answers[i].get()) ServerDied(reported[i]);
        }
    });
}

grpc::Status MetadataRpcService::Rebuild(grpc::ServerContext *, const rpc::RebuildRequest *request,
                                         rpc::RebuildReply *reply) {
    return Serve([&] {
        const Caller caller = Identify(request->caller(), "Metadata.Rebuild");
        if (!IsClusterUser(caller)) {
            if (request->region().empty()) {
                Fail(openfam::FAM_ERR_NOPERM,
                     "Metadata.Rebuild: rebuilding every region is the cluster user's (uid {}) "
                     "call; uid {} may rebuild a region of its own by name",
                     cluster_user_, caller.uid);
            }
            // Looked up as the caller: a region it may not see is refused as such.
            store::RequireOwner(store_->LookupRegion(request->region(), caller), caller, "rebuild");
        }
        if (!request->region().empty()) {
            bool known = false;
            for (const RegionInfo &region : store_->Members().RedundantRegions()) {
                known |= region.name == request->region();
            }
            if (!known) {
                Fail(openfam::FAM_ERR_NOTFOUND, "no redundant region \"{}\"", request->region());
            }
        }
        CheckServers();  // servers that came back since the last heartbeat count as alive
        RebuildLost(request->region(), /*automatic=*/false, reply);
    });
}

void MetadataRpcService::MaybeRebuild() {
    if (rebuilding_.load()) return;
    std::set<uint64_t> alive = Alive();
    bool wanted = false;
    for (const RegionInfo &region : store_->Members().RedundantRegions()) {
        for (size_t m = 0; m < MemberCount(region) && !wanted; ++m) {
            // A member lost intact is taken back on its own server, if that is alive.
            wanted = StateOf(region, m) == kLost &&
                     (LostIntact(region, m)
                          ? alive.count(MemberServer(region, m)) > 0
                          : store::WritesGoOnWithout(region, m) &&
                                store_->Members()
                                    .RebuildTarget(region, m, alive, /*automatic=*/true)
                                    .has_value());
        }
    }
    if (!wanted) return;
    if (rebuilder_.joinable()) rebuilder_.join();
    rebuilding_.store(true);
    rebuilder_ = std::thread([this] {
        rpc::RebuildReply reply;
        try {
            RebuildLost("", /*automatic=*/true, &reply);
        } catch (const Failure &failure) {
            std::fprintf(stderr, "fampool-server: automatic rebuild failed: %s\n",
                         failure.fam_error_msg());
        }
        rebuilding_.store(false);
    });
}

void MetadataRpcService::RebuildLost(const std::string &name, bool automatic,
                                     rpc::RebuildReply *reply) {
    std::lock_guard<std::mutex> lock(rebuild_mutex_);
    struct Marked {
        uint64_t region_id;
        Caller caller;
        size_t member;
        uint64_t target;
        rpc::RebuiltMember *result;
    };
    // Marked now (so that writers write to them from now on), copied once every member is.
    std::vector<Marked> marked;
    for (const RegionInfo &listed : store_->Members().RedundantRegions()) {
        if (!name.empty() && listed.name != name) continue;
        // Members lost intact first: taken back, they are the partners the others need.
        std::vector<size_t> order;
        for (size_t m = 0; m < MemberCount(listed); ++m) {
            if (LostIntact(listed, m))
                order.insert(order.begin(), m);
            else
                order.push_back(m);
        }
        for (size_t m : order) {
            RegionInfo region;
            try {
                region = store_->GetRegion(listed.id, Caller{listed.uid, listed.gid});
            } catch (const Failure &) {
                break;  // destroyed meanwhile
            }
            if (StateOf(region, m) != kLost) continue;
            rpc::RebuiltMember *result = reply->add_members();
            result->set_region(region.name);
            result->set_member(static_cast<uint32_t>(m));
            result->set_from_server(MemberServer(region, m));
            if (LostIntact(region, m) && Alive().count(MemberServer(region, m)) &&
                store_->Members().TakeBack(region.id, m)) {
                result->set_to_server(MemberServer(region, m));
                result->set_taken_back(true);
                std::fprintf(stderr,
                             "fampool-server: region \"%s\" member %zu: taken back as it was "
                             "on memory server %llu (lost when no other member took writes)\n",
                             region.name.c_str(), m,
                             static_cast<unsigned long long>(MemberServer(region, m)));
                continue;
            }
            if (!store::WritesGoOnWithout(region, m)) {
                // Never copied from partners that are not healthy: an extent emptied for the
                // copy may have been the newest of its bytes.
                result->set_error(
                    LostIntact(region, m)
                        ? "it holds the newest copy of its bytes: waiting for its memory server "
                          "to come back with them"
                        : "its partner members are lost too: rebuilt once those are back");
                continue;
            }
            std::optional<uint64_t> target =
                store_->Members().RebuildTarget(region, m, Alive(), automatic);
            if (!target) {
                result->set_error(automatic ? "no replacement or spare server is alive"
                                            : "no live memory server can hold it (every live "
                                              "one holds a member its loss would take along)");
                continue;
            }
            result->set_to_server(*target);
            try {
                store_->Members().StartRebuild(region.id, m, *target);
            } catch (const Failure &failure) {
                result->set_error(failure.fam_error_msg());
                continue;
            }
            marked.push_back(Marked{region.id, Caller{region.uid, region.gid}, m, *target, result});
        }
    }
    if (!marked.empty()) HoldAt("rebuild.marked");
    for (const Marked &one : marked) {
        // Twice: should the first attempt fail, the member is marked again and copied once
        // more, and the log says why the first failed. A connection to a restarted server's
        // earlier life is not such a cause: every key names the life that granted it, and a
        // peer reaching a new life opens new connections (FabricPeers::NoteLives).
        std::string first_failure;  // of the first attempt, when there was a second
        for (int attempt = 0; attempt < 2; ++attempt) {
            try {
                if (attempt > 0) {
                    first_failure = one.result->error();
                    store_->Members().StartRebuild(one.region_id, one.member, one.target);
                }
                one.result->set_error("");
                RebuildMember(one.region_id, one.caller, one.member, one.target, one.result);
                break;
            } catch (const Failure &failure) {
                one.result->set_error(failure.fam_error_msg());
                store_->Members().AbortRebuild(one.region_id, one.member, one.target);
            }
        }
        const rpc::RebuiltMember &result = *one.result;
        std::fprintf(stderr,
                     "fampool-server: region \"%s\" member %zu: %s on memory server %llu "
                     "(%.1f MB in %.2f s)%s%s%s%s\n",
                     result.region().c_str(), one.member,
                     result.error().empty() ? "rebuilt" : "not rebuilt",
                     static_cast<unsigned long long>(one.target), result.bytes() / 1e6,
                     result.seconds(), result.error().empty() ? "" : ": ", result.error().c_str(),
                     first_failure.empty() ? "" : "; at a second attempt, the first failed: ",
                     first_failure.c_str());
    }
}

void MetadataRpcService::RebuildMember(uint64_t region_id, const Caller &caller, size_t member,
                                       uint64_t target, rpc::RebuiltMember *result) {
    auto start = std::chrono::steady_clock::now();
    // As the store holds it now (other members marked since), destroyed meanwhile or not.
    RegionInfo region = store_->GetRegion(region_id, caller);
    uint64_t extent = MemberRecords::ExtentSize(region);
    bool persistent = region.attributes.memoryType == PERSISTENT;
    size_t k = region.memory_servers.size();
    auto member_of = [&](size_t m) {
        MemberRef out;
        out.server_id = MemberServer(region, m);
        bool copy = region.attributes.redundancyLevel == RAID1 && m >= k;
        out.extent = ExtentRef{region.id, persistent, copy};
        out.state = StateOf(region, m);
        ServerAccess access = store_->Members().MemberKey(region, m);
        // The life that granted the key (the store's record may not have seen a restart yet).
        out.incarnation = access.incarnation.empty()
                              ? store_->GetValue(IncarnationKey(out.server_id))
                              : access.incarnation;
        out.fabric_address = access.fabric_address;
        out.key = access.key;
        out.base = access.base;
        return out;
    };
    // A pessimistic 50 MB/s, and a minute at least.
    auto timeout = std::chrono::milliseconds(60000 + extent / 50000);
    if (region.attributes.redundancyLevel == RAID1) {
        size_t source = member < k ? member + k : member - k;
        ResyncCall call;
        call.extent = ExtentRef{region.id, persistent, source >= k};
        call.target = member_of(member);
        call.begin = 0;
        call.end = extent;
        servers_[MemberServer(region, source)]->Resync(call, timeout);
    } else {
        // Each member recomputes the lost one's units of the stripes it holds parity of
        // (the rebuilt member itself its parity units), all at once.
        StripeCall base;
        base.op = StripeCall::Op::kRebuild;
        base.interleave = region.interleave_size;
        for (size_t m = 0; m < MemberCount(region); ++m) base.members.push_back(member_of(m));
        base.lost = static_cast<uint32_t>(member);
        base.first = 0;
        base.end = extent / region.interleave_size;
        base.target_empty = true;  // StartRebuild created it
        std::vector<std::future<void>> done;
        for (size_t m = 0; m < MemberCount(region); ++m) {
            done.push_back(std::async(std::launch::async, [this, &region, &base, m, timeout] {
                StripeCall call = base;
                call.self = static_cast<uint32_t>(m);
                servers_[MemberServer(region, m)]->Stripe(call, timeout);
            }));
        }
        std::optional<Failure> failure;
        for (auto &each : done) {
            try {
                each.get();
            } catch (const Failure &error) {
                if (!failure) failure = error;
            }
        }
        if (failure) throw *failure;
    }
    HoldAt("rebuild.copied");
    store_->Members().FinishRebuild(region.id, member, target);
    RebuiltMembers().Add();
    RebuiltBytes().Add(extent);
    result->set_bytes(extent);
    result->set_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace fampool
