/* peers shmem-rate: OpenSHMEM's message rate on this node, the baseline of small_ops_bench. PE 0
 * issues non-blocking operations to PE 1's symmetric heap, 64 between quiets, from 1 to 8
 * threads, each on its own context (shmem_ctx_create, SHMEM_THREAD_MULTIPLE):
 * shmem_ctx_getmem_nbi, shmem_ctx_putmem_nbi (8 B to 4 KiB) and shmem_ctx_uint64_atomic_add
 * (8 B), then shmem_ctx_quiet. Each measured run lasts about 0.1 s (a short probe run sizes it).
 *
 *   oshrun -np 2 peers shmem-rate [--quick] [--threads 1,2,4,8]
 *
 * Prints one CSV line per measurement on PE 0: openshmem,rate,OP,SIZE,THREADS,per-thread,MOPS.
 * Run it with Open MPI's UCX components (OMPI_MCA_spml=ucx, OMPI_MCA_osc=ucx), as
 * scripts/bench small-ops does. */
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64
#define SLICE (256 * 1024) /* each thread's part of the symmetric buffer */
#define MAX_THREADS 8

enum op { GET, PUT, ADD };
static const char *op_names[] = {"get", "put", "add"};

struct job {
    enum op op;
    size_t size;
    uint64_t count;
    int thread;
    shmem_ctx_t ctx;
    char *remote;
    char *local;
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *issue(void *arg) {
    struct job *job = arg;
    const size_t slots = SLICE / job->size;
    char *remote = job->remote + (size_t)job->thread * SLICE;
    char *local = job->local + (size_t)job->thread * SLICE;
    for (uint64_t i = 0; i < job->count; ++i) {
        size_t at = (i % slots) * job->size;
        switch (job->op) {
            case GET:
                shmem_ctx_getmem_nbi(job->ctx, local + at, remote + at, job->size, 1);
                break;
            case PUT:
                shmem_ctx_putmem_nbi(job->ctx, remote + at, local + at, job->size, 1);
                break;
            case ADD:
                shmem_ctx_ulong_atomic_add(job->ctx, (unsigned long *)(remote + at), 1, 1);
                break;
        }
        if ((i + 1) % WINDOW == 0) shmem_ctx_quiet(job->ctx);
    }
    shmem_ctx_quiet(job->ctx);
    return NULL;
}

/* Seconds for `threads` threads issuing `count` operations each. */
static double run(struct job *jobs, int threads, uint64_t count) {
    pthread_t ids[MAX_THREADS];
    double start = now();
    for (int t = 0; t < threads; ++t) {
        jobs[t].count = count;
        pthread_create(&ids[t], NULL, issue, &jobs[t]);
    }
    for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
    return now() - start;
}

int ShmemRateMain(int argc, char **argv) {
    int quick = 0, threads_list[MAX_THREADS] = {1, 2, 4, 8}, thread_counts = 4;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            thread_counts = 0;
            for (char *n = strtok(argv[++i], ","); n && thread_counts < MAX_THREADS;
                 n = strtok(NULL, ",")) {
                int value = atoi(n);
                if (value < 1 || value > MAX_THREADS) {
                    fprintf(stderr, "peers shmem-rate: --threads takes 1 to 8 each\n");
                    return 1;
                }
                threads_list[thread_counts++] = value;
            }
        } else {
            fprintf(stderr, "usage: peers shmem-rate [--quick] [--threads 1,2,4,8]\n");
            return 1;
        }
    }
    int provided = 0;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    if (shmem_n_pes() != 2) {
        if (shmem_my_pe() == 0) fprintf(stderr, "peers shmem-rate: run with 2 PEs\n");
        shmem_global_exit(1);
    }
    char *remote = shmem_calloc(MAX_THREADS, SLICE);
    char *local = calloc(MAX_THREADS, SLICE);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        if (provided < SHMEM_THREAD_MULTIPLE) {
            fprintf(stderr, "peers shmem-rate: no SHMEM_THREAD_MULTIPLE; one thread only\n");
            thread_counts = 1;
            threads_list[0] = 1;
        }
        const double target = quick ? 0.02 : 0.1;
        const size_t sizes[] = {8, 64, 256, 1024, 4096};
        for (int c = 0; c < thread_counts; ++c) {
            int threads = threads_list[c];
            struct job jobs[MAX_THREADS];
            for (int t = 0; t < threads; ++t) {
                jobs[t] = (struct job){.thread = t, .remote = remote, .local = local};
                if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &jobs[t].ctx) != 0) {
                    jobs[t].ctx = SHMEM_CTX_DEFAULT;
                }
            }
            for (int op = GET; op <= ADD; ++op) {
                for (int s = 0; s < 5; ++s) {
                    if (op == ADD && sizes[s] != 8) continue;
                    for (int t = 0; t < threads; ++t) {
                        jobs[t].op = (enum op)op;
                        jobs[t].size = sizes[s];
                    }
                    uint64_t probe = quick ? 256 : 1024;
                    double seconds = run(jobs, threads, probe);
                    uint64_t count = (uint64_t)(target / (seconds > 1e-6 ? seconds : 1e-6) * probe);
                    if (count < probe) count = probe;
                    if (count > (1u << 22)) count = 1u << 22;
                    seconds = run(jobs, threads, count);
                    printf("openshmem,rate,%s,%zu,%d,per-thread,%.4f\n", op_names[op], sizes[s],
                           threads, (double)count * threads / seconds / 1e6);
                    fflush(stdout);
                }
            }
            for (int t = 0; t < threads; ++t) {
                if (jobs[t].ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(jobs[t].ctx);
            }
        }
    }
    shmem_barrier_all();
    shmem_free(remote);
    free(local);
    shmem_finalize();
    return 0;
}
