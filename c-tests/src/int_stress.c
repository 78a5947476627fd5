/* Back-to-back broadcasts with roots and sizes drawn from a seeded sequence
 * that every rank draws identically, each checked byte by byte, with a
 * barrier every few operations. Also the workload of the fault and
 * two-job scripts.
 *   --count N        broadcasts (default 1000)
 *   --seed S         sequence seed (default 1; printed)
 *   --max-size B     largest size (default 1 MiB)
 *   --barrier-every K (default 50; 0 = never)
 *   --comm world|dup
 *   --seconds T      stop early once T seconds have passed (agreed by all
 *                    ranks every 10 broadcasts), for time-bounded fault runs */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long long count = tc_arg_ll(argc, argv, "--count", 1000);
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 1);
  size_t max = (size_t)tc_arg_ll(argc, argv, "--max-size", 1 << 20);
  long long every = tc_arg_ll(argc, argv, "--barrier-every", 50);
  const char *which = tc_arg(argc, argv, "--comm");
  double seconds = (double)tc_arg_ll(argc, argv, "--seconds", 0);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (which && strcmp(which, "dup") == 0) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank, nranks;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  if (rank == 0) {
    printf("int_stress: seed %llu, %lld bcasts up to %zu bytes on %d ranks\n",
           (unsigned long long)seed, count, max, nranks);
    fflush(stdout);
  }
  uint8_t *buf = malloc(max ? max : 1);
  if (!buf) tc_fail("out of memory");

  uint64_t state = seed;
  uint64_t total = 0;
  int barriers = 0;
  double t0 = tc_now();
  long long i;
  for (i = 0; i < count; i++) {
    if (seconds > 0 && i % 10 == 0) {
      int late = tc_now() - t0 > seconds, stop = 0;
      MPI_Allreduce(&late, &stop, 1, MPI_INT, MPI_MAX, comm);
      if (stop) break;
    }
    int root = (int)(tc_rand(&state) % (uint64_t)nranks);
    uint64_t kind = tc_rand(&state) % 10, r = tc_rand(&state);
    /* Mostly small, some around one to a few datagrams, a few large. */
    size_t n = kind < 6 ? r % 2048 : kind < 9 ? r % (70 * 1024) : r % (max + 1);
    if (n > max) n = max;
    uint64_t pseed = tc_pattern_seed(root, (uint64_t)i ^ (seed << 32), n);
    if (rank == root)
      tc_fill(buf, n, pseed);
    else
      tc_poison(buf, n, pseed);
    if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm) != MPI_SUCCESS)
      tc_fail("MPI_Bcast %lld failed (seed %llu)", i, (unsigned long long)seed);
    tc_check(buf, n, pseed, "stress", root, (uint64_t)i);
    total += n;
    if (every > 0 && i % every == every - 1) {
      if (MPI_Barrier(comm) != MPI_SUCCESS) tc_fail("MPI_Barrier after %lld failed", i);
      barriers = 1;
    }
  }
  if (rank == 0)
    printf("int_stress: %lld bcasts, %llu bytes, ok in %.3f s\n", i,
           (unsigned long long)total, tc_now() - t0);
  free(buf);
  if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  tc_expect_check(1, barriers);
  MPI_Finalize();
  return 0;
}
