/* Broadcasts (1 B .. --max-size, sizes spread over the powers of two, every root) and
 * barriers for a bounded time, every byte of every broadcast checked, for
 * scripts/heal.sh: a fault comes in the middle (nft drops multicast on lo) and every
 * operation must still complete with the right data while the library heals.
 *   --seconds T     run this long (agreed by all ranks every 8 operations; default 10)
 *   --max-size B    largest broadcast (default 1 MiB)
 *   --seed S        the sequence every rank draws alike (default 1)
 *   --slow-ms M     rank 0 prints every operation that took M ms or more (default 50)
 *   --allreduce 1   every broadcast is followed by an MPI_Allreduce on the same communicator
 *                   (the operation count, checked): the root of an eager broadcast goes from
 *                   it straight into a host collective mpicast does not carry
 * Rank 0 prints "ready: I operations" once 100 operations are done (the communicator is set
 * up: the script's fault may come), "slow: op I KIND BYTES root R end=E ms=D" for each slow
 * operation (E: its
 * end in CLOCK_REALTIME seconds, to compare with the moment of the fault), "second K: N
 * operations, max D ms" once a second, and at the end "done: N operations (B broadcasts,
 * R barriers, X bytes checked), all correct". A wrong byte aborts the job (tc_check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "heal_loop.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  heal_loop h;
  heal_loop_init(&h, argc, argv, 1 << 20);
  size_t max = h.max;
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 1);
  int allreduce = (int)tc_arg_ll(argc, argv, "--allreduce", 0);
  int rank = h.rank, nranks;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  uint8_t *buf = malloc(max ? max : 1);
  if (!buf) tc_fail("out of memory");

  uint64_t state = seed;
  long long bcasts = 0, barriers = 0;
  unsigned long long checked = 0;
  while (!heal_loop_over(&h)) {
    long long ops = h.ops;
    uint64_t r = tc_rand(&state);
    int root = (int)(tc_rand(&state) % (uint64_t)nranks);
    int is_barrier = r % 6 == 0;
    size_t n = heal_loop_size(&h, r);
    double a = tc_now();
    if (is_barrier) {
      if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) tc_fail("MPI_Barrier failed at op %lld", ops);
      barriers++;
    } else {
      uint64_t pseed = tc_bcast_prepare(MPI_COMM_WORLD, buf, n, root, (uint64_t)ops);
      if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
        tc_fail("MPI_Bcast failed at op %lld", ops);
      tc_check(buf, n, pseed, "int_heal", root, (uint64_t)ops);
      if (allreduce) {
        long long mine = ops, sum = -1;
        if (MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
          tc_fail("MPI_Allreduce failed at op %lld", ops);
        if (sum != ops * nranks) tc_fail("MPI_Allreduce at op %lld: %lld", ops, sum);
      }
      bcasts++;
      checked += n;
    }
    heal_loop_took(&h, (tc_now() - a) * 1e3, is_barrier ? "barrier" : "bcast",
                   is_barrier ? (size_t)0 : n, is_barrier ? 0 : root);
    heal_loop_next(&h);
  }
  if (rank == 0) {
    printf("done: %lld operations (%lld broadcasts, %lld barriers, %llu bytes checked), all correct; "
           "slowest %.1f ms\n",
           h.ops, bcasts, barriers, checked, h.all_max);
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
