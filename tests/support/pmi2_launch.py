#!/usr/bin/env python3
"""pmi2_launch: starts N processes of a program as one job under a PMI2 process manager of its
own, the way `srun --mpi=pmi2` does, for the tests of fampool's PMI2 runtime on a machine
without a SLURM cluster.

    pmi2_launch.py -n N [--timeout SECONDS] PROGRAM [ARGS...]

Each process gets PMI_FD (its end of a socket pair), PMI_RANK, PMI_SIZE and PMI_JOBID, and talks
PMI2's wire protocol over the socket: an "init" line, then commands framed by a 6-character
length ("fullinit", "job-getid", "kvs-put", "kvs-get", "kvs-fence", "finalize", "abort"). A
fence answers every process once all of them have entered it. "abort" ends every process of the
job (SIGTERM, then SIGKILL after 5 s) and the launcher exits 134, as srun reports an aborted job.
Otherwise the launcher exits with the first non-zero exit status of a process (128 + signal for
one killed by a signal), or 0. Everything it starts is stopped by PID when the timeout passes
(exit status 124).
"""
import argparse
import os
import selectors
import signal
import socket
import sys
import time

JOB_ID = f"pmi2-launch-{os.getpid()}"


def parse(payload):
    """'cmd=x;a=b;' -> {'cmd': 'x', 'a': 'b'} (';;' stands for a ';' inside a value)."""
    fields, key, value, in_value, i = {}, "", "", False, 0
    while i < len(payload):
        c = payload[i]
        if c == ";" and i + 1 < len(payload) and payload[i + 1] == ";" and in_value:
            value += ";"
            i += 2
            continue
        if c == "=" and not in_value:
            in_value = True
        elif c == ";":
            fields[key] = value
            key, value, in_value = "", "", False
        elif in_value:
            value += c
        else:
            key += c
        i += 1
    if key:
        fields[key] = value
    return fields


def frame(**fields):
    body = "".join(f"{k.replace('_', '-')}={str(v).replace(';', ';;')};"
                   for k, v in fields.items())
    return f"{len(body):<6}{body}".encode()


class Peer:
    def __init__(self, rank, sock):
        self.rank, self.sock, self.buffer, self.initialized = rank, sock, b"", False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    if not options.command:
        parser.error("no program given")

    size = options.n
    peers, children = {}, {}
    selector = selectors.DefaultSelector()
    for rank in range(size):
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PMI_FD=str(theirs.fileno()), PMI_RANK=str(rank),
                   PMI_SIZE=str(size), PMI_JOBID=JOB_ID)
        pid = os.fork()
        if pid == 0:
            ours.close()
            os.set_inheritable(theirs.fileno(), True)
            try:
                os.execvpe(options.command[0], options.command, env)
            finally:
                os._exit(127)
        theirs.close()
        children[pid] = rank
        peers[ours] = Peer(rank, ours)
        selector.register(ours, selectors.EVENT_READ)

    kvs, fenced, status, aborted = {}, set(), {}, False
    deadline = time.monotonic() + options.timeout

    def stop_all():
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 5
        while children and time.monotonic() < end:
            reap(block=False)
            time.sleep(0.05)
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while children:
            reap(block=True)

    def reap(block):
        while children:
            try:
                pid, code = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                children.clear()
                return
            if pid == 0:
                return
            rank = children.pop(pid, None)
            if rank is not None:
                status[rank] = (128 + os.WTERMSIG(code)) if os.WIFSIGNALED(code) \
                    else os.WEXITSTATUS(code)
            if block:
                return

    def handle(peer, fields):
        nonlocal aborted
        cmd = fields.get("cmd", "")
        if cmd == "fullinit":
            peer.sock.sendall(frame(cmd="fullinit-response", rc=0, pmi_version=2,
                                    pmi_subversion=0, rank=peer.rank, size=size, appnum=0,
                                    spawner_jobid=JOB_ID, debugged="FALSE",
                                    pmiverbose="FALSE"))
        elif cmd == "job-getid":
            peer.sock.sendall(frame(cmd="job-getid-response", rc=0, jobid=JOB_ID))
        elif cmd == "kvs-put":
            kvs[fields.get("key", "")] = fields.get("value", "")
            peer.sock.sendall(frame(cmd="kvs-put-response", rc=0))
        elif cmd == "kvs-get":
            key = fields.get("key", "")
            found = key in kvs
            peer.sock.sendall(frame(cmd="kvs-get-response", rc=0 if found else 1,
                                    found="TRUE" if found else "FALSE", value=kvs.get(key, "")))
        elif cmd == "kvs-fence":
            fenced.add(peer.rank)
            if len(fenced) == size:
                for other in peers.values():
                    other.sock.sendall(frame(cmd="kvs-fence-response", rc=0))
                fenced.clear()
        elif cmd == "finalize":
            peer.sock.sendall(frame(cmd="finalize-response", rc=0))
        elif cmd == "abort":
            sys.stderr.write(f"pmi2_launch: rank {peer.rank} aborted the job: "
                             f"{fields.get('msg', '')}\n")
            aborted = True
        else:
            sys.stderr.write(f"pmi2_launch: rank {peer.rank}: unknown command {cmd!r}\n")
            peer.sock.sendall(frame(cmd=f"{cmd}-response", rc=1, errmsg="unknown command"))

    while children and not aborted:
        if time.monotonic() > deadline:
            sys.stderr.write(f"pmi2_launch: job still running after {options.timeout} s\n")
            stop_all()
            return 124
        for key, _ in selector.select(timeout=0.1):
            peer = peers[key.fileobj]
            try:
                data = peer.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                selector.unregister(peer.sock)
                continue
            peer.buffer += data
            while True:
                if not peer.initialized:
                    line, sep, rest = peer.buffer.partition(b"\n")
                    if not sep:
                        break
                    peer.buffer = rest
                    if b"cmd=init" in line:
                        peer.initialized = True
                        peer.sock.sendall(b"cmd=response_to_init pmi_version=2 "
                                          b"pmi_subversion=0 rc=0\n")
                    continue
                if len(peer.buffer) < 6:
                    break
                length = int(peer.buffer[:6].decode().strip())
                if len(peer.buffer) < 6 + length:
                    break
                payload = peer.buffer[6:6 + length].decode()
                peer.buffer = peer.buffer[6 + length:]
                handle(peer, parse(payload))
        reap(block=False)
    if aborted:
        stop_all()
        return 134
    for rank in sorted(status):
        if status[rank] != 0:
            return status[rank]
    return 0


if __name__ == "__main__":
    sys.exit(main())
