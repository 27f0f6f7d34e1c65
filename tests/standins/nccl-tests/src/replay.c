/*
 * Stand-in of an nccl-tests benchmark (tests/standins/README.md, "nccl-tests").
 *
 * What is real: MPI (MPI_Init, ranks across the hosts of the hostfile, an
 * MPI_Allreduce whose sum every rank checks, the host names gathered on rank 0)
 * and NCCL's library (ncclGetVersion from the libnccl this was linked with).
 * What is replayed: the benchmark's output. No GPU exists on the bench, so
 * rank 0 prints the real captured output the node's simulated-hardware profile
 * names for this benchmark (tests/sim, tool "nccl-tests", arguments
 * "<benchmark>" on one host or "<benchmark> multinode" across hosts) and the
 * whole job exits with the capture's exit status. The bandwidth figures are
 * the capture's, not a measurement.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define REPLAY "/usr/share/gpuops-sim/replay.py"

/* NCCL's own declaration; nccl.h is not included because it includes cuda_runtime.h, which needs a CUDA toolkit
 * the bench does not install (the Makefile still requires nccl.h, as the real build does). */
int ncclGetVersion(int *version);

static int distinct_hosts(const char *names, int size)
{
    int count = 0;
    for (int i = 0; i < size; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(names + i * MPI_MAX_PROCESSOR_NAME, names + j * MPI_MAX_PROCESSOR_NAME) == 0;
        count += !seen;
    }
    return count;
}

int main(int argc, char **argv)
{
    int rank, size, len, version = 0;
    char name[MPI_MAX_PROCESSOR_NAME] = {0};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);

    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = sum == (long)size * (size + 1) / 2, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    char *names = rank == 0 ? calloc(size, MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);

    int status = 0;
    if (rank == 0) {
        int hosts = distinct_hosts(names, size);
        ncclGetVersion(&version);
        /* On stderr: the benchmark's output on stdout is the capture alone. */
        fprintf(stderr, "# gpuops stand-in of %s: MPI_Allreduce over %d ranks on %d hosts (", TEST_NAME, size, hosts);
        for (int i = 0, first = 1; i < size; i++) {
            const char *host = names + i * MPI_MAX_PROCESSOR_NAME;
            int ranks = 0, seen = 0;
            for (int j = 0; j < size; j++)
                ranks += strcmp(host, names + j * MPI_MAX_PROCESSOR_NAME) == 0;
            for (int j = 0; j < i && !seen; j++)
                seen = strcmp(host, names + j * MPI_MAX_PROCESSOR_NAME) == 0;
            if (!seen)
                fprintf(stderr, "%s%s: %d", first ? "" : ", ", host, ranks), first = 0;
        }
        fprintf(stderr, "): sum %ld, %s; NCCL library %d; the benchmark output is a REPLAYED capture\n", sum,
                all_ok ? "correct" : "WRONG", version);
        if (!all_ok) {
            status = 1;
        } else {
            char cmd[256];
            snprintf(cmd, sizeof cmd, "python3 " REPLAY " nccl-tests %s%s", TEST_NAME, hosts > 1 ? " multinode" : "");
            int rc = system(cmd);
            status = rc == -1 ? 127 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
        }
        fflush(stdout);
        free(names);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
