/* MPI_Bcast_c, the MPI-4 large-count broadcast (MPICH 4.0 has it; an MPI without it skips
 * with 77): sizes around the datagram and 64 KiB boundaries from every root, as MPI_BYTE
 * and as a 12-byte contiguous type, checked byte by byte, and with --huge one broadcast of
 * 2^31 + 7 elements, beyond what an int count can say. TC_EXPECT as in common.h.
 *   --sizes a,b,c   sizes in bytes
 *   --huge          only the 2^31 + 7 byte broadcast, from root 0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#if MPI_VERSION >= 4
static void one(uint8_t *buf, MPI_Count count, MPI_Datatype type, size_t elem, int root,
                uint64_t iter, int rank, MPI_Comm comm) {
  size_t n = (size_t)count * elem;
  uint64_t seed = tc_pattern_seed(root, iter, n);
  if (rank == root)
    tc_fill(buf, n, seed);
  else
    tc_poison(buf, n, seed);
  int rc = MPI_Bcast_c(buf, count, type, root, comm);
  if (rc != MPI_SUCCESS) tc_fail("MPI_Bcast_c returned %d (count %lld)", rc, (long long)count);
  tc_check(buf, n, seed, "MPI_Bcast_c", root, iter);
}
#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
#if MPI_VERSION >= 4
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  double t0 = tc_now();
  if (tc_flag(argc, argv, "--huge")) {
    MPI_Count count = ((MPI_Count)1 << 31) + 7;
    uint8_t *buf = malloc((size_t)count);
    if (!buf) tc_fail("out of memory for %lld bytes", (long long)count);
    one(buf, count, MPI_BYTE, 1, 0, 0, rank, MPI_COMM_WORLD);
    free(buf);
    if (rank == 0)
      printf("int_bcast_c: MPI_Bcast_c of %lld bytes on %d ranks ok in %.3f s\n",
             (long long)count, nranks, tc_now() - t0);
  } else {
    size_t sizes[64];
    size_t nsizes = tc_parse_sizes(tc_arg(argc, argv, "--sizes")
                                       ? tc_arg(argc, argv, "--sizes")
                                       : "1,1471,1473,65537,1048584",
                                   sizes, 64);
    size_t max = 1;
    for (size_t i = 0; i < nsizes; i++)
      if (sizes[i] > max) max = sizes[i];
    uint8_t *buf = malloc(max);
    if (!buf) tc_fail("out of memory for %zu bytes", max);
    MPI_Datatype twelve;
    MPI_Type_contiguous(12, MPI_BYTE, &twelve);
    MPI_Type_commit(&twelve);
    for (size_t s = 0; s < nsizes; s++) {
      for (int root = 0; root < nranks; root++) {
        one(buf, (MPI_Count)sizes[s], MPI_BYTE, 1, root, 0, rank, MPI_COMM_WORLD);
        if (sizes[s] >= 12)
          one(buf, (MPI_Count)(sizes[s] / 12), twelve, 12, root, 1, rank, MPI_COMM_WORLD);
      }
    }
    MPI_Type_free(&twelve);
    free(buf);
    if (rank == 0)
      printf("int_bcast_c: %zu sizes x %d roots on %d ranks ok in %.3f s\n", nsizes, nranks,
             nranks, tc_now() - t0);
  }
  tc_expect_check(1, 0);
  MPI_Finalize();
  return 0;
#else
  if (tc_world_rank() == 0) printf("SKIP: this MPI has no MPI_Bcast_c\n");
  MPI_Finalize();
  return TC_SKIP;
#endif
}
