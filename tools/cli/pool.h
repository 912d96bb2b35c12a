// Where the commands that look at or change FAM find it: a cluster's metadata service, or the
// embedded model's store, opened in place. The choice follows the one a program run in the same
// environment makes (ChooseModel), so that `fampool ls` shows what that program sees.
#ifndef FAMPOOL_TOOLS_CLI_POOL_H_
#define FAMPOOL_TOOLS_CLI_POOL_H_

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "common/config.h"
#include "common/error.h"
#include "common/fam_objects.h"
#include "fam/fam.h"
#include "rpc/fampool.pb.h"

namespace fampool {
struct Session;
class MetadataService;
class MetadataStore;
class ShardedMetadata;
}  // namespace fampool

namespace fampool::cli {

// The model a command works on.
struct Model {
    bool embedded = false;
    ClusterConfig cluster;  // memory-server model: the cluster file, read
    Config config;          // embedded model: the library's configuration, resolved
};

// Ends `command` for a call about `object` that failed with `e`: a cluster that does not answer
// with kExitUnreachable (and how to start it), anything else with 1, the message behind the
// object asked about (unless it names it already).
[[noreturn]] void Fault(const std::string &command, const Model &model, const std::string &object,
                        const Fam_Exception &e);

// Runs one call of `command` about `object`; its failure ends the command (Fault).
template <typename Body>
auto Ask(const std::string &command, const Model &model, const std::string &object, Body &&body)
    -> decltype(body()) {
    try {
        return body();
    } catch (const Fam_Exception &e) {
        Fault(command, model, object, e);
    }
}

// The cluster of --config or --run-dir when one is given, else of $FAMPOOL_RUN_DIR when set.
// Else the model the library's own configuration names (FAMPOOL_CONFIG, else
// $OPENFAM_ROOT/config/fam_pe_config.yaml, and FAMPOOL_MODEL): for memory_server the cluster
// file ClusterFileOf finds, else the embedded model. Throws CliError naming `command` for an
// unreadable configuration or cluster file.
Model ChooseModel(const std::string &command, const ClusterChoice &choice);

// A command's view of the metadata of either model, asked as the caller's real uid and gid
// (proven with a MUNGE credential on a cluster that authenticates callers).
class Pool {
  public:
    // `cluster_only`: a command with no meaning on the embedded model (rebuild) always looks
    // for a cluster, as before the embedded model had commands.
    Pool(const std::string &command, const ClusterChoice &choice, bool cluster_only = false);
    ~Pool();
    Pool(const Pool &) = delete;
    Pool &operator=(const Pool &) = delete;

    const std::string &command() const { return command_; }
    const Model &model() const { return model_; }
    bool embedded() const { return model_.embedded; }
    const Caller &caller() const { return caller_; }
    // The embedded store's directory (DATA_DIR/meta), and whether a program has made it yet.
    std::string store_dir() const { return model_.config.data_dir + "/meta"; }
    bool store_exists() const { return store_ != nullptr; }

    // The metadata service of either model. On the embedded model with no store yet, its calls
    // fail as not found (nothing exists).
    MetadataService &metadata();
    // The cluster's metadata client (memory-server model only).
    ShardedMetadata &client();
    std::vector<ItemInfo> ListItems(uint64_t region_id);
    // The cluster's status, or the embedded model's in the same form: its memory servers (the
    // default heaps and each memory tier) and regions.
    rpc::ClusterStatus Status();
    // Memory server `id` in a few words: a cluster's gRPC address; the embedded model's
    // "default heaps" or "memory tier KIND at DIR".
    std::string ServerName(uint64_t id) const;
    // Whether the embedded store was last prepared in an earlier boot: its volatile regions'
    // heaps are gone (the next program to start releases them).
    bool volatile_regions_lost() const { return volatile_lost_; }

    // Runs one call about `object` (the free Ask above).
    template <typename Body>
    auto Ask(const std::string &object, Body &&body) -> decltype(body()) {
        return cli::Ask(command_, model_, object, std::forward<Body>(body));
    }

  private:
    std::string command_;
    Model model_;
    Caller caller_ = ThisProcess();
    std::unique_ptr<ShardedMetadata> client_;  // memory-server model
    std::shared_ptr<Session> store_;           // embedded model, once a program made the store
    bool volatile_lost_ = false;
};

// A fam object initialized on `model` as a program in this environment would be (the cluster's
// file as FAMPOOL_CONFIG; no launch runtime), finalized when it goes: what rm's siblings that
// move data (backup, restore, bench) use, so that they take the same paths as a program.
class FamOn {
  public:
    FamOn(const std::string &command, const Model &model);
    ~FamOn();
    FamOn(const FamOn &) = delete;
    FamOn &operator=(const FamOn &) = delete;
    openfam::fam *operator->() { return &fam_; }
    openfam::fam &fam() { return fam_; }

  private:
    openfam::fam fam_;
    bool initialized_ = false;
};

// "region \"r\"", "data item \"x\" in region \"r\"": how messages name what a command asks
// about.
std::string RegionObject(const std::string &region);
std::string ItemObject(const std::string &item, const std::string &region);
std::string Quote(const std::string &name);

}  // namespace fampool::cli

#endif  // FAMPOOL_TOOLS_CLI_POOL_H_
