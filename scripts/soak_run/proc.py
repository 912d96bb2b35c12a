"""What scripts/soak reads of the servers in /proc: whether a pid runs, the pids of a run
directory, and each server's anonymous memory and open fds by kind, each TCP socket named by
the server at its other end."""
import os


def running(pid):
    """Whether pid runs (a zombie has stopped: only its parent has yet to collect it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def pids_of(run_dir):
    """{server name: pid} from RUN_DIR/pids/*.pid."""
    pids = {}
    pid_dir = os.path.join(run_dir, "pids")
    for name in sorted(os.listdir(pid_dir)) if os.path.isdir(pid_dir) else []:
        if name.endswith(".pid"):
            try:
                with open(os.path.join(pid_dir, name)) as f:
                    pids[name[:-4]] = int(f.read().strip())
            except (OSError, ValueError):
                pass
    return pids


def tcp_sockets():
    """{socket inode: (local "addr:port", remote "addr:port")} of every TCP socket on this host
    (/proc/net/tcp and tcp6, in their hex form: only compared, never shown)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    found[fields[9]] = (fields[1], fields[2])
        except (OSError, StopIteration, IndexError):
            continue
    return found


def socket_inodes(pid):
    """{fd: link target} of a process's open fds (an fd closed meanwhile is left out)."""
    links = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
    return links


def fd_kind(target, sockets, owners):
    """What an fd's link in /proc/PID/fd names, without the instance: socket, pipe, eventfd...
    A TCP socket is named by the server at its other end ("socket to memory1"), by "listening
    socket", or as "socket to a client" (a PE, the CLI); another socket is "socket (unix)"."""
    if target.startswith("socket:"):
        ends = sockets.get(target[len("socket:["):-1])
        if ends is None:
            return "socket (unix)"
        if ends[1].endswith(":0000") and int(ends[1].split(":")[0], 16) == 0:
            return "listening socket"
        owner = owners.get(ends[1])
        return f"socket to {owner}" if owner else "socket to a client"
    if target.startswith("pipe:"):
        return "pipe"
    if target.startswith("anon_inode:"):
        return target[len("anon_inode:"):].strip("[]")
    return "file"


def sample_processes(pids):
    """{name: (anonymous RSS in KiB, fds, {fd kind: count})} of the named running processes."""
    sockets = tcp_sockets()
    links, owners = {}, {}
    for name, pid in pids.items():
        try:
            links[name] = socket_inodes(pid)
        except OSError:
            continue
        for target in links[name].values():
            ends = sockets.get(target[len("socket:["):-1]) if target.startswith("socket:") else None
            if ends:
                owners[ends[0]] = name
    got = {}
    for name, pid in pids.items():
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))
        except (OSError, StopIteration, ValueError):
            continue
        if name not in links:
            continue
        kinds = {}
        for target in links[name].values():
            kind = fd_kind(target, sockets, owners)
            kinds[kind] = kinds.get(kind, 0) + 1
        got[name] = (rss, sum(kinds.values()), kinds)
    return got


def endpoint_fd(kind):
    """Whether an fd of this kind belongs to a fabric endpoint: each (the server's service
    endpoint, and each channel to its peers) holds one listening socket, 3 epoll instances, 6
    unix sockets (libfabric's wake-ups) and a socket per connection to another server."""
    return kind in ("listening socket", "eventpoll", "socket (unix)") or (
        kind.startswith("socket to ") and kind != "socket to a client")


def kind_changes(before, after):
    """"+4 socket to memory1, -2 eventfd": the kinds of fd whose count changed."""
    changes = [(after.get(kind, 0) - before.get(kind, 0), kind)
               for kind in sorted(set(before) | set(after))]
    return ", ".join(f"{n:+} {kind}" for n, kind in changes if n)
