/* Preloaded instead of libmpicast by the link_fortran_route test: counts the calls that
 * reach the C entry points mpicast replaces (MPI_Bcast, MPI_Barrier, MPI_Init,
 * MPI_Init_thread, MPI_Finalize and, where the MPI has it, MPI_Bcast_c; and the receive,
 * completion and probe calls of dynamic broadcast), forwards each to PMPI, and at exit
 * writes the counts to
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

/* The receive, completion and probe calls (dynamic broadcast), reported by name. */
enum { P_RECV, P_IRECV, P_WAIT, P_TEST, P_WAITALL, P_TESTALL, P_WAITANY, P_TESTANY,
       P_WAITSOME, P_TESTSOME, P_IPROBE, P_PROBE, P_CANCEL, P_REQUEST_FREE,
       P_REQUEST_GET_STATUS, P_N };
static const char *const p2p_names[P_N] = {
    "MPI_Recv", "MPI_Irecv", "MPI_Wait", "MPI_Test", "MPI_Waitall", "MPI_Testall",
    "MPI_Waitany", "MPI_Testany", "MPI_Waitsome", "MPI_Testsome", "MPI_Iprobe", "MPI_Probe",
    "MPI_Cancel", "MPI_Request_free", "MPI_Request_get_status"};
static long n_p2p[P_N];

int MPI_Recv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm comm, MPI_Status *st) {
  n_p2p[P_RECV]++;
  return PMPI_Recv(b, c, t, s, tag, comm, st);
}
int MPI_Irecv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm comm, MPI_Request *r) {
  n_p2p[P_IRECV]++;
  return PMPI_Irecv(b, c, t, s, tag, comm, r);
}
int MPI_Wait(MPI_Request *r, MPI_Status *st) {
  n_p2p[P_WAIT]++;
  return PMPI_Wait(r, st);
}
int MPI_Test(MPI_Request *r, int *f, MPI_Status *st) {
  n_p2p[P_TEST]++;
  return PMPI_Test(r, f, st);
}
int MPI_Waitall(int n, MPI_Request *r, MPI_Status *st) {
  n_p2p[P_WAITALL]++;
  return PMPI_Waitall(n, r, st);
}
int MPI_Testall(int n, MPI_Request *r, int *f, MPI_Status *st) {
  n_p2p[P_TESTALL]++;
  return PMPI_Testall(n, r, f, st);
}
int MPI_Waitany(int n, MPI_Request *r, int *i, MPI_Status *st) {
  n_p2p[P_WAITANY]++;
  return PMPI_Waitany(n, r, i, st);
}
int MPI_Testany(int n, MPI_Request *r, int *i, int *f, MPI_Status *st) {
  n_p2p[P_TESTANY]++;
  return PMPI_Testany(n, r, i, f, st);
}
int MPI_Waitsome(int n, MPI_Request *r, int *o, int *i, MPI_Status *st) {
  n_p2p[P_WAITSOME]++;
  return PMPI_Waitsome(n, r, o, i, st);
}
int MPI_Testsome(int n, MPI_Request *r, int *o, int *i, MPI_Status *st) {
  n_p2p[P_TESTSOME]++;
  return PMPI_Testsome(n, r, o, i, st);
}
int MPI_Iprobe(int s, int tag, MPI_Comm comm, int *f, MPI_Status *st) {
  n_p2p[P_IPROBE]++;
  return PMPI_Iprobe(s, tag, comm, f, st);
}
int MPI_Probe(int s, int tag, MPI_Comm comm, MPI_Status *st) {
  n_p2p[P_PROBE]++;
  return PMPI_Probe(s, tag, comm, st);
}
int MPI_Cancel(MPI_Request *r) {
  n_p2p[P_CANCEL]++;
  return PMPI_Cancel(r);
}
int MPI_Request_free(MPI_Request *r) {
  n_p2p[P_REQUEST_FREE]++;
  return PMPI_Request_free(r);
}
int MPI_Request_get_status(MPI_Request r, int *f, MPI_Status *st) {
  n_p2p[P_REQUEST_GET_STATUS]++;
  return PMPI_Request_get_status(r, f, st);
}

__attribute__((destructor)) static void route_probe_report(void) {
  const char *dir = getenv("ROUTE_PROBE_DIR");
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%ld", dir, (long)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "MPI_Bcast=%ld MPI_Barrier=%ld MPI_Bcast_c=%ld MPI_Init=%ld MPI_Init_thread=%ld "
          "MPI_Finalize=%ld",
          n_bcast, n_barrier, n_bcast_c, n_init, n_init_thread, n_finalize);
  for (int i = 0; i < P_N; i++) fprintf(f, " %s=%ld", p2p_names[i], n_p2p[i]);
  fprintf(f, "\n");
  fclose(f);
}
