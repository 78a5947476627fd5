/* Broadcasts (1 B .. --max-size, sizes spread over the powers of two, every root) and
 * barriers for a bounded time, every byte of every broadcast checked, for
 * scripts/heal.sh: a fault comes in the middle (nft drops multicast on lo) and every
 * operation must still complete with the right data while the library heals.
 *   --seconds T     run this long (agreed by all ranks every 8 operations; default 10)
 *   --max-size B    largest broadcast (default 1 MiB)
 *   --seed S        the sequence every rank draws alike (default 1)
 *   --slow-ms M     rank 0 prints every operation that took M ms or more (default 50)
 * Rank 0 prints "ready: I operations" once 100 operations are done (the communicator is set
 * up: the script's fault may come), "slow: op I KIND BYTES root R end=E ms=D" for each slow
 * operation (E: its
 * end in CLOCK_REALTIME seconds, to compare with the moment of the fault), "second K: N
 * operations, max D ms" once a second, and at the end "done: N operations (B broadcasts,
 * R barriers, X bytes checked), all correct". A wrong byte aborts the job (tc_check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

static double realtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  double seconds = (double)tc_arg_ll(argc, argv, "--seconds", 10);
  size_t max = (size_t)tc_arg_ll(argc, argv, "--max-size", 1 << 20);
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 1);
  double slow_ms = (double)tc_arg_ll(argc, argv, "--slow-ms", 50);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  uint8_t *buf = malloc(max ? max : 1);
  if (!buf) tc_fail("out of memory");
  int top_bit = 0;
  while (((size_t)1 << (top_bit + 1)) <= max) top_bit++;

  uint64_t state = seed;
  long long ops = 0, bcasts = 0, barriers = 0, in_second = 0;
  unsigned long long checked = 0;
  double t0 = tc_now(), second_max = 0, all_max = 0;
  int second = 0;
  for (;;) {
    if (ops % 8 == 0) {
      int late = tc_now() - t0 > seconds, stop = 0;
      MPI_Allreduce(&late, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (stop) break;
    }
    uint64_t r = tc_rand(&state);
    int root = (int)(tc_rand(&state) % (uint64_t)nranks);
    int is_barrier = r % 6 == 0;
    /* A power of two up to max, then anywhere up to the next one: 1 B .. max. */
    size_t n = (size_t)1 << ((r >> 8) % (uint64_t)(top_bit + 1));
    n += (size_t)((r >> 20) % n);
    if (n > max) n = max;
    double a = tc_now();
    if (is_barrier) {
      if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) tc_fail("MPI_Barrier failed at op %lld", ops);
      barriers++;
    } else {
      uint64_t pseed = tc_bcast_prepare(MPI_COMM_WORLD, buf, n, root, (uint64_t)ops);
      if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
        tc_fail("MPI_Bcast failed at op %lld", ops);
      tc_check(buf, n, pseed, "int_heal", root, (uint64_t)ops);
      bcasts++;
      checked += n;
    }
    double ms = (tc_now() - a) * 1e3;
    if (ms > second_max) second_max = ms;
    if (ms > all_max) all_max = ms;
    if (rank == 0 && ms >= slow_ms) {
      printf("slow: op %lld %s %zu root %d end=%.6f ms=%.1f\n", ops, is_barrier ? "barrier" : "bcast",
             is_barrier ? (size_t)0 : n, is_barrier ? 0 : root, realtime(), ms);
      fflush(stdout);
    }
    ops++;
    in_second++;
    if (rank == 0 && ops == 100) {
      printf("ready: %lld operations\n", ops);
      fflush(stdout);
    }
    if (tc_now() - t0 >= second + 1) {
      if (rank == 0) {
        printf("second %d: %lld operations, max %.1f ms\n", second, in_second, second_max);
        fflush(stdout);
      }
      second++;
      in_second = 0;
      second_max = 0;
    }
  }
  if (rank == 0) {
    printf("done: %lld operations (%lld broadcasts, %lld barriers, %llu bytes checked), all correct; "
           "slowest %.1f ms\n",
           ops, bcasts, barriers, checked, all_max);
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
