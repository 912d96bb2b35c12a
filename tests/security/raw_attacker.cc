// raw_attacker: what a user of a fampool cluster can try around the client library, for the
// multi-user suite (test_multiuser.py), which runs it as users it makes. Every attempt prints
// one line "<attempt> <code> <message>": code 0 when the attempt succeeded, else the Fam_Error
// (or, for raw libfabric reads, the negated fi_errno). The suite reads them.
//
//   raw_attacker key REGION ITEM FILE      this user's own view of an item it may reach: the
//                                          fabric address, key, remote address and socket of
//                                          its bytes (what `fampool stat` printed once), saved
//   raw_attacker read FILE [DELTA...]      raw libfabric fi_read of 64 bytes of that item with
//                                          its key + DELTA (0: the key as granted)
//   raw_attacker guess FILE RANGE          fi_read of 64 bytes at remote address 0 of the same
//                                          memory server with every key within RANGE of the
//                                          key in FILE but that key: how many keys reach memory
//   raw_attacker memserver FILE            every extent, key, resync, copy, backup and RAID
//                                          call of the item's memory server for the region in
//                                          FILE (another user's), as this user, with the key
//                                          in FILE
//   raw_attacker elsewhere FILE SERVER UID NAME
//                                          a Backup, named NAME, of the item in FILE (this
//                                          user's own, with its key) sent to memory server
//                                          SERVER, which does not hold it, stating uid UID as
//                                          its owner and mode 0644
//   raw_attacker metadata REGION SERVER    Rebuild (all, and REGION), ReportFailure (SERVER,
//                                          which is alive), Status (is REGION listed?)
//   raw_attacker sessions REGION           a lookup of REGION stating uid 0 with this user's
//                                          token; one with no token; a credential presented
//                                          twice; a token used after its session ended
//   raw_attacker open COUNT [SERVER]       opens COUNT sessions, each with a credential of its
//                                          own, with the metadata service (or memory server
//                                          SERVER) and keeps them: "Opened 0 N", and "Refused
//                                          CODE M MESSAGE" (M refusals, the first one's code and
//                                          message; "Refused 0 0" when none)
//   raw_attacker socket FILE read|write    the item's heap descriptor through its server's
//                                          same-node socket, with the key in FILE
//
// Configured like any client: FAMPOOL_CONFIG names the cluster file.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/cluster_config.h"
#include "common/config.h"
#include "memserver/heap_socket.h"
#include "meta/client/metadata_client.h"
#include "rpc/convert.h"
#include "rpc/memory_server_client.h"
#include "rpc/munge.h"

namespace {

using namespace fampool;
constexpr std::chrono::milliseconds kTimeout(10000);

void Report(const std::string &attempt, int code, const std::string &message) {
    std::string line = message;
    for (char &c : line) {
        if (c == '\n') c = ' ';
    }
    std::printf("%s %d %s\n", attempt.c_str(), code, line.c_str());
    std::fflush(stdout);
}

// Runs `body` and reports how it ended.
void Try(const std::string &attempt, const std::function<void()> &body) {
    try {
        body();
        Report(attempt, 0, "ok");
    } catch (const Fam_Exception &e) {
        Report(attempt, e.fam_error(), e.fam_error_msg());
    }
}

ClusterConfig Cluster() {
    const char *path = std::getenv("FAMPOOL_CONFIG");
    if (!path) throw std::runtime_error("FAMPOOL_CONFIG is not set");
    return LoadClusterConfig(path);
}

std::unique_ptr<MetadataClient> Metadata(const ClusterConfig &cluster) {
    auto client =
        std::make_unique<MetadataClient>(cluster.metadata_address, kTimeout, ClientTls(cluster));
    if (cluster.authentication == "munge") client->UseMunge(cluster.munge_socket);
    return client;
}

std::unique_ptr<MemoryServerClient> Server(const ClusterConfig &cluster, uint64_t id) {
    auto client = std::make_unique<MemoryServerClient>(id, cluster.memservers.at(id).rpc_address,
                                                       kTimeout, ClientTls(cluster));
    if (cluster.authentication == "munge") client->UseMunge(cluster.munge_socket);
    return client;
}

std::string Hex(const std::string &bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (unsigned char c : bytes) {
        text += digits[c >> 4];
        text += digits[c & 15];
    }
    return text;
}

std::string Unhex(const std::string &text) {
    std::string bytes;
    for (size_t i = 0; i + 1 < text.size(); i += 2) {
        bytes += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
    }
    return bytes;
}

// One item as its holder sees it on the memory server holding its first byte.
struct Target {
    uint64_t region_id = 0, offset = 0, size = 0, server = 0, key = 0, base = 0, physical = 0;
    uint32_t server_uid = 0;
    std::string address, socket;
};

void Save(const Target &t, const std::string &path) {
    std::ofstream out(path);
    out << t.region_id << ' ' << t.offset << ' ' << t.size << ' ' << t.server << ' ' << t.key << ' '
        << t.base << ' ' << t.physical << ' ' << Hex(t.address) << ' '
        << (t.socket.empty() ? "-" : t.socket) << ' ' << t.server_uid << '\n';
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

Target Load(const std::string &path) {
    std::ifstream in(path);
    Target t;
    std::string address;
    in >> t.region_id >> t.offset >> t.size >> t.server >> t.key >> t.base >> t.physical >>
        address >> t.socket >> t.server_uid;
    if (!in) throw std::runtime_error("cannot read " + path);
    t.address = Unhex(address);
    if (t.socket == "-") t.socket.clear();
    return t;
}

// A raw libfabric endpoint over the cluster's provider: the attacker's own RMA program.
class RawClient {
  public:
    explicit RawClient(const std::string &provider) {
        fi_info *hints = fi_allocinfo();
        hints->caps = FI_RMA;
        hints->ep_attr->type = FI_EP_RDM;
        hints->fabric_attr->prov_name = strdup(provider.c_str());
        hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
        int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, 0, hints, &info_);
        fi_freeinfo(hints);
        Check(ret, "fi_getinfo");
        Check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
        Check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
        fi_av_attr av_attr{};
        av_attr.type = FI_AV_TABLE;
        Check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
        fi_cq_attr cq_attr{};
        cq_attr.format = FI_CQ_FORMAT_CONTEXT;
        Check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
        Check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
        Check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind av");
        Check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind cq");
        Check(fi_enable(ep_), "fi_enable");
    }
    ~RawClient() {
        fi_close(&ep_->fid);
        fi_close(&cq_->fid);
        fi_close(&av_->fid);
        fi_close(&domain_->fid);
        fi_close(&fabric_->fid);
        fi_freeinfo(info_);
    }
    // Reads `n` bytes at remote address `addr` of the server named `address` with `key`:
    // 0, or the negated fi error of the completion (or of the post).
    int Read(const std::string &address, uint64_t addr, uint64_t key, char *into, size_t n) {
        fi_addr_t peer = FI_ADDR_UNSPEC;
        if (fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr) != 1) return -FI_EADDRNOTAVAIL;
        ssize_t ret;
        do {
            ret = fi_read(ep_, into, n, nullptr, peer, addr, key, nullptr);
            if (ret == -FI_EAGAIN) fi_cq_read(cq_, nullptr, 0);
        } while (ret == -FI_EAGAIN);
        if (ret) return static_cast<int>(ret);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        fi_cq_entry entry;
        while (std::chrono::steady_clock::now() < deadline) {
            ssize_t got = fi_cq_read(cq_, &entry, 1);
            if (got == 1) return 0;
            if (got == -FI_EAVAIL) {
                fi_cq_err_entry error{};
                fi_cq_readerr(cq_, &error, 0);
                return -error.err;
            }
        }
        return -FI_ETIMEDOUT;
    }

  private:
    static void Check(int ret, const char *what) {
        if (ret) throw std::runtime_error(std::string(what) + ": " + fi_strerror(-ret));
    }
    fi_info *info_ = nullptr;
    fid_fabric *fabric_ = nullptr;
    fid_domain *domain_ = nullptr;
    fid_av *av_ = nullptr;
    fid_cq *cq_ = nullptr;
    fid_ep *ep_ = nullptr;
};

int KeyOf(const std::string &region, const std::string &item, const std::string &file) {
    ClusterConfig cluster = Cluster();
    ItemInfo info = Metadata(cluster)->LookupItem(item, region, ThisProcess());
    Target t;
    t.region_id = info.region_id;
    t.offset = info.offset;
    t.size = info.size;
    for (const ServerAccess &access : info.access) {
        if (access.fabric_address.empty()) continue;
        t.server = access.server_id;
        t.key = access.key;
        t.base = access.base;
        t.address = access.fabric_address;
        t.socket = access.socket;
        t.server_uid = access.server_uid;
        break;
    }
    t.physical = info.region.interleave_size ? 0 : PhysicalOf(info.offset);
    Save(t, file);
    Report("key", t.address.empty() ? 1 : 0, t.address.empty() ? "no access" : "saved");
    return 0;
}

int ReadWithKeys(const std::string &file, const std::vector<int64_t> &deltas) {
    Target t = Load(file);
    RawClient client(Cluster().provider);
    for (int64_t delta : deltas) {
        char bytes[64] = {};
        int code = client.Read(t.address, t.base + t.physical, t.key + delta, bytes, sizeof bytes);
        Report("read" + std::to_string(delta), code,
               code == 0 ? std::string(bytes, strnlen(bytes, sizeof bytes)) : fi_strerror(-code));
    }
    return 0;
}

int Guess(const std::string &file, int64_t range) {
    Target t = Load(file);
    RawClient client(Cluster().provider);
    int reached = 0;
    for (int64_t delta = -range; delta <= range; ++delta) {
        if (delta == 0) continue;
        char bytes[64];
        for (uint64_t addr : {uint64_t{0}, t.base + t.physical}) {
            if (client.Read(t.address, addr, t.key + delta, bytes, sizeof bytes) == 0) ++reached;
        }
    }
    Report("guess", reached,
           std::to_string(reached) + " of " + std::to_string(4 * range) +
               " reads with guessed keys reached memory");
    return 0;
}

ItemLayout LayoutOf(const Target &t) {
    ItemLayout layout;
    layout.extent = ExtentRef{t.region_id, false, false};
    layout.offset = t.offset;
    layout.size = t.size;
    layout.name = "victim";
    layout.servers.push_back({t.server, t.address, t.key, t.base, false, {}});
    return layout;
}

int MemoryServerCalls(const std::string &file) {
    Target t = Load(file);
    ClusterConfig cluster = Cluster();
    auto server = Server(cluster, t.server);
    ExtentRef extent{t.region_id, false, false};
    Try("CreateExtent", [&] {
        server->CreateExtent(ExtentRef{t.region_id + 1000, false, false}, 4096, 4096);
    });
    Try("ResizeExtent", [&] { server->ResizeExtent(extent, t.size, 2 * t.size, t.size); });
    Try("Zero", [&] { server->Zero(extent, t.physical, 64); });
    Try("ZeroExtents", [&] { server->ZeroExtents({ExtentRanges{extent, {{t.physical, 64}}}}); });
    Try("GrantKey", [&] { server->GrantKey(extent, 0, 0, true, Permissions{}); });
    Try("RevokeKeys", [&] { server->RevokeKeys(extent, kAllGrants); });
    Try("Resync", [&] {
        ResyncCall call;
        call.extent = extent;
        call.end = 64;
        server->Resync(call, kTimeout);
    });
    Try("DestroyExtent", [&] { server->DestroyExtent(extent); });
    // The calls clients make, with the key in the file (another user's guess at one).
    ItemLayout victim = LayoutOf(t);
    Try("Copy", [&] { server->Copy(victim, 0, victim, 64, 64); });
    Try("Backup", [&] {
        BackupInfo info;
        info.name = "stolen-" + std::to_string(getpid());
        info.size = 64;
        info.uid = getuid();
        info.gid = getgid();
        info.mode = 0644;
        server->Backup(victim, info);
    });
    Try("Atomic", [&] {
        uint64_t one = 1, old = 0;
        server->Atomic(extent, t.key, t.physical, static_cast<int>(AtomicOp::kAdd),
                       static_cast<int>(DataType::kUint64), &one, nullptr, &old);
    });
    Try("ApplyElements", [&] {
        uint64_t value = 0;
        server->ApplyElements(extent, t.key, ElementOp::kGather, 8, {t.physical},
                              reinterpret_cast<char *>(&value));
    });
    Try("Populate", [&] { server->Populate(extent, t.key, {{t.physical, t.physical + 4096}}); });
    Try("Mirror", [&] {
        MirrorWrite call;
        call.extent = extent;
        call.key = t.key;
        call.offset = t.physical;
        call.value = std::string(8, 'X');
        server->Mirror(call);
    });
    // A RAID5 read of the region's bytes on this server: the others are said to be lost, so
    // the server reads its own member (the region named, the key given) to rebuild them. (A
    // read of another member goes over the fabric with that member's key, which reaches only
    // the memory that key was registered for: the holder's own.)
    Try("Stripe", [&] {
        StripeCall call;
        call.op = StripeCall::Op::kRead;
        call.interleave = 4096;
        for (int m = 0; m < 3; ++m) {
            call.members.push_back(MemberRef{
                t.server, extent, t.address, t.key, t.base, m == 0 ? kHealthy : kLost, {}});
        }
        call.pieces.push_back({0, 0, 0, 64});
        server->Stripe(call);
    });
    return 0;
}

int BackupElsewhere(const std::string &file, uint64_t id, uint32_t uid, const std::string &name) {
    Target t = Load(file);
    auto server = Server(Cluster(), id);
    Try("BackupElsewhere", [&] {
        BackupInfo info;
        info.name = name;
        info.size = 64;
        info.uid = uid;
        info.gid = uid;
        info.mode = 0644;
        server->Backup(LayoutOf(t), info);
    });
    return 0;
}

int MetadataCalls(const std::string &region, uint64_t live_server) {
    ClusterConfig cluster = Cluster();
    auto metadata = Metadata(cluster);
    Try("RebuildAll", [&] { metadata->Rebuild("", kTimeout); });
    Try("RebuildRegion", [&] { metadata->Rebuild(region, kTimeout); });
    Try("ReportFailure", [&] { metadata->ReportFailure({live_server}); });
    // A report of kinds the service does not count, and of huge numbers: only counters move.
    Try("ReportUsage", [&] {
        rpc::UsageReport report;
        report.set_client(std::string(4096, 'x'));
        for (const char *kind : {"put", "no-such-kind", ""}) {
            rpc::UsageCount *count = report.add_counts();
            count->set_kind(kind);
            count->set_operations(~uint64_t{0});
            count->set_bytes(~uint64_t{0});
        }
        metadata->ReportUsage(report, kTimeout);
    });
    rpc::ClusterStatus status = metadata->Status();
    bool listed = false, lost = false;
    for (const auto &usage : status.regions()) listed |= usage.region().name() == region;
    for (const auto &server : status.servers()) lost |= server.lost();
    Report("StatusListsRegion", listed ? 0 : 1, listed ? "listed" : "not listed");
    Report("ServerLost", lost ? 0 : 1, lost ? "a server was declared dead" : "all alive");
    return 0;
}

int Sessions(const std::string &region) {
    ClusterConfig cluster = Cluster();
    auto stub = rpc::Metadata::NewStub(OpenChannel(cluster.metadata_address, ClientTls(cluster)));
    auto call = [&](const std::string &attempt, const std::string &token, uint32_t uid) {
        rpc::LookupRequest lookup;
        lookup.set_name(region);
        lookup.mutable_caller()->set_uid(uid);
        lookup.mutable_caller()->set_gid(uid);
        lookup.mutable_caller()->set_token(token);
        rpc::Region reply;
        Try(attempt, [&] {
            auto context = CallContext(kTimeout);
            CheckStatus(stub->LookupRegion(context.get(), lookup, &reply), "LookupRegion",
                        cluster.metadata_address);
        });
    };
    auto open = [&](const std::string &credential, rpc::Session *session) {
        rpc::Credential request;
        request.set_munge(credential);
        auto context = CallContext(kTimeout);
        CheckStatus(stub->Authenticate(context.get(), request, session), "Authenticate",
                    cluster.metadata_address);
    };
    rpc::Session mine;
    std::string credential = MakeCredential(cluster.munge_socket, kMetadataAudience, "test");
    open(credential, &mine);
    call("ClaimUidZero", mine.token(), 0);
    call("NoToken", "", 0);
    Try("ReplayCredential", [&] {
        rpc::Session again;
        open(credential, &again);
    });
    rpc::Caller end;
    end.set_token(mine.token());
    rpc::Empty empty;
    auto context = CallContext(kTimeout);
    CheckStatus(stub->EndSession(context.get(), end, &empty), "EndSession",
                cluster.metadata_address);
    call("EndedToken", mine.token(), getuid());
    return 0;
}

int OpenSessions(uint64_t count, int server) {
    ClusterConfig cluster = Cluster();
    std::string address =
        server < 0 ? cluster.metadata_address : cluster.memservers.at(server).rpc_address;
    auto channel = OpenChannel(address, ClientTls(cluster));
    auto metadata = rpc::Metadata::NewStub(channel);
    auto memory = rpc::MemoryServer::NewStub(channel);
    std::string audience =
        server < 0 ? std::string(kMetadataAudience) : MemoryServerAudience(server);
    uint64_t opened = 0, refused = 0;
    int first_code = 0;
    std::string first;
    for (uint64_t i = 0; i < count; ++i) {
        try {
            rpc::Credential request;
            request.set_munge(MakeCredential(cluster.munge_socket, audience, "test"));
            rpc::Session session;
            auto context = CallContext(kTimeout);
            CheckStatus(server < 0 ? metadata->Authenticate(context.get(), request, &session)
                                   : memory->Authenticate(context.get(), request, &session),
                        "Authenticate", address);
            ++opened;
        } catch (const Fam_Exception &e) {
            if (refused++ == 0) first_code = e.fam_error(), first = e.fam_error_msg();
        }
    }
    Report("Opened", 0, std::to_string(opened));
    Report("Refused", first_code, std::to_string(refused) + " " + first);
    return 0;
}

int Socket(const std::string &file, bool writable) {
    Target t = Load(file);
    Try(writable ? "SocketWrite" : "SocketRead", [&] {
        if (t.socket.empty()) Fail(openfam::FAM_ERR_RESOURCE, "the server names no socket");
        int fd = RequestHeap(t.socket, t.region_id, t.key, writable, t.server_uid);
        auto heap = MapHeapDescriptor(fd, writable, "heap");
        std::string bytes(heap->base() + t.physical, 16);
        Report("SocketBytes", 0, bytes.c_str());
    });
    return 0;
}

int Usage() {
    std::fprintf(stderr,
                 "usage: raw_attacker key|read|guess|memserver|elsewhere|metadata|sessions|socket "
                 "... (see the file's comment)\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) return Usage();
    try {
        const std::string &what = args[0];
        if (what == "key" && args.size() == 4) return KeyOf(args[1], args[2], args[3]);
        if (what == "read" && args.size() >= 2) {
            std::vector<int64_t> deltas;
            for (size_t i = 2; i < args.size(); ++i) deltas.push_back(std::stoll(args[i]));
            if (deltas.empty()) deltas.push_back(0);
            return ReadWithKeys(args[1], deltas);
        }
        if (what == "guess" && args.size() == 3) return Guess(args[1], std::stoll(args[2]));
        if (what == "memserver" && args.size() == 2) return MemoryServerCalls(args[1]);
        if (what == "metadata" && args.size() == 3) {
            return MetadataCalls(args[1], std::stoull(args[2]));
        }
        if (what == "sessions" && args.size() == 2) return Sessions(args[1]);
        if (what == "elsewhere" && args.size() == 5) {
            return BackupElsewhere(args[1], std::stoull(args[2]),
                                   static_cast<uint32_t>(std::stoul(args[3])), args[4]);
        }
        if (what == "open" && (args.size() == 2 || args.size() == 3)) {
            return OpenSessions(std::stoull(args[1]), args.size() == 3 ? std::stoi(args[2]) : -1);
        }
        if (what == "socket" && args.size() == 3) return Socket(args[1], args[2] == "write");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "raw_attacker: %s\n", e.what());
        return 1;
    }
    return Usage();
}
