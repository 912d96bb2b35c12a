// Command lines of the benchmarks: "--flag value" pairs read in order, and comma-separated
// lists. Header-only, with the standard library alone.
#ifndef FAMPOOL_BENCH_BENCH_ARGS_H_
#define FAMPOOL_BENCH_BENCH_ARGS_H_

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace bench_args {

// The non-empty parts of a comma-separated list.
inline std::vector<std::string> SplitList(const std::string &text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ',');) {
        if (!part.empty()) parts.push_back(part);
    }
    return parts;
}

// Walks argv: Next() moves to the next flag (false at the end), Value() takes the argument
// after it, or ends the program with status 2 naming the flag that has none.
class ArgReader {
  public:
    ArgReader(const char *program, int argc, char **argv)
        : program_(program), argc_(argc), argv_(argv) {}

    bool Next() {
        if (++at_ >= argc_) return false;
        flag_ = argv_[at_];
        return true;
    }
    const std::string &flag() const { return flag_; }
    std::string Value() {
        if (at_ + 1 >= argc_) {
            std::fprintf(stderr, "%s: %s needs a value\n", program_, flag_.c_str());
            std::exit(2);
        }
        return argv_[++at_];
    }

  private:
    const char *program_;
    int argc_;
    char **argv_;
    int at_ = 0;
    std::string flag_;
};

}  // namespace bench_args

#endif  // FAMPOOL_BENCH_BENCH_ARGS_H_
