/* Dynamic broadcast: MPICAST_Dbcast_enable, MPICAST_Dbcast, MPICAST_Send_defer and
 * MPICAST_Send_release, with the data received by ordinary MPI receives.
 *
 *   int_dbcast [--part N[,N...]] [--seed S] [--order-len L] [--rounds R] [--stress N]
 *              [--max-bytes B]
 *
 * MPICAST_Dbcast_enable(MPI_COMM_WORLD); barriers on a duplicate of MPI_COMM_WORLD that is not
 * enabled. Every plan is drawn from a seed that all ranks share (printed; --seed replays it),
 * every byte received is checked, and every status (MPI_SOURCE, MPI_TAG, MPI_Get_count).
 *
 * 0. (always) MPICAST_Dbcast and MPICAST_Send_defer before MPICAST_Dbcast_enable:
 *    MPICAST_ERR_NOT_ENABLED; then MPICAST_Dbcast_enable twice (the second does nothing).
 * 1. Every receive form: MPI_Recv; MPI_Irecv + MPI_Wait / MPI_Test loop / MPI_Waitall (with an
 *    unrelated MPI_Irecv/MPI_Isend pair on the same communicator, posted first) / MPI_Waitany /
 *    MPI_Testsome / MPI_Testall / MPI_Testany / MPI_Waitsome; MPI_Probe or an MPI_Iprobe loop,
 *    then MPI_Recv of what the probe saw. Each with the root or MPI_ANY_SOURCE, the tag or
 *    MPI_ANY_TAG, the receive posted before the broadcast leaves (the root waits 3 ms) or after
 *    it came (the recipient waits 2 ms). The root rotates; ranks outside the set post nothing.
 * 2. Order: one root's messages to one rank with one tag arrive in the order it sent them,
 *    plain (MPI_Send, MPI_Isend) and dynamic broadcasts interleaved: by (root, tag), by
 *    (root, MPI_ANY_TAG) over two tags, and tag B before tag A. A 1 MiB MPI_Isend (rendezvous)
 *    then a small broadcast, and a 2 MiB broadcast then a small MPI_Send: neither overtakes.
 * 3. Broadcasts among the application's own messages on the same tag from every rank,
 *    received by MPI_ANY_SOURCE (MPI_Recv, or MPI_Irecv posted first + MPI_Waitall): each
 *    exactly once, each source's in its order.
 * 4. Sizes 0, 1, 1000, 100000, 2 MiB bytes, 1000 MPI_INT, 30000 MPI_DOUBLE, an MPI_Type_vector
 *    on the receiving side (and on the sending side), a receive buffer longer than the message.
 * 5. Detection: MPICAST_Send_defer of keys to random destinations (duplicates among them) in
 *    an interleaved order, MPICAST_Send_release, plain MPI_Recv; a defer after the release is a
 *    new datum (one destination: a plain send; two: a broadcast).
 * 6. Bad arguments return their status (MPICAST_ERR_ARG, _NULL_ARG, _NOT_ENABLED,
 *    _UNKNOWN_KEY), write no request and send nothing (MPI_Iprobe finds nothing afterwards);
 *    a key deferred on one communicator cannot be deferred on another; a second release of a
 *    key finds it unknown.
 * 7. Stress (--stress N rounds, default 20): every rank broadcasts to a random set in every
 *    round, random sizes and tags, received by MPI_Irecv + MPI_Waitall, no barrier between
 *    rounds; the root overwrites its buffer as soon as MPICAST_Dbcast returns (the data is
 *    copied by then).
 *
 * Rank 0 prints "int_dbcast: ok (...)" at the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

/* The dynamic broadcast calls as the test expects them: include/mpicast.h declares them too
 * (identical redeclarations are legal C; a change of signature stops the build here). Before
 * the macros below, which would rename them. */
int MPICAST_Dbcast_enable(MPI_Comm comm);
int MPICAST_Dbcast(const void *buf, int count, MPI_Datatype datatype, const int *recipients,
                   const int *priorities, int n, int tag, MPI_Comm comm,
                   MPICAST_Request **request);
int MPICAST_Send_defer(int64_t key, int dest, int tag, int priority, MPI_Comm comm);
int MPICAST_Send_release(int64_t key, const void *buf, int count, MPI_Datatype datatype,
                         MPICAST_Request **request);

#ifndef MPICAST_LINKED
/* Preloaded: every extension call below goes through api.h's lookup. */
#define MPICAST_Dbcast_enable API(MPICAST_Dbcast_enable)
#define MPICAST_Dbcast API(MPICAST_Dbcast)
#define MPICAST_Send_defer API(MPICAST_Send_defer)
#define MPICAST_Send_release API(MPICAST_Send_release)
#define MPICAST_Wait API(MPICAST_Wait)
#endif

#define REQUIRE(c, ...)             \
  do {                              \
    if (!(c)) tc_fail(__VA_ARGS__); \
  } while (0)

enum { MAXR = 64, SLACK = 64 };

static int rank, nranks;
static MPI_Comm comm;      /* enabled: MPI_COMM_WORLD */
static MPI_Comm sync_comm; /* not enabled: MPI_Barrier between the steps of a case */
static MPI_Comm ib_comm;   /* not enabled: settle()'s MPI_Ibarrier */
static uint64_t seed;
static uint64_t local_rng; /* this rank's own draws (priorities): never in a shared plan */
static long n_dbcasts, n_received;

/* The end of a step: a barrier during which every rank keeps calling into the receive path
 * of the enabled communicator (MPI_Iprobe), so that a rank whose broadcast still needs others
 * to act is never waiting on a rank blocked elsewhere. */
static void settle(void) {
  MPI_Request b;
  MPI_Ibarrier(ib_comm, &b);
  for (int done = 0; !done;) {
    int f;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &f, MPI_STATUS_IGNORE);
    MPI_Test(&b, &done, MPI_STATUS_IGNORE);
  }
}

/* A late receiver that keeps mpicast moving meanwhile (MPI_Iprobe for a tag nobody sends):
 * the messages come, and the broadcasts among them are taken in by mpicast, before the
 * first receive is posted, so that the order rests on the counts of plain messages the
 * broadcasts carry, not on the host matching its receive first. */
static void busy_ms(int ms) {
  double until = tc_now() + ms / 1000.0;
  while (tc_now() < until) {
    int f;
    MPI_Iprobe(MPI_ANY_SOURCE, 32000, comm, &f, MPI_STATUS_IGNORE);
  }
}

/* Nothing is left for this rank on the enabled communicator (nor on the others). */
static void expect_quiet(const char *what) {
  settle();
  tc_sleep_ms(20);
  for (int i = 0; i < 5; i++) {
    int f = 0;
    MPI_Status s;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &f, &s);
    REQUIRE(!f, "%s: a message from %d with tag %d is left over (sent twice, or sent at all?)",
            what, s.MPI_SOURCE, s.MPI_TAG);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, sync_comm, &f, &s);
    REQUIRE(!f, "%s: a message on the barrier communicator from %d tag %d", what, s.MPI_SOURCE,
            s.MPI_TAG);
    tc_sleep_ms(2);
  }
  settle();
}

static int in_set(int r, const int *set, int n) {
  for (int i = 0; i < n; i++)
    if (set[i] == r) return 1;
  return 0;
}

/* A random set of ranks other than root (each with probability pct %, at least one), in
 * random order: the list need not be sorted. Shared draws. */
static int draw_set(uint64_t *st, int root, int *set, int pct) {
  int n = 0;
  for (int r = 0; r < nranks; r++)
    if (r != root && (int)(tc_rand(st) % 100) < pct) set[n++] = r;
  if (n == 0) set[n++] = (root + 1 + (int)(tc_rand(st) % (uint64_t)(nranks - 1))) % nranks;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(tc_rand(st) % (uint64_t)(i + 1)), t = set[i];
    set[i] = set[j];
    set[j] = t;
  }
  return n;
}

static int other_rank(uint64_t *st, int not) {
  return (not + 1 + (int)(tc_rand(st) % (uint64_t)(nranks - 1))) % nranks;
}

/* MPICAST_Dbcast that must succeed; priorities NULL or random (this rank's own draws). */
static MPICAST_Request *dbcast(const void *buf, int count, MPI_Datatype t, const int *set, int n,
                               int tag, const char *what) {
  int prio[MAXR];
  const int *p = NULL;
  if (tc_rand(&local_rng) % 2) {
    for (int i = 0; i < n; i++) prio[i] = (int)(tc_rand(&local_rng) % 5) - 1;
    p = prio;
  }
  MPICAST_Request *r = NULL;
  int rc = MPICAST_Dbcast(buf, count, t, set, p, n, tag, comm, &r);
  REQUIRE(rc == MPICAST_OK, "%s: MPICAST_Dbcast to %d ranks returned %d", what, n, rc);
  n_dbcasts++;
  return r;
}

static void dwait(MPICAST_Request **r, const char *what) {
  int rc = MPICAST_Wait(r, MPI_STATUS_IGNORE);
  REQUIRE(rc == MPICAST_OK && *r == NULL, "%s: MPICAST_Wait of the root's request returned %d",
          what, rc);
}

/* MPI_Waitall with real statuses: MPICH's MPI_STATUSES_IGNORE trips GCC's -Wstringop-overflow. */
static void waitall(int n, MPI_Request *r) {
  MPI_Status *s = malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
  MPI_Waitall(n, r, s);
  free(s);
}

static void check_status(const MPI_Status *s, int src, int tag, MPI_Datatype t, int count,
                         const char *what) {
  int c = -1;
  MPI_Get_count(s, t, &c);
  REQUIRE(s->MPI_SOURCE == src && s->MPI_TAG == tag && c == count,
          "%s: status source %d tag %d count %d, want %d %d %d", what, s->MPI_SOURCE, s->MPI_TAG,
          c, src, tag, count);
  n_received++;
}

/* The n bytes of the message are the pattern, and the SLACK bytes after them still 0xEE. */
static void check_bytes(const unsigned char *b, size_t n, int root, uint64_t iter,
                        const char *what) {
  tc_check(b, n, tc_pattern_seed(root, iter, n), what, root, iter);
  for (size_t i = n; i < n + SLACK; i++)
    REQUIRE(b[i] == 0xEE, "%s: root %d iter %llu: byte %zu past the %zu-byte message written",
            what, root, (unsigned long long)iter, i, n);
}

/* ------------------------------------------------------------------------------------------ */
/* 0 and 6: bad arguments. */

static void before_enable(void) {
  char b[4] = {0};
  int d = (rank + 1) % nranks;
  MPICAST_Request *r = NULL;
  int rc = MPICAST_Dbcast(b, 4, MPI_BYTE, &d, NULL, 1, 1, comm, &r);
  REQUIRE(rc == MPICAST_ERR_NOT_ENABLED && r == NULL,
          "MPICAST_Dbcast before MPICAST_Dbcast_enable returned %d, want %d", rc,
          MPICAST_ERR_NOT_ENABLED);
  rc = MPICAST_Send_defer(5, d, 1, 0, comm);
  REQUIRE(rc == MPICAST_ERR_NOT_ENABLED,
          "MPICAST_Send_defer before MPICAST_Dbcast_enable returned %d, want %d", rc,
          MPICAST_ERR_NOT_ENABLED);
}

static void part_bad(void) {
  char b[16];
  memset(b, 7, sizeof b);
  MPICAST_Request *r = NULL;
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  int out_hi[2] = {next, nranks}, out_lo[1] = {-1}, self[2] = {next, rank};
  int dup[3] = {next, prev, next}, ok[1] = {next};
  struct {
    const char *what;
    const int *set;
    int n;
    int want; /* the status wanted; -1: any error */
  } cases[] = {
      {"a recipient = size", out_hi, 2, MPICAST_ERR_ARG},
      {"a recipient < 0", out_lo, 1, MPICAST_ERR_ARG},
      {"the root among the recipients", self, 2, MPICAST_ERR_ARG},
      {"a recipient twice", dup, 3, MPICAST_ERR_ARG},
      {"n = 0", ok, 0, MPICAST_ERR_ARG},
      {"n < 0", ok, -1, -1},
      {"NULL recipients", NULL, 1, MPICAST_ERR_NULL_ARG},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].set == dup && nranks < 3) continue;
    r = NULL;
    int rc = MPICAST_Dbcast(b, 16, MPI_BYTE, cases[i].set, NULL, cases[i].n, 3, comm, &r);
    REQUIRE(cases[i].want < 0 ? rc != MPICAST_OK : rc == cases[i].want,
            "bad input, %s: MPICAST_Dbcast returned %d, want %d", cases[i].what, rc,
            cases[i].want);
    REQUIRE(r == NULL, "bad input, %s: the request was written", cases[i].what);
  }
  int rc = MPICAST_Dbcast(b, 16, MPI_BYTE, ok, NULL, 1, 3, comm, NULL);
  REQUIRE(rc == MPICAST_ERR_NULL_ARG, "bad input, a NULL request: MPICAST_Dbcast returned %d",
          rc);
  rc = MPICAST_Dbcast(b, -1, MPI_BYTE, ok, NULL, 1, 3, comm, &r);
  REQUIRE(rc != MPICAST_OK && r == NULL, "bad input, count -1: MPICAST_Dbcast returned %d", rc);
  rc = MPICAST_Dbcast(b, 16, MPI_BYTE, ok, NULL, 1, -5, comm, &r);
  REQUIRE(rc != MPICAST_OK && r == NULL, "bad input, tag -5: MPICAST_Dbcast returned %d", rc);
  rc = MPICAST_Dbcast(b, 16, MPI_BYTE, ok, NULL, 1, 40000, comm, &r);
  REQUIRE(rc == MPICAST_ERR_ARG && r == NULL, "bad input, tag 40000: MPICAST_Dbcast returned %d",
          rc);
  /* A key never deferred. */
  rc = MPICAST_Send_release(987654321, b, 16, MPI_BYTE, &r);
  REQUIRE(rc == MPICAST_ERR_UNKNOWN_KEY && r == NULL,
          "bad input: MPICAST_Send_release of an unknown key returned %d, want %d", rc,
          MPICAST_ERR_UNKNOWN_KEY);
  rc = MPICAST_Send_defer(55, nranks, 3, 0, comm);
  REQUIRE(rc == MPICAST_ERR_ARG, "bad input: MPICAST_Send_defer to rank %d (= size) returned %d",
          nranks, rc);
  rc = MPICAST_Send_defer(55, -1, 3, 0, comm);
  REQUIRE(rc == MPICAST_ERR_ARG, "bad input: MPICAST_Send_defer to rank -1 returned %d", rc);
  rc = MPICAST_Send_defer(55, rank, 3, 0, comm);
  REQUIRE(rc == MPICAST_ERR_ARG, "bad input: MPICAST_Send_defer to this rank returned %d", rc);
  rc = MPICAST_Send_defer(55, next, -3, 0, comm);
  REQUIRE(rc == MPICAST_ERR_ARG, "bad input: MPICAST_Send_defer with tag -3 returned %d", rc);
  rc = MPICAST_Send_release(55, b, 16, MPI_BYTE, &r);
  REQUIRE(rc == MPICAST_ERR_UNKNOWN_KEY && r == NULL,
          "bad input: MPICAST_Send_release of a key whose defers all failed returned %d, want %d",
          rc, MPICAST_ERR_UNKNOWN_KEY);
  /* A communicator without MPICAST_Dbcast_enable. */
  MPI_Comm other;
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  rc = MPICAST_Dbcast(b, 16, MPI_BYTE, ok, NULL, 1, 3, other, &r);
  REQUIRE(rc == MPICAST_ERR_NOT_ENABLED && r == NULL,
          "bad input: MPICAST_Dbcast on a communicator not enabled returned %d, want %d", rc,
          MPICAST_ERR_NOT_ENABLED);
  rc = MPICAST_Send_defer(56, next, 3, 0, other);
  REQUIRE(rc == MPICAST_ERR_NOT_ENABLED,
          "bad input: MPICAST_Send_defer on a communicator not enabled returned %d, want %d", rc,
          MPICAST_ERR_NOT_ENABLED);
  rc = MPICAST_Send_release(56, b, 16, MPI_BYTE, &r);
  REQUIRE(rc == MPICAST_ERR_UNKNOWN_KEY && r == NULL,
          "bad input: MPICAST_Send_release of a key whose defer failed returned %d, want %d", rc,
          MPICAST_ERR_UNKNOWN_KEY);
  /* Nothing went anywhere. */
  expect_quiet("bad input");
  int f = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, other, &f, MPI_STATUS_IGNORE);
  REQUIRE(!f, "bad input: a message arrived on the communicator not enabled");
  MPI_Barrier(sync_comm);
  MPI_Comm_free(&other);
  /* A key's sends name one communicator: a defer of it on another (enabled) one is refused,
   * and the release sends what was registered, on the key's own. A second release of a key
   * finds it unknown. */
  MPI_Comm second;
  MPI_Comm_dup(MPI_COMM_WORLD, &second);
  rc = MPICAST_Dbcast_enable(second);
  REQUIRE(rc == MPICAST_OK, "MPICAST_Dbcast_enable of a second communicator returned %d", rc);
  REQUIRE(MPICAST_Send_defer(57, next, 4, 0, comm) == MPICAST_OK, "bad input: defer");
  rc = MPICAST_Send_defer(57, prev, 4, 0, second);
  REQUIRE(rc == MPICAST_ERR_ARG,
          "bad input: MPICAST_Send_defer of a key on another communicator than its own returned "
          "%d, want %d",
          rc, MPICAST_ERR_ARG);
  int v57 = 5700 + rank, g57 = -1;
  REQUIRE(MPICAST_Send_release(57, &v57, 1, MPI_INT, &r) == MPICAST_OK, "bad input: release");
  MPI_Status s57;
  MPI_Recv(&g57, 1, MPI_INT, prev, 4, comm, &s57);
  check_status(&s57, prev, 4, MPI_INT, 1, "bad input: the key's own communicator");
  REQUIRE(g57 == 5700 + prev, "bad input: key 57 carried %d", g57);
  dwait(&r, "bad input: release");
  rc = MPICAST_Send_release(57, &v57, 1, MPI_INT, &r);
  REQUIRE(rc == MPICAST_ERR_UNKNOWN_KEY && r == NULL,
          "bad input: a second MPICAST_Send_release of a key returned %d, want %d", rc,
          MPICAST_ERR_UNKNOWN_KEY);
  expect_quiet("bad input (a key on two communicators)");
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, second, &f, MPI_STATUS_IGNORE);
  REQUIRE(!f, "bad input: a message arrived on the second communicator");
  MPI_Barrier(sync_comm);
  MPI_Comm_free(&second);
  if (rank == 0) printf("int_dbcast: part 6, bad input ok\n");
}

/* ------------------------------------------------------------------------------------------ */
/* 1: every receive form. */

enum {
  F_RECV,
  F_IRECV_WAIT,
  F_IRECV_TEST,
  F_WAITALL,
  F_WAITANY,
  F_TESTSOME,
  F_TESTALL,
  F_TESTANY,
  F_WAITSOME,
  F_PROBE,
  F_IPROBE,
  F_MPROBE,
  F_IMPROBE,
  NFORMS
};
static const char *form_name[NFORMS] = {
    "MPI_Recv",           "MPI_Irecv+MPI_Wait",     "MPI_Irecv+MPI_Test",
    "MPI_Irecv+MPI_Waitall (with p2p)", "MPI_Irecv+MPI_Waitany", "MPI_Irecv+MPI_Testsome",
    "MPI_Irecv+MPI_Testall", "MPI_Irecv+MPI_Testany", "MPI_Irecv+MPI_Waitsome",
    "MPI_Probe+MPI_Recv",  "MPI_Iprobe+MPI_Recv", "MPI_Mprobe+MPI_Mrecv",
    "MPI_Improbe+MPI_Imrecv+MPI_Wait"};

static int nonblocking(int form) { return form >= F_IRECV_WAIT && form <= F_WAITSOME; }

enum { RING_TAG = 900 };

static void part_forms(void) {
  static const size_t lens[] = {0, 5, 1000, 70000};
  const size_t maxlen = 70000;
  uint64_t st = seed ^ 0x1111;
  unsigned char *sbuf = malloc(maxlen), *rb = malloc(maxlen + SLACK);
  int prev = (rank + nranks - 1) % nranks, next = (rank + 1) % nranks;
  int c = 0;
  for (int form = 0; form < NFORMS; form++)
    for (int w = 0; w < 4; w++)
      for (int after = 0; after < 2; after++, c++) {
        int root = c % nranks, set[MAXR], n = draw_set(&st, root, set, 50);
        size_t len = lens[tc_rand(&st) % 4];
        int tag = 10 + (int)(tc_rand(&st) % 5);
        int src = (w & 1) ? MPI_ANY_SOURCE : root, rtag = (w & 2) ? MPI_ANY_TAG : tag;
        uint64_t iter = (uint64_t)c;
        int me_in = rank != root && in_set(rank, set, n);
        int ring = form == F_WAITALL;
        char what[160];
        snprintf(what, sizeof what, "part 1 case %d: %s, source %s, tag %s, posted %s", c,
                 form_name[form], (w & 1) ? "MPI_ANY_SOURCE" : "root",
                 (w & 2) ? "MPI_ANY_TAG" : "given", after ? "after" : "before");
        int cap = (int)(len + SLACK);
        memset(rb, 0xEE, maxlen + SLACK);
        int ring_in = -1, ring_out = rank * 1000 + c;
        MPI_Request rq[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        /* The unrelated pair is posted first, so that by MPI's matching rule (the first
         * posted receive that matches) a wildcard receive cannot take its message. */
        int posted = 0;
#define POST()                                                                           \
  do {                                                                                   \
    if (ring) MPI_Irecv(&ring_in, 1, MPI_INT, prev, RING_TAG, comm, &rq[0]);             \
    MPI_Irecv(rb, cap, MPI_BYTE, src, rtag, comm, &rq[1]);                               \
    if (ring) MPI_Isend(&ring_out, 1, MPI_INT, next, RING_TAG, comm, &rq[2]);            \
    posted = 1;                                                                          \
  } while (0)
        if (me_in && nonblocking(form) && !after) POST();
        MPI_Barrier(sync_comm);
        MPICAST_Request *sr = NULL;
        if (rank == root) {
          if (!after) tc_sleep_ms(3); /* the recipients are in their receive (or probe) */
          tc_fill(sbuf, len, tc_pattern_seed(root, iter, len));
          sr = dbcast(sbuf, (int)len, MPI_BYTE, set, n, tag, what);
        }
        if (me_in) {
          if (after) {
            tc_sleep_ms(2); /* it has come (or is on its way) before the receive */
            if (nonblocking(form)) POST();
          }
          MPI_Status s, sts[3];
          int f = 0, idx = -1, outc = 0, idxs[3];
          switch (form) {
            case F_RECV:
              MPI_Recv(rb, cap, MPI_BYTE, src, rtag, comm, &s);
              break;
            case F_IRECV_WAIT:
              MPI_Wait(&rq[1], &s);
              break;
            case F_IRECV_TEST:
              while (!f) MPI_Test(&rq[1], &f, &s);
              break;
            case F_WAITALL:
              MPI_Waitall(3, rq, sts);
              s = sts[1];
              REQUIRE(ring_in == prev * 1000 + c,
                      "%s: the unrelated message from %d carried %d, want %d", what, prev,
                      ring_in, prev * 1000 + c);
              check_status(&sts[0], prev, RING_TAG, MPI_INT, 1, what);
              break;
            case F_WAITANY:
              MPI_Waitany(3, rq, &idx, &s);
              REQUIRE(idx == 1, "%s: MPI_Waitany gave index %d", what, idx);
              break;
            case F_TESTSOME:
              while (outc == 0) MPI_Testsome(3, rq, &outc, idxs, sts);
              REQUIRE(outc == 1 && idxs[0] == 1, "%s: MPI_Testsome gave %d, index %d", what,
                      outc, idxs[0]);
              s = sts[0];
              break;
            case F_TESTALL:
              while (!f) MPI_Testall(3, rq, &f, sts);
              s = sts[1];
              break;
            case F_TESTANY:
              while (!f) MPI_Testany(3, rq, &idx, &f, &s);
              REQUIRE(idx == 1, "%s: MPI_Testany gave index %d", what, idx);
              break;
            case F_WAITSOME:
              MPI_Waitsome(3, rq, &outc, idxs, sts);
              REQUIRE(outc == 1 && idxs[0] == 1, "%s: MPI_Waitsome gave %d, index %d", what,
                      outc, idxs[0]);
              s = sts[0];
              break;
            case F_PROBE:
            case F_IPROBE: {
              MPI_Status ps;
              if (form == F_PROBE)
                MPI_Probe(src, rtag, comm, &ps);
              else
                while (!f) MPI_Iprobe(src, rtag, comm, &f, &ps);
              check_status(&ps, root, tag, MPI_BYTE, (int)len, what);
              int pc = -1;
              MPI_Get_count(&ps, MPI_BYTE, &pc);
              /* As a program that probes for the size: exactly that many, from whom it said. */
              MPI_Recv(rb, pc, MPI_BYTE, ps.MPI_SOURCE, ps.MPI_TAG, comm, &s);
              break;
            }
            case F_MPROBE:
            case F_IMPROBE: {
              MPI_Status ps;
              MPI_Message msg = MPI_MESSAGE_NULL;
              if (form == F_MPROBE)
                MPI_Mprobe(src, rtag, comm, &msg, &ps);
              else
                while (!f) MPI_Improbe(src, rtag, comm, &f, &msg, &ps);
              check_status(&ps, root, tag, MPI_BYTE, (int)len, what);
              int pc = -1;
              MPI_Get_count(&ps, MPI_BYTE, &pc);
              if (form == F_MPROBE) {
                MPI_Mrecv(rb, pc, MPI_BYTE, &msg, &s);
              } else {
                MPI_Request mr;
                MPI_Imrecv(rb, pc, MPI_BYTE, &msg, &mr);
                MPI_Wait(&mr, &s);
              }
              REQUIRE(msg == MPI_MESSAGE_NULL, "%s: the message handle is not MPI_MESSAGE_NULL",
                      what);
              break;
            }
          }
          REQUIRE(!posted || rq[1] == MPI_REQUEST_NULL, "%s: the request is not freed", what);
          check_status(&s, root, tag, MPI_BYTE, (int)len, what);
          check_bytes(rb, len, root, iter, what);
        } else if (ring) {
          MPI_Request rr[2];
          MPI_Status sts[2];
          MPI_Irecv(&ring_in, 1, MPI_INT, prev, RING_TAG, comm, &rr[0]);
          MPI_Isend(&ring_out, 1, MPI_INT, next, RING_TAG, comm, &rr[1]);
          MPI_Waitall(2, rr, sts);
          REQUIRE(ring_in == prev * 1000 + c, "%s: the unrelated message carried %d", what,
                  ring_in);
          check_status(&sts[0], prev, RING_TAG, MPI_INT, 1, what);
        }
#undef POST
        if (rank == root) dwait(&sr, what);
        settle();
      }
  free(sbuf);
  free(rb);
  expect_quiet("part 1");
  if (rank == 0)
    printf("int_dbcast: part 1, %d receive forms x source x tag x before/after: %d cases ok\n",
           NFORMS, c);
}

/* ------------------------------------------------------------------------------------------ */
/* 2: order. */

enum { K_SEND, K_ISEND, K_DBCAST };
typedef struct {
  int kind, dest, set[MAXR], n, tag, cnt;
} omsg_t;

/* Element j of message i of (root, variant). */
static int oval(int root, int variant, int i, int j) {
  return j == 0 ? i : (int)(tc_pattern_seed(root, (uint64_t)(variant * 1000 + i), (size_t)j) &
                            0x7fffffff);
}

static void order_random(uint64_t *st, int len_seq) {
  static const int cnts[] = {1, 3, 250}; /* ints: small enough for an eager MPI_Send */
  const int tag_a = 20, tag_b = 21, maxcnt = 250;
  omsg_t *m = malloc(sizeof *m * (size_t)len_seq);
  int **bufs = malloc(sizeof(int *) * (size_t)len_seq);
  int *rb = malloc(sizeof(int) * (maxcnt + 4));
  MPI_Request *ir = malloc(sizeof(MPI_Request) * (size_t)len_seq);
  MPICAST_Request **dr = malloc(sizeof(MPICAST_Request *) * (size_t)len_seq);
  for (int variant = 0; variant < 3; variant++)
    for (int root = 0; root < nranks; root++) {
      int late = (root + variant) % 2;
      for (int i = 0; i < len_seq; i++) {
        m[i].kind = (int)(tc_rand(st) % 3);
        m[i].n = 0;
        m[i].dest = -1;
        if (m[i].kind == K_DBCAST)
          m[i].n = draw_set(st, root, m[i].set, 60);
        else
          m[i].dest = other_rank(st, root);
        m[i].tag = variant == 0 || tc_rand(st) % 2 ? tag_a : tag_b;
        m[i].cnt = cnts[tc_rand(st) % 3];
      }
      char what[128];
      if (rank == root) {
        int ni = 0, nd = 0;
        for (int i = 0; i < len_seq; i++) {
          bufs[i] = malloc(sizeof(int) * (size_t)m[i].cnt);
          for (int j = 0; j < m[i].cnt; j++) bufs[i][j] = oval(root, variant, i, j);
          snprintf(what, sizeof what, "part 2 variant %d root %d message %d", variant, root, i);
          if (m[i].kind == K_SEND)
            MPI_Send(bufs[i], m[i].cnt, MPI_INT, m[i].dest, m[i].tag, comm);
          else if (m[i].kind == K_ISEND)
            MPI_Isend(bufs[i], m[i].cnt, MPI_INT, m[i].dest, m[i].tag, comm, &ir[ni++]);
          else
            dr[nd++] = dbcast(bufs[i], m[i].cnt, MPI_INT, m[i].set, m[i].n, m[i].tag, what);
        }
        waitall(ni, ir);
        for (int k = 0; k < nd; k++) dwait(&dr[k], "part 2");
        for (int i = 0; i < len_seq; i++) free(bufs[i]);
      } else {
        if (late) busy_ms(5); /* everything is there before the first receive */
        /* Variant 2 receives tag B's messages first, then tag A's. */
        for (int pass = 0; pass < (variant == 2 ? 2 : 1); pass++)
          for (int i = 0; i < len_seq; i++) {
            if (m[i].dest != rank && !in_set(rank, m[i].set, m[i].n)) continue;
            int rtag = m[i].tag;
            if (variant == 1) rtag = MPI_ANY_TAG;
            if (variant == 2 && rtag != (pass == 0 ? tag_b : tag_a)) continue;
            snprintf(what, sizeof what,
                     "part 2 variant %d (%s) root %d, receive of message %d (%s)", variant,
                     variant == 0   ? "one tag"
                     : variant == 1 ? "two tags, MPI_ANY_TAG"
                                    : "two tags, B first",
                     root, i,
                     m[i].kind == K_SEND    ? "MPI_Send"
                     : m[i].kind == K_ISEND ? "MPI_Isend"
                                            : "MPICAST_Dbcast");
            MPI_Status s;
            for (int j = 0; j < maxcnt + 4; j++) rb[j] = -7;
            MPI_Recv(rb, maxcnt + 4, MPI_INT, root, rtag, comm, &s);
            REQUIRE(rb[0] == i, "%s: got message %d instead: out of order", what, rb[0]);
            check_status(&s, root, m[i].tag, MPI_INT, m[i].cnt, what);
            for (int j = 0; j < maxcnt + 4; j++)
              REQUIRE(rb[j] == (j < m[i].cnt ? oval(root, variant, i, j) : -7),
                      "%s: element %d is %d", what, j, rb[j]);
          }
      }
      settle();
    }
  free(m);
  free(bufs);
  free(rb);
  free(ir);
  free(dr);
}

/* A large plain message, then a small broadcast (the plain one goes by rendezvous: the
 * broadcast must not overtake it); a large broadcast, then a small MPI_Send. */
static void order_large(void) {
  const size_t big1 = 1 << 20, big2 = 2 << 20, small = 16;
  unsigned char *sb = malloc(big2), *ss = malloc(small), *rb = malloc(big2 + SLACK);
  int all[MAXR];
  for (int late = 0; late < 2; late++)
    for (int ri = 0; ri < 2; ri++) {
      int root = ri == 0 ? 0 : nranks - 1, d = (root + 1) % nranks, n = 0;
      for (int r = 0; r < nranks; r++)
        if (r != root) all[n++] = r;
      int src = late ? MPI_ANY_SOURCE : root, rtag;
      uint64_t iter = 5000 + (uint64_t)(late * 10 + ri) * 4;
      char what[128];
      /* A: 1 MiB MPI_Isend to d, then 16 bytes by MPICAST_Dbcast to everyone. */
      snprintf(what, sizeof what, "part 2 large A (1 MiB MPI_Isend, then MPICAST_Dbcast) root %d%s",
               root, late ? ", late receiver, wildcards" : "");
      rtag = late ? MPI_ANY_TAG : 40;
      if (rank == root) {
        MPI_Request r;
        tc_fill(sb, big1, tc_pattern_seed(root, iter, big1));
        tc_fill(ss, small, tc_pattern_seed(root, iter + 1, small));
        MPI_Isend(sb, (int)big1, MPI_BYTE, d, 40, comm, &r);
        MPICAST_Request *q = dbcast(ss, (int)small, MPI_BYTE, all, n, 40, what);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        dwait(&q, what);
      } else {
        MPI_Status s;
        if (late) busy_ms(10);
        if (rank == d) {
          memset(rb, 0xEE, big2 + SLACK);
          MPI_Recv(rb, (int)(big2 + SLACK), MPI_BYTE, src, rtag, comm, &s);
          check_status(&s, root, 40, MPI_BYTE, (int)big1, what);
          check_bytes(rb, big1, root, iter, what);
        }
        memset(rb, 0xEE, big2 + SLACK);
        MPI_Recv(rb, (int)(big2 + SLACK), MPI_BYTE, src, rtag, comm, &s);
        check_status(&s, root, 40, MPI_BYTE, (int)small, what);
        check_bytes(rb, small, root, iter + 1, what);
      }
      settle();
      /* B: 2 MiB by MPICAST_Dbcast to everyone, then 16 bytes by MPI_Send to d. */
      snprintf(what, sizeof what, "part 2 large B (2 MiB MPICAST_Dbcast, then MPI_Send) root %d%s",
               root, late ? ", late receiver, wildcards" : "");
      rtag = late ? MPI_ANY_TAG : 41;
      if (rank == root) {
        tc_fill(sb, big2, tc_pattern_seed(root, iter + 2, big2));
        tc_fill(ss, small, tc_pattern_seed(root, iter + 3, small));
        MPICAST_Request *q = dbcast(sb, (int)big2, MPI_BYTE, all, n, 41, what);
        MPI_Send(ss, (int)small, MPI_BYTE, d, 41, comm);
        dwait(&q, what);
      } else {
        MPI_Status s;
        if (late) busy_ms(10);
        memset(rb, 0xEE, big2 + SLACK);
        MPI_Recv(rb, (int)(big2 + SLACK), MPI_BYTE, src, rtag, comm, &s);
        check_status(&s, root, 41, MPI_BYTE, (int)big2, what);
        check_bytes(rb, big2, root, iter + 2, what);
        if (rank == d) {
          memset(rb, 0xEE, big2 + SLACK);
          MPI_Recv(rb, (int)(big2 + SLACK), MPI_BYTE, src, rtag, comm, &s);
          check_status(&s, root, 41, MPI_BYTE, (int)small, what);
          check_bytes(rb, small, root, iter + 3, what);
        }
      }
      settle();
    }
  free(sb);
  free(ss);
  free(rb);
}

static void part_order(int len_seq) {
  uint64_t st = seed ^ 0x2222;
  order_random(&st, len_seq);
  order_large();
  expect_quiet("part 2");
  if (rank == 0)
    printf("int_dbcast: part 2, order of %d plain and broadcast messages from every root "
           "(one tag, MPI_ANY_TAG, tag B before A), large plain/broadcast pairs ok\n",
           len_seq);
}

/* ------------------------------------------------------------------------------------------ */
/* 3: broadcasts among the application's messages, same tag, MPI_ANY_SOURCE. */

enum { MIX_TAG = 50, MIX_MAXM = 5, HDR = 4 * (int)sizeof(int) };
typedef struct {
  int dest; /* -1: a broadcast to set */
  int set[MAXR], n;
  size_t len;
} mmsg_t;

static void part_mixed(int rounds) {
  uint64_t st = seed ^ 0x3333;
  mmsg_t(*plan)[MIX_MAXM] = malloc(sizeof(mmsg_t) * MIX_MAXM * (size_t)nranks);
  int *nm = malloc(sizeof(int) * (size_t)nranks), *last = malloc(sizeof(int) * (size_t)nranks);
  unsigned char *sb[MIX_MAXM];
  const size_t maxlen = HDR + 20000 + 200000;
  int maxexp = (nranks - 1) * MIX_MAXM;
  unsigned char **rbs = malloc(sizeof(unsigned char *) * (size_t)maxexp);
  for (int i = 0; i < maxexp; i++) rbs[i] = malloc(maxlen);
  MPI_Request *rr = malloc(sizeof(MPI_Request) * (size_t)maxexp);
  MPI_Status *rs = malloc(sizeof(MPI_Status) * (size_t)maxexp);
  char *seen = malloc((size_t)nranks * MIX_MAXM);
  long total = 0;
  for (int round = 0; round < rounds; round++) {
    int expect = 0;
    memset(seen, 0, (size_t)nranks * MIX_MAXM);
    for (int s = 0; s < nranks; s++) {
      nm[s] = 1 + (int)(tc_rand(&st) % MIX_MAXM);
      int pos = (int)(tc_rand(&st) % (uint64_t)nm[s]); /* where its broadcast is */
      for (int g = 0; g < nm[s]; g++) {
        mmsg_t *p = &plan[s][g];
        p->len = HDR + (size_t)(tc_rand(&st) % 20000);
        if (tc_rand(&st) % 8 == 0) p->len += 200000;
        p->n = 0;
        p->dest = -1;
        if (g == pos)
          p->n = draw_set(&st, s, p->set, 50);
        else
          p->dest = other_rank(&st, s);
        if (s != rank && (p->dest == rank || in_set(rank, p->set, p->n))) expect++;
      }
    }
    int mode = round % 2; /* 0: send, then MPI_Recv; 1: MPI_Irecv first, send, MPI_Waitall */
    char what[96];
    snprintf(what, sizeof what, "part 3 round %d (%s)", round,
             mode ? "MPI_Irecv(MPI_ANY_SOURCE) posted first + MPI_Waitall"
                  : "MPI_Recv(MPI_ANY_SOURCE)");
    if (mode)
      for (int k = 0; k < expect; k++)
        MPI_Irecv(rbs[k], (int)maxlen, MPI_BYTE, MPI_ANY_SOURCE, MIX_TAG, comm, &rr[k]);
    MPI_Request sr[MIX_MAXM];
    MPICAST_Request *dq = NULL;
    int ns = 0;
    for (int g = 0; g < nm[rank]; g++) {
      mmsg_t *p = &plan[rank][g];
      sb[g] = malloc(p->len);
      int hdr[4] = {rank, round, g, (int)p->len};
      memcpy(sb[g], hdr, HDR);
      tc_fill(sb[g] + HDR, p->len - HDR,
              tc_pattern_seed(rank, (uint64_t)(round * 16 + g), p->len - HDR));
      if (p->dest >= 0)
        MPI_Isend(sb[g], (int)p->len, MPI_BYTE, p->dest, MIX_TAG, comm, &sr[ns++]);
      else
        dq = dbcast(sb[g], (int)p->len, MPI_BYTE, p->set, p->n, MIX_TAG, what);
    }
    if (mode) {
      MPI_Waitall(expect, rr, rs);
    } else {
      for (int k = 0; k < expect; k++)
        MPI_Recv(rbs[k], (int)maxlen, MPI_BYTE, MPI_ANY_SOURCE, MIX_TAG, comm, &rs[k]);
    }
    for (int s = 0; s < nranks; s++) last[s] = -1;
    for (int k = 0; k < expect; k++) {
      int hdr[4], c = -1;
      memcpy(hdr, rbs[k], HDR);
      MPI_Get_count(&rs[k], MPI_BYTE, &c);
      int s = hdr[0], g = hdr[2];
      REQUIRE(s >= 0 && s < nranks && s != rank && hdr[1] == round && g >= 0 && g < nm[s],
              "%s: message %d has header %d/%d/%d/%d", what, k, hdr[0], hdr[1], hdr[2], hdr[3]);
      mmsg_t *p = &plan[s][g];
      REQUIRE(p->dest == rank || in_set(rank, p->set, p->n),
              "%s: message %d of rank %d was not for this rank", what, g, s);
      REQUIRE(!seen[s * MIX_MAXM + g], "%s: message %d of rank %d received twice", what, g, s);
      REQUIRE(g > last[s], "%s: message %d of rank %d after its message %d: out of order", what,
              g, s, last[s]);
      seen[s * MIX_MAXM + g] = 1;
      last[s] = g;
      REQUIRE(rs[k].MPI_SOURCE == s && rs[k].MPI_TAG == MIX_TAG && c == (int)p->len,
              "%s: status %d/%d/%d for message %d of rank %d (%s, %zu bytes)", what,
              rs[k].MPI_SOURCE, rs[k].MPI_TAG, c, g, s,
              p->dest >= 0 ? "MPI_Isend" : "MPICAST_Dbcast", p->len);
      tc_check(rbs[k] + HDR, p->len - HDR,
               tc_pattern_seed(s, (uint64_t)(round * 16 + g), p->len - HDR), what, s,
               (uint64_t)(round * 16 + g));
    }
    n_received += expect;
    total += expect;
    waitall(ns, sr);
    dwait(&dq, what);
    for (int g = 0; g < nm[rank]; g++) free(sb[g]);
    settle();
  }
  expect_quiet("part 3");
  long sum = 0;
  MPI_Reduce(&total, &sum, 1, MPI_LONG, MPI_SUM, 0, sync_comm);
  for (int i = 0; i < maxexp; i++) free(rbs[i]);
  free(rbs);
  free(rr);
  free(rs);
  free(seen);
  free(plan);
  free(nm);
  free(last);
  if (rank == 0)
    printf("int_dbcast: part 3, %d rounds of broadcasts among p2p messages on one tag, "
           "MPI_ANY_SOURCE: %ld messages, each once and in order\n",
           rounds, sum);
}

/* ------------------------------------------------------------------------------------------ */
/* 4: sizes and datatypes. */

static void part_sizes(void) {
  uint64_t st = seed ^ 0x4444;
  static const size_t bytes[] = {0, 1, 1000, 100000, 2 << 20};
  const int nints = 1000, ndbl = 30000, nvec = 5000;
  size_t maxb = (size_t)(2 << 20) + SLACK;
  unsigned char *sb = malloc(maxb), *rb = malloc(maxb);
  int cases = 0;
  MPI_Datatype vec; /* every other int */
  MPI_Type_vector(nvec, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  for (int root = 0; root < nranks; root++)
    for (int k = 0; k < 9; k++, cases++) {
      int set[MAXR], n;
      if (root % 2 == 0) {
        n = 0;
        for (int r = 0; r < nranks; r++)
          if (r != root) set[n++] = r;
      } else {
        n = draw_set(&st, root, set, 50);
      }
      int me_in = rank != root && in_set(rank, set, n);
      int use_irecv = (int)(tc_rand(&st) % 2);
      uint64_t iter = 7000 + (uint64_t)cases;
      char what[128];
      MPICAST_Request *q = NULL;
      MPI_Status s;
      MPI_Request r;
      if (k < 5) { /* MPI_BYTE, the receive buffer SLACK bytes longer */
        size_t len = bytes[k];
        snprintf(what, sizeof what, "part 4: %zu bytes from root %d", len, root);
        if (rank == root) {
          tc_fill(sb, len, tc_pattern_seed(root, iter, len));
          q = dbcast(sb, (int)len, MPI_BYTE, set, n, 30, what);
        } else if (me_in) {
          memset(rb, 0xEE, len + SLACK);
          if (use_irecv) {
            MPI_Irecv(rb, (int)(len + SLACK), MPI_BYTE, root, 30, comm, &r);
            MPI_Wait(&r, &s);
          } else {
            MPI_Recv(rb, (int)(len + SLACK), MPI_BYTE, root, 30, comm, &s);
          }
          check_status(&s, root, 30, MPI_BYTE, (int)len, what);
          check_bytes(rb, len, root, iter, what);
        }
      } else if (k == 5) { /* MPI_INT */
        snprintf(what, sizeof what, "part 4: %d MPI_INT from root %d", nints, root);
        int *si = (int *)sb, *ri = (int *)rb;
        if (rank == root) {
          for (int i = 0; i < nints; i++) si[i] = i * 7 - root * 100003;
          q = dbcast(si, nints, MPI_INT, set, n, 31, what);
        } else if (me_in) {
          for (int i = 0; i < nints + 8; i++) ri[i] = -1;
          MPI_Recv(ri, nints + 8, MPI_INT, MPI_ANY_SOURCE, 31, comm, &s);
          check_status(&s, root, 31, MPI_INT, nints, what);
          for (int i = 0; i < nints + 8; i++)
            REQUIRE(ri[i] == (i < nints ? i * 7 - root * 100003 : -1), "%s: element %d is %d",
                    what, i, ri[i]);
        }
      } else if (k == 6) { /* MPI_DOUBLE */
        snprintf(what, sizeof what, "part 4: %d MPI_DOUBLE from root %d", ndbl, root);
        double *sd = (double *)sb, *rd = (double *)rb;
        if (rank == root) {
          for (int i = 0; i < ndbl; i++) sd[i] = i * 0.25 + root;
          q = dbcast(sd, ndbl, MPI_DOUBLE, set, n, 32, what);
        } else if (me_in) {
          for (int i = 0; i < ndbl + 8; i++) rd[i] = -1.0;
          MPI_Irecv(rd, ndbl + 8, MPI_DOUBLE, root, MPI_ANY_TAG, comm, &r);
          MPI_Wait(&r, &s);
          check_status(&s, root, 32, MPI_DOUBLE, ndbl, what);
          for (int i = 0; i < ndbl + 8; i++)
            REQUIRE(rd[i] == (i < ndbl ? i * 0.25 + root : -1.0), "%s: element %d is %g", what,
                    i, rd[i]);
        }
      } else { /* k 7: contiguous sent, vector received; k 8: vector sent, contiguous received */
        int vec_recv = k == 7;
        snprintf(what, sizeof what, "part 4: %d MPI_INT, %s from root %d", nvec,
                 vec_recv ? "received as MPI_Type_vector(stride 2)"
                          : "sent as MPI_Type_vector(stride 2)",
                 root);
        int *si = (int *)sb, *ri = (int *)rb;
        if (rank == root) {
          if (vec_recv) {
            for (int i = 0; i < nvec; i++) si[i] = i * 3 + root;
            q = dbcast(si, nvec, MPI_INT, set, n, 33, what);
          } else {
            for (int i = 0; i < 2 * nvec; i++) si[i] = i % 2 ? -99 : (i / 2) * 3 + root;
            q = dbcast(si, 1, vec, set, n, 33, what);
          }
        } else if (me_in) {
          for (int i = 0; i < 2 * nvec + 8; i++) ri[i] = -1;
          if (vec_recv)
            MPI_Recv(ri, 1, vec, root, 33, comm, &s);
          else
            MPI_Recv(ri, nvec + 8, MPI_INT, root, 33, comm, &s);
          check_status(&s, root, 33, MPI_INT, nvec, what);
          if (vec_recv) {
            int cv = -1;
            MPI_Get_count(&s, vec, &cv);
            REQUIRE(cv == 1, "%s: MPI_Get_count of the vector type is %d", what, cv);
          }
          for (int i = 0; i < 2 * nvec + 8; i++) {
            int want;
            if (vec_recv)
              want = (i % 2 == 0 && i < 2 * nvec) ? (i / 2) * 3 + root : -1;
            else
              want = i < nvec ? i * 3 + root : -1;
            REQUIRE(ri[i] == want, "%s: element %d is %d, want %d", what, i, ri[i], want);
          }
        }
      }
      if (rank == root) dwait(&q, what);
      settle();
    }
  MPI_Type_free(&vec);
  free(sb);
  free(rb);
  expect_quiet("part 4");
  if (rank == 0)
    printf("int_dbcast: part 4, sizes 0 B to 2 MiB, MPI_INT, MPI_DOUBLE, vector types: %d "
           "cases ok\n",
           cases);
}

/* ------------------------------------------------------------------------------------------ */
/* 5: detection (MPICAST_Send_defer, MPICAST_Send_release). */

enum { NKEYS = 8, KEY0 = 1000, KEY_TAG0 = 60, MAXDEF = 6 };
typedef struct {
  int ndef, dest[MAXDEF], prio[MAXDEF]; /* the defers, duplicates included */
  size_t len;
} dkey_t;

static int key_to(const dkey_t *k, int r) {
  for (int i = 0; i < k->ndef; i++)
    if (k->dest[i] == r) return 1;
  return 0;
}

static int distinct(const dkey_t *k) {
  int n = 0;
  for (int i = 0; i < k->ndef; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= k->dest[j] == k->dest[i];
    n += !dup;
  }
  return n;
}

static void recv_key(int s, int key, size_t len, uint64_t iter, const char *what) {
  unsigned char *rb = malloc(len + SLACK);
  memset(rb, 0xEE, len + SLACK);
  MPI_Status st;
  MPI_Recv(rb, (int)(len + SLACK), MPI_BYTE, s, KEY_TAG0 + key - KEY0, comm, &st);
  check_status(&st, s, KEY_TAG0 + key - KEY0, MPI_BYTE, (int)len, what);
  check_bytes(rb, len, s, iter, what);
  free(rb);
}

static void part_detect(void) {
  uint64_t st = seed ^ 0x5555;
  dkey_t(*plan)[NKEYS] = malloc(sizeof(dkey_t) * NKEYS * (size_t)nranks);
  for (int s = 0; s < nranks; s++)
    for (int k = 0; k < NKEYS; k++) {
      dkey_t *p = &plan[s][k];
      p->ndef = 1 + (int)(tc_rand(&st) % MAXDEF);
      for (int i = 0; i < p->ndef; i++) {
        /* Often a rank already named: duplicates, merged into one message. */
        p->dest[i] = i > 0 && tc_rand(&st) % 3 == 0 ? p->dest[tc_rand(&st) % (uint64_t)i]
                                                   : other_rank(&st, s);
        p->prio[i] = (int)(tc_rand(&st) % 10);
      }
      p->len = (size_t)(tc_rand(&st) % 40000);
      if (tc_rand(&st) % 8 == 0) p->len += 300000;
      if (tc_rand(&st) % 8 == 0) p->len = 0;
    }
  /* This rank's defers in a random order across keys (each key's own in its order), then
   * its releases in a random order. Every rank uses the same key numbers: keys are local. */
  int order[NKEYS * MAXDEF], no = 0, pos[NKEYS] = {0}, korder[NKEYS];
  for (int k = 0; k < NKEYS; k++) {
    korder[k] = k;
    for (int i = 0; i < plan[rank][k].ndef; i++) order[no++] = k;
  }
  for (int i = no - 1; i > 0; i--) {
    int j = (int)(tc_rand(&local_rng) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = NKEYS - 1; i > 0; i--) {
    int j = (int)(tc_rand(&local_rng) % (uint64_t)(i + 1)), t = korder[i];
    korder[i] = korder[j];
    korder[j] = t;
  }
  for (int i = 0; i < no; i++) {
    int k = order[i], d = pos[k]++;
    dkey_t *p = &plan[rank][k];
    int rc = MPICAST_Send_defer(KEY0 + k, p->dest[d], KEY_TAG0 + k, p->prio[d], comm);
    REQUIRE(rc == MPICAST_OK, "part 5: MPICAST_Send_defer(key %d, dest %d) returned %d",
            KEY0 + k, p->dest[d], rc);
  }
  unsigned char *sb[NKEYS];
  MPICAST_Request *q[NKEYS];
  for (int i = 0; i < NKEYS; i++) {
    int k = korder[i];
    dkey_t *p = &plan[rank][k];
    sb[k] = malloc(p->len + 1);
    tc_fill(sb[k], p->len, tc_pattern_seed(rank, (uint64_t)(9000 + k), p->len));
    q[k] = NULL;
    int rc = MPICAST_Send_release(KEY0 + k, sb[k], (int)p->len, MPI_BYTE, &q[k]);
    REQUIRE(rc == MPICAST_OK, "part 5: MPICAST_Send_release(key %d) returned %d", KEY0 + k, rc);
    if (distinct(p) > 1) n_dbcasts++;
  }
  int got = 0;
  char what[128];
  for (int s = 0; s < nranks; s++)
    for (int k = 0; k < NKEYS; k++) {
      if (s == rank || !key_to(&plan[s][k], rank)) continue;
      snprintf(what, sizeof what, "part 5: key %d of rank %d (%d defers, %d ranks, %zu bytes)",
               KEY0 + k, s, plan[s][k].ndef, distinct(&plan[s][k]), plan[s][k].len);
      recv_key(s, KEY0 + k, plan[s][k].len, (uint64_t)(9000 + k), what);
      got++;
    }
  /* Each once: nothing more came (checked before the releases' requests are waited for, so
   * that a second copy sent by rendezvous shows here instead of hanging the sender). */
  expect_quiet("part 5 (duplicate defers merged)");
  for (int k = 0; k < NKEYS; k++) dwait(&q[k], "part 5: a release");
  /* After its release a key is gone: a new defer starts a new datum. Key KEY0 to one rank
   * (a plain send), key KEY0+1 to two (a broadcast), with new data. */
  int d1 = (rank + 1) % nranks, d2 = (rank + 2) % nranks;
  size_t l0 = 777, l1 = 5000;
  REQUIRE(MPICAST_Send_defer(KEY0, d1, KEY_TAG0, 1, comm) == MPICAST_OK, "part 5: defer again");
  int two = nranks > 2;
  REQUIRE(MPICAST_Send_defer(KEY0 + 1, d1, KEY_TAG0 + 1, 1, comm) == MPICAST_OK,
          "part 5: defer again");
  if (two)
    REQUIRE(MPICAST_Send_defer(KEY0 + 1, d2, KEY_TAG0 + 1, 0, comm) == MPICAST_OK,
            "part 5: defer again");
  unsigned char *n0 = malloc(l0), *n1 = malloc(l1);
  tc_fill(n0, l0, tc_pattern_seed(rank, 9100, l0));
  tc_fill(n1, l1, tc_pattern_seed(rank, 9101, l1));
  REQUIRE(MPICAST_Send_release(KEY0, n0, (int)l0, MPI_BYTE, &q[0]) == MPICAST_OK,
          "part 5: release again");
  REQUIRE(MPICAST_Send_release(KEY0 + 1, n1, (int)l1, MPI_BYTE, &q[1]) == MPICAST_OK,
          "part 5: release again");
  n_dbcasts += two;
  int from1 = (rank + nranks - 1) % nranks, from2 = (rank + nranks - 2) % nranks;
  recv_key(from1, KEY0, l0, 9100, "part 5: a defer after the release (one rank: plain)");
  recv_key(from1, KEY0 + 1, l1, 9101, "part 5: a defer after the release (two ranks)");
  if (two) recv_key(from2, KEY0 + 1, l1, 9101, "part 5: a defer after the release (two ranks)");
  dwait(&q[0], "part 5: release again");
  dwait(&q[1], "part 5: release again");
  expect_quiet("part 5 (a new datum after the release)");
  for (int k = 0; k < NKEYS; k++) free(sb[k]);
  free(n0);
  free(n1);
  free(plan);
  int sum = 0;
  MPI_Reduce(&got, &sum, 1, MPI_INT, MPI_SUM, 0, sync_comm);
  if (rank == 0)
    printf("int_dbcast: part 5, detection: %d keys per rank with duplicate defers, %d "
           "messages, each once; a defer after the release is a new datum ok\n",
           NKEYS, sum);
}

/* ------------------------------------------------------------------------------------------ */
/* 7: stress. */

static void part_stress(int rounds, size_t max_bytes) {
  uint64_t st = seed ^ 0x7777;
  int(*sets)[MAXR] = malloc(sizeof(int) * MAXR * (size_t)nranks);
  int *ns = malloc(sizeof(int) * (size_t)nranks), *tags = malloc(sizeof(int) * (size_t)nranks);
  size_t *lens = malloc(sizeof(size_t) * (size_t)nranks);
  unsigned char **rbs = malloc(sizeof(unsigned char *) * (size_t)nranks);
  for (int i = 0; i < nranks; i++) rbs[i] = malloc(max_bytes + SLACK);
  unsigned char *sb = malloc(max_bytes + 1);
  MPI_Request *rr = malloc(sizeof(MPI_Request) * (size_t)nranks);
  MPI_Status *rs = malloc(sizeof(MPI_Status) * (size_t)nranks);
  int *from = malloc(sizeof(int) * (size_t)nranks);
  long bytes = 0, msgs = 0;
  double t0 = tc_now();
  for (int round = 0; round < rounds; round++) {
    for (int s = 0; s < nranks; s++) {
      ns[s] = draw_set(&st, s, sets[s], (int)(tc_rand(&st) % 100));
      tags[s] = 70 + (int)(tc_rand(&st) % 3);
      uint64_t x = tc_rand(&st);
      lens[s] = x % 8 == 0 ? 0 : (size_t)((x >> 8) % (max_bytes + 1)) >> (int)((x >> 4) % 8);
    }
    int nr = 0;
    for (int s = 0; s < nranks; s++)
      if (s != rank && in_set(rank, sets[s], ns[s])) {
        memset(rbs[nr], 0xEE, lens[s] + SLACK);
        MPI_Irecv(rbs[nr], (int)(lens[s] + SLACK), MPI_BYTE, s, tags[s], comm, &rr[nr]);
        from[nr++] = s;
      }
    char what[64];
    snprintf(what, sizeof what, "part 7 round %d", round);
    tc_fill(sb, lens[rank], tc_pattern_seed(rank, (uint64_t)(20000 + round), lens[rank]));
    MPICAST_Request *q =
        dbcast(sb, (int)lens[rank], MPI_BYTE, sets[rank], ns[rank], tags[rank], what);
    /* The data is copied when MPICAST_Dbcast returns: the buffer may be reused at once. */
    tc_poison(sb, lens[rank], tc_pattern_seed(rank, (uint64_t)(20000 + round), lens[rank]));
    MPI_Waitall(nr, rr, rs);
    for (int k = 0; k < nr; k++) {
      int s = from[k];
      check_status(&rs[k], s, tags[s], MPI_BYTE, (int)lens[s], what);
      check_bytes(rbs[k], lens[s], s, (uint64_t)(20000 + round), what);
      bytes += (long)lens[s];
    }
    msgs += nr;
    dwait(&q, what);
  }
  double secs = tc_now() - t0;
  expect_quiet("part 7");
  long tot[2] = {msgs, bytes}, sum[2] = {0, 0};
  MPI_Reduce(tot, sum, 2, MPI_LONG, MPI_SUM, 0, sync_comm);
  for (int i = 0; i < nranks; i++) free(rbs[i]);
  free(rbs);
  free(sb);
  free(rr);
  free(rs);
  free(from);
  free(sets);
  free(ns);
  free(tags);
  free(lens);
  if (rank == 0)
    printf("int_dbcast: part 7, stress: %d rounds, every rank broadcasting, %ld deliveries, "
           "%.1f MB, %.2f s\n",
           rounds, sum[0], (double)sum[1] / 1e6, secs);
}

/* ------------------------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------------------------ */
/* 8: the MPI_Info key: a communicator made by MPI_Comm_dup_with_info with mpicast_dbcast=on
 * takes dynamic broadcasts without MPICAST_Dbcast_enable; one without it refuses them. */

static void part_info(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpicast_dbcast", "on");
  MPI_Comm on, off;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &on);
  MPI_Info_free(&info);
  MPI_Comm_dup(MPI_COMM_WORLD, &off);
  int root = nranks - 1, val[4], rec[MAXR], n = 0;
  for (int r = 0; r < nranks; r++)
    if (r != root) rec[n++] = r;
  if (rank == root) {
    MPICAST_Request *q = NULL;
    int rc = MPICAST_Dbcast(val, 4, MPI_INT, rec, NULL, n, 3, off, &q);
    REQUIRE(rc == MPICAST_ERR_NOT_ENABLED && q == NULL,
            "part 8: MPICAST_Dbcast on a communicator without the key returned %d", rc);
    for (int i = 0; i < 4; i++) val[i] = root * 10 + i;
    rc = MPICAST_Dbcast(val, 4, MPI_INT, rec, NULL, n, 3, on, &q);
    REQUIRE(rc == MPICAST_OK, "part 8: MPICAST_Dbcast on the mpicast_dbcast=on communicator "
            "returned %d", rc);
    dwait(&q, "part 8");
    n_dbcasts++;
  } else {
    MPI_Status s;
    for (int i = 0; i < 4; i++) val[i] = -1;
    MPI_Recv(val, 4, MPI_INT, root, 3, on, &s);
    for (int i = 0; i < 4; i++)
      REQUIRE(val[i] == root * 10 + i, "part 8: element %d is %d", i, val[i]);
    check_status(&s, root, 3, MPI_INT, 4, "part 8");
  }
  MPI_Request b;
  MPI_Ibarrier(ib_comm, &b);
  for (int done = 0; !done;) {
    int f;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, on, &f, MPI_STATUS_IGNORE);
    MPI_Test(&b, &done, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&on);
  MPI_Comm_free(&off);
}

/* ------------------------------------------------------------------------------------------ */
/* 9 (alone, not by default): a case whose order cannot be kept is detected. Rank 0 sends a
 * plain message (counted), rank 1 receives it where mpicast cannot see it (PMPI_Recv), then a
 * broadcast from rank 0 that may only be delivered after that message waits for it: the job
 * must end with a message naming it once MPICAST_TIMEOUT_MS has passed. */

static void part_stall(void) {
  int x = 1, rec[1] = {1};
  if (nranks >= 2 && rank == 0) {
    MPI_Send(&x, 1, MPI_INT, 1, 9, comm);
    MPICAST_Request *q = dbcast(&x, 1, MPI_INT, rec, 1, 9, "part 9");
    dwait(&q, "part 9");
  } else if (nranks >= 2 && rank == 1) {
    PMPI_Recv(&x, 1, MPI_INT, 0, 9, comm, MPI_STATUS_IGNORE);
    MPI_Recv(&x, 1, MPI_INT, 0, 9, comm, MPI_STATUS_IGNORE);
    tc_fail("part 9: the broadcast was delivered although a plain message sent before it "
            "was received where mpicast could not count it");
  }
  MPI_Barrier(sync_comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rank = tc_world_rank();
  nranks = tc_world_size();
  seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 20261201);
  local_rng = seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(rank + 1));
  int order_len = (int)tc_arg_ll(argc, argv, "--order-len", 30);
  int rounds = (int)tc_arg_ll(argc, argv, "--rounds", 12);
  int stress = (int)tc_arg_ll(argc, argv, "--stress", 20);
  size_t max_bytes = (size_t)tc_arg_ll(argc, argv, "--max-bytes", 100000);
  unsigned parts = 0;
  const char *pa = tc_arg(argc, argv, "--part");
  if (pa) {
    for (const char *p = pa; *p; p++)
      if (*p >= '0' && *p <= '9') parts |= 1u << (*p - '0');
  } else {
    parts = 0x1FE; /* 1 to 8 */
  }
  REQUIRE(nranks >= 2 && nranks <= MAXR, "int_dbcast needs 2 to %d ranks, not %d", MAXR, nranks);
  if (rank == 0)
    printf("int_dbcast: seed %llu, %d ranks, parts %s\n", (unsigned long long)seed, nranks,
           pa ? pa : "1-7");
  comm = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &sync_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &ib_comm);
  before_enable();
  int rc = MPICAST_Dbcast_enable(comm);
  REQUIRE(rc == MPICAST_OK, "MPICAST_Dbcast_enable returned %d", rc);
  rc = MPICAST_Dbcast_enable(comm);
  REQUIRE(rc == MPICAST_OK, "a second MPICAST_Dbcast_enable returned %d", rc);
  double t0 = tc_now();
  if (parts & (1u << 1)) part_forms();
  if (parts & (1u << 2)) part_order(order_len);
  if (parts & (1u << 3)) part_mixed(rounds);
  if (parts & (1u << 4)) part_sizes();
  if (parts & (1u << 5)) part_detect();
  if (parts & (1u << 6)) part_bad();
  if (parts & (1u << 7)) part_stress(stress, max_bytes);
  if (parts & (1u << 8)) part_info();
  if (parts & (1u << 9)) part_stall();
  long mine[2] = {n_dbcasts, n_received}, sum[2] = {0, 0};
  MPI_Reduce(mine, sum, 2, MPI_LONG, MPI_SUM, 0, sync_comm);
  MPI_Comm_free(&sync_comm);
  MPI_Comm_free(&ib_comm);
  if (rank == 0)
    printf("int_dbcast: ok (%d ranks, seed %llu, parts %s: %ld dynamic broadcasts, %ld "
           "receives checked, %.2f s)\n",
           nranks, (unsigned long long)seed, pa ? pa : "1-7", sum[0], sum[1], tc_now() - t0);
  MPI_Finalize();
  return 0;
}
