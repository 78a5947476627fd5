/* MPICAST_Imcast (IP multicast with MPICAST_IMCAST_TRANSPORT=ip) and MPICAST_Dbcast for a
 * bounded time, every byte of every message checked, for scripts/heal_imcast.sh: a fault
 * comes in the middle (nft drops multicast on lo) and every operation must still complete
 * with the right data while the library repairs by unicast and moves to point-to-point.
 *   --seconds T     run this long (agreed by all ranks every 8 operations; default 10)
 *   --max-size B    largest message (default 256 KiB)
 *   --seed S        the sequence every rank draws alike (default 1)
 *   --slow-ms M     rank 0 prints every operation of its that took M ms or more (default 50)
 * Each operation: a root and 2 or more destinations drawn alike by every rank, a size from
 * 1 B to B (spread over the powers of two); the root multicasts (MPICAST_Imcast, or every 4th
 * operation MPICAST_Dbcast) a pattern of (root, operation, size), each destination receives
 * (MPICAST_Mcast_irecv, or MPI_Recv for a dynamic broadcast) into a poisoned buffer and checks
 * every byte; ranks not in it go on. Rank 0 prints "ready: I operations" once 100 operations
 * are done (the script's fault may come), "slow: op I KIND BYTES root R end=E ms=D" for each
 * slow operation it took part in (E: its end in CLOCK_REALTIME seconds), "second K: N
 * operations, max D ms" once a second, and at the end "done: N operations (I imcasts, D
 * dbcasts, X bytes checked), all correct". A wrong byte aborts the job (tc_check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"
#include "heal_loop.h"

#include "api.h"

static void ok(int rc, const char *what, long long op) {
  if (rc != MPICAST_OK) tc_fail("%s failed at op %lld: %s", what, op, API(MPICAST_Status_string)(rc));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  heal_loop h;
  heal_loop_init(&h, argc, argv, 256 << 10);
  size_t max = h.max;
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 1);
  int rank = h.rank, nranks;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks < 3) tc_fail("needs 3 ranks or more");
  ok(API(MPICAST_Mcast_enable)(MPI_COMM_WORLD), "MPICAST_Mcast_enable", -1);
  ok(API(MPICAST_Dbcast_enable)(MPI_COMM_WORLD), "MPICAST_Dbcast_enable", -1);
  uint8_t *buf = malloc(max ? max : 1);
  int *dests = malloc(sizeof(int) * (size_t)nranks);
  if (!buf || !dests) tc_fail("out of memory");

  uint64_t state = seed;
  long long imcasts = 0, dbcasts = 0;
  unsigned long long checked = 0;
  while (!heal_loop_over(&h)) {
    long long ops = h.ops;
    uint64_t r = tc_rand(&state);
    int root = (int)(tc_rand(&state) % (uint64_t)nranks);
    int is_dbcast = ops % 4 == 3;
    /* Destinations: every other rank but at most one (drawn), at least 2. */
    int skip = (int)(tc_rand(&state) % (uint64_t)nranks);
    int nd = 0, me_in = 0;
    for (int i = 0; i < nranks; i++) {
      if (i == root || (i == skip && nranks > 3)) continue;
      dests[nd++] = i;
      if (i == rank) me_in = 1;
    }
    size_t n = heal_loop_size(&h, r);
    int tag = (int)(ops % 1000);
    uint64_t pseed = tc_pattern_seed(root, (uint64_t)ops, n);
    double a = tc_now();
    int took_part = rank == root || me_in;
    if (rank == root) {
      MPICAST_Request *req = NULL;
      tc_fill(buf, n, pseed);
      if (is_dbcast)
        ok(API(MPICAST_Dbcast)(buf, (int)n, MPI_BYTE, dests, NULL, nd, tag, MPI_COMM_WORLD, &req),
           "MPICAST_Dbcast", ops);
      else
        ok(API(MPICAST_Imcast)(buf, (int)n, MPI_BYTE, dests, nd, tag, MPI_COMM_WORLD, &req),
           "MPICAST_Imcast", ops);
      ok(API(MPICAST_Wait)(&req, MPI_STATUS_IGNORE), "MPICAST_Wait (root)", ops);
    } else if (me_in) {
      MPI_Status st;
      tc_poison(buf, n, pseed);
      if (is_dbcast) {
        if (MPI_Recv(buf, (int)n, MPI_BYTE, root, tag, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
          tc_fail("MPI_Recv of a dynamic broadcast failed at op %lld", ops);
      } else {
        MPICAST_Request *req = NULL;
        ok(API(MPICAST_Mcast_irecv)(buf, (int)n, MPI_BYTE, root, tag, MPI_COMM_WORLD, &req),
           "MPICAST_Mcast_irecv", ops);
        ok(API(MPICAST_Wait)(&req, &st), "MPICAST_Wait", ops);
      }
      int got = -1;
      MPI_Get_count(&st, MPI_BYTE, &got);
      if (got != (int)n || st.MPI_SOURCE != root || st.MPI_TAG != tag)
        tc_fail("op %lld: status says %d bytes from %d tag %d, not %zu from %d tag %d", ops, got,
                st.MPI_SOURCE, st.MPI_TAG, n, root, tag);
      tc_check(buf, n, pseed, is_dbcast ? "int_heal_imcast dbcast" : "int_heal_imcast imcast",
               root, (uint64_t)ops);
      checked += n;
    }
    if (is_dbcast)
      dbcasts++;
    else
      imcasts++;
    if (took_part)
      heal_loop_took(&h, (tc_now() - a) * 1e3, is_dbcast ? "dbcast" : "imcast", n, root);
    heal_loop_next(&h);
  }
  unsigned long long all_checked = 0;
  MPI_Reduce(&checked, &all_checked, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("done: %lld operations (%lld imcasts, %lld dbcasts, %llu bytes checked), all correct; "
           "slowest %.1f ms\n",
           h.ops, imcasts, dbcasts, all_checked, h.all_max);
    fflush(stdout);
  }
  free(dests);
  free(buf);
  MPI_Finalize();
  return 0;
}
