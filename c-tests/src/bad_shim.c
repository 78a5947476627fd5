/* A deliberately broken MPI_Bcast / MPI_Barrier, preloaded by the selftest
 * entries to prove that the checks of int_bcast and int_barrier can fail:
 *   BAD_SHIM=bcast    flips one received byte on non-root ranks
 *   BAD_SHIM=barrier  returns from MPI_Barrier at once */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int mode_is(const char *m) {
  const char *v = getenv("BAD_SHIM");
  return v && strcmp(v, m) == 0;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  int rc = PMPI_Bcast(buf, count, type, root, comm);
  int rank, tsize;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Type_size(type, &tsize);
  if (mode_is("bcast") && rank != root && count > 0 && tsize > 0) {
    unsigned char *b = buf;
    b[(size_t)count * (size_t)tsize / 2] ^= 0x01; /* contiguous types only */
  }
  return rc;
}

int MPI_Barrier(MPI_Comm comm) {
  if (mode_is("barrier")) return MPI_SUCCESS;
  return PMPI_Barrier(comm);
}
