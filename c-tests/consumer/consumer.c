/* A user's program: plain MPI plus the mpicast extension calls. With
 * TC_EXPECT=mcast it also checks that its broadcasts went by multicast. */
#include <mpi.h>
#include <mpicast.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  enum { N = 100000 };
  static unsigned char buf[N];
  int bad = 0;
  for (int root = 0; root < size; root++) {
    for (int i = 0; i < N; i++) buf[i] = rank == root ? (unsigned char)(i * 7 + root) : 0;
    MPI_Bcast(buf, N, MPI_BYTE, root, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) bad += buf[i] != (unsigned char)(i * 7 + root);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPICAST_Stats stats;
  memset(&stats, 0, sizeof stats);
  int rc = MPICAST_Get_stats(&stats);
  const char *expect = getenv("TC_EXPECT");
  if (rc != 0) {
    fprintf(stderr, "rank %d: MPICAST_Get_stats: %s\n", rank, MPICAST_Status_string(rc));
    bad++;
  } else if (expect && strcmp(expect, "mcast") == 0 && stats.bcast_mcast == 0) {
    fprintf(stderr, "rank %d: no broadcast went by multicast\n", rank);
    bad++;
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("consumer: mpicast %s, %d ranks, bcast_mcast=%llu, %s\n", MPICAST_Version(), size,
           (unsigned long long)stats.bcast_mcast, total ? "FAILED" : "ok");
  MPI_Finalize();
  return total != 0;
}
