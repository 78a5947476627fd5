/* The shim's own cost per call on the host path, without a network or other ranks: one
 * rank broadcasts 8 bytes on MPI_COMM_SELF, N times through PMPI_Bcast and N times through
 * MPI_Bcast (mpicast's, when preloaded or linked), seven rounds, best round of each.
 *
 *   mpirun -n 1 -x LD_PRELOAD=build/openmpi/lib/libmpicast.so build/openmpi/bench/shim_cost
 *
 * Prints the two times per call and their difference in nanoseconds. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char b[8] = {0};
  const int n = 5000000;
  double best_p = 1e9, best_m = 1e9;
  for (int r = 0; r < 7; r++) {
    double t = now();
    for (int i = 0; i < n; i++)
      PMPI_Bcast(b, 8, MPI_BYTE, 0, MPI_COMM_SELF);
    double p = (now() - t) / n * 1e9;
    t = now();
    for (int i = 0; i < n; i++)
      MPI_Bcast(b, 8, MPI_BYTE, 0, MPI_COMM_SELF);
    double m = (now() - t) / n * 1e9;
    if (p < best_p)
      best_p = p;
    if (m < best_m)
      best_m = m;
  }
  printf("shim_cost: PMPI_Bcast %.2f ns, MPI_Bcast %.2f ns per call: +%.2f ns\n", best_p, best_m,
         best_m - best_p);
  MPI_Finalize();
  return 0;
}
