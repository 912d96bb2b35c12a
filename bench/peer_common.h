/* What peer_shmem.c and peer_mpi_rma.c share: their options, the in-flight rule and the loop
 * over operations and sizes that prints one CSV line per figure. Each peer supplies the
 * function that moves bytes for a while with its own calls. */
#ifndef FAMPOOL_BENCH_PEER_COMMON_H_
#define FAMPOOL_BENCH_PEER_COMMON_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER (128UL << 20)
#define MAX_SIZES 32
#define MOST_IN_FLIGHT (64UL << 20)

struct PeerOptions {
    const char *label;
    size_t sizes[MAX_SIZES];
    int nsizes, window;
    double seconds;
};

/* Transfers in flight between quiets: `window`, but no more than 64 MiB of them (at 64 MiB, one:
 * the same rule in every program scripts/bench transfer compares). */
static int Window(int window, size_t size) {
    size_t most = MOST_IN_FLIGHT / size;
    if (most < 1) most = 1;
    return (size_t)window < most ? window : (int)most;
}

/* Reads the options into *o (defaults first); 0, or 2 after printing the usage of `usage` (a
 * launcher and program name) when `loud`. */
static int ParsePeerOptions(int argc, char **argv, const char *usage, int loud,
                            struct PeerOptions *o) {
    static const size_t defaults[] = {256,       1 << 10, 4 << 10, 16 << 10, 64 << 10,
                                      256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
    o->label = "";
    o->nsizes = (int)(sizeof defaults / sizeof defaults[0]);
    memcpy(o->sizes, defaults, sizeof defaults);
    o->window = 16;
    o->seconds = 0.25;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--label") && i + 1 < argc) {
            o->label = argv[++i];
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            o->nsizes = 0;
            for (char *part = strtok(argv[++i], ","); part && o->nsizes < MAX_SIZES;
                 part = strtok(NULL, ",")) {
                o->sizes[o->nsizes++] = strtoull(part, NULL, 0);
            }
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            o->seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--window") && i + 1 < argc) {
            o->window = atoi(argv[++i]);
        } else {
            if (loud) {
                fprintf(stderr,
                        "usage: %s [--label L] [--sizes a,b,...] [--seconds S] "
                        "[--window W]\n",
                        usage);
            }
            return 2;
        }
    }
    return 0;
}

/* Moves `size` bytes at a time with operation `op` (get, put, get_nb, put_nb) for `seconds`;
 * returns the bytes moved and sets *elapsed. */
typedef uint64_t (*PeerRun)(void *peer, const char *op, char *local, size_t size, int window,
                            double seconds, double *elapsed);

/* Every operation at every size: a warm-up of a tenth of the time, then the figure, printed as
 * PEER,LABEL,OP,SIZE,SECONDS,BYTES,GBPS. */
static void RunAllFigures(const char *name, const struct PeerOptions *o, PeerRun run, void *peer,
                          char *local) {
    const char *ops[] = {"get", "put", "get_nb", "put_nb"};
    for (int k = 0; k < 4; ++k) {
        for (int s = 0; s < o->nsizes; ++s) {
            double elapsed;
            run(peer, ops[k], local, o->sizes[s], o->window, o->seconds / 10, &elapsed);
            uint64_t moved = run(peer, ops[k], local, o->sizes[s], o->window, o->seconds, &elapsed);
            printf("%s,%s,%s,%zu,%.4f,%llu,%.6f\n", name, o->label, ops[k], o->sizes[s], elapsed,
                   (unsigned long long)moved, moved / elapsed / 1e9);
            fflush(stdout);
        }
    }
}

#endif /* FAMPOOL_BENCH_PEER_COMMON_H_ */
