// OpenFAM's service configuration, read as a fampool cluster: a site that ran OpenFAM starts
// fampool's services from the files it has (fampool-server --config DIR, fampool up --config
// DIR, with DIR usually $OPENFAM_ROOT/config). Three files, each optional except the memory
// servers':
//
//   fam_client_interface_config.yaml  rpc_interface (host:port where PEs reach the service:
//                                     fampool's metadata service), memsrv_list, metadata_list,
//                                     the interface types, provider, rpc_framework_type
//   fam_memoryserver_config.yaml      provider, libfabric_port, fam_backup_path,
//                                     delayed_free_threads, resource_release, ATL_*, and
//                                     Memservers: a map from id to {memory_type, fam_path,
//                                     rpc_interface, libfabric_port, if_device}
//   fam_metadata_config.yaml          metadata_manager, metadata_path, enable_region_spanning,
//                                     region_span_size_per_memoryserver,
//                                     dataitem_interleave_size
//
// OpenFAM's client interface service and metadata service are one service in fampool: it
// listens at the client interface's rpc_interface and keeps its store at metadata_path.
#ifndef FAMPOOL_COMMON_OPENFAM_CONFIG_H_
#define FAMPOOL_COMMON_OPENFAM_CONFIG_H_

#include <string>

#include "common/cluster_config.h"

namespace fampool {

// Reads the files of `dir`. Throws Failure(FAM_ERR_INVALID) naming the file and key of an
// unknown key, a value fampool does not take, or a missing one.
ClusterConfig LoadOpenFamClusterConfig(const std::string &dir);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_OPENFAM_CONFIG_H_
