#include "common/test_hold.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/error.h"

namespace fampool {
namespace {

struct Hold {
    long milliseconds = 0;
    bool fail = false;  // POINT=fail: the point throws instead of waiting
    long left = -1;     // holds still to make; -1: every time
};

class Holds {
  public:
    Holds() { Load(); }
    void Load() {
        std::lock_guard<std::mutex> lock(mutex_);
        holds_.clear();
        const char *text = std::getenv("FAMPOOL_TEST_HOLD");
        std::string all = text ? text : "";
        for (size_t at = 0; !all.empty() && at <= all.size();) {
            size_t end = all.find(',', at);
            if (end == std::string::npos) end = all.size();
            Parse(all.substr(at, end - at));
            at = end + 1;
        }
        any_.store(!holds_.empty());
    }
    bool any() const { return any_.load(std::memory_order_relaxed); }
    void At(const char *point) {
        long ms;
        bool fail;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto found = holds_.find(point);
            if (found == holds_.end() || found->second.left == 0) return;
            if (found->second.left > 0) --found->second.left;
            ms = found->second.milliseconds;
            fail = found->second.fail;
        }
        if (fail) {
            std::fprintf(stderr, "fampool: test hold at %s: fail\n", point);
            Fail(openfam::FAM_ERR_RESOURCE, "test failure at {}", point);
        }
        std::fprintf(stderr, "fampool: test hold at %s: %ld ms\n", point, ms);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }

  private:
    void Parse(const std::string &entry) {
        if (entry.empty()) return;
        size_t equals = entry.find('=');
        char *end = nullptr;
        Hold hold;
        if (equals != std::string::npos && entry.compare(equals + 1, 4, "fail") == 0) {
            hold.fail = true;
            end = const_cast<char *>(entry.c_str()) + equals + 5;
        } else if (equals != std::string::npos) {
            hold.milliseconds = std::strtol(entry.c_str() + equals + 1, &end, 10);
        }
        if (end && *end == 'x') hold.left = std::strtol(end + 1, &end, 10);
        if (equals == std::string::npos || equals == 0 || !end || *end || hold.milliseconds < 0 ||
            hold.left == 0) {
            std::fprintf(stderr,
                         "fampool: FAMPOOL_TEST_HOLD entry \"%s\" is not POINT=MS, POINT=fail, "
                         "POINT=MSxCOUNT or POINT=failxCOUNT\n",
                         entry.c_str());
            std::exit(2);
        }
        holds_[entry.substr(0, equals)] = hold;
    }

    std::atomic<bool> any_{false};
    std::mutex mutex_;
    std::map<std::string, Hold> holds_;
};

Holds &TheHolds() {
    static Holds holds;
    return holds;
}

}  // namespace

void ReloadTestHolds() { TheHolds().Load(); }

void HoldAt(const char *point) {
    Holds &holds = TheHolds();
    if (holds.any()) holds.At(point);
}

}  // namespace fampool
