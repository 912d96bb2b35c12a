// Processes and ports for `fampool up` and `fampool down`: starting a server detached from the
// terminal, telling whether a PID is still a running fampool-server, stopping processes by PID,
// pid files, and who holds a TCP port.
#ifndef FAMPOOL_TOOLS_CLI_PROCESS_H_
#define FAMPOOL_TOOLS_CLI_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace fampool::cli {

// Running and not a zombie (a zombie has stopped; only its parent has yet to collect it).
bool ProcessAlive(pid_t pid);
// argv of a process from /proc/<pid>/cmdline; empty when it is gone or unreadable.
std::vector<std::string> CommandLineOf(pid_t pid);
// Whether pid runs a program named fampool-server (what `down` may signal).
bool IsFampoolServer(pid_t pid);

// Starts argv in a new session with stdin from /dev/null and stdout and stderr to `log`
// (truncated), inside network namespace `netns` when one is named (/run/netns/NETNS). Returns
// its PID. Throws CliError when it cannot fork or open the log or the namespace.
pid_t StartDetached(const std::vector<std::string> &argv, const std::string &log,
                    const std::string &netns = "");
// For a child of ours: "" while it runs, else how it ended ("exit status 1", "signal 9").
// Collects it when it has ended.
std::string EndedChild(pid_t pid);

struct Stopped {
    std::vector<pid_t> terminated;  // ended after SIGTERM
    std::vector<pid_t> killed;      // needed SIGKILL
    std::vector<pid_t> remaining;   // still there (signal refused, or unkillable)
};
// SIGTERM to each, up to timeout_s for them to end, then SIGKILL (and up to 3 s more).
// Collects those that are our children. Never signals anything but these PIDs.
Stopped StopProcesses(const std::vector<pid_t> &pids, double timeout_s);

struct PidFile {
    std::string name;  // "metadata", "memory0", ...
    std::string path;
    pid_t pid = 0;  // 0 when the file does not hold a PID
};
// Whether the process of a pid file is still the one `up` started: a fampool-server, or munged
// for the file "munged" (what `down` may signal).
bool IsClusterProcess(const PidFile &file);
// The pid files of a run directory (DIR/pids/*.pid), sorted by name.
std::vector<PidFile> ReadPidFiles(const std::string &run_dir);
void WritePidFile(const std::string &path, pid_t pid);

// The port of metadata shard `shard` in a cluster file `up` writes from base port `base`.
int ShardPort(int base, unsigned shard);
// The port of the metrics endpoint of metadata shard `index` (`metadata`) or memory server
// `index` in a cluster file `up` writes: base + 300 + k, base + 400 + i.
int MetricsPort(int base, bool metadata, unsigned index);
// Every port a cluster of `servers` memory servers and `shards` metadata shards takes on one
// host from base port `base`.
std::vector<int> PortsFrom(int base, unsigned servers, unsigned shards);
// `up --base-port auto`: a base port whose every port is free on the loopback interface now.
// Holds a lock that other processes' FreeBasePort wait for, until ReleaseBasePort (or exit):
// a port found free must stay free until this cluster's servers have bound it.
int FreeBasePort(unsigned servers, unsigned shards);
// This process's servers listen on every port of the base FreeBasePort chose.
void ReleaseBasePort();
// 0 when a TCP socket can bind 127.0.0.1:port, else the errno of bind (EADDRINUSE: taken).
int BindError(int port);
// The PID of a process listening on TCP port `port`, 0 when none is found.
pid_t PortHolder(int port);
// Whether a TCP connection to host:port is accepted right now.
bool Accepts(const std::string &address);

// A system tool (ip, tc, iptables, openssl) from /usr/sbin, /sbin, /usr/bin or /bin; "" when
// none is there.
std::string ToolPath(const std::string &name);
struct ToolResult {
    int status = -1;  // exit status; -1 when it did not run or was killed
    std::string output;
};
// Runs a tool (argv[0] found by ToolPath), its output (stdout and stderr) captured, for at most
// `timeout_ms` (then killed).
ToolResult RunTool(const std::vector<std::string> &argv, int timeout_ms = 10000);

// The last `lines` lines of a file, each indented; a note when it cannot be read.
std::string Tail(const std::string &path, int lines);

}  // namespace fampool::cli

#endif  // FAMPOOL_TOOLS_CLI_PROCESS_H_
