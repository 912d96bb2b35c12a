// What client processes report of their data path (rpc UsageReport): the metadata service
// (shard 0) adds what each did since its previous report to fampool_client_operations_total
// {kind} and fampool_client_bytes_total{kind}, and knows how many clients reported lately.
// One-sided reads and writes do not pass through the memory servers' CPUs (tcp and verbs apply them
// without telling the server), so the clients are where they are counted.
#ifndef FAMPOOL_META_CLIENT_USAGE_H_
#define FAMPOOL_META_CLIENT_USAGE_H_

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/metrics.h"
#include "rpc/fampool.pb.h"

namespace fampool {

class ClientUsage {
  public:
    // A client that has not reported for this long is no longer counted as active (it ended
    // without its last report, or stopped its data path).
    static constexpr std::chrono::seconds kActiveWithin{30};

    void Add(const rpc::UsageReport &report);
    // Clients that reported within kActiveWithin and have not sent their last report.
    size_t ActiveClients();

  private:
    // Forgets the clients idle past kActiveWithin (mutex_ held); a report sweeps at most once
    // a second, so that each costs little however many clients report.
    void ForgetIdle(std::chrono::steady_clock::time_point now);
    std::chrono::steady_clock::time_point last_sweep_{};

    std::mutex mutex_;
    std::map<std::string, std::chrono::steady_clock::time_point> clients_;  // -> last report
};

}  // namespace fampool

#endif  // FAMPOOL_META_CLIENT_USAGE_H_
