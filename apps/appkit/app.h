// What every application under apps/ shares: its PE's place in the job, `--name value`
// arguments, timing, and the lines it prints, so that scripts/apps can read them:
//
//   RESULT app=gups variant=atomic pes=2 updates=1048576 seconds=0.52 rate=2.0e6 unit=updates/s
//   CHECK app=gups passed errors=0
//
// A RESULT line carries one measurement (any key=value pairs; `rate` and `unit` by
// convention); a CHECK line the outcome of the application's correctness check. An application
// exits 0 only when every check passed.
#ifndef FAMPOOL_APPS_COMMON_APP_H_
#define FAMPOOL_APPS_COMMON_APP_H_

#include <fam/fam.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace apps {

// `--name value` and `--flag` arguments; positional ones are refused.
class Args {
  public:
    Args(int argc, char **argv, const char *usage);
    uint64_t Count(const std::string &name, uint64_t fallback) const;
    double Real(const std::string &name, double fallback) const;
    std::string Text(const std::string &name, const std::string &fallback) const;
    bool Flag(const std::string &name) const;

  private:
    std::map<std::string, std::string> values_;
    const char *usage_;
};

// This PE's rank and the job's size as fampool's runtime (PMIx) sees them.
struct Pe {
    uint64_t rank = 0;
    uint64_t count = 1;
    bool first() const { return rank == 0; }
    // Rows [begin, end) of `total` that this PE owns in a block distribution.
    uint64_t BlockBegin(uint64_t total) const { return total * rank / count; }
    uint64_t BlockEnd(uint64_t total) const { return total * (rank + 1) / count; }
};
Pe PeOf(openfam::fam &fam);

// Runs `body(fam, pe)` between fam_initialize and fam_finalize and returns its exit status. A
// Fam_Exception (or another std::exception) escaping it is printed as "<app>: <message>" and
// gives 1; with several PEs the job is aborted then (fam_abort), since the other PEs would wait
// at a barrier for this one.
int RunJob(const char *app, const std::function<int(openfam::fam &, const Pe &)> &body);

// "embedded" or "cluster" (memory servers), for RESULT lines.
std::string ModelOf(openfam::fam &fam);

class Timer {
  public:
    Timer() : start_(std::chrono::steady_clock::now()) {}
    double Seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    void Restart() { start_ = std::chrono::steady_clock::now(); }

  private:
    std::chrono::steady_clock::time_point start_;
};

// Prints "RESULT app=<app> <fields>" (only on the PE that calls it).
void Result(const char *app, const std::string &fields);
// Prints "CHECK app=<app> passed|FAILED <detail>"; returns the exit status to use.
int Check(const char *app, bool passed, const std::string &detail);

// Peak resident set size of this process, in bytes (VmHWM).
uint64_t PeakRss();

// The region `name` of `size` bytes, created fresh by PE 0 (an old one from an interrupted run is
// destroyed first) and looked up by the others after a barrier. `attributes` may be null.
openfam::Fam_Region_Descriptor *FreshRegion(openfam::fam &fam, const Pe &pe, const char *name,
                                            uint64_t size,
                                            Fam_Region_Attributes *attributes = nullptr);
// The item `name` allocated by PE 0 in `region` and looked up by the others after a barrier.
openfam::Fam_Descriptor *SharedItem(openfam::fam &fam, const Pe &pe,
                                    openfam::Fam_Region_Descriptor *region, const char *name,
                                    uint64_t size);

// SplitMix64: a fast, reproducible generator for keys, graphs and update streams.
inline uint64_t Mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace apps

#endif  // FAMPOOL_APPS_COMMON_APP_H_
