// Everything an initialized fam object uses, shared by the object and its contexts: the
// configuration, the caller's identity, the metadata service, the memory server, the data-path
// transport and the launch runtime.
#ifndef FAMPOOL_CLIENT_SESSION_H_
#define FAMPOOL_CLIENT_SESSION_H_

#include <atomic>
#include <memory>
#include <vector>

#include "client/usage_reporter.h"
#include "common/config.h"
#include "memserver/local_memory_server.h"
#include "meta/client/metadata_service.h"
#include "runtime/runtime.h"
#include "transport/transport.h"

namespace fampool {

class LmdbEnv;  // meta/lmdb.h: the embedded model's store, opened in session.cc

struct Session {
    // Builds the model `config` names. Embedded (shared_memory): opens (or creates) the store
    // under the data directory and the heaps, all in-process. memory_server: connects to the
    // metadata service and, through it, finds the memory servers.
    static std::shared_ptr<Session> Open(const Config &config);
    // The embedded model's store and heaps as they stand, opened without what a program does
    // when it starts (MetadataStore::Prepare: making a store, dropping the volatile regions of
    // an earlier boot), for tools that inspect or clean them while programs use them
    // (`fampool ls`, `fampool rm`). Throws FAM_ERR_NOTFOUND when no program has made the
    // store yet; makes nothing then.
    static std::shared_ptr<Session> OpenInPlace(const Config &config);

    // The memory server with this id (copy, backup, restore and fallback atomics go there).
    MemoryServer &Server(uint64_t id);

    Config config;
    Caller caller;
    // This process's node as memory servers' hosts are named (FAM_HINT_NEAR_PE); embedded: "".
    std::string host;
    std::shared_ptr<LmdbEnv> env;                        // embedded model only
    std::vector<std::unique_ptr<MemoryServer>> servers;  // by id
    std::unique_ptr<MetadataService> metadata;
    // The data path: embedded, a ShmTransport (transport/shm: memcpy into mapped heaps); on a
    // cluster, the transports ClusterDataPath (session.cc) composes, whose channels end in
    // FabricChannel (transport/fabric/fabric_channel.cc) for items of plain regions.
    std::unique_ptr<Transport> transport;
    std::unique_ptr<Runtime> runtime;
    // Counts the data path and reports it to the metadata service, when it asks for that (it
    // serves metrics); null otherwise. Declared after `metadata`, so it goes first.
    std::unique_ptr<UsageReporter> usage;
    std::atomic<bool> finalized{false};
};

// The session of an initialized, not finalized object; throws FAM_ERR_INVALIDOP otherwise.
Session &LiveSession(const std::shared_ptr<Session> &session);

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_SESSION_H_
