/* The two programs of the progress bug report: a rank that relays an extension call's data
 * must go on forwarding while it sits in a blocking MPI call; and a third, host point-to-point
 * against mpicast's own blocking collectives.
 *
 *   int_progress_regress [--mode imcast|dbcast|hostp2p] [--rounds R] [--seed S] [--max-ints N]
 *                        [--engine] [--delay-ms D]
 *                        [--watchdog SECONDS] [--hang-exit SECONDS]
 *
 * --mode imcast (default): MPICAST_Mcast_enable(MPI_COMM_WORLD). In each of R rounds (default
 *   40) one rank, drawn from the shared seed, calls MPICAST_Imcast of 1 to --max-ints (300000)
 *   ints to a random non-empty set of the other ranks with tag round % 100; each destination
 *   posts MPICAST_Mcast_irecv (the root and MPI_ANY_SOURCE alternately) and calls
 *   MPICAST_Wait; the root waits for its own request; then every rank calls
 *   MPI_Barrier(MPI_COMM_WORLD). The root's request completes at once (its data is copied),
 *   so the root, and every destination done first, sit in the barrier while others may
 *   still need them to forward: before the fix this hung.
 * --mode dbcast: MPICAST_Dbcast_enable(MPI_COMM_WORLD). In each round a random root calls
 *   MPICAST_Dbcast of 1 to --max-ints ints to random recipients (random priorities every
 *   other round), each recipient receives it with, in rotation, MPI_Recv, MPI_Irecv +
 *   MPI_Wait, or MPI_Probe + MPI_Recv (from the root, with the round's tag), then
 *   MPI_Barrier(MPI_COMM_WORLD).
 *
 * --mode hostp2p (found while writing int_progress --reference, no extension call): in each
 *   round a random rank S sends 1000 B or 100 KB to a random rank R (MPI_Send, MPI_Isend +
 *   MPI_Wait or MPI_Ssend) on MPI_COMM_WORLD; R posts the MPI_Irecv, enters the round's
 *   collective (MPI_Barrier, or MPI_Bcast of 8 B from S), then MPI_Wait's; S waits --delay-ms
 *   (20), so that R is in the collective, sends, then enters the collective. The send needs
 *   R's progress, and R is inside an MPI call: MPI's progress rule says it completes, so
 *   mpicast's multicast barrier and broadcast must move the host MPI while they wait. With
 *   --engine, MPICAST_Mcast_enable on a duplicate of MPI_COMM_WORLD first.
 *
 * Every int received is checked (its value depends on the round, the root and its index),
 * and so are the ints past the message (the receive buffer is longer: nothing is written
 * there), the status's source and tag and MPI_Get_count. Needs 4 ranks or more (exit 77
 * otherwise). A hang ends by MPICAST_TIMEOUT_MS (the test sets 20 s); after --watchdog
 * seconds (default 10) without a finished round every rank says on stderr which round it is
 * in, and where; after --hang-exit seconds (default 40; 0: never) it exits with a FAIL line
 * (a rank blocked in a host MPI call has no MPICAST_TIMEOUT_MS to end it). Rank 0 prints
 * "int_progress_regress: N rounds ok" at the end. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

#ifndef MPICAST_LINKED
/* Preloaded: every extension call below goes through api.h's lookup. */
#define MPICAST_Mcast_enable API(MPICAST_Mcast_enable)
#define MPICAST_Dbcast_enable API(MPICAST_Dbcast_enable)
#define MPICAST_Imcast API(MPICAST_Imcast)
#define MPICAST_Dbcast API(MPICAST_Dbcast)
#define MPICAST_Mcast_irecv API(MPICAST_Mcast_irecv)
#define MPICAST_Wait API(MPICAST_Wait)
#endif

#define REQUIRE(c, ...)             \
  do {                              \
    if (!(c)) tc_fail(__VA_ARGS__); \
  } while (0)

enum { GUARD = 16 };

static int rank, nranks;

/* Where this rank is, for the watchdog: the round, and what it waits in. */
static volatile int cur_round = -1;
static const char *volatile cur_where = "start";
static volatile int finished = 0;
static int watchdog_s = 10;
static int hang_exit_s = 40;

static void *watchdog(void *arg) {
  (void)arg;
  int last = -2, told = 0;
  double since = tc_now();
  while (!finished) {
    tc_sleep_ms(100);
    int r = cur_round;
    if (r != last) {
      last = r;
      since = tc_now();
      told = 0;
      continue;
    }
    if (!told && tc_now() - since >= watchdog_s) {
      char msg[256];
      int n = snprintf(msg, sizeof msg,
                       "[rank %d] int_progress_regress: no progress for %d s in round %d (%s)\n",
                       rank, watchdog_s, r, cur_where);
      if (n > 0 && write(2, msg, (size_t)n) < 0) {
      }
      told = 1;
    }
    if (hang_exit_s > 0 && tc_now() - since >= hang_exit_s) {
      char msg[256];
      int n = snprintf(msg, sizeof msg,
                       "[rank %d] int_progress_regress: FAIL: hung for %d s in round %d (%s): "
                       "exiting\n",
                       rank, hang_exit_s, r, cur_where);
      if (n > 0 && write(2, msg, (size_t)n) < 0) {
      }
      _exit(3);
    }
  }
  return NULL;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

/* Int i of round's message from root: depends on all three. */
static int value(uint64_t seed, int round, int root, size_t i) {
  uint64_t h = mix(seed ^ ((uint64_t)round << 20) ^ ((uint64_t)root << 8) ^ 0x5eedULL);
  return (int)(uint32_t)(h + (uint64_t)i * 0x9e3779b1ULL + (i >> 7) * 0x85ebca6bULL);
}

/* The poison of int i: never the value. */
static int poison(uint64_t seed, int round, int root, size_t i) {
  return ~value(seed, round, root, i);
}

static void check(const int *buf, size_t n, const MPI_Status *st, uint64_t seed, int round,
                  int root, int tag, const char *how) {
  REQUIRE(st->MPI_SOURCE == root && st->MPI_TAG == tag,
          "round %d (%s): status says source %d tag %d, want %d and %d", round, how,
          st->MPI_SOURCE, st->MPI_TAG, root, tag);
  int count = -1;
  MPI_Get_count(st, MPI_INT, &count);
  REQUIRE(count == (int)n, "round %d (%s) from %d: MPI_Get_count %d, want %zu", round, how, root,
          count, n);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (buf[i] != value(seed, round, root, i) && bad++ == 0) first = i;
  REQUIRE(bad == 0,
          "round %d (%s) from %d, %zu ints: %zu wrong, first at %zu (got %d, want %d); replay "
          "with --seed %llu",
          round, how, root, n, bad, first, buf[first], value(seed, round, root, first),
          (unsigned long long)seed);
  for (size_t i = n; i < n + GUARD; i++)
    REQUIRE(buf[i] == poison(seed, round, root, i),
            "round %d (%s) from %d: int %zu past the %zu-int message was written", round, how,
            root, i, n);
}

typedef struct {
  int root, ndests, dests[256], prio[256], tag;
  size_t n;
} round_t;

static void draw(uint64_t *st, int round, size_t max_ints, round_t *r) {
  r->root = (int)(tc_rand(st) % (uint64_t)nranks);
  r->n = 1 + (size_t)(tc_rand(st) % max_ints);
  r->tag = round % 100;
  r->ndests = 0;
  /* A random non-empty subset of the others, in a random order. */
  while (r->ndests == 0)
    for (int d = 0; d < nranks; d++)
      if (d != r->root && tc_rand(st) % 2 && r->ndests < 256) r->dests[r->ndests++] = d;
  for (int i = r->ndests - 1; i > 0; i--) {
    int j = (int)(tc_rand(st) % (uint64_t)(i + 1)), t = r->dests[i];
    r->dests[i] = r->dests[j];
    r->dests[j] = t;
  }
  for (int i = 0; i < r->ndests; i++) r->prio[i] = (int)(tc_rand(st) % 4);
}

/* --mode hostp2p: a point-to-point message whose sender waits while its receiver sits in
 * mpicast's MPI_Barrier or MPI_Bcast (no extension call; with --engine a duplicate of
 * MPI_COMM_WORLD has MPICAST_Mcast_enable, which gives the process a forwarding engine). */
static void hostp2p(int rounds, uint64_t seed, int engine, int delay_ms) {
  MPI_Comm dup = MPI_COMM_NULL;
  if (engine) {
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int rc = MPICAST_Mcast_enable(dup);
    REQUIRE(rc == MPICAST_OK, "MPICAST_Mcast_enable returned %d", rc);
  }
  enum { SMALL = 250, LARGE = 25000 }; /* ints: 1000 B (eager) and 100 KB (rendezvous) */
  int *buf = malloc((LARGE + GUARD) * sizeof(int));
  REQUIRE(buf != NULL, "out of memory");
  static const char *send_name[3] = {"MPI_Send", "MPI_Isend + MPI_Wait", "MPI_Ssend"};
  uint64_t st = seed;
  long received = 0;
  int nbcast = 0;
  for (int round = 0; round < rounds; round++) {
    cur_round = round;
    int S = (int)(tc_rand(&st) % (uint64_t)nranks);
    int R = (int)(tc_rand(&st) % (uint64_t)(nranks - 1));
    if (R >= S) R++;
    int barrier = (int)(tc_rand(&st) % 2);
    nbcast += !barrier;
    int how = (int)(tc_rand(&st) % 3);
    size_t n = tc_rand(&st) % 2 ? LARGE : SMALL;
    int tag = round % 100;
    long v = rank == S ? (long)value(seed, round, S, 0) : 0;
    const char *coll = barrier ? "MPI_Barrier(MPI_COMM_WORLD)" : "MPI_Bcast(MPI_COMM_WORLD)";
    if (rank == R) {
      for (size_t i = 0; i < n + GUARD; i++) buf[i] = poison(seed, round, S, i);
      MPI_Request q;
      MPI_Status s;
      MPI_Irecv(buf, (int)(n + GUARD), MPI_INT, S, tag, MPI_COMM_WORLD, &q);
      cur_where = barrier ? "MPI_Barrier with an MPI_Irecv posted"
                          : "MPI_Bcast with an MPI_Irecv posted";
      if (barrier)
        MPI_Barrier(MPI_COMM_WORLD);
      else
        MPI_Bcast(&v, 1, MPI_LONG, S, MPI_COMM_WORLD);
      cur_where = "MPI_Wait (receiver)";
      MPI_Wait(&q, &s);
      check(buf, n, &s, seed, round, S, tag, "MPI_Irecv during a collective");
      received++;
    } else if (rank == S) {
      for (size_t i = 0; i < n; i++) buf[i] = value(seed, round, S, i);
      /* The receiver is inside the collective by the time the send starts. */
      tc_sleep_ms(delay_ms);
      cur_where = send_name[how];
      if (how == 0) {
        MPI_Send(buf, (int)n, MPI_INT, R, tag, MPI_COMM_WORLD);
      } else if (how == 1) {
        MPI_Request q;
        MPI_Isend(buf, (int)n, MPI_INT, R, tag, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
      } else {
        MPI_Ssend(buf, (int)n, MPI_INT, R, tag, MPI_COMM_WORLD);
      }
      cur_where = coll;
      if (barrier)
        MPI_Barrier(MPI_COMM_WORLD);
      else
        MPI_Bcast(&v, 1, MPI_LONG, S, MPI_COMM_WORLD);
    } else {
      cur_where = coll;
      if (barrier)
        MPI_Barrier(MPI_COMM_WORLD);
      else
        MPI_Bcast(&v, 1, MPI_LONG, S, MPI_COMM_WORLD);
    }
    REQUIRE(barrier || v == (long)value(seed, round, S, 0),
            "round %d: MPI_Bcast of 8 B from %d gave %ld", round, S, v);
  }
  cur_round = rounds;
  cur_where = "the end";
  long total = 0;
  MPI_Reduce(&received, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("int_progress_regress: %d rounds ok (hostp2p%s, %ld messages received)\n", rounds,
           engine ? " with an engine" : "", total);
    fflush(stdout);
  }
  /* TC_EXPECT=mcast (the ctests): mpicast's own MPI_Bcast and MPI_Barrier took part. */
  tc_expect_check(nbcast > 0, rounds > nbcast);
  if (engine) MPI_Comm_free(&dup);
  free(buf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *mode = tc_arg(argc, argv, "--mode");
  if (!mode) mode = "imcast";
  int dbcast = strcmp(mode, "dbcast") == 0, host = strcmp(mode, "hostp2p") == 0;
  if (!dbcast && !host && strcmp(mode, "imcast") != 0) {
    if (rank == 0)
      fprintf(stderr, "int_progress_regress: --mode imcast|dbcast|hostp2p, not %s\n", mode);
    MPI_Finalize();
    return 2;
  }
  int rounds = (int)tc_arg_ll(argc, argv, "--rounds", 40);
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 20261128);
  size_t max_ints = (size_t)tc_arg_ll(argc, argv, "--max-ints", 300000);
  watchdog_s = (int)tc_arg_ll(argc, argv, "--watchdog", 10);
  hang_exit_s = (int)tc_arg_ll(argc, argv, "--hang-exit", 40);
  if (nranks < 4) {
    if (rank == 0)
      printf("int_progress_regress: needs 4 ranks or more, have %d: skipped\n", nranks);
    MPI_Finalize();
    return TC_SKIP;
  }
  if (max_ints < 1) max_ints = 1;
  if (rank == 0) {
    printf("int_progress_regress: mode %s, %d ranks, %d rounds, seed %llu\n", mode, nranks,
           rounds, (unsigned long long)seed);
    fflush(stdout);
  }
  pthread_t wd;
  pthread_create(&wd, NULL, watchdog, NULL);
  if (host) {
    hostp2p(rounds, seed, tc_flag(argc, argv, "--engine"),
            (int)tc_arg_ll(argc, argv, "--delay-ms", 20));
    finished = 1;
    pthread_join(wd, NULL);
    MPI_Finalize();
    return 0;
  }

  int rc = dbcast ? MPICAST_Dbcast_enable(MPI_COMM_WORLD) : MPICAST_Mcast_enable(MPI_COMM_WORLD);
  REQUIRE(rc == MPICAST_OK, "MPICAST_%s_enable returned %d", dbcast ? "Dbcast" : "Mcast", rc);

  int *buf = malloc((max_ints + GUARD) * sizeof(int));
  REQUIRE(buf != NULL, "out of memory");
  uint64_t st = seed;
  round_t r;
  long received = 0;
  for (int round = 0; round < rounds; round++) {
    cur_round = round;
    draw(&st, round, max_ints, &r);
    int me = -1;
    for (int i = 0; i < r.ndests; i++)
      if (r.dests[i] == rank) me = i;
    if (rank == r.root) {
      for (size_t i = 0; i < r.n; i++) buf[i] = value(seed, round, r.root, i);
      MPICAST_Request *req = NULL;
      cur_where = dbcast ? "MPICAST_Dbcast" : "MPICAST_Imcast";
      if (dbcast)
        rc = MPICAST_Dbcast(buf, (int)r.n, MPI_INT, r.dests, round % 2 ? r.prio : NULL, r.ndests,
                            r.tag, MPI_COMM_WORLD, &req);
      else
        rc = MPICAST_Imcast(buf, (int)r.n, MPI_INT, r.dests, r.ndests, r.tag, MPI_COMM_WORLD,
                            &req);
      REQUIRE(rc == MPICAST_OK, "round %d: MPICAST_%s returned %d", round,
              dbcast ? "Dbcast" : "Imcast", rc);
      /* The data was taken: the buffer may change at once. */
      for (size_t i = 0; i < r.n; i++) buf[i] = poison(seed, round, r.root, i);
      cur_where = "MPICAST_Wait (root)";
      rc = MPICAST_Wait(&req, MPI_STATUS_IGNORE);
      REQUIRE(rc == MPICAST_OK && req == NULL, "round %d: the root's MPICAST_Wait returned %d",
              round, rc);
    } else if (me >= 0) {
      for (size_t i = 0; i < r.n + GUARD; i++) buf[i] = poison(seed, round, r.root, i);
      MPI_Status s;
      memset(&s, 0, sizeof s);
      /* Room for the largest message: the length comes from the status. */
      int cap = (int)max_ints;
      const char *how;
      if (!dbcast) {
        int src = (round + me) % 2 ? MPI_ANY_SOURCE : r.root;
        how = src == MPI_ANY_SOURCE ? "MPICAST_Mcast_irecv(MPI_ANY_SOURCE)" : "MPICAST_Mcast_irecv";
        MPICAST_Request *req = NULL;
        cur_where = "MPICAST_Mcast_irecv";
        rc = MPICAST_Mcast_irecv(buf, cap, MPI_INT, src, r.tag, MPI_COMM_WORLD, &req);
        REQUIRE(rc == MPICAST_OK, "round %d: MPICAST_Mcast_irecv returned %d", round, rc);
        cur_where = "MPICAST_Wait (destination)";
        rc = MPICAST_Wait(&req, &s);
        REQUIRE(rc == MPICAST_OK && req == NULL, "round %d: MPICAST_Wait returned %d", round, rc);
      } else {
        switch ((round + me) % 3) {
        case 0:
          how = "MPI_Recv";
          cur_where = how;
          MPI_Recv(buf, cap, MPI_INT, r.root, r.tag, MPI_COMM_WORLD, &s);
          break;
        case 1: {
          how = "MPI_Irecv + MPI_Wait";
          cur_where = how;
          MPI_Request q;
          MPI_Irecv(buf, cap, MPI_INT, r.root, r.tag, MPI_COMM_WORLD, &q);
          MPI_Wait(&q, &s);
          REQUIRE(q == MPI_REQUEST_NULL, "round %d: MPI_Wait left the request", round);
          break;
        }
        default: {
          how = "MPI_Probe + MPI_Recv";
          cur_where = how;
          MPI_Status ps;
          MPI_Probe(r.root, r.tag, MPI_COMM_WORLD, &ps);
          int count = -1;
          MPI_Get_count(&ps, MPI_INT, &count);
          REQUIRE(ps.MPI_SOURCE == r.root && ps.MPI_TAG == r.tag && count == (int)r.n,
                  "round %d: MPI_Probe says source %d tag %d count %d, want %d, %d, %zu", round,
                  ps.MPI_SOURCE, ps.MPI_TAG, count, r.root, r.tag, r.n);
          MPI_Recv(buf, count, MPI_INT, r.root, r.tag, MPI_COMM_WORLD, &s);
          break;
        }
        }
      }
      check(buf, r.n, &s, seed, round, r.root, r.tag, how);
      received++;
    }
    cur_where = "MPI_Barrier(MPI_COMM_WORLD)";
    MPI_Barrier(MPI_COMM_WORLD);
  }
  cur_round = rounds;
  cur_where = "the end";
  long total = 0;
  MPI_Reduce(&received, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("int_progress_regress: %d rounds ok (%s, %ld messages received)\n", rounds, mode, total);
    fflush(stdout);
  }
  tc_expect_check(0, rounds > 0);
  finished = 1;
  pthread_join(wd, NULL);
  free(buf);
  MPI_Finalize();
  return 0;
}
