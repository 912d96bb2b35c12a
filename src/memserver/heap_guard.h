// A memory server's guard against a client that shrinks a heap it holds a writable descriptor
// of (memserver/heap_socket.h): ftruncate on that descriptor would make the server's next
// touch of the cut pages (a copy, a backup, a zeroing, the provider's RMA) a SIGBUS that ends
// the server and every region on it. With the guard, such a fault maps a private zero page
// over the cut page and the access goes on: the damage stays in the one region the client may
// write anyway (its cut bytes read as zeros and writes there are lost), and the server says
// so once in its log.
#ifndef FAMPOOL_MEMSERVER_HEAP_GUARD_H_
#define FAMPOOL_MEMSERVER_HEAP_GUARD_H_

#include <cstdint>

namespace fampool {

// Installs the SIGBUS handler for this process (once; fampool-server calls it at start).
void GuardHeapMappings();
// Heap mappings the guard covers: HeapMapping registers its range for its lifetime. A fault
// outside every registered range is left to the default action.
void RegisterHeapRange(const char *base, uint64_t length);
void UnregisterHeapRange(const char *base);
// Faults on cut pages the guard has absorbed so far.
uint64_t GuardedFaults();

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_HEAP_GUARD_H_
