/* The non-blocking multicast to any set of ranks: MPICAST_Mcast_enable, MPICAST_Imcast,
 * MPICAST_Mcast_irecv, MPICAST_Mcast_iprobe and the request calls.
 *
 *   int_imcast [--rounds N] [--seed S] [--max-bytes B] [--many M] [--rush-bytes R]
 *              [--enable-only 1]
 *
 * (--enable-only 1: enable, then MPI_Finalize at once; scripts/finalize_thread.sh.
 *  --busy-ms B: only the measurement of a relay busy for B ms, 4 ranks; see busy_measure.)
 *
 * 1. Bad arguments get their status and change nothing.
 * 2. Rounds of multicasts: in each, every rank multicasts to a random set of the others
 *    (a shared seed: every rank knows the plan), sizes from 0 to several segments, random
 *    tags; receivers post by source and tag, by MPI_ANY_SOURCE, by MPI_ANY_TAG, or probe
 *    first; every byte is checked, and the statuses (source, tag, MPI_Get_count).
 * 3. One root's multicasts with one tag are received in their order.
 * 4. A buffer too small: MPICAST_ERR_TRUNCATE, MPI_ERR_TRUNCATE in the status, no overrun.
 * 5. The application's own point-to-point messages on the same communicator, with the same
 *    tags and MPI_ANY_SOURCE receives, while multicasts are in flight: nothing mixes.
 * 6. A rank that computes (sleeps) without calling mpicast while multicasts pass through it.
 * 7. Many small multicasts (--many), every rank to overlapping sets at once: memory stays flat.
 * 8. MPICAST_Request_free of a receive that never matches; Testany and Testsome.
 * 9. The root leaves at once: rank 0 multicasts --rush-bytes to every other rank, its request
 *    completes, and it calls MPI_Finalize while the others are still asleep; they then receive
 *    it whole (with MPICAST_IMCAST_TRANSPORT=ip the data is still rank 0's to send). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

#ifndef MPICAST_LINKED
/* Preloaded: every extension call below goes through api.h's lookup. */
#define MPICAST_Imcast API(MPICAST_Imcast)
#define MPICAST_Mcast_enable API(MPICAST_Mcast_enable)
#define MPICAST_Mcast_iprobe API(MPICAST_Mcast_iprobe)
#define MPICAST_Mcast_irecv API(MPICAST_Mcast_irecv)
#define MPICAST_Request_free API(MPICAST_Request_free)
#define MPICAST_Testany API(MPICAST_Testany)
#define MPICAST_Testsome API(MPICAST_Testsome)
#define MPICAST_Wait API(MPICAST_Wait)
#define MPICAST_Waitall API(MPICAST_Waitall)
#endif

#define REQUIRE(c, ...)        \
  do {                         \
    if (!(c)) tc_fail(__VA_ARGS__); \
  } while (0)

static int rank, nranks;

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &v) == 1) break;
  if (f) fclose(f);
  return v;
}

/* The end of a phase: a barrier that keeps forwarding. With MPICAST_IMCAST_ROUTE=table a rank
 * that is done with its own multicasts may still lie on the path of others' (docs/imcast.md),
 * so it must keep calling mpicast until every rank is done: a blocking MPI_Barrier here could
 * wait for ever on a rank whose multicast waits for us. */
static void settle(void) {
  MPI_Request b;
  MPI_Ibarrier(MPI_COMM_WORLD, &b);
  for (int done = 0; !done;) {
    int flag;
    MPI_Status s;
    REQUIRE(MPICAST_Mcast_iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s) ==
                MPICAST_OK,
            "iprobe");
    MPI_Test(&b, &done, MPI_STATUS_IGNORE);
  }
}

static void check_bad_arguments(void) {
  char b[8] = {0};
  MPICAST_Request *r = NULL;
  int d_ok[1] = {(rank + 1) % nranks};
  int d_self[1] = {rank};
  int d_out[1] = {nranks};
  int d_dup[2] = {(rank + 1) % nranks, (rank + 1) % nranks};
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_ok, 0, 0, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
          "ndests = 0");
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_self, 1, 0, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
          "the root as a destination");
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_out, 1, 0, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
          "a destination out of range");
  if (nranks > 2)
    REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_dup, 2, 0, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
            "a repeated destination");
  REQUIRE(MPICAST_Imcast(b, -1, MPI_BYTE, d_ok, 1, 0, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
          "a negative count");
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_ok, 1, 40000, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
          "a tag out of range");
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_ok, 1, 0, MPI_COMM_NULL, &r) == MPICAST_ERR_ARG,
          "MPI_COMM_NULL");
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_ok, 1, 0, MPI_COMM_WORLD, NULL) == MPICAST_ERR_NULL_ARG,
          "a NULL request");
  REQUIRE(MPICAST_Mcast_irecv(b, 1, MPI_BYTE, nranks, 0, MPI_COMM_WORLD, &r) == MPICAST_ERR_ARG,
          "a source out of range");
  REQUIRE(r == NULL, "a failed call wrote its request");
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  REQUIRE(MPICAST_Imcast(b, 1, MPI_BYTE, d_ok, 1, 0, other, &r) == MPICAST_ERR_NOT_ENABLED,
          "a communicator not enabled");
  MPI_Comm_free(&other);
  /* A NULL request is complete. */
  MPI_Status st;
  REQUIRE(MPICAST_Wait(&r, &st) == MPICAST_OK, "waiting for a NULL request");
  /* MPI_PROC_NULL completes at once. */
  REQUIRE(MPICAST_Mcast_irecv(b, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r) == MPICAST_OK,
          "a receive from MPI_PROC_NULL");
  REQUIRE(MPICAST_Wait(&r, &st) == MPICAST_OK && r == NULL && st.MPI_SOURCE == MPI_PROC_NULL,
          "MPI_PROC_NULL's status");
}

/* Byte i of multicast (root, round, k). */
static unsigned char pat(int root, int round, int k, size_t i) {
  return (unsigned char)(tc_pattern_byte(tc_pattern_seed(root, (uint64_t)round * 131 + (uint64_t)k, 7), i));
}

typedef struct {
  int root, ndests, dests[64], tag, k;
  size_t len;
} plan_t;

/* Every rank draws the same plan: per round, each rank multicasts `per` times. */
static int make_plan(uint64_t *st, int round, int per, size_t max_bytes, plan_t *out) {
  int n = 0;
  for (int root = 0; root < nranks; root++)
    for (int k = 0; k < per; k++) {
      plan_t *p = &out[n++];
      p->root = root;
      p->k = k;
      p->tag = (int)(tc_rand(st) % 3);
      p->len = tc_rand(st) % 4 == 0 ? 0 : (size_t)(tc_rand(st) % (max_bytes + 1));
      p->ndests = 0;
      for (int d = 0; d < nranks && p->ndests < 64; d++)
        if (d != root && tc_rand(st) % 100 < 55) p->dests[p->ndests++] = d;
      if (p->ndests == 0 && nranks > 1) p->dests[p->ndests++] = (root + 1) % nranks;
      (void)round;
    }
  return n;
}

static void rounds(int nrounds, uint64_t seed, size_t max_bytes) {
  enum { PER = 3 };
  plan_t *plan = malloc(sizeof(plan_t) * (size_t)nranks * PER);
  uint64_t st = seed;
  for (int round = 0; round < nrounds; round++) {
    int n = make_plan(&st, round, PER, max_bytes, plan);
    int mode = (int)(tc_rand(&st) % 4); /* 0 exact, 1 any source, 2 any tag, 3 probe first */
    /* Sends first (they complete at once), then receives in the plan's order. */
    MPICAST_Request *sends[PER];
    int ns = 0;
    for (int i = 0; i < n; i++) {
      plan_t *p = &plan[i];
      if (p->root != rank) continue;
      unsigned char *b = malloc(p->len + 1);
      for (size_t j = 0; j < p->len; j++) b[j] = pat(p->root, round, p->k, j);
      int rc = MPICAST_Imcast(b, (int)p->len, MPI_BYTE, p->dests, p->ndests, p->tag,
                              MPI_COMM_WORLD, &sends[ns++]);
      REQUIRE(rc == MPICAST_OK, "round %d: MPICAST_Imcast returned %d", round, rc);
      free(b); /* the data is taken: the buffer may go at once */
    }
    /* One receive per multicast planned for me, each posted for the next one not yet
     * received (with MPI_ANY_SOURCE or MPI_ANY_TAG another may come instead: what came is
     * checked against the entry it is, which is then marked taken). */
    int taken[3 * 64] = {0}, mine = 0;
    for (int i = 0; i < n; i++)
      for (int d = 0; d < plan[i].ndests; d++) mine += plan[i].dests[d] == rank;
    unsigned char *b = malloc(max_bytes + 16);
    for (int got_n = 0; got_n < mine; got_n++) {
      plan_t *p = NULL;
      for (int i = 0; i < n && !p; i++)
        for (int d = 0; d < plan[i].ndests && !p; d++)
          if (plan[i].dests[d] == rank && !taken[i]) p = &plan[i];
      memset(b, 0xEE, max_bytes + 16);
      int src = p->root, tag = p->tag;
      if (mode == 1) src = MPI_ANY_SOURCE;
      if (mode == 2) tag = MPI_ANY_TAG;
      MPI_Status s;
      if (mode == 3) {
        int flag = 0;
        while (!flag)
          REQUIRE(MPICAST_Mcast_iprobe(src, tag, MPI_COMM_WORLD, &flag, &s) == MPICAST_OK, "iprobe");
        REQUIRE(s.MPI_SOURCE == p->root && s.MPI_TAG == p->tag,
                "round %d: probe said %d/%d, want %d/%d", round, s.MPI_SOURCE, s.MPI_TAG, p->root,
                p->tag);
      }
      MPICAST_Request *r;
      REQUIRE(MPICAST_Mcast_irecv(b, (int)max_bytes + 16, MPI_BYTE, src, tag, MPI_COMM_WORLD, &r) ==
                  MPICAST_OK,
              "irecv");
      REQUIRE(MPICAST_Wait(&r, &s) == MPICAST_OK && r == NULL, "round %d: wait", round);
      int c;
      MPI_Get_count(&s, MPI_BYTE, &c);
      int which = -1;
      for (int j = 0; j < n && which < 0; j++) {
        plan_t *q = &plan[j];
        int to_me = 0;
        for (int d = 0; d < q->ndests; d++) to_me |= q->dests[d] == rank;
        if (!to_me || taken[j] || q->root != s.MPI_SOURCE || q->tag != s.MPI_TAG ||
            (size_t)c != q->len)
          continue;
        size_t bad = 0;
        for (size_t x = 0; x < q->len; x++) bad += b[x] != pat(q->root, round, q->k, x);
        if (!bad) which = j;
      }
      REQUIRE(which >= 0,
              "round %d: a multicast from %d, tag %d, %d bytes matches nothing planned for me "
              "(or its data is wrong)",
              round, s.MPI_SOURCE, s.MPI_TAG, c);
      if (mode == 0 || mode == 3)
        REQUIRE(&plan[which] == p, "round %d: a receive by source and tag took another multicast",
                round);
      for (size_t x = (size_t)c; x < max_bytes + 16; x++)
        REQUIRE(b[x] == 0xEE, "round %d: byte %zu past the message was written", round, x);
      taken[which] = 1;
    }
    free(b);
    REQUIRE(MPICAST_Waitall(ns, sends, MPI_STATUSES_IGNORE) == MPICAST_OK, "sends");
    /* A receive by MPI_ANY_SOURCE may take any multicast to this rank that came: keep the
     * rounds apart so that it takes one of its own round. */
    settle();
  }
  free(plan);
  settle();
  if (rank == 0) printf("int_imcast: %d rounds of multicasts checked\n", nrounds);
}

static void order_and_truncation(void) {
  int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
  int val[3];
  MPICAST_Request *s[3], *r[3];
  for (int i = 0; i < 3; i++) {
    val[i] = rank * 100 + i;
    REQUIRE(MPICAST_Imcast(&val[i], 1, MPI_INT, &to, 1, 9, MPI_COMM_WORLD, &s[i]) == MPICAST_OK,
            "imcast");
  }
  int got[3];
  for (int i = 0; i < 3; i++)
    REQUIRE(MPICAST_Mcast_irecv(&got[i], 1, MPI_INT, from, 9, MPI_COMM_WORLD, &r[i]) == MPICAST_OK,
            "irecv");
  MPI_Status st[3];
  REQUIRE(MPICAST_Waitall(3, r, st) == MPICAST_OK, "waitall");
  for (int i = 0; i < 3; i++)
    REQUIRE(got[i] == from * 100 + i, "order: receive %d got %d, want %d", i, got[i],
            from * 100 + i);
  REQUIRE(MPICAST_Waitall(3, s, MPI_STATUSES_IGNORE) == MPICAST_OK, "waitall sends");
  /* 100 bytes into a buffer of 50. */
  char big[100], small[60];
  memset(big, 'x', sizeof big);
  memset(small, 0, sizeof small);
  REQUIRE(MPICAST_Imcast(big, 100, MPI_CHAR, &to, 1, 10, MPI_COMM_WORLD, &s[0]) == MPICAST_OK,
          "imcast");
  REQUIRE(MPICAST_Mcast_irecv(small, 50, MPI_CHAR, from, 10, MPI_COMM_WORLD, &r[0]) == MPICAST_OK,
          "irecv");
  MPI_Status ts;
  int rc = MPICAST_Wait(&r[0], &ts);
  int c = -1;
  MPI_Get_count(&ts, MPI_CHAR, &c);
  REQUIRE(rc == MPICAST_ERR_TRUNCATE && ts.MPI_ERROR == MPI_ERR_TRUNCATE && c == 50,
          "truncation: rc %d error %d count %d", rc, ts.MPI_ERROR, c);
  for (int i = 0; i < 60; i++)
    REQUIRE(small[i] == (i < 50 ? 'x' : 0), "truncation: byte %d is %d", i, small[i]);
  REQUIRE(MPICAST_Wait(&s[0], MPI_STATUS_IGNORE) == MPICAST_OK, "wait send");
  settle();
  if (rank == 0) printf("int_imcast: order and truncation ok\n");
}

/* The application's messages with the same tags, ANY_SOURCE, between multicasts. */
static void mixed_with_p2p(void) {
  int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
  for (int it = 0; it < 50; it++) {
    int m = rank * 1000 + it, got = -1, app = -1;
    MPICAST_Request *s, *r;
    REQUIRE(MPICAST_Imcast(&m, 1, MPI_INT, &to, 1, 1, MPI_COMM_WORLD, &s) == MPICAST_OK, "imcast");
    MPI_Request ar;
    MPI_Irecv(&app, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &ar);
    int mine = -m - 1;
    MPI_Send(&mine, 1, MPI_INT, to, 1, MPI_COMM_WORLD);
    REQUIRE(MPICAST_Mcast_irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &r) == MPICAST_OK,
            "irecv");
    REQUIRE(MPICAST_Wait(&r, MPI_STATUS_IGNORE) == MPICAST_OK, "wait");
    MPI_Wait(&ar, MPI_STATUS_IGNORE);
    REQUIRE(got == from * 1000 + it, "multicast got %d", got);
    REQUIRE(app == -(from * 1000 + it) - 1, "the application's message got %d", app);
    REQUIRE(MPICAST_Wait(&s, MPI_STATUS_IGNORE) == MPICAST_OK, "wait send");
  }
  settle();
  if (rank == 0) printf("int_imcast: multicasts mixed with the application's messages ok\n");
}

/* Rank 1 sleeps without calling mpicast while rank 0 multicasts to everyone: multicasts that
 * route through rank 1 wait for it; all arrive once it calls in again. */
static void busy_relay(void) {
  if (nranks < 3) return;
  int v = 4242, got = 0;
  MPICAST_Request *r = NULL;
  if (rank == 0) {
    int d[64], nd = 0;
    for (int i = 1; i < nranks && nd < 64; i++) d[nd++] = i;
    REQUIRE(MPICAST_Imcast(&v, 1, MPI_INT, d, nd, 3, MPI_COMM_WORLD, &r) == MPICAST_OK, "imcast");
    REQUIRE(MPICAST_Wait(&r, MPI_STATUS_IGNORE) == MPICAST_OK, "wait");
  } else {
    if (rank == 1) tc_sleep_ms(300);
    REQUIRE(MPICAST_Mcast_irecv(&got, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &r) == MPICAST_OK, "irecv");
    REQUIRE(MPICAST_Wait(&r, MPI_STATUS_IGNORE) == MPICAST_OK && got == v, "busy relay: got %d", got);
  }
  settle();
  if (rank == 0) printf("int_imcast: through a rank busy for 300 ms ok\n");
}

/* Many multicasts, all ranks at once, to overlapping sets: in iteration i every rank sends to
 * the d ranks after it (d = 1 + i mod (n - 1)), so each rank receives from the d ranks before
 * it, each by source. Memory must stay flat. */
static void many(int count) {
  long before = 0;
  int *got = malloc(sizeof(int) * (size_t)nranks);
  int *dests = malloc(sizeof(int) * (size_t)nranks);
  MPICAST_Request **reqs = malloc(sizeof(MPICAST_Request *) * (size_t)nranks);
  for (int i = 0; i < count; i++) {
    if (i == count / 10) before = rss_kib();
    int d = 1 + i % (nranks - 1), v = i + (rank << 20), nr = 0;
    for (int k = 0; k < d; k++) dests[k] = (rank + 1 + k) % nranks;
    MPICAST_Request *s;
    REQUIRE(MPICAST_Imcast(&v, 1, MPI_INT, dests, d, 4, MPI_COMM_WORLD, &s) == MPICAST_OK, "imcast");
    for (int k = 0; k < d; k++) {
      int from = (rank + nranks - 1 - k) % nranks;
      got[k] = -1;
      REQUIRE(MPICAST_Mcast_irecv(&got[k], 1, MPI_INT, from, 4, MPI_COMM_WORLD, &reqs[nr++]) ==
                  MPICAST_OK,
              "irecv");
    }
    REQUIRE(MPICAST_Waitall(nr, reqs, MPI_STATUSES_IGNORE) == MPICAST_OK, "many: waitall");
    for (int k = 0; k < d; k++) {
      int from = (rank + nranks - 1 - k) % nranks;
      REQUIRE(got[k] == i + (from << 20), "many: %d from %d got %d", i, from, got[k]);
    }
    REQUIRE(MPICAST_Wait(&s, MPI_STATUS_IGNORE) == MPICAST_OK, "wait");
  }
  long after = rss_kib();
  settle();
  free(got);
  free(dests);
  free(reqs);
  REQUIRE(after - before < 4096, "memory grew by %ld KiB over %d multicasts", after - before,
          count - count / 10);
  if (rank == 0)
    printf("int_imcast: %d multicasts per rank to 1..%d ranks each, resident memory %ld -> %ld KiB\n",
           count, nranks - 1, before, after);
}

static void rush(size_t bytes) {
  unsigned char *buf = malloc(bytes);
  REQUIRE(buf, "malloc");
  MPICAST_Request *r;
  if (rank == 0) {
    int *dests = malloc(sizeof(int) * (size_t)nranks);
    for (int k = 1; k < nranks; k++) dests[k - 1] = k;
    for (size_t i = 0; i < bytes; i++) buf[i] = (unsigned char)(i * 7 + 3);
    REQUIRE(MPICAST_Imcast(buf, (int)bytes, MPI_BYTE, dests, nranks - 1, 9, MPI_COMM_WORLD, &r) ==
                MPICAST_OK,
            "rush: imcast");
    REQUIRE(MPICAST_Wait(&r, MPI_STATUS_IGNORE) == MPICAST_OK, "rush: wait");
    free(dests);
    printf("int_imcast: rank 0 sent %zu bytes and finalizes\n", bytes);
    fflush(stdout);
  } else {
    usleep(200 * 1000);
    memset(buf, 0, bytes);
    MPI_Status st;
    REQUIRE(MPICAST_Mcast_irecv(buf, (int)bytes, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &r) == MPICAST_OK,
            "rush: irecv");
    REQUIRE(MPICAST_Wait(&r, &st) == MPICAST_OK, "rush: wait");
    for (size_t i = 0; i < bytes; i++)
      REQUIRE(buf[i] == (unsigned char)(i * 7 + 3), "rush: byte %zu wrong", i);
  }
  free(buf);
}

static void free_and_test_family(void) {
  int never;
  MPICAST_Request *r;
  REQUIRE(MPICAST_Mcast_irecv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &r) == MPICAST_OK,
          "irecv");
  REQUIRE(MPICAST_Request_free(&r) == MPICAST_OK && r == NULL, "free");
  /* Testany and Testsome over a multicast that arrives. */
  int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks, v = rank, got = -1;
  MPICAST_Request *rs[2] = {NULL, NULL}, *s;
  REQUIRE(MPICAST_Mcast_irecv(&got, 1, MPI_INT, from, 78, MPI_COMM_WORLD, &rs[1]) == MPICAST_OK,
          "irecv");
  REQUIRE(MPICAST_Imcast(&v, 1, MPI_INT, &to, 1, 78, MPI_COMM_WORLD, &s) == MPICAST_OK, "imcast");
  int idx = -1, flag = 0;
  MPI_Status st;
  while (!flag) REQUIRE(MPICAST_Testany(2, rs, &idx, &flag, &st) == MPICAST_OK, "testany");
  REQUIRE(idx == 1 && got == from && st.MPI_SOURCE == from && rs[1] == NULL, "testany: %d %d", idx,
          got);
  int outcount = 0, indices[2];
  REQUIRE(MPICAST_Testsome(2, rs, &outcount, indices, MPI_STATUSES_IGNORE) == MPICAST_OK &&
              outcount == MPI_UNDEFINED,
          "testsome on NULL requests: %d", outcount);
  REQUIRE(MPICAST_Wait(&s, MPI_STATUS_IGNORE) == MPICAST_OK, "wait");
  settle();
  if (rank == 0) printf("int_imcast: Request_free, Testany, Testsome ok\n");
}

/* How long a multicast waits for a relay that computes without calling mpicast. 4 ranks with
 * topology IDs 00, 10, 11, 01 (the mpicast_topo_id hint on a duplicate of MPI_COMM_WORLD):
 * rank 0's multicast to ranks 1, 2, 3 reaches rank 2 through rank 1 (the entry of rank 0's
 * table for the subtree 1x, nearest by XOR) and rank 3 directly. Rank 1 computes (sleeps)
 * for B ms before it posts its receive. Prints each rank's arrival time after the multicast
 * began. Without the progress thread rank 2 cannot have it before rank 1 calls in again:
 * asserted, for each repetition in which rank 1 had left MPI (its MPI_Bcast of the start
 * time) before rank 0 began the multicast; a rank still inside MPI forwards, as MPI's progress
 * rule wants. Rank 0 waits 20 ms before it multicasts so that this is the usual case, and at
 * least one repetition must be asserted. With MPICAST_PROGRESS=thread the thread forwards
 * meanwhile (printed, not asserted: a timing). */
static void busy_measure(int busy_ms) {
  static const char *ids[4] = {"00", "10", "11", "01"};
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpicast_topo_id", ids[rank]);
  MPI_Comm c;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
  MPI_Info_free(&info);
  REQUIRE(MPICAST_Mcast_enable(c) == MPICAST_OK, "enable with topology IDs");
  const char *progress = getenv("MPICAST_PROGRESS");
  int threaded = progress && strcmp(progress, "thread") == 0;
  double best[4] = {1e9, 1e9, 1e9, 1e9};
  int asserted = 0;
  for (int rep = 0; rep < 3; rep++) {
    MPI_Barrier(c);
    double t0 = tc_now(), arrived = 0;
    MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, c); /* one host: one clock (CLOCK_MONOTONIC) */
    /* rank 0: when the multicast began; rank 1: when it left MPI to compute (ms after t0) */
    double mark = (tc_now() - t0) * 1e3;
    int v = 77 + rep, got = -1;
    MPICAST_Request *r;
    if (rank == 0) {
      int d[3] = {1, 2, 3};
      tc_sleep_ms(20);
      mark = (tc_now() - t0) * 1e3;
      REQUIRE(MPICAST_Imcast(&v, 1, MPI_INT, d, 3, 5, c, &r) == MPICAST_OK, "imcast");
      REQUIRE(MPICAST_Wait(&r, MPI_STATUS_IGNORE) == MPICAST_OK, "wait");
    } else {
      if (rank == 1) tc_sleep_ms(busy_ms);
      REQUIRE(MPICAST_Mcast_irecv(&got, 1, MPI_INT, 0, 5, c, &r) == MPICAST_OK, "irecv");
      REQUIRE(MPICAST_Wait(&r, MPI_STATUS_IGNORE) == MPICAST_OK && got == v, "busy: got %d", got);
      arrived = (tc_now() - t0) * 1e3;
    }
    double all[4], marks[4];
    MPI_Gather(&arrived, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, c);
    MPI_Gather(&mark, 1, MPI_DOUBLE, marks, 1, MPI_DOUBLE, 0, c);
    if (rank == 0) {
      for (int i = 1; i < 4; i++) best[i] = all[i] < best[i] ? all[i] : best[i];
      if (threaded) continue;
      if (marks[1] >= marks[0]) {
        printf("int_imcast: repetition %d not asserted: rank 1 left MPI %.1f ms after t0, "
               "after the multicast began (%.1f ms)\n",
               rep, marks[1], marks[0]);
        continue;
      }
      asserted++;
      REQUIRE(all[2] >= marks[1] + busy_ms * 0.95,
              "rank 2 had the multicast after %.1f ms, before its relay (rank 1, out of MPI "
              "from %.1f ms for %d ms) called mpicast again: who forwarded it?",
              all[2], marks[1], busy_ms);
    }
  }
  if (rank == 0 && !threaded)
    REQUIRE(asserted > 0, "rank 1 was still inside MPI when the multicast began in every repetition");
  if (rank == 0)
    printf("int_imcast: relay busy %d ms, %s: arrival after (best of 3) rank 1 (the relay) "
           "%.1f ms, rank 2 (through it) %.1f ms, rank 3 (direct) %.1f ms\n",
           busy_ms, threaded ? "progress thread" : "no progress thread", best[1], best[2], best[3]);
  MPI_Comm_free(&c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rank = tc_world_rank();
  nranks = tc_world_size();
  int nrounds = (int)tc_arg_ll(argc, argv, "--rounds", 30);
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 20261126);
  size_t max_bytes = (size_t)tc_arg_ll(argc, argv, "--max-bytes", 40000);
  int many_n = (int)tc_arg_ll(argc, argv, "--many", 20000);
  size_t rush_bytes = (size_t)tc_arg_ll(argc, argv, "--rush-bytes", 300000);
  if (rank == 0) printf("int_imcast: seed %llu, %d ranks\n", (unsigned long long)seed, nranks);
  REQUIRE(MPICAST_Mcast_enable(MPI_COMM_WORLD) == MPICAST_OK, "enable");
  REQUIRE(MPICAST_Mcast_enable(MPI_COMM_WORLD) == MPICAST_OK, "enable twice");
  int busy_ms = (int)tc_arg_ll(argc, argv, "--busy-ms", 0);
  if (busy_ms > 0) {
    REQUIRE(nranks == 4, "--busy-ms needs 4 ranks, not %d", nranks);
    busy_measure(busy_ms);
    MPI_Finalize();
    return 0;
  }
  if (tc_arg_ll(argc, argv, "--enable-only", 0)) {
    if (rank == 0) printf("int_imcast: enabled, finalizing at once\n");
    MPI_Finalize();
    return 0;
  }
  check_bad_arguments();
  if (nranks > 1) {
    rounds(nrounds, seed, max_bytes);
    order_and_truncation();
    mixed_with_p2p();
    busy_relay();
    free_and_test_family();
    many(many_n);
    rush(rush_bytes);
  }
  MPI_Finalize();
  return 0;
}
