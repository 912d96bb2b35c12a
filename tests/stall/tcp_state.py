"""gdb script: the state of every tcp connection of a memory server's data endpoint, read from
libfabric's own structures.

    gdb -batch -p PID -x tests/stall/tcp_state.py

It stops the server where its progress thread reads the endpoint's completion queue
(FabricServer::Served, at its call of Reap: the queue is then the first argument) and walks
from that ofi_rxm queue to the rxm endpoints bound to it and to each one's tcp endpoints. The
structures' types come from libfabric's debug information; Debian ships none, so the script
loads them from FAMPOOL_LIBFABRIC_TYPES, a libfabric of the same release built with -g and
the same configuration (the structures do not depend on optimisation), e.g.
    git archive v1.17.0 | tar -x; ./autogen.sh; ./configure CFLAGS="-O2 -g" ...; make install
For each tcp endpoint it prints its socket, state, what its receive side is doing (header
bytes read of the header length, the operation, the handler it is in, whether it holds a
receive entry, bytes left), bytes prefetched and not consumed, whether a send is in progress,
and the receives posted to the shared receive context.
"""
import os
import time

import gdb


def dlist(head, entry_type, member):
    """The entries of a struct dlist_entry list, as entry_type values."""
    offset = int(gdb.parse_and_eval(f"(unsigned long) &(({entry_type} *) 0)->{member}"))
    node = head["next"]
    while int(node) != int(head.address):
        yield gdb.parse_and_eval(f"({entry_type} *) {int(node) - offset}").dereference()
        node = node["next"]


def slist_length(slist, most=100000):
    count, node = 0, slist["head"]
    while int(node) != 0 and count < most:
        count += 1
        node = node["next"]
    return count


def handler_name(pointer):
    if int(pointer) == 0:
        return "none"
    block = gdb.block_for_pc(int(pointer))
    return str(block.function) if block and block.function else hex(int(pointer))


def dump_tcp(msg_cq):
    cq = gdb.parse_and_eval(f"(struct util_cq *) {int(msg_cq)}").dereference()
    for entry in dlist(cq["ep_list"], "struct fid_list_entry", "entry"):
        ep = gdb.parse_and_eval(f"(struct tcpx_ep *) {int(entry['fid'])}").dereference()
        rx = ep["cur_rx"]
        rq = ep["bsock"]["rq"]
        srx = ep["srx_ctx"]
        posted = "no srx" if int(srx) == 0 else f"srx posted {slist_length(srx['rx_queue'])}"
        print(f"  tcp ep sock {int(ep['bsock']['sock'])} state {ep['state']} "
              f"hdr {int(rx['hdr_done'])}/{int(rx['hdr_len'])} "
              f"op {int(rx['hdr']['base_hdr']['op'])} handler {handler_name(rx['handler'])} "
              f"entry {'yes' if int(rx['entry']) else 'no'} data_left {int(rx['data_left'])} "
              f"prefetched {int(rq['tail']) - int(rq['head'])} "
              f"tx {'busy' if int(ep['cur_tx']['entry']) else 'idle'} "
              f"pollout {bool(ep['pollout_set'])} {posted}")


def main():
    gdb.execute("set pagination off")
    types = os.environ.get("FAMPOOL_LIBFABRIC_TYPES")
    try:
        gdb.lookup_type("struct util_cq")
    except gdb.error:
        if not types:
            print("tcp_state: libfabric has no debug information; set FAMPOOL_LIBFABRIC_TYPES")
            return
        gdb.execute(f"add-symbol-file {types} -o 0x100000000000", to_string=True)
    text = gdb.execute("disassemble 'fampool::FabricServer::Served'", to_string=True)
    call = next(line for line in text.splitlines() if "call" in line and "Reap" in line)
    gdb.execute(f"break *{int(call.split()[0], 16):#x}", to_string=True)
    gdb.execute("continue", to_string=True)
    queue = int(gdb.parse_and_eval("$rdi"))
    gdb.execute("delete", to_string=True)
    cq = gdb.parse_and_eval(f"(struct util_cq *) {queue}").dereference()
    for entry in dlist(cq["ep_list"], "struct fid_list_entry", "entry"):
        rxm = gdb.parse_and_eval(f"(struct rxm_ep *) {int(entry['fid'])}").dereference()
        print(f"rxm ep {int(entry['fid']):#x}: connecting {int(rxm['connecting_cnt'])}, "
              f"connection manager last progressed "
              f"{time.monotonic() - int(rxm['msg_cq_last_poll']) / 1e6:.3f} s ago")
        dump_tcp(rxm["msg_cq"])


main()
