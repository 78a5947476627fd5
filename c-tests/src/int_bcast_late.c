/* Eager broadcasts whose root returns before its receivers have the data: the
 * root's responder thread keeps a copy, and the acknowledgements are collected
 * at the root's next operation on the communicator, when it is freed, or at
 * MPI_Finalize.
 *   1. Rank 0 broadcasts 1000 B while every other rank sleeps --late-ms (default
 *      1500) before calling MPI_Bcast. The root must return in less than half
 *      of that, or, with --expect-wait (for MPICAST_ROOT_WAITS=1), must not
 *      return before the last rank entered. Every receiver checks the data.
 *   2. --count (default 300) broadcasts from rotating roots, sizes from 1 B to
 *      64 KiB drawn from a seed, back to back on two communicators, with a
 *      barrier every 50 and a late receiver every 25, data checked: roles change
 *      while acknowledgements are still owed.
 *   3. A broadcast on a duplicate followed at once by MPI_Comm_free, then one on
 *      MPI_COMM_WORLD followed at once by MPI_Finalize: both must end cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void bcast_checked(MPI_Comm comm, void *buf, size_t n, int root, uint64_t iter,
                          const char *what) {
  uint64_t seed = tc_bcast_prepare(comm, buf, n, root, iter);
  if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm) != MPI_SUCCESS)
    tc_fail("%s: MPI_Bcast of %zu B from %d failed", what, n, root);
  tc_check(buf, n, seed, what, root, iter);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank(), size = tc_world_size();
  int late = (int)tc_arg_ll(argc, argv, "--late-ms", 1500);
  long long count = tc_arg_ll(argc, argv, "--count", 300);
  int expect_wait = tc_flag(argc, argv, "--expect-wait");
  enum { MAX = 65536 };
  unsigned char *buf = malloc(MAX);
  if (!buf) tc_fail("out of memory");

  /* 1: late receivers. The first multicast on a communicator sets its channel up, which is
   * collective: that one is not timed. Then start together without the calls under test. */
  bcast_checked(MPI_COMM_WORLD, buf, 10, 0, 0, "set-up");
  double sync = 0;
  MPI_Allreduce(MPI_IN_PLACE, &sync, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double entered = -1.0, t0 = tc_now();
  if (rank != 0) {
    tc_sleep_ms(late);
    entered = tc_now();
  }
  bcast_checked(MPI_COMM_WORLD, buf, 1000, 0, 1, "late receivers");
  double left = tc_now();
  double last_entered;
  MPI_Allreduce(&entered, &last_entered, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    double took = left - t0;
    if (expect_wait && left < last_entered)
      tc_fail("the root returned %.3f ms before the last receiver entered, but should wait "
              "for every acknowledgement (MPICAST_ROOT_WAITS=1)",
              (last_entered - left) * 1e3);
    if (!expect_wait && took > late / 2 * 1e-3)
      tc_fail("the root of an eager broadcast took %.3f ms with receivers %d ms late: it "
              "waited for them",
              took * 1e3, late);
    printf("int_bcast_late: root of an eager broadcast returned after %.3f ms, receivers %d ms "
           "late (%s)\n",
           took * 1e3, late, expect_wait ? "waiting for acknowledgements" : "returning at once");
  }

  /* 2: rotating roots, owed acknowledgements collected as roles change. */
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  uint64_t st = 20261124;
  for (long long i = 0; i < count; i++) {
    MPI_Comm comm = (i % 3 == 2) ? dup : MPI_COMM_WORLD;
    int root = (int)(tc_rand(&st) % (uint64_t)size);
    size_t n = 1 + (size_t)(tc_rand(&st) % MAX);
    if (i % 25 == 24 && rank == (root + 1) % size) tc_sleep_ms(20);
    bcast_checked(comm, buf, n, root, (uint64_t)i + 2, "rotating roots");
    if (i % 50 == 49 && MPI_Barrier(comm) != MPI_SUCCESS) tc_fail("barrier after %lld", i);
  }

  /* 3: freed, and finalized, right after a broadcast. */
  bcast_checked(dup, buf, 3000, size - 1, 1000000, "before MPI_Comm_free");
  if (MPI_Comm_free(&dup) != MPI_SUCCESS) tc_fail("MPI_Comm_free failed");
  tc_expect_check(1, 1);
  bcast_checked(MPI_COMM_WORLD, buf, 5000, 0, 1000001, "before MPI_Finalize");
  if (rank == 0) printf("int_bcast_late: %lld broadcasts on %d ranks ok\n", count + 3, size);
  free(buf);
  MPI_Finalize();
  return 0;
}
