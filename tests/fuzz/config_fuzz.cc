// Fuzz target: the configuration loaders. The first byte picks one:
//   0: a cluster file (LoadClusterConfig); one that loads must read back the same from the
//      text fampool writes for it (ClusterFileText), as `fampool up` relies on;
//   1: OpenFAM's service files, three chunks (client interface, memory servers, metadata);
//   2: a PE configuration file ($FAMPOOL_CONFIG) and Fam_Options strings (LoadConfig).
// A loader may refuse its input only with a fampool Failure (a Fam_Error and a message that
// names the file): any other exception is a finding.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/cluster_config.h"
#include "common/config.h"
#include "common/error.h"
#include "common/openfam_config.h"
#include "fuzz_support.h"

namespace fampool::fuzz {
namespace {

void Write(const std::string &path, std::string_view text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), text.size());
}

std::string Seed(uint8_t loader, std::initializer_list<std::string_view> chunks) {
    std::string seed(1, static_cast<char>(loader));
    for (std::string_view chunk : chunks) AppendChunk(&seed, chunk);
    return seed;
}

std::vector<std::string> Seeds() {
    const char *cluster =
        "metadata_address: 127.0.0.1:7000\n"
        "metadata_dir: /tmp/fampool-fuzz-meta\n"
        "provider: tcp\n"
        "interleave_size: 4096\n"
        "authentication: none\n"
        "memservers:\n"
        "  - rpc_address: 127.0.0.1:7001\n"
        "    fabric_port: 7101\n"
        "    heap_dir: /tmp/fampool-fuzz-heaps0\n"
        "    memory_type: volatile\n"
        "    failure_domain: rack0\n"
        "  - rpc_address: 127.0.0.1:7002\n"
        "    fabric_port: 7102\n"
        "    heap_dir: /tmp/fampool-fuzz-heaps1\n"
        "    spare: true\n";
    const char *client =
        "memsrv_interface_type: rpc\nmetadata_interface_type: direct\n"
        "rpc_interface: 127.0.0.1:7000\n"
        "memsrv_list:\n  - 0:127.0.0.1:7001\n  - 1:127.0.0.1:7002\n"
        "metadata_list:\n  - 0:127.0.0.1:7050\nprovider: tcp\nrpc_framework_type: grpc\n";
    const char *memory =
        "provider: tcp\ndelayed_free_threads: 1\nATL_threads: 0\nresource_release: enable\n"
        "fam_backup_path: /tmp/fampool-fuzz-backup\nrpc_framework_type: grpc\n"
        "Memservers:\n"
        "  0:\n    memory_type: volatile\n    fam_path: /tmp/fampool-fuzz-vol0\n"
        "    rpc_interface: 127.0.0.1:7001\n    libfabric_port: 7100\n    if_device: lo\n"
        "  1:\n    memory_type: persistent\n    fam_path: /tmp/fampool-fuzz-pmem1\n"
        "    rpc_interface: 127.0.0.1:7002\n    libfabric_port: 7101\n";
    const char *metadata =
        "metadata_manager: radixtree\nmetadata_path: /tmp/fampool-fuzz-metadata\n"
        "enable_region_spanning: true\nregion_span_size_per_memoryserver: 1073741824\n"
        "dataitem_interleave_size: 1048576\n";
    const char *pe =
        "FamThreadModel: single\nprovider: tcp\nopenfam_model: memory_server\nruntime: NONE\n"
        "client_interface_type: rpc\nfam_client_interface_service_address: 127.0.0.1:7000\n"
        "default_memory_type: volatile\nresource_release: enable\n";
    return {Seed(0, {cluster}), Seed(1, {client, memory, metadata}),
            Seed(2, {pe, "region", "127.0.0.1", "7000", "tcp", "FAM_THREAD_SERIALIZE"}),
            Seed(2, {"model: embedded\ninterleave_size: 65536\n"})};
}

// Any exception but a Failure is a finding.
template <class Load>
void Refused(Load load) {
    try {
        load();
    } catch (const Failure &) {
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fuzz: a loader threw %s rather than a Failure\n", e.what());
        std::abort();
    }
}

ScratchDir *scratch = nullptr;

}  // namespace
}  // namespace fampool::fuzz

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    using namespace fampool::fuzz;
    WriteSeedsIfAsked(Seeds);
    scratch = &ProgramScratch("config");
    unsetenv("OPENFAM_ROOT");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace fampool;
    using namespace fampool::fuzz;
    Input input(data, size);
    const std::string dir = scratch->path();
    switch (input.Byte() % 3) {
        case 0: {
            Write(dir + "/cluster.yaml", input.Rest());
            Refused([&] {
                ClusterConfig config = LoadClusterConfig(dir + "/cluster.yaml");
                std::string text = ClusterFileText(config);
                Write(dir + "/again.yaml", text);
                ClusterConfig again = LoadClusterConfig(dir + "/again.yaml");
                if (ClusterFileText(again) != text) {
                    std::fprintf(stderr,
                                 "fuzz: a cluster file fampool wrote reads back "
                                 "differently:\n%s\n",
                                 text.c_str());
                    std::abort();
                }
            });
            break;
        }
        case 1:
            Write(dir + "/fam_client_interface_config.yaml", input.Chunk());
            Write(dir + "/fam_memoryserver_config.yaml", input.Chunk());
            Write(dir + "/fam_metadata_config.yaml", input.Chunk());
            Refused([&] { LoadOpenFamClusterConfig(dir); });
            break;
        default: {
            Write(dir + "/fam_pe_config.yaml", input.Chunk());
            setenv("FAMPOOL_CONFIG", (dir + "/fam_pe_config.yaml").c_str(), 1);
            std::string fields[6];
            for (std::string &field : fields) field = std::string(input.Chunk());
            Fam_Options options{};
            char **slots[] = {&options.defaultRegionName, &options.cisServer,
                              &options.grpcPort,          &options.libfabricProvider,
                              &options.famThreadModel,    &options.fam_default_memory_type};
            for (size_t i = 0; i < std::size(slots); ++i) {
                if (!fields[i].empty()) *slots[i] = fields[i].data();
            }
            Refused([&] { LoadConfig(&options); });
            break;
        }
    }
    scratch->Clear();
    return 0;
}
