// Which fampool a process is, as its peers should know it: the release and a fingerprint of
// the control-path protocol it speaks (fampool.proto as compiled in), so that a client and
// servers built from different sources tell, even at the same release number (`fampool
// doctor` compares them; the services send theirs in ServerList and ServerInfo).
#ifndef FAMPOOL_RPC_VERSION_H_
#define FAMPOOL_RPC_VERSION_H_

#include <cstdint>
#include <string>

namespace fampool {

// "0.1.0 (protocol 1a2b3c4d)".
const std::string &FampoolVersion();
// Microseconds since the Unix epoch by this node's clock (the services send it with their
// version: `fampool doctor` compares the clocks).
int64_t UnixTimeMicros();
// The most descriptors this process may hold open (its soft RLIMIT_NOFILE; the services send it
// with their version).
uint64_t OpenFilesLimit();

}  // namespace fampool

#endif  // FAMPOOL_RPC_VERSION_H_
