// Choosing the model a command works on, and asking either model's metadata: a cluster's
// metadata service over gRPC, or the embedded model's store opened in place (read
// transactions for ls, stat and status; one write transaction for each rm, as a program's
// fam_destroy_region would make; LMDB lets any number of processes share the store).
#include "pool.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "client/session.h"
#include "emulate.h"
#include "meta/client/metadata_client.h"
#include "meta/client/sharded_metadata.h"
#include "meta/metadata_store.h"
#include "rpc/convert.h"

namespace fampool::cli {
namespace {

bool EnvSet(const char *name) {
    const char *value = std::getenv(name);
    return value && *value;
}

// A user of the embedded model who also has a cluster's run directory here is told how to
// reach the cluster instead (before a program needed FAMPOOL_CONFIG, the CLI found it alone).
void NoteRunDirHere(const std::string &command) {
    std::string file = DefaultRunDir() + "/cluster.yaml";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return;
    std::fprintf(stderr,
                 "fampool %s: no cluster configured, so this is the embedded model (as for a "
                 "program run here); for the cluster of %s give --config %s, or export "
                 "FAMPOOL_CONFIG=%s\n",
                 command.c_str(), DefaultRunDir().c_str(), ShellQuote(file).c_str(),
                 ShellQuote(file).c_str());
}

}  // namespace

std::string Shown(const std::string &name) {
    bool plain = std::all_of(name.begin(), name.end(),
                             [](unsigned char c) { return c >= 0x20 && c != 0x7f; });
    if (plain) return name;
    std::string shown = "$'";
    for (unsigned char c : name) {
        if (c == '\n') {
            shown += "\\n";
        } else if (c == '\t') {
            shown += "\\t";
        } else if (c == '\\' || c == '\'') {
            shown += '\\';
            shown += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            shown += fmt::format("\\x{:02x}", c);
        } else {
            shown += static_cast<char>(c);
        }
    }
    return shown + "'";
}

std::string Quote(const std::string &name) {
    std::string shown = Shown(name);
    return shown == name ? "\"" + name + "\"" : shown;
}
std::string RegionObject(const std::string &region) { return "region " + Quote(region); }
std::string ItemObject(const std::string &item, const std::string &region) {
    return fmt::format("data item {} in region {}", Quote(item), Quote(region));
}

Model ChooseModel(const std::string &command, const ClusterChoice &choice) {
    Model model;
    if (choice.config.empty() && choice.run_dir.empty() && !EnvSet("FAMPOOL_RUN_DIR")) {
        try {
            model.config = LoadConfig(nullptr);
        } catch (const Fam_Exception &e) {
            Die(1, "fampool {}: {}", command, e.fam_error_msg());
        }
        if (model.config.model != "memory_server") {
            model.embedded = true;
            NoteRunDirHere(command);
            return model;
        }
        // A program configured by $OPENFAM_ROOT/config reaches the cluster those files
        // describe: so does the command (a cluster file names itself through FAMPOOL_CONFIG).
        if (!EnvSet("FAMPOOL_CONFIG") && !model.config.config_file.empty()) {
            model.cluster = LoadCluster(
                command, std::filesystem::path(model.config.config_file).parent_path().string());
            return model;
        }
    }
    model.cluster = LoadCluster(command, ClusterFileOf(choice));
    return model;
}

namespace {

// Whether the metadata service of `cluster` answers at all (Servers needs no session).
bool MetadataAnswers(const ClusterConfig &cluster) {
    try {
        MetadataClient client(MetadataShards(cluster).front(), std::chrono::milliseconds(1000),
                              ClientTls(cluster));
        client.Servers(std::chrono::milliseconds(1000));
        return true;
    } catch (const Fam_Exception &) {
        return false;
    }
}

}  // namespace

void Fault(const std::string &command, const Model &model, const std::string &object,
           const Fam_Exception &e) {
    // A call that failed before it reached the service (its MUNGE credential, when the
    // cluster's munged went down with it) says first what matters: the cluster is down.
    bool unreachable =
        !model.embedded &&
        (e.fam_error() == openfam::FAM_ERR_RPC ||
         (e.fam_error() == openfam::FAM_ERR_NOPERM && !MetadataAnswers(model.cluster)));
    if (unreachable) {
        const std::string &path = model.cluster.path;
        std::string start = fmt::format("fampool up --config {}", ShellQuote(path));
        if (std::string dir = RunDirOfClusterFile(path); !dir.empty()) {
            start = fmt::format("fampool up --run-dir {}", ShellQuote(dir));
        }
        Die(kExitUnreachable,
            "fampool {}: the metadata service of {} does not answer: {}. Is the cluster up? "
            "(start it with `{}`)",
            command, path, e.fam_error_msg(), start);
    }
    std::string message = e.fam_error_msg();
    if (e.fam_error() == openfam::FAM_ERR_NOPERM) message = "permission denied: " + message;
    // A message that names every object the command asked about already says what failed.
    bool named = object.find('"') != std::string::npos;
    for (size_t open = object.find('"'); named && open != std::string::npos;) {
        size_t close = object.find('"', open + 1);
        if (close == std::string::npos) break;
        named = message.find(object.substr(open, close - open + 1)) != std::string::npos;
        open = object.find('"', close + 1);
    }
    if (named) Die(1, "fampool {}: {}", command, message);
    Die(1, "fampool {}: {}: {}", command, object, message);
}

Pool::Pool(const std::string &command, const ClusterChoice &choice, bool cluster_only)
    : command_(command) {
    if (cluster_only) {
        model_.cluster = LoadCluster(command, ClusterFileOf(choice));
    } else {
        model_ = ChooseModel(command, choice);
    }
    if (model_.embedded) {
        try {
            store_ = Session::OpenInPlace(model_.config);
        } catch (const Fam_Exception &e) {
            // No store yet: nothing exists, which the calls below report.
            if (e.fam_error() != openfam::FAM_ERR_NOTFOUND) {
                Die(1, "fampool {}: embedded store {}: {}", command, store_dir(),
                    e.fam_error_msg());
            }
        }
        if (store_) volatile_lost_ = !MetadataStore::ReadIdentity(*store_->env).this_boot;
        return;
    }
    const ClusterConfig &cluster = model_.cluster;
    // An emulated fabric's servers are reached from its switch namespace.
    if (std::optional<Emulation> emulation = EmulationOf(cluster.path)) {
        EnterSwitch(*emulation, command);
    }
    // Status asks every memory server in turn, each bounded by rpc_timeout_ms: hung memory
    // servers must not make the metadata service look unreachable.
    auto timeout = std::chrono::milliseconds(cluster.rpc_timeout_ms) *
                   static_cast<int64_t>(cluster.memservers.size() + 1);
    client_ =
        std::make_unique<ShardedMetadata>(MetadataShards(cluster), timeout, ClientTls(cluster));
    // Every call is made as the user munged vouches for.
    if (cluster.authentication == "munge") client_->UseMunge(cluster.munge_socket);
}

Pool::~Pool() = default;

MetadataService &Pool::metadata() {
    if (client_) return *client_;
    if (!store_) {
        Fail(openfam::FAM_ERR_NOTFOUND,
             "not found: no program has made the embedded store in {} yet", store_dir());
    }
    return *store_->metadata;
}

ShardedMetadata &Pool::client() {
    if (!client_) Die(1, "fampool {}: a cluster's command on the embedded model", command_);
    return *client_;
}

std::vector<ItemInfo> Pool::ListItems(uint64_t region_id) {
    if (client_) return client_->ListItems(region_id, caller_);
    return static_cast<MetadataStore &>(metadata()).ListItems(region_id, caller_);
}

rpc::ClusterStatus Pool::Status() {
    if (client_) return client_->Status(caller_);
    rpc::ClusterStatus status;
    auto *store = store_ ? static_cast<MetadataStore *>(store_->metadata.get()) : nullptr;
    std::vector<uint64_t> usage = store ? store->ServerUsage() : std::vector<uint64_t>();
    const std::vector<Config::MemoryTier> &tiers = model_.config.memory_tiers;
    for (uint64_t id = 0; id <= tiers.size(); ++id) {
        rpc::ServerState *state = status.add_servers();
        state->set_id(id);
        state->set_address(ServerName(id));
        state->set_reachable(true);
        state->set_extent_bytes(id < usage.size() ? usage[id] : 0);
        // As configured: a program measures what is unset when it first places by intent.
        if (id == 0) {
            state->set_kind("dram");
            continue;
        }
        const Config::MemoryTier &tier = tiers[id - 1];
        state->set_kind(tier.kind);
        state->set_capacity(tier.capacity);
        state->set_bandwidth(tier.bandwidth);
        state->set_latency_ns(tier.latency_ns);
    }
    if (!store) return status;
    for (const MetadataStore::RegionUsage &each : store->ListRegions()) {
        rpc::RegionUsage *region = status.add_regions();
        ToProto(each.region, region->mutable_region());
        region->set_items(each.items);
        region->set_free_bytes(each.free_bytes);
        region->set_used_bytes(each.used_bytes);
    }
    return status;
}

std::string Pool::ServerName(uint64_t id) const {
    if (!model_.embedded) {
        const std::vector<MemoryServerConfig> &servers = model_.cluster.memservers;
        return id < servers.size() ? servers[id].rpc_address : "?";
    }
    const std::vector<Config::MemoryTier> &tiers = model_.config.memory_tiers;
    if (id == 0) return "default heaps";
    if (id <= tiers.size()) {
        return fmt::format("memory tier {} at {}", tiers[id - 1].kind, tiers[id - 1].dir);
    }
    return "a memory tier no longer configured";
}

FamOn::FamOn(const std::string &command, const Model &model) {
    std::string which = model.embedded ? "shared_memory" : "memory_server";
    std::string runtime = "NONE";  // one process, whatever launched the command
    Fam_Options options{};
    options.openFamModel = which.data();
    options.runtime = runtime.data();
    std::string object = "embedded store " + model.config.data_dir + "/meta";
    if (!model.embedded) {
        if (std::optional<Emulation> emulation = EmulationOf(model.cluster.path)) {
            EnterSwitch(*emulation, command);
        }
        // The library reads the cluster's file as any of its programs would. A cluster that
        // OpenFAM's service files describe ($OPENFAM_ROOT/config, a directory) is the one the
        // library finds there by itself: FAMPOOL_CONFIG names files only.
        std::error_code ec;
        if (!std::filesystem::is_directory(model.cluster.path, ec)) {
            setenv("FAMPOOL_CONFIG", model.cluster.path.c_str(), 1);
        }
        // A program keeps trying a minute (a job's PEs start at once); a command run by hand
        // against a cluster that is down says so sooner, unless told otherwise.
        setenv("FAMPOOL_CONNECT_TIMEOUT_MS", "5000", 0);
        object = "cluster " + model.cluster.path;
    }
    Ask(command, model, object, [&] { fam_.fam_initialize("fampool", &options); });
    initialized_ = true;
}

FamOn::~FamOn() {
    if (!initialized_) return;
    try {
        fam_.fam_finalize("fampool");
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "fampool: fam_finalize: %s\n", e.fam_error_msg());
    }
}

}  // namespace fampool::cli
