#define _GNU_SOURCE
#include "common.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpicast.h>

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t tc_pattern_seed(int root, uint64_t iter, size_t size) {
  return mix64(mix64(mix64((uint64_t)root + 0x1234) ^ iter) ^ (uint64_t)size);
}

uint8_t tc_pattern_byte(uint64_t seed, size_t i) {
  /* The top byte of a multiplicative hash changes from one offset to the next
   * and never repeats with period 256, so shifted or duplicated fragments show. */
  return (uint8_t)(((uint64_t)i + seed) * 0x9e3779b97f4a7c15ULL >> 56);
}

void tc_fill(void *buf, size_t n, uint64_t seed) {
  uint8_t *b = buf;
  for (size_t i = 0; i < n; i++) b[i] = tc_pattern_byte(seed, i);
}

void tc_poison(void *buf, size_t n, uint64_t seed) {
  uint8_t *b = buf;
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)~tc_pattern_byte(seed, i);
}

uint64_t tc_bcast_prepare(MPI_Comm comm, void *buf, size_t n, int root, uint64_t iter) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  uint64_t seed = tc_pattern_seed(root, iter, n);
  if (rank == root)
    tc_fill(buf, n, seed);
  else
    tc_poison(buf, n, seed);
  return seed;
}

void tc_check(const void *buf, size_t n, uint64_t seed, const char *what, int root,
              uint64_t iter) {
  const uint8_t *b = buf;
  size_t first = n, bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != tc_pattern_byte(seed, i)) {
      if (first == n) first = i;
      bad++;
    }
  }
  if (bad) {
    tc_fail("%s: root %d iter %" PRIu64 " size %zu: %zu bad bytes, first at offset %zu "
            "(expected 0x%02x, got 0x%02x)",
            what, root, iter, n, bad, first, tc_pattern_byte(seed, first), b[first]);
  }
}

int tc_world_rank(void) {
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int tc_world_size(void) {
  int s = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void tc_fail(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[rank %d] FAIL: %s\n", tc_world_rank(), msg);
  fflush(stderr);
  /* The launcher kills the job on MPI_Abort and may drop output it has not
   * forwarded yet; the message is the point of the failure, so let it go first. */
  tc_sleep_ms(300);
  MPI_Abort(MPI_COMM_WORLD, 2);
  abort();
}

double tc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tc_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

uint64_t tc_rand(uint64_t *state) {
  *state += 0x9e3779b97f4a7c15ULL;
  return mix64(*state);
}

const char *tc_arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

int tc_flag(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

long long tc_arg_ll(int argc, char **argv, const char *name, long long dflt) {
  const char *v = tc_arg(argc, argv, name);
  return v ? strtoll(v, NULL, 0) : dflt;
}

size_t tc_parse_sizes(const char *list, size_t *out, size_t max) {
  size_t n = 0;
  const char *p = list;
  while (*p && n < max) {
    char *end;
    unsigned long long v = strtoull(p, &end, 0);
    if (end == p) break;
    out[n++] = (size_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

typedef int (*get_stats_fn)(MPICAST_Stats *);

void tc_expect_check(int ran_bcasts, int ran_barriers) {
  const char *expect = getenv("TC_EXPECT");
  int rank = tc_world_rank();
  get_stats_fn get = NULL;
  /* Through a data pointer: ISO C has no function-pointer conversion from void *. */
  void *sym = dlsym(RTLD_DEFAULT, "MPICAST_Get_stats");
  memcpy(&get, &sym, sizeof get);

  uint64_t mine[10] = {0};
  int have = get != NULL, all_have = 0;
  if (get) {
    MPICAST_Stats s;
    memset(&s, 0, sizeof s);
    int rc = get(&s);
    if (rc != 0) tc_fail("MPICAST_Get_stats returned %d", rc);
    uint64_t v[10] = {s.bcast_mcast, s.bcast_pmpi,  s.barrier_mcast, s.barrier_pmpi,
                      s.bytes_mcast, s.dgrams_sent, s.dgrams_recv,   s.repairs,
                      s.rejected,    s.fallbacks};
    memcpy(mine, v, sizeof v);
  }
  uint64_t sum[10];
  MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, sum, 10, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank != 0) {
    /* Rank 0 alone judges; the others wait so that its MPI_Abort reaches a live job. */
    MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return;
  }
  if (all_have) {
    printf("stats(sum): bcast_mcast=%" PRIu64 " bcast_pmpi=%" PRIu64 " barrier_mcast=%" PRIu64
           " barrier_pmpi=%" PRIu64 " bytes_mcast=%" PRIu64 " dgrams_sent=%" PRIu64
           " dgrams_recv=%" PRIu64 " repairs=%" PRIu64 " rejected=%" PRIu64
           " fallbacks=%" PRIu64 "\n",
           sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7], sum[8], sum[9]);
  } else {
    printf("stats: MPICAST_Get_stats not found on every rank (no mpicast loaded)\n");
  }
  fflush(stdout);
  if (expect && *expect) {
    if (!all_have)
      tc_fail("TC_EXPECT=%s but MPICAST_Get_stats is not loaded on every rank", expect);
    if (strcmp(expect, "mcast") == 0) {
      if (ran_bcasts && sum[0] == 0) tc_fail("TC_EXPECT=mcast but bcast_mcast is 0");
      if (ran_barriers && sum[2] == 0) tc_fail("TC_EXPECT=mcast but barrier_mcast is 0");
    } else if (strcmp(expect, "pmpi") == 0) {
      if (sum[0] != 0 || sum[2] != 0 || sum[4] != 0)
        tc_fail("TC_EXPECT=pmpi but bcast_mcast=%" PRIu64 " barrier_mcast=%" PRIu64
                " bytes_mcast=%" PRIu64,
                sum[0], sum[2], sum[4]);
      if (ran_bcasts && sum[1] == 0) tc_fail("TC_EXPECT=pmpi but bcast_pmpi is 0");
      if (ran_barriers && sum[3] == 0) tc_fail("TC_EXPECT=pmpi but barrier_pmpi is 0");
    } else {
      tc_fail("unknown TC_EXPECT=%s (want mcast or pmpi)", expect);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
}
