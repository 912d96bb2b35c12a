#include "client/session.h"

#include <unistd.h>

#include "common/error.h"
#include "meta/metadata_store.h"
#include "transport/shm/shm_transport.h"

namespace fampool {

std::shared_ptr<Session> Session::Open(const Config &config) {
    if (config.model != "shared_memory") {
        Fail(openfam::FAM_ERR_INVALID,
             "openFamModel \"{}\" needs fampool's memory servers and metadata service, which "
             "this build does not include; use openFamModel shared_memory",
             config.model);
    }
    auto session = std::make_shared<Session>();
    session->config = config;
    session->caller = Caller{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid())};
    session->runtime = MakeRuntime(config.runtime);
    session->env = LmdbEnv::Open(config.data_dir + "/meta", config.meta_sync);
    std::string instance = MetadataStore::Prepare(*session->env);
    HeapLocation location{config.shm_dir, config.data_dir + "/heaps", instance};
    session->memory_server =
        std::make_unique<LocalMemoryServer>(0, location, config.archive_dir);
    PlacementOptions placement;
    placement.interleave_size = config.interleave_size;
    session->metadata = std::make_unique<MetadataStore>(
        session->env, std::vector<MemoryServer *>{session->memory_server.get()}, placement);
    session->transport = std::make_unique<ShmTransport>(session->memory_server.get());
    return session;
}

}  // namespace fampool
