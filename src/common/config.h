// The settings of one fam object, resolved once at fam_initialize from (highest first) the
// Fam_Options fields, FAMPOOL_* environment variables, the YAML configuration file
// ($OPENFAM_ROOT/config/fam_pe_config.yaml or $FAMPOOL_CONFIG) and built-in defaults.
#ifndef FAMPOOL_COMMON_CONFIG_H_
#define FAMPOOL_COMMON_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fam/fam.h"

namespace fampool {

struct Config {
    // OpenFAM options (the names fam_get_option accepts).
    std::string default_region_name = "Default";
    std::string cis_server = "127.0.0.1";
    std::string grpc_port = "8787";
    std::string libfabric_provider = "sockets";
    // Whether Fam_Options, FAMPOOL_PROVIDER or the file named the provider: a client that did
    // not takes the cluster's (the metadata service's ServerList); one that did is refused at
    // fam_initialize when it differs.
    bool libfabric_provider_set = false;
    std::string thread_model = "FAM_THREAD_SERIALIZE";
    std::string cis_interface_type = "rpc";
    std::string model = "shared_memory";
    std::string context_model = "FAM_CONTEXT_DEFAULT";
    std::string num_consumer = "1";
    std::string runtime = "NONE";
    std::string default_memory_type = "volatile";
    std::string if_device = "";
    void *local_buf_addr = nullptr;
    uint64_t local_buf_size = 0;

    // fampool settings.
    std::string data_dir;          // metadata, persistent heaps, default archive
    std::string shm_dir;           // volatile heaps
    std::string archive_dir;       // backups
    uint64_t interleave_size = 0;  // 0: no interleaving (one memory server)
    uint64_t default_region_size = 1ull << 30;
    bool meta_sync = false;  // fsync every metadata commit
    // Embedded model: more memory beside the default heaps (memory server 0: volatile in
    // shm_dir, persistent in data_dir), each a memory server of its own (ids 1, 2, ... in
    // order) that intent-based placement chooses by kind and speed (docs/intent.md).
    struct MemoryTier {
        std::string kind;  // dram, persistent, far
        std::string dir;   // its heaps (a persistent kind keeps persistent regions only)
        uint64_t capacity = 0, bandwidth = 0, latency_ns = 0;  // 0: no limit / measured
    };
    std::vector<MemoryTier> memory_tiers;
    // Memory-server model.
    std::string metadata_address;  // host:port of the metadata service
    // Its shards (metadata_shards), when the file lists them with metadata_address first;
    // empty: learnt from the service at fam_initialize.
    std::vector<std::string> metadata_shards;
    int rpc_timeout_ms = 10000;  // bound on every control-path call
    // How long fam_initialize keeps trying to reach the metadata service (a job's PEs all
    // connecting at once can find it slow to accept).
    int connect_timeout_ms = 60000;
    int fabric_timeout_ms = 10000;       // bound on every data-path completion
    bool metadata_fabric = true;         // lookups and allocations over the fabric if offered
    bool memserver_fabric = true;        // RAID atomics over the fabric if offered
    bool fabric_checked_reads = false;   // every read checks its key (shm: no fast reads)
    bool fabric_direct = true;           // shm: loads and stores on same-node heaps
    bool fabric_direct_by_path = false;  // ... opened by name, not asked of the server
    // Gathers and scatters of at least this many scattered elements are done by the memory
    // servers (0: never; one RMA per element instead).
    uint64_t fabric_memory_side_elements = 64;
    // fam_queue_operation (memory-side aggregation).
    bool aggregation = true;  // false: the calls fail with FAM_ERR_ATL_NOT_ENABLED
    uint64_t aggregation_threshold =
        16384;                          // elements that ship a descriptor's queue; 0: flush only
    uint64_t atl_queue_size = 1 << 20;  // ATL_queue_size: elements a queue holds at most
    uint64_t atl_data_size = 4 << 20;   // ATL_data_size: bytes of one request to a server
    // "munge": the metadata service must authenticate callers (fam_initialize fails against
    // one that does not); "none": authenticate when the service asks for it. The credential
    // comes from the munged on munge_socket (empty: libmunge's default socket).
    std::string authentication = "none";
    std::string munge_socket;
    // Embedded model: the group (name or number) whose members share this store with its
    // owner; "": the store and its heaps are private to the user who made them
    // (common/file_access.h, docs/security.md).
    std::string sharing_group;
    // TLS to the metadata service and memory servers (common/tls.h): the CA that signed their
    // certificate (tls_ca; unset: no TLS), the name in it (tls_server_name), and this
    // client's certificate and key where the servers require one.
    std::string tls_ca, tls_server_name, tls_client_certificate, tls_client_key;
    std::string config_file;  // the YAML file that was read, if any
    // Where each setting read from a file key, a variable or an option came from, in the
    // order they were read (`fampool doctor` shows those not left at their default).
    struct Source {
        std::string setting;  // its first key name
        std::string value;
        std::string from;  // "Fam_Options", a variable (FAMPOOL_PROVIDER), "file key K", "default"
    };
    std::vector<Source> sources;
};

// A size or count: a number (decimal, or 0x...) with an optional unit k/K/KiB, m/M/MiB, g/G/GiB,
// t/T/TiB (powers of 1024). Throws Failure(FAM_ERR_INVALID) naming `what`.
uint64_t ParseSize(const char *what, const std::string &text);

// Resolves the configuration. Throws Failure (FAM_ERR_INVALID, FAM_ERR_NOT_PWR_TWO) on a bad
// value or an unreadable configuration file.
Config LoadConfig(const Fam_Options *options);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_CONFIG_H_
