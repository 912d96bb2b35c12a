/* peers shmem: OpenSHMEM's get and put throughput between two PEs of this node (Open MPI's
 * oshmem over UCX), the peer transfer_bench's fampool figures are compared with in
 * scripts/bench transfer. PE 0 reads from and writes into PE 1's symmetric heap, SIZE bytes at a
 * time at successive offsets of a 128 MiB buffer (so that operations in flight touch different
 * bytes):
 *   get      shmem_getmem, one at a time
 *   put      shmem_putmem then shmem_quiet (the bytes delivered, as fam_put_blocking returns)
 *   get_nb   WINDOW (at most 64 MiB of) shmem_getmem_nbi, then shmem_quiet, over and over
 *   put_nb   WINDOW (at most 64 MiB of) shmem_putmem_nbi, then shmem_quiet, over and over
 * Each figure runs SECONDS (after a short warm-up).
 *
 *   oshrun -np 2 peers shmem [--label L] [--sizes 256,1024,...] [--seconds S] [--window W]
 *
 * Prints one CSV line per figure on PE 0: openshmem,LABEL,OP,SIZE,SECONDS,BYTES,GBPS (1e9
 * bytes per second). UCX_TLS picks the transport: tcp,self for the socket class (with
 * UCX_NET_DEVICES=lo), sm,self for shared memory; scripts/bench transfer sets them, and
 * SHMEM_SYMMETRIC_HEAP_SIZE (the buffer needs 128 MiB of it). */
#include <shmem.h>
#include <time.h>

#include "peer_common.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A PeerRun against PE 1's symmetric buffer `peer`. */
static uint64_t run(void *peer, const char *op, char *local, size_t size, int window,
                    double seconds, double *elapsed) {
    char *remote = peer;
    size_t at = 0;
    uint64_t moved = 0;
    double start = now(), end = start + seconds;
    int nb = strstr(op, "_nb") != NULL, get = op[0] == 'g';
    while (now() < end) {
        int count = nb ? Window(window, size) : 1;
        for (int i = 0; i < count; ++i) {
            if (nb && get)
                shmem_getmem_nbi(local + at, remote + at, size, 1);
            else if (nb)
                shmem_putmem_nbi(remote + at, local + at, size, 1);
            else if (get)
                shmem_getmem(local + at, remote + at, size, 1);
            else
                shmem_putmem(remote + at, local + at, size, 1);
            at = at + 2 * size > BUFFER ? 0 : at + size;
            moved += size;
        }
        if (nb || !get) shmem_quiet();
    }
    *elapsed = now() - start;
    return moved;
}

int ShmemMain(int argc, char **argv) {
    struct PeerOptions o;
    if (ParsePeerOptions(argc, argv, "oshrun -np 2 peers shmem", 1, &o)) return 2;
    shmem_init();
    if (shmem_n_pes() != 2) {
        if (shmem_my_pe() == 0) fprintf(stderr, "peers shmem: run it with 2 PEs\n");
        shmem_finalize();
        return 2;
    }
    char *remote = shmem_malloc(BUFFER);
    char *local = malloc(BUFFER);
    if (!remote || !local) {
        fprintf(stderr, "peers shmem: no room for %lu bytes (SHMEM_SYMMETRIC_HEAP_SIZE)\n", BUFFER);
        shmem_global_exit(1);
    }
    memset(remote, 1, BUFFER);
    memset(local, 2, BUFFER);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) RunAllFigures("openshmem", &o, run, remote, local);
    shmem_barrier_all();
    shmem_free(remote);
    free(local);
    shmem_finalize();
    return 0;
}
