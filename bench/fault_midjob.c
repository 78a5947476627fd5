/* Broadcasts in a loop for a bounded time, each one checked, for the fault tests of
 * bench/fault_midjob.sh: a rule added in the middle of the job stops multicast at one host,
 * and the script checks what the library says.
 *
 *   fault_midjob [--bytes N] [--seconds S]
 *
 * Rank 0 broadcasts N bytes (default 2 MiB) whose content depends on the iteration, every
 * rank checks them, until S seconds (default 30) have passed; rank 0 prints "iter I at T s"
 * about once a second and "done: I broadcasts, all correct" at the end. A wrong byte prints
 * "WRONG" and aborts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char expect(long iter, long i) {
    return (unsigned char)(iter * 131 + i * 7 + (i >> 9));
}

int main(int argc, char **argv) {
    long bytes = 2L << 20;
    double seconds = 30;
    MPI_Init(&argc, &argv);
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--bytes")) {
            bytes = atol(argv[a + 1]);
        } else if (!strcmp(argv[a], "--seconds")) {
            seconds = atof(argv[a + 1]);
        }
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *buf = malloc((size_t)bytes);
    if (!buf) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double t0 = MPI_Wtime(), said = 0;
    long iter = 0;
    int go = 1;
    while (go) {
        if (rank == 0) {
            for (long i = 0; i < bytes; i++) {
                buf[i] = expect(iter, i);
            }
        } else {
            memset(buf, 0, (size_t)bytes);
        }
        MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (long i = 0; i < bytes; i++) {
            if (buf[i] != expect(iter, i)) {
                printf("WRONG: rank %d iter %ld byte %ld\n", rank, iter, i);
                fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
        iter++;
        double t = MPI_Wtime() - t0;
        if (rank == 0 && t - said >= 1.0) {
            printf("iter %ld at %.1f s\n", iter, t);
            fflush(stdout);
            said = t;
        }
        /* Rank 0's clock decides for everyone: the loop ends at the same iteration. */
        go = rank == 0 ? t < seconds : 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        printf("done: %ld broadcasts, all correct\n", iter);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
