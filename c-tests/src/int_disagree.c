/* One MPI_Bcast (or MPI_Barrier) on which the ranks may disagree about mpicast, for
 * scripts/disagree.sh: mpicast loaded on some ranks only, MPICAST_* settings that differ
 * between ranks, or counts on either side of the threshold. Such a job must end with
 * mpicast's message naming the ranks and the cause, not hang; run alone, on agreeing ranks,
 * it just succeeds.
 *
 *   int_disagree [--count N] [--root-count N] [--barrier] [--repeat K] [--errors-return]
 *
 * --count: bytes every rank passes (default 65536); --root-count: what rank 0 (the root)
 * passes instead; --barrier: an MPI_Barrier instead of the broadcast; --repeat: this many
 * broadcasts of the larger count before it (all ranks agreeing), so that the disagreement
 * comes after setup;
 * --errors-return: MPI_ERRORS_RETURN on MPI_COMM_WORLD, and each rank prints the error
 * class and string it got ("int_disagree: rank R class C (NAME): STRING"). */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank();
  long long count = tc_arg_ll(argc, argv, "--count", 65536);
  long long root_count = tc_arg_ll(argc, argv, "--root-count", count);
  long long repeat = tc_arg_ll(argc, argv, "--repeat", 0);
  char *buf = calloc((size_t)(count > root_count ? count : root_count) + 1, 1);
  if (!buf) tc_fail("out of memory");
  long long big = count > root_count ? count : root_count;
  for (long long i = 0; i < repeat; i++)
    if (MPI_Bcast(buf, (int)big, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
      tc_fail("agreeing broadcast %lld failed", i);
  int rc;
  int errors_return = tc_flag(argc, argv, "--errors-return");
  if (errors_return) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (tc_flag(argc, argv, "--barrier")) {
    rc = MPI_Barrier(MPI_COMM_WORLD);
  } else {
    long long n = rank == 0 ? root_count : count;
    uint64_t seed = tc_pattern_seed(0, 99, (size_t)root_count);
    if (rank == 0)
      tc_fill(buf, (size_t)n, seed);
    else
      tc_poison(buf, (size_t)n, seed);
    rc = MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && rank != 0) {
      /* What arrived is the root's message; beyond it (a shorter message, which Open MPI's
       * own broadcast delivers too) the buffer is as it was. */
      size_t got = (size_t)(root_count < count ? root_count : count);
      tc_check(buf, got, seed, "broadcast", 0, 99);
      for (size_t i = got; i < (size_t)count; i++) {
        uint8_t have = (uint8_t)buf[i], poison = (uint8_t)(255u - tc_pattern_byte(seed, i));
        if (have != poison) tc_fail("byte %zu beyond the %zu-byte message was written", i, got);
      }
    }
  }
  if (rc != MPI_SUCCESS && errors_return) {
    char str[MPI_MAX_ERROR_STRING];
    int len = 0, cls = 0;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, str, &len);
    printf("int_disagree: rank %d class %d (%s): %s\n", rank, cls,
           cls == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE"
           : cls == MPI_ERR_OTHER  ? "MPI_ERR_OTHER"
                                   : "other",
           str);
  } else {
    printf("int_disagree: rank %d returned %d\n", rank, rc);
  }
  fflush(stdout);
  /* A second call, so that an eager root that returned at once is caught at its next
   * operation on the communicator. */
  MPI_Barrier(MPI_COMM_WORLD);
  free(buf);
  MPI_Finalize();
  return 0;
}
