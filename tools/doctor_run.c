/* mpicast-doctor-run: the ranks of `mpicast doctor -n N`. Every rank calls MPICAST_Doctor on
 * MPI_COMM_WORLD with the options given as arguments (json, long=SECONDS, count=K); rank 0
 * prints the report, then one last line, "mpicast-doctor-run: verdict ok" or "... verdict
 * problems", which `mpicast doctor` turns into its exit status (so that no launcher reports a
 * failed rank for a diagnosis). Exit status: 0 when the checks ran, 3 when they could not (the
 * message is on stderr). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpicast.h"

int main(int argc, char **argv) {
  char opts[1024] = "";
  size_t used = 0;
  for (int i = 1; i < argc; i++) {
    size_t n = strlen(argv[i]);
    if (used + n + 2 > sizeof opts) {
      fprintf(stderr, "mpicast-doctor-run: options too long\n");
      return 3;
    }
    if (used) opts[used++] = ' ';
    memcpy(opts + used, argv[i], n + 1);
    used += n;
  }
  MPI_Init(&argc, &argv);
  int problems = 1;
  int rc = MPICAST_Doctor(MPI_COMM_WORLD, opts, &problems);
  if (rc != 0) {
    fprintf(stderr, "mpicast-doctor-run: MPICAST_Doctor: %s\n", MPICAST_Status_string(rc));
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rc == 0 && rank == 0) {
    printf("mpicast-doctor-run: verdict %s\n", problems ? "problems" : "ok");
    fflush(stdout);
  }
  MPI_Finalize();
  return rc != 0 ? 3 : 0;
}
