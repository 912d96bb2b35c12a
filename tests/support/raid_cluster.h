// A cluster fixture for tests of redundant regions: the metadata service's view of their
// members (states, waits for them to change) and its rebuild call.
#ifndef FAMPOOL_TESTS_SUPPORT_RAID_CLUSTER_H_
#define FAMPOOL_TESTS_SUPPORT_RAID_CLUSTER_H_

#include <chrono>
#include <string>
#include <thread>

#include "cluster_fixtures.h"
#include "common/cluster_config.h"
#include "meta/client/metadata_client.h"
#include "process_util.h"

namespace fampool_test {

class RaidClusterTest : public ClusterTest {
  protected:
    fampool::rpc::ClusterStatus Status() {
        fampool::ClusterConfig config = fampool::LoadClusterConfig(cluster()->config_path());
        fampool::MetadataClient client(config.metadata_address, std::chrono::seconds(20));
        if (config.authentication == "munge") client.UseMunge(config.munge_socket);
        return client.Status();
    }
    // The region's member states (one byte each), as the metadata service has them.
    std::string MemberStates(const std::string &name) {
        fampool::rpc::ClusterStatus status = Status();
        for (const auto &usage : status.regions()) {
            if (usage.region().name() == name) return usage.region().member_state();
        }
        return "?";
    }
    // Waits (at most `seconds`) until the region's members are all healthy.
    bool WaitHealthy(const std::string &name, double seconds) {
        auto deadline = SteadyClock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
        while (SteadyClock::now() < deadline) {
            std::string states = MemberStates(name);
            if (states != "?" && states.find_first_not_of('\0') == std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }
    bool WaitDegraded(const std::string &name, double seconds) {
        auto deadline = SteadyClock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
        while (SteadyClock::now() < deadline) {
            std::string states = MemberStates(name);
            if (states.find('\1') != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }
    fampool::rpc::RebuildReply Rebuild() {
        fampool::ClusterConfig config = fampool::LoadClusterConfig(cluster()->config_path());
        fampool::MetadataClient client(config.metadata_address, std::chrono::seconds(120));
        if (config.authentication == "munge") client.UseMunge(config.munge_socket);
        return client.Rebuild("", std::chrono::seconds(120));
    }
};

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_RAID_CLUSTER_H_
