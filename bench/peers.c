/* peers: the programs fampool's figures are compared with, one program with three modes, built
 * with Open MPI's oshcc (which links both OpenSHMEM and MPI):
 *   shmem        OpenSHMEM get/put throughput between two PEs (peer_shmem.c)
 *   mpi-rma      MPI-3 one-sided get/put throughput between two ranks (peer_mpi_rma.c)
 *   shmem-rate   OpenSHMEM's message rate of small operations (peer_shmem_rate.c)
 * `peers help` lists them; each mode's flags are described at the top of its file. Launch it as
 * the mode's file says (oshrun or mpirun with 2 processes). */
#include <stdio.h>
#include <string.h>

int ShmemMain(int argc, char **argv);
int MpiRmaMain(int argc, char **argv);
int ShmemRateMain(int argc, char **argv);

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;
} kModes[] = {
    {"shmem", ShmemMain, "OpenSHMEM get/put throughput, 2 PEs (oshrun -np 2)"},
    {"mpi-rma", MpiRmaMain, "MPI-3 RMA get/put throughput, 2 ranks (mpirun -np 2)"},
    {"shmem-rate", ShmemRateMain, "OpenSHMEM small-operation message rate, 2 PEs"},
};

int main(int argc, char **argv) {
    const size_t count = sizeof kModes / sizeof kModes[0];
    for (size_t i = 0; argc > 1 && i < count; ++i) {
        if (strcmp(argv[1], kModes[i].name) == 0) {
            argv[1] = argv[0]; /* the mode's flags start at its argv[1] as before */
            return kModes[i].run(argc - 1, argv + 1);
        }
    }
    int asked = argc > 1 && strcmp(argv[1], "help") == 0;
    FILE *out = asked ? stdout : stderr;
    if (!asked)
        fprintf(stderr, "peers: give a mode first%s%s\n", argc > 1 ? ", not " : "",
                argc > 1 ? argv[1] : "");
    fprintf(out, "usage: peers MODE [FLAGS...]; modes:\n");
    for (size_t i = 0; i < count; ++i) fprintf(out, "  %-12s %s\n", kModes[i].name, kModes[i].what);
    return asked ? 0 : 2;
}
