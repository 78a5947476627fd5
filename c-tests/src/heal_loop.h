/* The timed loop shared by the self-healing tests (int_heal.c, int_heal_imcast.c): the
 * arguments they share, the stop agreed every 8 operations, the drawn sizes and what rank 0
 * prints ("ready", "slow", "second"), which scripts/heal-lib.sh reads. Header-only: each test
 * is one source file. */
#ifndef MPICAST_TEST_HEAL_LOOP_H
#define MPICAST_TEST_HEAL_LOOP_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "common.h"

typedef struct {
  int rank;
  double seconds, slow_ms, t0, second_max, all_max;
  size_t max;
  int top_bit, second, agree_bcast;
  long long ops, in_second;
} heal_loop;

/* --seconds T (default 10), --max-size B (default `default_max`), --slow-ms M (default 50),
 * --agree-bcast 1 (the stop goes by an MPI_Bcast from rank 0, so that every MPI call of the
 * program is a broadcast or barrier of mpicast's: a root that returned from an eager broadcast
 * serves it in its next call). */
static inline void heal_loop_init(heal_loop *h, int argc, char **argv, size_t default_max) {
  h->seconds = (double)tc_arg_ll(argc, argv, "--seconds", 10);
  h->max = (size_t)tc_arg_ll(argc, argv, "--max-size", (long long)default_max);
  h->slow_ms = (double)tc_arg_ll(argc, argv, "--slow-ms", 50);
  h->agree_bcast = (int)tc_arg_ll(argc, argv, "--agree-bcast", 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &h->rank);
  h->top_bit = 0;
  while (((size_t)1 << (h->top_bit + 1)) <= h->max) h->top_bit++;
  h->t0 = tc_now();
  h->second_max = h->all_max = 0;
  h->second = 0;
  h->ops = h->in_second = 0;
}

/* Whether the time is up: every 8 operations all ranks agree (MPI_Allreduce, or rank 0's
 * clock by MPI_Bcast with --agree-bcast). */
static inline int heal_loop_over(const heal_loop *h) {
  if (h->ops % 8 != 0) return 0;
  int late = tc_now() - h->t0 > h->seconds, stop = 0;
  if (h->agree_bcast) {
    MPI_Bcast(&late, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return late;
  }
  MPI_Allreduce(&late, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return stop;
}

/* A power of two up to max, then anywhere up to the next one (from the drawn `r`): 1 B .. max. */
static inline size_t heal_loop_size(const heal_loop *h, uint64_t r) {
  size_t n = (size_t)1 << ((r >> 8) % (uint64_t)(h->top_bit + 1));
  n += (size_t)((r >> 20) % n);
  return n > h->max ? h->max : n;
}

static inline double heal_loop_realtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An operation of this rank (`kind`, `n` bytes from `root`) took `ms`: the maxima, and rank 0's
 * "slow: op I KIND BYTES root R end=E ms=D" (E: its end in CLOCK_REALTIME seconds). */
static inline void heal_loop_took(heal_loop *h, double ms, const char *kind, size_t n, int root) {
  if (ms > h->second_max) h->second_max = ms;
  if (ms > h->all_max) h->all_max = ms;
  if (h->rank == 0 && ms >= h->slow_ms) {
    printf("slow: op %lld %s %zu root %d end=%.6f ms=%.1f\n", h->ops, kind, n, root,
           heal_loop_realtime(), ms);
    fflush(stdout);
  }
}

/* After each operation: rank 0's "ready: 100 operations" and, once a second, "second K: N
 * operations, max D ms". */
static inline void heal_loop_next(heal_loop *h) {
  h->ops++;
  h->in_second++;
  if (h->rank == 0 && h->ops == 100) {
    printf("ready: %lld operations\n", h->ops);
    fflush(stdout);
  }
  if (tc_now() - h->t0 >= h->second + 1) {
    if (h->rank == 0) {
      printf("second %d: %lld operations, max %.1f ms\n", h->second, h->in_second, h->second_max);
      fflush(stdout);
    }
    h->second++;
    h->in_second = 0;
    h->second_max = 0;
  }
}

#endif
