/* Preloaded instead of libmpicast by the link_fortran_route test: counts the calls that
 * reach the C entry points mpicast replaces (MPI_Bcast, MPI_Barrier, MPI_Init,
 * MPI_Init_thread, MPI_Finalize and, where the MPI has it, MPI_Bcast_c), forwards each to PMPI, and at exit writes the counts to
 * $ROUTE_PROBE_DIR/<pid>. A Fortran binding whose calls never reach these needs Fortran
 * entry points of mpicast's own. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long n_bcast, n_barrier, n_bcast_c, n_init, n_init_thread, n_finalize;

int MPI_Init(int *argc, char ***argv) {
  n_init++;
  return PMPI_Init(argc, argv);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  n_init_thread++;
  return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Finalize(void) {
  n_finalize++;
  return PMPI_Finalize();
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm) {
  n_bcast++;
  return PMPI_Bcast(buf, count, t, root, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  n_barrier++;
  return PMPI_Barrier(comm);
}

#if MPI_VERSION >= 4
int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype t, int root, MPI_Comm comm) {
  n_bcast_c++;
  return PMPI_Bcast_c(buf, count, t, root, comm);
}
#endif

__attribute__((destructor)) static void route_probe_report(void) {
  const char *dir = getenv("ROUTE_PROBE_DIR");
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%ld", dir, (long)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "MPI_Bcast=%ld MPI_Barrier=%ld MPI_Bcast_c=%ld MPI_Init=%ld MPI_Init_thread=%ld "
          "MPI_Finalize=%ld\n",
          n_bcast, n_barrier, n_bcast_c, n_init, n_init_thread, n_finalize);
  fclose(f);
}
