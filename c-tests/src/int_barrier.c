/* MPI_Barrier semantics: no rank may leave a barrier before the last rank has
 * entered it. One rank arrives late (sleeps first) and notes the time it
 * enters; every rank notes the time it leaves; the late rank's entry time is
 * then shared with MPI_Allreduce (not a call under test) and each rank checks
 * it did not leave earlier. Times come from CLOCK_MONOTONIC, common to all
 * processes of the machine.
 *   --late-ms N   delay of the long rounds (default 300)
 *   --quick N     rounds with a 20 ms late rank (default 20) */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

static void round_with_late(MPI_Comm comm, const char *name, int late, int delay_ms) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  double sync = 0;
  /* Start together without relying on the barrier under test. */
  MPI_Allreduce(MPI_IN_PLACE, &sync, 1, MPI_DOUBLE, MPI_SUM, comm);
  double entered = -1.0;
  if (rank == late) {
    tc_sleep_ms(delay_ms);
    entered = tc_now();
  }
  if (MPI_Barrier(comm) != MPI_SUCCESS) tc_fail("%s: MPI_Barrier failed", name);
  double left = tc_now();
  double late_entered;
  MPI_Allreduce(&entered, &late_entered, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (left < late_entered)
    tc_fail("%s: rank %d left the barrier %.3f ms before late rank %d entered it", name, rank,
            (late_entered - left) * 1e3, late);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wsize = tc_world_size();
  int delay = (int)tc_arg_ll(argc, argv, "--late-ms", 300);
  long long quick = tc_arg_ll(argc, argv, "--quick", 20);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);

  int lates[3] = {wsize - 1, 0, wsize / 2};
  for (int i = 0; i < 3; i++) {
    round_with_late(MPI_COMM_WORLD, "world", lates[i], delay);
    round_with_late(dup, "dup", lates[(i + 1) % 3], delay);
  }
  for (long long q = 0; q < quick; q++)
    round_with_late(q % 2 ? dup : MPI_COMM_WORLD, "quick", (int)(q % wsize), 20);
  /* Back-to-back barriers with no delay: completion alone is the check. */
  for (int b = 0; b < 200; b++)
    if (MPI_Barrier(b % 2 ? dup : MPI_COMM_WORLD) != MPI_SUCCESS) tc_fail("barrier %d failed", b);

  if (tc_world_rank() == 0)
    printf("int_barrier: 6 late rounds of %d ms, %lld quick rounds, 200 back-to-back on %d ranks ok\n",
           delay, quick, wsize);
  MPI_Comm_free(&dup);
  tc_expect_check(0, 1);
  MPI_Finalize();
  return 0;
}
