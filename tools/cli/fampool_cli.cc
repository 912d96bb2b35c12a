// fampool: start, stop and inspect a fampool cluster on this host, and run programs against it;
// show, remove, back up and measure what a cluster or the embedded model's store holds.
//
//   fampool up --memservers 2          # metadata service + 2 memory servers in ./fampool-run
//   fampool status                     # servers and regions
//   fampool ls [REGION]                # regions, or the data items of one
//   fampool stat REGION [ITEM]         # everything about a region or a data item
//   fampool rm [-r] REGION [ITEM]      # destroy a region, or deallocate a data item
//   fampool backup REGION ITEM NAME    # a data item to the archive; --list, --delete NAME
//   fampool restore NAME REGION ITEM   # a backup into a data item (made if missing)
//   fampool bench                      # get/put/atomics against memcpy and CPU atomics
//   fampool run -n 4 ./my_program      # mpirun with FAMPOOL_CONFIG set
//   fampool down                       # stop the servers of ./fampool-run
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli.h"
#include "common/config.h"
#include "common/config_keys.h"
#include "common/error.h"

namespace fampool::cli {
namespace {

const char *const kRunDirHelp =
    "run directory of the cluster: cluster.yaml, logs/, pids/ (default $FAMPOOL_RUN_DIR, else "
    "./fampool-run)";

void AddClusterChoice(CLI::App *command, ClusterChoice &choice) {
    auto *run_dir = command->add_option("--run-dir", choice.run_dir, kRunDirHelp);
    command
        ->add_option("--config", choice.config,
                     "cluster file to use instead of the run directory's cluster.yaml (without "
                     "--config and --run-dir: $FAMPOOL_CONFIG if set)")
        ->excludes(run_dir);
}

// The commands that work on either model: a cluster when one is named, else the model a
// program here would use (the embedded store unless the configuration names a cluster).
void AddModelChoice(CLI::App *command, ClusterChoice &choice) {
    auto *run_dir = command->add_option(
        "--run-dir", choice.run_dir,
        "the cluster of this run directory (its cluster.yaml) instead of the model a program "
        "here would use");
    command
        ->add_option("--config", choice.config,
                     "the cluster of this cluster file. Without --config, --run-dir and "
                     "$FAMPOOL_RUN_DIR: the model the library's configuration names "
                     "($FAMPOOL_CONFIG, $OPENFAM_ROOT/config/fam_pe_config.yaml, "
                     "$FAMPOOL_MODEL), by default the embedded store in $FAMPOOL_HOME")
        ->excludes(run_dir);
}

int Main(int argc, char **argv) {
    CLI::App app{
        "fampool: start, stop and inspect a fampool cluster (metadata service and memory "
        "servers) on this host and run programs against it; show, remove, back up and measure "
        "what a cluster or the embedded model's store holds"};
    app.require_subcommand(1);
    app.footer(
        "Environment: FAMPOOL_RUN_DIR (default run directory), FAMPOOL_CONFIG (the "
        "configuration, or cluster file, of every command but up and down when neither "
        "--config nor --run-dir is given); status, ls, stat, rm, backup, restore and bench work "
        "on the embedded store ($FAMPOOL_HOME) when no cluster is configured.\n"
        "Exit status: 0 success, 1 failure, 2 the metadata service does not answer.\n"
        "`fampool COMMAND --help` describes each command.");

    UpOptions up;
    CLI::App *up_command = app.add_subcommand(
        "up",
        "start a cluster: N memory servers and the metadata service, in the background, "
        "and wait until all of them answer");
    up_command->add_option("--memservers", up.memservers, "number of memory servers (1 to 99)")
        ->capture_default_str();
    up_command
        ->add_option("--metadata-shards", up.metadata_shards,
                     "run the metadata service as N shards (1 to 64), regions partitioned by "
                     "name, each shard with its own store; shard k>0 listens on P+200+k")
        ->capture_default_str();
    up_command->add_option("--provider", up.provider, "libfabric provider of the data path")
        ->check(CLI::IsMember({"tcp", "shm", "sockets", "verbs", "cxi"}))
        ->capture_default_str();
    up_command->add_option("--run-dir", up.run_dir, kRunDirHelp);
    up_command
        ->add_option_function<std::string>(
            "--base-port",
            [&up](const std::string &value) {
                up.base_port_auto = value == "auto";
                if (up.base_port_auto) return;
                size_t used = 0;
                int port = -1;
                try {
                    port = std::stoi(value, &used);
                } catch (const std::exception &) {
                }
                if (used != value.size() || port < 1 || port > 65535) {
                    throw CLI::ValidationError("--base-port",
                                               "\"" + value +
                                                   "\" is neither a port (1 to 65535) "
                                                   "nor auto");
                }
                up.base_port = port;
            },
            "metadata service port P; memory server i listens on P+1+i (gRPC) and P+100+i "
            "(fabric); auto: the first P whose ports are all free now, above the kernel's "
            "ephemeral ports (61000-65135 by default) (the cluster file says which)")
        ->default_str("8787");
    up_command
        ->add_option("--interleave", up.interleave,
                     "dataitem_interleave_size in bytes: 0 (no interleaving) or a power of "
                     "two of at least 64")
        ->capture_default_str();
    up_command
        ->add_option("--placement", up.placement,
                     "how regions pick memory servers: hash (of the name) or least-used")
        ->check(CLI::IsMember({"hash", "least-used"}))
        ->capture_default_str();
    up_command
        ->add_option("--region-span", up.region_span,
                     "memory servers per region (0: all of them); --placement picks which")
        ->capture_default_str();
    up_command
        ->add_option("--progress", up.progress,
                     "how memory servers wait for fabric work: blocking (sleep when idle) or "
                     "busy (poll without sleeping: lowest latency, a core per server)")
        ->check(CLI::IsMember({"blocking", "busy"}))
        ->capture_default_str();
    up_command
        ->add_option("--authentication", up.authentication,
                     "how the servers learn who calls them: munge (MUNGE credentials; `up` "
                     "starts a munged for the cluster unless --munge-socket names a site's) or "
                     "none (callers state their uid and gid)")
        ->check(CLI::IsMember({"munge", "none"}))
        ->capture_default_str();
    up_command->add_option("--munge-socket", up.munge_socket,
                           "socket of a running munged (a site's, with the same key on every "
                           "node) instead of starting one");
    auto *tls_flag = up_command->add_flag(
        "--tls", up.tls,
        "encrypt the control path (gRPC) with TLS: `up` makes a throw-away CA and the servers' "
        "certificate with openssl in RUN_DIR/tls and names them in the cluster file; metadata "
        "calls then stay on gRPC (docs/security.md)");
    up_command
        ->add_option("--tls-client-certificates", up.tls_client_certificates,
                     "with --tls: none (servers take any client over TLS) or require (only "
                     "clients with a certificate of the run's CA: `up` makes one for its user "
                     "and prints the variables that name it)")
        ->check(CLI::IsMember({"none", "require"}))
        ->needs(tls_flag)
        ->capture_default_str();
    up_command
        ->add_option_function<std::string>(
            "--metrics",
            [&up](const std::string &value) {
                up.metrics = value != "off";
                up.metrics_per_region = value == "per-region";
            },
            "on: every server serves Prometheus metrics over HTTP at /metrics (metadata shard k "
            "on P+300+k, memory server i on P+400+i; docs/operations.md), the regions' totals "
            "only; per-region: also a series per region, with its name (anyone reaching the "
            "endpoint sees every region's name); off: none")
        ->check(CLI::IsMember({"on", "per-region", "off"}))
        ->default_str("on");
    up_command
        ->add_option("--capacity", up.capacity,
                     "bytes each memory server may hold (capacity): auto: this node's memory "
                     "(MemTotal) or the size of /dev/shm, whichever is less, shared evenly by "
                     "the memory servers; none: no limit; or a size (64GiB)")
        ->default_str("auto");
    auto *config_option = up_command->add_option(
        "--config", up.config,
        "use this cluster file instead of writing one from the options above (it is copied to "
        "RUN_DIR/cluster.yaml), or a directory of OpenFAM's service files "
        "(fam_memoryserver_config.yaml, fam_metadata_config.yaml, "
        "fam_client_interface_config.yaml; usually $OPENFAM_ROOT/config), written to "
        "RUN_DIR/cluster.yaml in fampool's format");
    for (const char *generated :
         {"--memservers", "--metadata-shards", "--provider", "--base-port", "--interleave",
          "--placement", "--region-span", "--progress", "--authentication", "--munge-socket",
          "--tls", "--tls-client-certificates", "--metrics", "--capacity"}) {
        config_option->excludes(up_command->get_option(generated));
    }
    auto *emulate_flag = up_command->add_flag(
        "--emulate", up.emulate,
        "run the cluster on an emulated fabric: every metadata shard, memory server and client "
        "node in a network namespace of its own, joined by veth pairs through a bridge, each "
        "link's rate set by tc (needs root; tcp or sockets; `fampool down` removes it)");
    auto *topology_option = up_command->add_option(
        "--topology", up.topology,
        "with --emulate: a topology file (per-link rate and delay, memory servers' memory type, "
        "capacity and failure domain, client nodes, metadata shards; docs/cli.md) instead of "
        "--memservers, --metadata-shards, --clients, --link-rate and --client-link-rate");
    topology_option->needs(emulate_flag);
    auto *clients_option =
        up_command
            ->add_option("--clients", up.clients,
                         "with --emulate: client nodes where `fampool run` places PEs (1 to 200)")
            ->capture_default_str();
    auto *link_option =
        up_command
            ->add_option("--link-rate", up.link_rate,
                         "with --emulate: each memory server's link, e.g. 1gbit, 250mbit, or "
                         "unlimited")
            ->capture_default_str();
    auto *client_link_option =
        up_command
            ->add_option("--client-link-rate", up.client_link_rate,
                         "with --emulate: each client node's and metadata shard's link")
            ->capture_default_str();
    for (CLI::Option *option : {clients_option, link_option, client_link_option}) {
        option->needs(emulate_flag);
        topology_option->excludes(option);
    }
    topology_option->excludes(up_command->get_option("--memservers"));
    topology_option->excludes(up_command->get_option("--metadata-shards"));
    up_command
        ->add_option("--timeout", up.timeout_s,
                     "seconds to wait for every server to answer before giving up")
        ->capture_default_str();

    DownOptions down;
    CLI::App *down_command = app.add_subcommand(
        "down",
        "stop the servers started by `fampool up` (by the PIDs in RUN_DIR/pids: SIGTERM, "
        "then SIGKILL after --timeout)");
    down_command->add_option("--run-dir", down.run_dir, kRunDirHelp);
    down_command
        ->add_option("--timeout", down.timeout_s, "seconds to wait after SIGTERM before SIGKILL")
        ->capture_default_str();

    QueryOptions status;
    CLI::App *status_command = app.add_subcommand(
        "status",
        "the memory servers (reachable?) and regions (size, use, items) of a cluster, or the "
        "embedded store's location, memory servers (heaps, memory tiers) and regions");
    AddModelChoice(status_command, status.cluster);
    status_command->add_flag("--bytes", status.exact_bytes, "print sizes in bytes");

    QueryOptions rebuild;
    CLI::App *rebuild_command = app.add_subcommand(
        "rebuild",
        "rebuild the lost members of redundant regions (RAID1 copies, RAID5 columns) on live "
        "memory servers while clients keep working; prints each member rebuilt, where, and how "
        "fast");
    rebuild_command->add_option("REGION", rebuild.region,
                                "only this region (default: every degraded region)");
    AddClusterChoice(rebuild_command, rebuild.cluster);
    rebuild_command->add_flag("--bytes", rebuild.exact_bytes, "print sizes in bytes");

    QueryOptions list;
    CLI::App *list_command =
        app.add_subcommand("ls", "list the regions, or the data items of REGION");
    list_command->add_option("REGION", list.region, "region whose data items to list");
    AddModelChoice(list_command, list.cluster);
    list_command->add_flag("--bytes", list.exact_bytes, "print sizes in bytes");

    QueryOptions stat;
    CLI::App *stat_command =
        app.add_subcommand("stat", "every attribute of a region, or of a data item in it");
    stat_command->add_option("REGION", stat.region, "region name")->required();
    stat_command->add_option("ITEM", stat.item, "data item name (omit for the region itself)");
    AddModelChoice(stat_command, stat.cluster);

    RemoveOptions remove;
    CLI::App *remove_command = app.add_subcommand(
        "rm",
        "destroy REGION (only its owner may), or deallocate data item ITEM of it (with write "
        "permission on the region, by the item's owner or the region's); as your real uid and "
        "gid");
    remove_command->add_option("REGION", remove.region, "region name")->required();
    auto *remove_item = remove_command->add_option("ITEM", remove.item,
                                                   "data item to deallocate (omit: the region)");
    remove_command
        ->add_flag("-r,--recursive", remove.recursive,
                   "destroy a region that holds data items, with them (without it rm refuses "
                   "such a region)")
        ->excludes(remove_item);
    AddModelChoice(remove_command, remove.cluster);

    BackupOptions backup;
    CLI::App *backup_command = app.add_subcommand(
        "backup",
        "copy data item ITEM of REGION to the archive as backup NAME (fam_backup: read "
        "permission on the item; NAME must be new); --list shows the archive's backups, "
        "--delete NAME removes one");
    auto *backup_region = backup_command->add_option("REGION", backup.region, "region name");
    auto *backup_item = backup_command->add_option("ITEM", backup.item, "data item name");
    auto *backup_name = backup_command->add_option("NAME", backup.name, "name of the new backup");
    auto *list_flag = backup_command
                          ->add_option("--list", backup.list_name,
                                       "list the archive's backups (name, size, owner, mode, "
                                       "time, item, CRC-32C), or only backup NAME")
                          ->expected(0, 1);
    auto *delete_option =
        backup_command->add_option("--delete", backup.delete_name, "delete backup NAME");
    for (CLI::Option *positional : {backup_region, backup_item, backup_name}) {
        list_flag->excludes(positional);
        delete_option->excludes(positional);
    }
    list_flag->excludes(delete_option);
    backup_command
        ->add_flag("--bytes", backup.exact_bytes, "print sizes in bytes (--list, or the backup)")
        ->excludes(delete_option);
    AddModelChoice(backup_command, backup.cluster);

    BackupOptions restore;
    CLI::App *restore_command = app.add_subcommand(
        "restore",
        "copy backup NAME into data item ITEM of REGION (fam_restore): an existing item must be "
        "as large as the backup and writable by you; a missing one is allocated, the backup's "
        "size, with --mode or the backed-up item's mode");
    restore_command->add_option("NAME", restore.name, "backup name")->required();
    restore_command->add_option("REGION", restore.region, "region name")->required();
    restore_command->add_option("ITEM", restore.item, "data item name")->required();
    restore_command->add_option("--mode", restore.mode,
                                "mode of a data item restore makes (octal, e.g. 0640; default: "
                                "the mode the backed-up item had)");
    AddModelChoice(restore_command, restore.cluster);

    BenchOptions bench;
    std::string bench_item = "16MiB";
    CLI::App *bench_command = app.add_subcommand(
        "bench",
        "measure the data path of the model in a few seconds: blocking put and get of 256 B to "
        "1 MiB and 64-bit atomics on a volatile region of its own (destroyed at the end), each "
        "beside the same operation on local memory in this process");
    bench_command->add_option("--seconds", bench.seconds, "time of each measurement (0.01 to 5)")
        ->capture_default_str();
    bench_command
        ->add_option("--item-size", bench_item,
                     "bytes of the item transfers walk over (1MiB to 1GiB; twice that in the "
                     "region; as much again twice in this process)")
        ->capture_default_str();
    AddModelChoice(bench_command, bench.cluster);
    bench_command->footer(
        "Columns: OPERATION (put/get: fam_put_blocking/fam_get_blocking at offsets walking the "
        "item; fetch_add: fam_fetch_add of a uint64; add: fam_add of a uint64, fam_quiet at the "
        "end included), SIZE (bytes per operation), OPS (operations timed), TIME/OP (mean time "
        "of one), RATE (GB/s moved, or operations per second), BASELINE (the same on local "
        "memory in this process: memcpy of SIZE bytes walking a buffer as large as the item, "
        "or a CPU atomic fetch-add), BASELINE RATE, RATIO (RATE / BASELINE RATE: 1.00 is as "
        "fast as local memory). It checks its results: the item must hold what the puts wrote "
        "and the counters every atomic.");

    RunOptions run;
    CLI::App *run_command = app.add_subcommand(
        "run",
        "run PROGRAM ARGS... as N processes under mpirun with FAMPOOL_CONFIG set to the "
        "cluster file (without mpirun, -n 1 runs PROGRAM directly)");
    run_command->add_option("-n,--np", run.ranks, "number of processes")->required();
    AddClusterChoice(run_command, run.cluster);
    run_command->prefix_command();  // PROGRAM and everything after it are not fampool's options
    run_command->footer(
        "Usage: fampool run -n N [--run-dir DIR | --config FILE] PROGRAM [ARGS...]\n"
        "The command it runs is printed on stderr first.");

    QueryOptions doctor;
    CLI::App *doctor_command = app.add_subcommand(
        "doctor",
        "check what a run on the cluster needs from this node: the cluster file, the provider "
        "offered, the metadata service and memory servers listening, MUNGE, /dev/shm, the "
        "locked-memory limit; each failure with its fix; exit status 0 only when all pass");
    AddClusterChoice(doctor_command, doctor.cluster);

    TopOptions top;
    CLI::App *top_command = app.add_subcommand(
        "top",
        "a live view of the cluster from its servers' metrics endpoints, refreshed every "
        "--interval: the clients' operations and bytes per second by kind, each server's "
        "state, heartbeat, heaps, memory in use, capacity and calls per second, and the "
        "regions with lost or rebuilding members; q or Ctrl-C quits");
    AddClusterChoice(top_command, top.cluster);
    top_command->add_option("--interval", top.interval, "seconds between screens (0.1 to 60)")
        ->capture_default_str();
    top_command
        ->add_option("--screens", top.screens,
                     "print this many screens one after the other, without clearing the "
                     "terminal, and end (for scripts and logs); 0: until q or Ctrl-C")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();

    ExecOptions exec;
    CLI::App *exec_command = app.add_subcommand(
        "exec",
        "run COMMAND on a node of an emulated fabric (`fampool up --emulate`): inside the node's "
        "network namespace, with FAMPOOL_CONFIG set to the cluster file");
    exec_command->add_option(
        "--node", exec.node,
        "the node: client0 (the default), client1, ..., memory0, ..., metadata0, "
        "..., or switch (reaches every node over no shaped link)");
    exec_command->add_flag("--by-rank", exec.by_rank,
                           "the client node of this process's rank, round robin (what `fampool "
                           "run` gives each PE)");
    AddClusterChoice(exec_command, exec.cluster);
    exec_command->prefix_command();
    exec_command->footer(
        "Usage: fampool exec [--node NODE | --by-rank] [--run-dir DIR | --config FILE] -- "
        "COMMAND [ARGS...]\nNeeds root (entering a namespace needs CAP_SYS_ADMIN).");

    // `fampool exec ... -- COMMAND` and `fampool run ... -- PROGRAM`: the "--" is dropped
    // (CLI11 would take what follows it as positional arguments the command does not have);
    // the first word that is not an option starts the command anyway.
    std::vector<char *> args(argv, argv + argc);
    if (argc > 1 && (std::string(argv[1]) == "exec" || std::string(argv[1]) == "run")) {
        auto dashes = std::find_if(args.begin() + 2, args.end(),
                                   [](const char *arg) { return std::string(arg) == "--"; });
        if (dashes != args.end()) args.erase(dashes);
    }
    CLI11_PARSE(app, static_cast<int>(args.size()), args.data());

    if (up_command->parsed()) return Up(up);
    if (down_command->parsed()) return Down(down);
    if (status_command->parsed()) return Status(status);
    if (rebuild_command->parsed()) return Rebuild(rebuild);
    if (list_command->parsed()) return List(list);
    if (stat_command->parsed()) return Stat(stat);
    if (remove_command->parsed()) return Remove(remove);
    if (backup_command->parsed()) {
        backup.list = list_flag->count() > 0;
        if (!backup.list && backup.delete_name.empty() && backup.name.empty()) {
            throw CliError(1,
                           "fampool backup: give REGION ITEM NAME, --list [NAME] or "
                           "--delete NAME (fampool backup --help)");
        }
        return Backup(backup);
    }
    if (restore_command->parsed()) return Restore(restore);
    if (bench_command->parsed()) {
        try {
            bench.item_bytes = ParseSize("--item-size", bench_item);
        } catch (const Fam_Exception &e) {
            throw CliError(1, std::string("fampool bench: ") + e.fam_error_msg());
        }
        return Bench(bench);
    }
    if (doctor_command->parsed()) return Doctor(doctor);
    if (top_command->parsed()) return Top(top);
    if (exec_command->parsed()) {
        exec.command = exec_command->remaining();
        return Exec(exec);
    }
    run.command = run_command->remaining();
    return Run(run);
}

}  // namespace
}  // namespace fampool::cli

int main(int argc, char **argv) {
    fampool::WarnMisspeltVariables();
    try {
        return fampool::cli::Main(argc, argv);
    } catch (const fampool::cli::CliError &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return e.code();
    } catch (const openfam::Fam_Exception &e) {
        std::fprintf(stderr, "fampool: %s\n", e.fam_error_msg());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fampool: %s\n", e.what());
        return 1;
    }
}
