/* peers mpi-rma: MPI-3 one-sided get and put throughput between two ranks of this node, the peer
 * transfer_bench's fampool figures are compared with in scripts/bench transfer. Rank 1 exposes a
 * 128 MiB window (MPI_Win_allocate) and waits; rank 0 opens a passive-target epoch on it
 * (MPI_Win_lock_all) and moves SIZE bytes at a time at successive offsets:
 *   get      MPI_Get then MPI_Win_flush, one at a time
 *   put      MPI_Put then MPI_Win_flush (the bytes at the target, as fam_put_blocking returns)
 *   get_nb   WINDOW (at most 64 MiB of) MPI_Get, then MPI_Win_flush, over and over
 *   put_nb   WINDOW (at most 64 MiB of) MPI_Put, then MPI_Win_flush, over and over
 * Each figure runs SECONDS (after a short warm-up).
 *
 *   mpirun -np 2 peers mpi-rma [--label L] [--sizes 256,1024,...] [--seconds S] [--window W]
 *
 * Prints one CSV line per figure on rank 0: mpi-rma,LABEL,OP,SIZE,SECONDS,BYTES,GBPS (1e9 bytes
 * per second). The one-sided component is Open MPI's osc/ucx (OMPI_MCA_osc=ucx, with
 * OMPI_MCA_pml=ucx), and UCX_TLS picks the transport: tcp,self for the socket class (with
 * UCX_NET_DEVICES=lo), sm,self for shared memory; scripts/bench transfer sets them. */
#include <mpi.h>

#include "peer_common.h"

/* A PeerRun against rank 1's window, `peer` pointing at its MPI_Win. */
static uint64_t run(void *peer, const char *op, char *local, size_t size, int window,
                    double seconds, double *elapsed) {
    MPI_Win win = *(MPI_Win *)peer;
    size_t at = 0;
    uint64_t moved = 0;
    double start = MPI_Wtime(), end = start + seconds;
    int nb = strstr(op, "_nb") != NULL, get = op[0] == 'g';
    while (MPI_Wtime() < end) {
        int count = nb ? Window(window, size) : 1;
        for (int i = 0; i < count; ++i) {
            if (get) {
                MPI_Get(local + at, (int)size, MPI_BYTE, 1, (MPI_Aint)at, (int)size, MPI_BYTE, win);
            } else {
                MPI_Put(local + at, (int)size, MPI_BYTE, 1, (MPI_Aint)at, (int)size, MPI_BYTE, win);
            }
            at = at + 2 * size > BUFFER ? 0 : at + size;
            moved += size;
        }
        MPI_Win_flush(1, win);
    }
    *elapsed = MPI_Wtime() - start;
    return moved;
}

int MpiRmaMain(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    struct PeerOptions o;
    if (ParsePeerOptions(argc, argv, "mpirun -np 2 peers mpi-rma", rank == 0, &o)) {
        MPI_Finalize();
        return 2;
    }
    if (ranks != 2) {
        if (rank == 0) fprintf(stderr, "peers mpi-rma: run it with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    char *base = NULL;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)BUFFER, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 1, BUFFER);
    char *local = malloc(BUFFER);
    memset(local, 2, BUFFER);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        RunAllFigures("mpi-rma", &o, run, &win, local);
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    free(local);
    MPI_Finalize();
    return 0;
}
