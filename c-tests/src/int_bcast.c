/* Broadcast sizes around the datagram and 16-bit boundaries, from every root,
 * checked byte by byte on every rank.
 *   --sizes a,b,c   sizes in bytes (default: 0 1 1471 1472 1473 65535 65536 65537 1MiB)
 *   --iters N       rounds over all sizes and roots (default 2)
 *   --comm world|dup
 *   --barrier       an MPI_Barrier after every broadcast */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  size_t sizes[64];
  size_t nsizes = tc_parse_sizes(
      tc_arg(argc, argv, "--sizes") ? tc_arg(argc, argv, "--sizes")
                                    : "0,1,1471,1472,1473,65535,65536,65537,1048576",
      sizes, 64);
  long long iters = tc_arg_ll(argc, argv, "--iters", 2);
  int barrier = tc_flag(argc, argv, "--barrier");
  const char *which = tc_arg(argc, argv, "--comm");

  MPI_Comm comm = MPI_COMM_WORLD;
  if (which && strcmp(which, "dup") == 0) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);

  size_t max = 1;
  for (size_t i = 0; i < nsizes; i++)
    if (sizes[i] > max) max = sizes[i];
  uint8_t *buf = malloc(max);
  if (!buf) tc_fail("out of memory for %zu bytes", max);

  double t0 = tc_now();
  for (long long it = 0; it < iters; it++) {
    for (size_t s = 0; s < nsizes; s++) {
      for (int root = 0; root < nranks; root++) {
        size_t n = sizes[s];
        uint64_t seed = tc_pattern_seed(root, (uint64_t)it, n);
        if (rank == root)
          tc_fill(buf, n, seed);
        else
          tc_poison(buf, n, seed);
        /* Odd rounds move whole ints when they fit, so a non-byte basic type
         * goes through the same path. */
        int as_int = (it & 1) && n % sizeof(int) == 0;
        int rc = as_int ? MPI_Bcast(buf, (int)(n / sizeof(int)), MPI_INT, root, comm)
                        : MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
        if (rc != MPI_SUCCESS) tc_fail("MPI_Bcast returned %d (size %zu root %d)", rc, n, root);
        tc_check(buf, n, seed, as_int ? "bcast MPI_INT" : "bcast MPI_BYTE", root, (uint64_t)it);
        if (barrier && MPI_Barrier(comm) != MPI_SUCCESS) tc_fail("MPI_Barrier failed");
      }
    }
  }
  if (rank == 0)
    printf("int_bcast: %zu sizes x %d roots x %lld iters on %d ranks ok in %.3f s\n", nsizes,
           nranks, iters, nranks, tc_now() - t0);
  free(buf);
  if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  tc_expect_check(1, barrier);
  MPI_Finalize();
  return 0;
}
