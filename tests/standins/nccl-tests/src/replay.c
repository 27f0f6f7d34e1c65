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

    char *names = calloc(size, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    int hosts = distinct_hosts(names, size);
    /* A host's first rank replays its own node's capture: a node whose profile fails (a CUDA error) fails the job
     * with its output, as its ranks would print it; otherwise rank 0's capture is the output. */
    int leader = 1;
    for (int j = 0; j < rank && leader; j++)
        leader = strcmp(names + j * MPI_MAX_PROCESSOR_NAME, name) != 0;
    if (rank == 0) {
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
    }
    int status = 0;
    char *output = NULL;
    size_t length = 0;
    if (!all_ok) {
        status = rank == 0;
    } else if (leader) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "python3 " REPLAY " nccl-tests %s%s", TEST_NAME, hosts > 1 ? " multinode" : "");
        FILE *pipe = popen(cmd, "r");
        if (pipe == NULL) {
            status = 127;
        } else {
            FILE *buffer = open_memstream(&output, &length);
            char chunk[4096];
            size_t got;
            while ((got = fread(chunk, 1, sizeof chunk, pipe)) > 0)
                fwrite(chunk, 1, got, buffer);
            fclose(buffer);
            int rc = pclose(pipe);
            status = rc == -1 ? 127 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
        }
    }
    int worst = 0;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (output != NULL && ((worst == 0 && rank == 0) || status != 0))
        fwrite(output, 1, length, stdout);
    fflush(stdout);
    free(output);
    free(names);
    MPI_Finalize();
    return worst;
}
