// The fampool command: starts and stops a cluster of fampool-server processes (the metadata
// service and memory servers) and runs programs against it; shows, removes, backs up and
// measures what either model (a cluster, or the embedded store) holds. One file per group of
// subcommands: launch.cc (up, down), query.cc (status, ls, stat, rebuild), remove.cc (rm),
// backup.cc (backup, restore), bench.cc (bench), run.cc (run), exec.cc (exec), run_dir.cc (the
// run directory `up` makes, and its files); pool.h chooses the model (a cluster or the embedded
// store) they work on. This header is what they share.
#ifndef FAMPOOL_TOOLS_CLI_CLI_H_
#define FAMPOOL_TOOLS_CLI_CLI_H_

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/cluster_config.h"
#include "common/network.h"

namespace fampool::cli {

// Exit codes beyond 0 (success) and 1 (any other failure).
constexpr int kExitUnreachable = 2;  // the metadata service does not answer

// An error that ends the command. Its message names the command, the object and the cause;
// main prints it and exits with code().
class CliError : public std::runtime_error {
  public:
    CliError(int code, const std::string &message) : std::runtime_error(message), code_(code) {}
    int code() const { return code_; }

  private:
    int code_;
};

template <typename... Args>
[[noreturn]] void Die(int code, fmt::format_string<Args...> format, Args &&...args) {
    throw CliError(code, fmt::format(format, std::forward<Args>(args)...));
}

// Where a command finds its cluster: --config FILE, else --run-dir DIR (its cluster.yaml), else
// $FAMPOOL_CONFIG, else the default run directory's cluster.yaml.
struct ClusterChoice {
    std::string run_dir;  // empty: not given
    std::string config;   // empty: not given
};

// $FAMPOOL_RUN_DIR, else ./fampool-run; always absolute.
std::string DefaultRunDir();
// `dir` made absolute, or DefaultRunDir() when empty.
std::string RunDirOf(const std::string &dir);
std::string ClusterFileOf(const ClusterChoice &choice);
// The run directory of `fampool up` whose cluster file `path` is (DIR/cluster.yaml); "" for a
// cluster file of another name.
std::string RunDirOfClusterFile(const std::string &path);
// LoadClusterConfig with the command's name in front of its message; a missing file gets a hint.
ClusterConfig LoadCluster(const std::string &command, const std::string &path);

// FNV-1a of a run directory's path: what names its volatile heaps' directory and its emulated
// fabric's namespaces, so that two run directories never share them.
uint64_t RunDirHash(const std::string &run_dir);
// Where the volatile heaps of the cluster run from `run_dir` go: one directory per user and
// run directory, /dev/shm/fampool-<uid>-<hash>.
std::string ShmBase(const std::string &run_dir);

// The run directory of `fampool up` and what it holds (run_dir.cc). The directory is private to
// the user who runs the cluster, except that others pass through it (mode 0711) to the cluster
// file and the sockets their programs need; logs/ and pids/ are private (0700), and so is
// ShmBase(dir) but for passing through to the servers' same-node sockets. Throws CliError.
void PrepareRunDir(const std::string &dir);
// `text` as `path` (replaced whole): mode 0644, since every user's programs read it (addresses,
// ports, the CA's certificate: no secret).
void WriteClusterFile(const std::string &path, const std::string &text);
std::string ReadFile(const std::string &path);
// The throw-away TLS material of `fampool up --tls`, made with openssl in DIR/tls: a CA of its
// own (ca.pem, readable by all: clients trust it; ca.key private), the servers' certificate
// (server.pem) for `hosts` (IP addresses: each becomes an IP subjectAltName, besides
// 127.0.0.1 and DNS localhost) and its key (server.key, private), and with `client` a client
// certificate for the user running `up` (client.pem, client.key, private). Throws CliError.
struct TlsFiles {
    std::string ca, certificate, private_key, client_certificate, client_key;
};
TlsFiles MakeThrowawayTls(const std::string &dir, const std::vector<std::string> &hosts,
                          bool client);
// `fampool up --tls`: the throw-away TLS material for every server address of `cluster` (made
// by MakeThrowawayTls), set in `cluster`; returns the cluster file's keys that name it.
std::string AddThrowawayTls(const std::string &dir, ClusterConfig *cluster,
                            bool require_client_certificates);
// `text` as a new file `path` private to this user (0600).
void WriteFile(const std::string &path, const std::string &text);

// An octal file mode ("640", "0640"); throws CliError naming `command` for anything else.
uint32_t ParseMode(const std::string &command, const std::string &text);

// 1536 -> "1.5 KiB"; exact bytes when `exact`.
std::string Bytes(uint64_t bytes, bool exact = false);
// "'a b'" for a shell; plain when it needs no quotes.
std::string ShellQuote(const std::string &word);
// A region's or item's name as the CLI prints it: as it is when every byte prints, else in the
// shell's $'...' form (control characters and DEL as \n, \t or \xHH; backslash and quote
// escaped), which prints on one line, moves no cursor, and can be typed back as an argument.
std::string Shown(const std::string &name);

// Rows of text printed under a header, columns padded to their widest cell.
class Table {
  public:
    explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
    void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    size_t size() const { return rows_.size() - 1; }
    void Print(const std::string &indent = "  ") const;

  private:
    std::vector<std::vector<std::string>> rows_;
};

struct UpOptions {
    unsigned memservers = 1;
    unsigned metadata_shards = 1;
    std::string provider = "tcp";
    std::string run_dir;
    int base_port = 8787;
    bool base_port_auto = false;  // --base-port auto: free ports found when `up` runs
    uint64_t interleave = 0;
    std::string placement = "hash";
    unsigned region_span = 0;
    std::string progress = "blocking";
    // How the servers learn who calls them: munge (the default: `up` starts a munged for the
    // cluster unless munge_socket names a site's) or none.
    std::string authentication = "munge";
    std::string munge_socket;
    // TLS on the control path with a throw-away CA (`--tls`), and whether the servers then
    // require client certificates ("require": `up` makes one for its user).
    bool tls = false;
    std::string tls_client_certificates = "none";
    // Whether each server serves Prometheus metrics (docs/operations.md): metadata shard k on
    // P+300+k, memory server i on P+400+i.
    bool metrics = true;
    bool metrics_per_region = false;  // --metrics per-region: metrics_per_region: true
    // Each memory server's capacity: "auto" (AutoCapacity, launch.cc), "none", or a size.
    std::string capacity = "auto";
    std::string config;
    double timeout_s = 30;
    // An emulated fabric (emulate.h): from a topology file, or from the options below.
    bool emulate = false;
    std::string topology;
    unsigned clients = 1;
    std::string link_rate = "unlimited";         // each memory server's link
    std::string client_link_rate = "unlimited";  // each client's and metadata shard's link
};

struct Topology;
// The cluster file `fampool up` writes from its options (cluster_file.cc), or, on an emulated
// fabric, from `topology`.
std::string GeneratedClusterFile(const UpOptions &o, const std::string &dir,
                                 const Topology *topology);

struct DownOptions {
    std::string run_dir;
    double timeout_s = 10;
};

struct QueryOptions {
    ClusterChoice cluster;
    bool exact_bytes = false;
    std::string region;  // ls, stat
    std::string item;    // stat
};

struct TopOptions {
    ClusterChoice cluster;
    double interval = 1;  // seconds between screens
    int screens = 0;      // 0: until q or Ctrl-C; N: N screens, printed one after the other
};

struct RemoveOptions {
    ClusterChoice cluster;
    std::string region;
    std::string item;        // empty: the region itself
    bool recursive = false;  // a region that holds data items too
};

// backup REGION ITEM NAME; backup --list [NAME]; backup --delete NAME; restore NAME REGION ITEM.
struct BackupOptions {
    ClusterChoice cluster;
    std::string region, item, name;
    bool list = false;
    std::string list_name;    // --list NAME: only that backup
    std::string delete_name;  // --delete NAME
    std::string mode;         // restore into a new item: its mode (octal); empty: the backup's
    bool exact_bytes = false;
};

struct BenchOptions {
    ClusterChoice cluster;
    double seconds = 0.2;               // per measurement
    uint64_t item_bytes = 16ull << 20;  // the item transfers walk over
};

struct RunOptions {
    ClusterChoice cluster;
    int ranks = 1;
    std::vector<std::string> command;  // PROGRAM ARGS...
};

struct ExecOptions {
    ClusterChoice cluster;
    std::string node;      // a node of the emulated fabric ("client0", "memory1", "switch")
    bool by_rank = false;  // the client node of this PE's rank (what `fampool run` asks)
    std::vector<std::string> command;
};

// The munged `fampool up` starts for a cluster that authenticates with MUNGE when no site
// munged is named (munged.cc): its key, socket and seed live in DIR/munge.
struct MungedFiles {
    std::string dir, key, socket, pid_file, seed;
};
MungedFiles MungedFilesOf(const std::string &run_dir);
// Makes DIR/munge (mode 0755: clients of other users reach the socket) and a new key (1024
// random bits, mode 0400); returns munged's command line (in the foreground, so that `up`
// knows its PID). Throws CliError naming what failed.
std::vector<std::string> PrepareMunged(const MungedFiles &files);
// Whether the munged on `socket` makes credentials now; `why` gets the reason when not.
bool MungedAnswers(const std::string &socket, std::string *why);

int Up(const UpOptions &options);
int Down(const DownOptions &options);
int Status(const QueryOptions &options);
int Rebuild(const QueryOptions &options);
int List(const QueryOptions &options);
int Stat(const QueryOptions &options);
int Remove(const RemoveOptions &options);
int Backup(const BackupOptions &options);
int Restore(const BackupOptions &options);
int Bench(const BenchOptions &options);
int Run(const RunOptions &options);
// Checks what a run on the cluster needs from this node (doctor.cc); 0 when all pass.
int Doctor(const QueryOptions &options);
int Exec(const ExecOptions &options);
// A live view of the cluster from its metrics endpoints (top.cc).
int Top(const TopOptions &options);

}  // namespace fampool::cli

#endif  // FAMPOOL_TOOLS_CLI_CLI_H_
