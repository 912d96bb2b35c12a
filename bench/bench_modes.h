// One benchmark program per question, its variants as modes: `PROGRAM [MODE] [FLAGS...]`.
// The first mode is the default (no mode given, or the first argument is a flag); `PROGRAM
// help` lists the modes. A mode's function gets argv with the mode removed, so that argv[0]
// names "PROGRAM MODE" in its messages and its flags read as they did when it was a program of
// its own. Header-only, with the standard library alone.
#ifndef FAMPOOL_BENCH_BENCH_MODES_H_
#define FAMPOOL_BENCH_BENCH_MODES_H_

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace bench_modes {

struct Mode {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;  // one line for `PROGRAM help`
};

inline int Dispatch(const char *program, const std::vector<Mode> &modes, int argc, char **argv) {
    const Mode *chosen = &modes.front();
    int shift = 0;
    if (argc > 1 && argv[1][0] != '-') {
        std::string asked = argv[1];
        chosen = nullptr;
        for (const Mode &mode : modes) {
            if (asked == mode.name) chosen = &mode;
        }
        if (chosen == nullptr) {
            if (asked != "help") std::fprintf(stderr, "%s: no mode \"%s\"\n", program, argv[1]);
            std::fprintf(asked == "help" ? stdout : stderr, "usage: %s [MODE] [FLAGS...]; modes:\n",
                         program);
            for (const Mode &mode : modes) {
                std::fprintf(asked == "help" ? stdout : stderr, "  %-16s %s%s\n", mode.name,
                             mode.what, &mode == &modes.front() ? " (the default)" : "");
            }
            return asked == "help" ? 0 : 2;
        }
        shift = 1;
    }
    std::string name = std::string(program) + " " + chosen->name;
    std::vector<char *> args;
    args.push_back(name.data());
    for (int i = 1 + shift; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    return chosen->run(static_cast<int>(args.size()) - 1, args.data());
}

}  // namespace bench_modes

#endif  // FAMPOOL_BENCH_BENCH_MODES_H_
