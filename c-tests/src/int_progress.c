/* Random programs that mix mpicast's extension calls with blocking MPI calls: a rank that
 * relays a multicast or a dynamic broadcast may sit in any blocking call, and every operation
 * must still complete (MPI's progress rule).
 *
 *   int_progress [--programs N] [--first I] [--seed S] [--steps K] [--reference]
 *                [--watchdog SECONDS] [--hang-exit SECONDS] [--corrupt] [--verbose]
 *
 * One launch runs programs I .. I+N-1 (default 0 .. 99). Program p is drawn from (S, p) with
 * tc_rand, the same on every rank, so that all ranks agree on what each rank does. A program
 * is K steps (default 12, at most 80), each one of (weighted at random):
 *   imcast    a random root MPICAST_Imcast's 1 to 1000 bytes or up to 256 KiB to a random set
 *             of ranks, on MPI_COMM_WORLD or on a duplicate (both enabled); each destination
 *             posts MPICAST_Mcast_irecv (the root or MPI_ANY_SOURCE; the tag or, from the
 *             root, MPI_ANY_TAG) and waits at once (MPICAST_Wait, a MPICAST_Test loop, after a
 *             MPICAST_Mcast_iprobe loop), or later: the request stays outstanding through
 *             later steps and is completed at a later step or at the program's end. The
 *             root's request too may be completed later; the root overwrites its buffer as
 *             soon as the call returns (the data is taken).
 *   dbcast    a random root MPICAST_Dbcast's to random recipients (with priorities or not) on
 *             MPI_COMM_WORLD (dynamic broadcast on); each recipient receives with MPI_Recv,
 *             MPI_Irecv + MPI_Wait, MPI_Probe + MPI_Recv, an MPI_Iprobe loop + MPI_Recv,
 *             MPI_Irecv + an MPI_Test loop, MPI_Mprobe + MPI_Mrecv, or MPI_Irecv completed at a
 *             later step.
 *   release   MPICAST_Send_defer of one key to random destinations (repeated ones, one or
 *             two tags, priorities), registered at this step or an earlier one, then
 *             MPICAST_Send_release; the recipients receive as for dbcast; the root keeps
 *             its buffer until its request completes (possibly at a later step).
 *   multi     about half the ranks at once each MPICAST_Imcast (on MPI_COMM_WORLD or the
 *             duplicate) or MPICAST_Dbcast to a set of their own, mostly small messages; each
 *             rank receives from its roots in their order, in the forms above, some deferred;
 *             the roots' requests are completed after the receives.
 *   barrier, bcast (8 B, or 100 KiB to 1 MiB), allreduce (MPI_Allreduce, MPI_Reduce,
 *             MPI_Allgather or MPI_Scan of 1 to 1000 int64) on MPI_COMM_WORLD, on the
 *             duplicate, or on a split of MPI_COMM_WORLD in two halves (every rank in its half);
 *   send      disjoint random pairs: MPI_Send or MPI_Ssend, and MPI_Recv (the sender or
 *             MPI_ANY_SOURCE; the tag or MPI_ANY_TAG), up to 256 KiB, on MPI_COMM_WORLD or
 *             the duplicate;
 *   ring      MPI_Sendrecv or MPI_Sendrecv_replace to the next rank of the duplicate or of the
 *             split (not on MPI_COMM_WORLD, where dynamic broadcast is on: not drawn there);
 *   irecv     disjoint random pairs: MPI_Irecv + MPI_Wait against MPI_Isend + MPI_Wait;
 *   dupfree   MPI_Comm_dup of MPI_COMM_WORLD or of the split, sometimes an MPI_Barrier and
 *             an MPI_Bcast on it, or MPI_Comm_split of either (some ranks MPI_UNDEFINED),
 *             sometimes an MPI_Allgather that checks the order and an MPI_Barrier; MPI_Comm_free.
 *   goal      a GOAL schedule built with the MPICAST_Goal_* calls on one of three handles of
 *             MPI_COMM_WORLD (one not busy with an earlier run): a random root sends to a
 *             random set of ranks down a random tree (each relay's sends `requ` its receive),
 *             and sometimes the first of them then multicasts the bytes to every other rank
 *             (MPICAST_Goal_mcast_send/_recv). Every rank with a part starts its run and
 *             collects it at once (MPICAST_Goal_wait, or a MPICAST_Goal_test loop) or at a
 *             later step: until then its relays forward only because they sit in other MPI
 *             calls (the later steps' blocking calls and waits).
 * Before a step's action one random rank may sleep up to 3 ms (a rank late into MPI). Completions
 * that were put off happen at the start of their step (one by one, in reverse, by
 * MPICAST_Waitall and MPI_Waitall, by MPICAST_Testsome and MPI_Testsome, by MPICAST_Testany
 * and MPI_Waitany, or by a loop of MPICAST_Test and MPI_Test) and at the program's end
 * (MPICAST_Waitall, MPI_Waitall); then MPI_Barrier(MPI_COMM_WORLD). Collectives are called by
 * every rank of their communicator in the same order and every blocking receive has its send
 * in the same step, so each program is a correct MPI program: it must complete whoever relays
 * through whom. Every byte received is checked against a pattern of (seed, program, step,
 * root, size), and so are the bytes past the message in a longer buffer, the statuses
 * (source, tag, MPI_Get_count) and the sums.
 *
 * --reference: the same programs with every extension call replaced by point-to-point
 *   messages on a duplicate of MPI_COMM_WORLD (the root MPI_Isend's to each destination, the
 *   destinations MPI_Irecv, with the same forms and the same deferrals): the same bytes must
 *   arrive either way, which is what the pattern checks.
 * --corrupt: a self-test of the checks: every rank flips a byte of the first extension message
 *   it receives, which must fail, naming the seed and the program.
 *
 * A failure names the seed, the program and the step, and the command line (with the MPICAST_
 * settings of the run) that replays the program alone; a failure that needs what ran before
 * it (timing, mpicast's state) replays with --first F --programs P - F + 1. After --watchdog
 * seconds (default 8) without a finished step, every rank prints where it is (program, step,
 * call) on stderr, so that a hang that ends by MPICAST_TIMEOUT_MS or the test's timeout can be
 * replayed; after --hang-exit seconds (default 40; 0: never) the rank gives up with a FAIL line
 * and exits, which ends the job (a rank blocked in a host MPI call has no MPICAST_TIMEOUT_MS to
 * end it). Rank 0 prints
 * "int_progress: N programs ok" at the end, with the time per program. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

/* The dynamic broadcast calls as the test expects them (identical redeclarations of
 * mpicast.h's: a change of signature stops the build here). Before the macros below. */
int MPICAST_Dbcast_enable(MPI_Comm comm);
int MPICAST_Dbcast(const void *buf, int count, MPI_Datatype datatype, const int *recipients,
                   const int *priorities, int n, int tag, MPI_Comm comm,
                   MPICAST_Request **request);
int MPICAST_Send_defer(int64_t key, int dest, int tag, int priority, MPI_Comm comm);
int MPICAST_Send_release(int64_t key, const void *buf, int count, MPI_Datatype datatype,
                         MPICAST_Request **request);

#ifndef MPICAST_LINKED
/* Preloaded: every extension call below goes through api.h's lookup. */
#define MPICAST_Mcast_enable API(MPICAST_Mcast_enable)
#define MPICAST_Dbcast_enable API(MPICAST_Dbcast_enable)
#define MPICAST_Imcast API(MPICAST_Imcast)
#define MPICAST_Dbcast API(MPICAST_Dbcast)
#define MPICAST_Send_defer API(MPICAST_Send_defer)
#define MPICAST_Send_release API(MPICAST_Send_release)
#define MPICAST_Mcast_irecv API(MPICAST_Mcast_irecv)
#define MPICAST_Mcast_iprobe API(MPICAST_Mcast_iprobe)
#define MPICAST_Wait API(MPICAST_Wait)
#define MPICAST_Test API(MPICAST_Test)
#define MPICAST_Waitall API(MPICAST_Waitall)
#define MPICAST_Testsome API(MPICAST_Testsome)
#define MPICAST_Testany API(MPICAST_Testany)
#define MPICAST_Goal_create API(MPICAST_Goal_create)
#define MPICAST_Goal_send API(MPICAST_Goal_send)
#define MPICAST_Goal_recv API(MPICAST_Goal_recv)
#define MPICAST_Goal_mcast_send API(MPICAST_Goal_mcast_send)
#define MPICAST_Goal_mcast_recv API(MPICAST_Goal_mcast_recv)
#define MPICAST_Goal_requ API(MPICAST_Goal_requ)
#define MPICAST_Goal_compile API(MPICAST_Goal_compile)
#define MPICAST_Goal_start API(MPICAST_Goal_start)
#define MPICAST_Goal_wait API(MPICAST_Goal_wait)
#define MPICAST_Goal_test API(MPICAST_Goal_test)
#define MPICAST_Goal_error API(MPICAST_Goal_error)
#define MPICAST_Goal_free API(MPICAST_Goal_free)
#endif

enum {
  MAXR = 32,        /* ranks */
  MAXSTEPS = 80,    /* tags: 96 per step (tag_of) */
  SMALL_MAX = 1000, /* small messages: 1 .. 1000 B */
  LARGE_MAX = 256 * 1024,
  BCAST_MIN = 100 * 1024,
  BCAST_MAX = 1024 * 1024,
  RING_MAX = 64 * 1024,
  SLACK = 64, /* a longer receive buffer: at most this much longer */
  MAXPEND = MAXSTEPS * MAXR + 64, /* requests outstanding on a rank */
  NGOAL = 3,                       /* GOAL handles: runs outstanding at once */
};

enum kind {
  K_IMCAST,
  K_DBCAST,
  K_RELEASE,
  K_MULTI,
  K_BARRIER,
  K_BCAST,
  K_ALLREDUCE,
  K_SEND,
  K_RING,
  K_IRECV,
  K_DUPFREE,
  K_GOAL,
  NKINDS
};
static const char *kind_name[NKINDS] = {"imcast", "dbcast", "release", "multi",
                                        "barrier", "bcast", "allreduce", "send",
                                        "ring", "irecv", "dupfree", "goal"};
/* Out of 100. */
static const int kind_weight[NKINDS] = {18, 14, 8, 9, 7, 9, 7, 9, 5, 6, 4, 4};

enum { C_WORLD, C_DUP, C_SPLIT };
static const char *comm_name[3] = {"world", "dup", "split"};

/* How a destination receives. Extension receives (imcast, not --reference): MF_*. MPI
 * receives: RF_*. */
enum { MF_WAIT, MF_DEFER, MF_IPROBE, MF_TEST, NMF };
enum { RF_RECV, RF_IRECV_WAIT, RF_PROBE, RF_DEFER, RF_IPROBE, RF_TEST, RF_MPROBE, NRF };
static const char *mf_name[NMF] = {"Mcast_irecv+Wait", "Mcast_irecv deferred",
                                   "Mcast_iprobe loop+Mcast_irecv+Wait", "Mcast_irecv+Test loop"};
static const char *rf_name[NRF] = {"MPI_Recv", "MPI_Irecv+MPI_Wait", "MPI_Probe+MPI_Recv",
                                   "MPI_Irecv deferred", "MPI_Iprobe loop+MPI_Recv",
                                   "MPI_Irecv+MPI_Test loop", "MPI_Mprobe+MPI_Mrecv"};

typedef struct {
  int dest;    /* receiver */
  int from;    /* the message's root */
  int tagi;    /* which of the step's tags: 0, 1 (release), the root (multi) */
  int form;    /* MF_* (imcast) or RF_* */
  int any_src; /* MPI_ANY_SOURCE */
  int any_tag; /* MPI_ANY_TAG (never with any_src, never deferred) */
  int due;     /* step at whose start a deferred receive completes (K: the end) */
  size_t cap;  /* receive buffer: len .. len + SLACK */
} recv_t;

typedef struct {
  int kind, comm, root;
  size_t len;
  int nrecv;
  recv_t r[MAXR * MAXR];
  int dests[MAXR], ndests; /* imcast/dbcast: the root's list, in its order */
  int prio[MAXR], use_prio;
  int root_due; /* the root's request (imcast, dbcast, release, reference sends) */
  /* release: the deferred sends, repeats included, and the step that registers them */
  int ndefer, defer_at;
  struct {
    int dest, tagi, prio;
  } defer[4 * MAXR];
  int npairs, pair_from[MAXR / 2], pair_to[MAXR / 2];
  int ssend, large, with_coll, count;
  /* multi: each rank with mroot multicasts (mtype 0: MPICAST_Imcast on comm, 1:
   * MPICAST_Dbcast on MPI_COMM_WORLD) mlen bytes to its mnd ranks mdests, its request due at
   * mdue; the receives are r[], by root */
  int mroot[MAXR], mtype[MAXR], mnd[MAXR], mdests[MAXR][MAXR], mdue[MAXR];
  size_t mlen[MAXR];
  int lag_rank, lag_us; /* lag_rank sleeps lag_us before the step's action (-1: nobody) */
  int complete_mode;    /* how this step's due completions go: 0..5 */
  int variant;          /* allreduce: which collective; ring: Sendrecv(_replace); dupfree */
  int colors[MAXR];     /* dupfree by MPI_Comm_split: each world rank's color (-1: none) */
  /* goal: the handle, dests[i] receives from parent[i] (-1: the root), the relay dests[0]
   * multicasts to every rank when gmcast, every part collects its run at root_due by
   * gcollect (0: MPICAST_Goal_wait, 1: a MPICAST_Goal_test loop) */
  int handle, parent[MAXR], gmcast, gcollect;
} step_t;

/* One outstanding request of this rank. */
typedef struct {
  int mc;                 /* MPICAST_Request, else MPI_Request */
  int goal;               /* a GOAL run: mr is its request, collected by MPICAST_Goal_* */
  MPICAST_Request *mr;
  MPI_Request r;
  int recv;               /* a receive to check (else a root's send) */
  uint8_t *buf;           /* receives: owned */
  size_t cap, len;
  uint64_t pseed;
  int root, tag, any_src, any_tag, step, due;
  const char *what;
  MPICAST_Goal *gh; /* a GOAL run's handle */
  uint8_t *mbuf;    /* a GOAL run's multicast receive: owned, mcap bytes, len of them sent */
  size_t mcap;
  int gcollect;
} pend_t;

static int rank, nranks;
static MPI_Comm dupc, splitc, refc; /* duplicate, halves, reference traffic */
static MPICAST_Goal *goals[NGOAL];  /* GOAL handles of MPI_COMM_WORLD (not with --reference) */
static int split_color, split_rank, split_size, split_members[MAXR];
static int reference, corrupt, corrupt_done, verbose;
static uint64_t seed;
static int nsteps;
static char envhint[512]; /* the MPICAST_ settings of this run, for the replay line */

extern char **environ;

static void make_envhint(void) {
  size_t n = 0;
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "MPICAST_", 8) != 0) continue;
    int w = snprintf(envhint + n, sizeof envhint - n, "%s ", *e);
    if (w < 0 || (size_t)w >= sizeof envhint - n) break;
    n += (size_t)w;
  }
}

/* Where this rank is, for failure messages and the watchdog. */
static volatile int cur_prog = -1, cur_step = -1;
static volatile long progress_ticks;
static const char *volatile cur_where = "start";
static volatile int finished;
static int watchdog_s = 8;
static int hang_exit_s = 40;

static pend_t *pend;
static int npend, pend_cap;
static void **step_bufs; /* roots' buffers that must live until the program's end */
static int nstep_bufs;
static long kind_count[NKINDS];
static long n_checked_msgs;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tc_fail("seed %" PRIu64 " program %d step %d: %s; replay: %s-np %d int_progress --seed %" PRIu64
          " --first %d --programs 1 --steps %d%s",
          seed, cur_prog, cur_step, msg, envhint, nranks, seed, cur_prog, nsteps,
          reference ? " --reference" : "");
}

#define REQUIRE(c, ...)          \
  do {                           \
    if (!(c)) fail(__VA_ARGS__); \
  } while (0)

static void *watchdog(void *arg) {
  (void)arg;
  long last = -1;
  int told = 0;
  double since = tc_now();
  while (!finished) {
    tc_sleep_ms(100);
    long t = progress_ticks;
    if (t != last) {
      last = t;
      since = tc_now();
      told = 0;
      continue;
    }
    if (!told && tc_now() - since >= watchdog_s) {
      char msg[1200];
      int n = snprintf(msg, sizeof msg,
                       "[rank %d] int_progress: no progress for %d s: seed %" PRIu64
                       " program %d step %d, in %s (replay: %s-np %d int_progress --seed %" PRIu64
                       " --first %d --programs 1 --steps %d%s)\n",
                       rank, watchdog_s, seed, cur_prog, cur_step, cur_where, envhint, nranks,
                       seed, cur_prog, nsteps, reference ? " --reference" : "");
      if (n > 0 && write(2, msg, (size_t)n) < 0) {
      }
      told = 1;
    }
    if (hang_exit_s > 0 && tc_now() - since >= hang_exit_s) {
      char msg[1200];
      int n = snprintf(msg, sizeof msg,
                       "[rank %d] int_progress: FAIL: hung for %d s: seed %" PRIu64
                       " program %d step %d, in %s: exiting (replay: %s-np %d int_progress "
                       "--seed %" PRIu64 " --first %d --programs 1 --steps %d%s)\n",
                       rank, hang_exit_s, seed, cur_prog, cur_step, cur_where, envhint, nranks,
                       seed, cur_prog, nsteps, reference ? " --reference" : "");
      if (n > 0 && write(2, msg, (size_t)n) < 0) {
      }
      _exit(3);
    }
  }
  return NULL;
}

static void at(const char *where) {
  cur_where = where;
  progress_ticks++;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

static int rnd(uint64_t *st, int n) { return (int)(tc_rand(st) % (uint64_t)n); }

/* The pattern of a message: (seed, program, step, tag index) and the root, the size. */
static uint64_t pseed_of(int prog, int step, int sub, int root, size_t len) {
  uint64_t iter = mix(seed ^ 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)prog << 16) ^
                  ((uint64_t)step << 4) ^ (uint64_t)sub;
  return tc_pattern_seed(root, iter, len);
}

/* Tag t (0 .. 95) of step s: unique in the program, and programs next to each other differ. */
static int tag_of(int prog, int step, int t) { return (prog % 4) * 8192 + step * 96 + t; }

static size_t msg_len(uint64_t *st) {
  if (rnd(st, 100) < 60) return 1 + (size_t)rnd(st, SMALL_MAX);
  return SMALL_MAX + 1 + (size_t)rnd(st, LARGE_MAX - SMALL_MAX);
}

static size_t cap_of(uint64_t *st, size_t len) {
  return rnd(st, 2) ? len : len + 1 + (size_t)rnd(st, SLACK);
}

/* A random non-empty set of the ranks other than root, in a random order. */
static int pick_set(uint64_t *st, int root, int *out) {
  int n = 0;
  int p = 25 + rnd(st, 60);
  while (n == 0)
    for (int d = 0; d < nranks; d++)
      if (d != root && rnd(st, 100) < p) out[n++] = d;
  for (int i = n - 1; i > 0; i--) {
    int j = rnd(st, i + 1), t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return n;
}

static int pick_due(uint64_t *st, int s, int K) { return s + 1 + rnd(st, K - s); }

static void gen_mpi_recv(uint64_t *st, recv_t *r, int s, int K) {
  r->form = rnd(st, NRF);
  r->any_src = rnd(st, 100) < 30;
  r->any_tag = !r->any_src && r->form != RF_DEFER && rnd(st, 100) < 20;
  r->due = r->form == RF_DEFER ? pick_due(st, s, K) : s;
}

static void gen_mc_recv(uint64_t *st, recv_t *r, int s, int K) {
  r->form = rnd(st, 100) < 35 ? MF_DEFER : rnd(st, NMF);
  r->any_src = rnd(st, 2);
  /* Not with MPICAST_Mcast_iprobe either: it may report a multicast that a receive posted
   * before (one still outstanding, from this root) will take (docs/imcast.md). */
  r->any_tag = !r->any_src && (r->form == MF_WAIT || r->form == MF_TEST) && rnd(st, 100) < 25;
  r->due = r->form == MF_DEFER ? pick_due(st, s, K) : s;
}

/* A goal step's tree and handle; `busy[h]` is the step at whose start handle h's run is
 * collected. With every handle busy the step becomes a barrier. */
static void gen_goal(uint64_t *st, step_t *p, int s, int *busy) {
  p->comm = C_WORLD;
  p->len = msg_len(st);
  p->ndests = pick_set(st, p->root, p->dests);
  for (int i = 0; i < p->ndests; i++) {
    p->parent[i] = i == 0 ? -1 : rnd(st, i + 1) - 1;
    p->r[i].cap = cap_of(st, p->len);
  }
  p->gmcast = rnd(st, 100) < 30;
  for (int w = 0; w < nranks; w++) p->r[MAXR + w].cap = cap_of(st, p->len);
  p->gcollect = rnd(st, 2);
  p->handle = -1;
  for (int h = 0; h < NGOAL && p->handle < 0; h++)
    if (busy[h] <= s) p->handle = h;
  if (p->handle < 0) {
    p->kind = K_BARRIER;
    return;
  }
  busy[p->handle] = p->root_due;
}

static void gen_program(int prog, int K, step_t *steps) {
  uint64_t st = mix(seed + 0x243f6a8885a308d3ULL * (uint64_t)(prog + 1));
  int busy[NGOAL];
  for (int h = 0; h < NGOAL; h++) busy[h] = -1;
  for (int s = 0; s < K; s++) {
    step_t *p = &steps[s];
    memset(p, 0, sizeof *p);
    int w = rnd(&st, 100), k = 0;
    while (w >= kind_weight[k]) w -= kind_weight[k++];
    p->kind = k;
    p->complete_mode = rnd(&st, 6);
    p->variant = rnd(&st, 4);
    p->root = rnd(&st, nranks);
    p->root_due = rnd(&st, 2) ? s : pick_due(&st, s, K);
    p->lag_rank = rnd(&st, 100) < 25 ? rnd(&st, nranks) : -1;
    p->lag_us = rnd(&st, 3000);
    switch (k) {
    case K_IMCAST:
      p->comm = rnd(&st, 3) == 0 ? C_DUP : C_WORLD;
      p->len = msg_len(&st);
      p->ndests = pick_set(&st, p->root, p->dests);
      p->nrecv = p->ndests;
      for (int i = 0; i < p->ndests; i++) {
        recv_t *r = &p->r[i];
        r->dest = p->dests[i];
        r->from = p->root;
        gen_mc_recv(&st, r, s, K);
        r->cap = cap_of(&st, p->len);
      }
      break;
    case K_DBCAST:
      p->comm = C_WORLD;
      p->len = msg_len(&st);
      p->ndests = pick_set(&st, p->root, p->dests);
      p->use_prio = rnd(&st, 2);
      for (int i = 0; i < p->ndests; i++) p->prio[i] = rnd(&st, 4);
      p->nrecv = p->ndests;
      for (int i = 0; i < p->ndests; i++) {
        p->r[i].dest = p->dests[i];
        p->r[i].from = p->root;
        gen_mpi_recv(&st, &p->r[i], s, K);
        p->r[i].cap = cap_of(&st, p->len);
      }
      break;
    case K_RELEASE: {
      p->comm = C_WORLD;
      p->len = msg_len(&st);
      p->defer_at = rnd(&st, s + 1);
      p->ndefer = 1 + rnd(&st, 2 * (nranks - 1));
      for (int i = 0; i < p->ndefer; i++) {
        int d = rnd(&st, nranks - 1);
        p->defer[i].dest = d >= p->root ? d + 1 : d;
        p->defer[i].tagi = rnd(&st, 100) < 30;
        p->defer[i].prio = rnd(&st, 4);
      }
      /* One message per distinct (destination, tag). */
      for (int i = 0; i < p->ndefer; i++) {
        int seen = 0;
        for (int j = 0; j < p->nrecv; j++)
          seen |= p->r[j].dest == p->defer[i].dest && p->r[j].tagi == p->defer[i].tagi;
        if (seen) continue;
        recv_t *r = &p->r[p->nrecv++];
        r->dest = p->defer[i].dest;
        r->from = p->root;
        r->tagi = p->defer[i].tagi;
        gen_mpi_recv(&st, r, s, K);
        r->cap = cap_of(&st, p->len);
      }
      /* A rank with both tags cannot tell with MPI_ANY_TAG which of the two comes first. */
      for (int i = 0; i < p->nrecv; i++)
        for (int j = 0; j < p->nrecv; j++)
          if (i != j && p->r[i].dest == p->r[j].dest) p->r[i].any_tag = 0;
      break;
    }
    case K_MULTI: {
      p->comm = rnd(&st, 3) == 0 ? C_DUP : C_WORLD;
      int any = 0;
      for (int r = 0; r < nranks; r++) any |= p->mroot[r] = rnd(&st, 100) < 50;
      if (!any) p->mroot[p->root] = 1;
      for (int r = 0; r < nranks; r++) {
        if (!p->mroot[r]) continue;
        p->mtype[r] = rnd(&st, 2);
        p->mlen[r] = rnd(&st, 100) < 70 ? 1 + (size_t)rnd(&st, SMALL_MAX) : msg_len(&st);
        p->mnd[r] = pick_set(&st, r, p->mdests[r]);
        p->mdue[r] = rnd(&st, 2) ? s : pick_due(&st, s, K);
        for (int i = 0; i < p->mnd[r]; i++) {
          recv_t *x = &p->r[p->nrecv++];
          x->dest = p->mdests[r][i];
          x->from = r;
          x->tagi = r;
          if (p->mtype[r] == 0)
            gen_mc_recv(&st, x, s, K);
          else
            gen_mpi_recv(&st, x, s, K);
          x->cap = cap_of(&st, p->mlen[r]);
        }
      }
      break;
    }
    case K_BARRIER:
    case K_ALLREDUCE:
      p->comm = rnd(&st, 3);
      p->count = 1 + rnd(&st, 1000);
      break;
    case K_BCAST:
      p->comm = rnd(&st, 3);
      p->large = rnd(&st, 100) < 35;
      p->len = p->large ? BCAST_MIN + (size_t)rnd(&st, BCAST_MAX - BCAST_MIN + 1) : 8;
      break;
    case K_SEND:
    case K_IRECV: {
      p->comm = rnd(&st, 2) ? C_DUP : C_WORLD;
      p->len = msg_len(&st);
      p->ssend = rnd(&st, 4) == 0;
      int perm[MAXR];
      for (int i = 0; i < nranks; i++) perm[i] = i;
      for (int i = nranks - 1; i > 0; i--) {
        int j = rnd(&st, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
      }
      p->npairs = 1 + rnd(&st, nranks / 2);
      for (int i = 0; i < p->npairs; i++) {
        p->pair_from[i] = perm[2 * i];
        p->pair_to[i] = perm[2 * i + 1];
      }
      /* The receive's form: any source / any tag (blocking receives only). */
      p->r[0].any_src = rnd(&st, 100) < 30;
      p->r[0].any_tag = !p->r[0].any_src && rnd(&st, 100) < 20;
      p->r[0].cap = cap_of(&st, p->len);
      break;
    }
    case K_RING:
      p->comm = rnd(&st, 2) ? C_DUP : C_SPLIT;
      p->len = 1 + (size_t)rnd(&st, RING_MAX);
      break;
    case K_DUPFREE:
      p->comm = rnd(&st, 2) ? C_WORLD : C_SPLIT;
      p->with_coll = rnd(&st, 100) < 30;
      for (int r = 0; r < nranks; r++) p->colors[r] = rnd(&st, 10) == 0 ? -1 : rnd(&st, 2);
      break;
    case K_GOAL:
      gen_goal(&st, p, s, busy);
      break;
    }
  }
}

static MPI_Comm comm_of(int c) {
  return c == C_WORLD ? MPI_COMM_WORLD : c == C_DUP ? dupc : splitc;
}

static void poison_buf(uint8_t *buf, size_t cap, uint64_t pseed) { tc_poison(buf, cap, pseed); }

static void check_bytes(const uint8_t *buf, size_t cap, size_t len, uint64_t pseed, int root,
                        const char *what);

/* Checks a received message: status, count, every byte, and the bytes past it. */
static void check_msg(const uint8_t *buf, size_t cap, size_t len, uint64_t pseed,
                      const MPI_Status *s, int root, int tag, const char *what) {
  REQUIRE(s->MPI_SOURCE == root && s->MPI_TAG == tag,
          "%s: status says source %d tag %d, want %d and %d", what, s->MPI_SOURCE, s->MPI_TAG,
          root, tag);
  int count = -1;
  MPI_Get_count(s, MPI_BYTE, &count);
  REQUIRE(count == (int)len, "%s from %d: MPI_Get_count %d, want %zu", what, root, count, len);
  check_bytes(buf, cap, len, pseed, root, what);
}

/* Checks every byte of a message and the bytes past it (up to cap). */
static void check_bytes(const uint8_t *buf, size_t cap, size_t len, uint64_t pseed, int root,
                        const char *what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < len; i++)
    if (buf[i] != tc_pattern_byte(pseed, i) && bad++ == 0) first = i;
  REQUIRE(bad == 0, "%s from %d, %zu bytes: %zu wrong, first at offset %zu (0x%02x, want 0x%02x)",
          what, root, len, bad, first, buf[first], tc_pattern_byte(pseed, first));
  for (size_t i = len; i < cap; i++) {
    uint8_t poison = (uint8_t)(0xff ^ tc_pattern_byte(pseed, i));
    REQUIRE(buf[i] == poison,
            "%s from %d: byte %zu past the %zu-byte message was written (buffer of %zu)", what,
            root, i, len, cap);
  }
  n_checked_msgs++;
}

/* The self-test: spoil the first extension message received in this launch. */
static void maybe_corrupt(uint8_t *buf, size_t len) {
  if (corrupt && !corrupt_done && len > 0) {
    buf[len / 2] ^= 0x40;
    corrupt_done = 1;
  }
}

static pend_t *new_pend(void) {
  REQUIRE(npend < MAXPEND, "more than %d requests outstanding", MAXPEND);
  if (npend == pend_cap) {
    pend_cap = pend_cap ? 2 * pend_cap : 64;
    pend = realloc(pend, sizeof(pend_t) * (size_t)pend_cap);
    if (!pend) tc_fail("out of memory");
  }
  pend_t *e = &pend[npend++];
  memset(e, 0, sizeof *e);
  e->r = MPI_REQUEST_NULL;
  return e;
}

static void keep_buf(void *b) {
  step_bufs = realloc(step_bufs, sizeof(void *) * (size_t)(nstep_bufs + 1));
  if (!step_bufs) tc_fail("out of memory");
  step_bufs[nstep_bufs++] = b;
}

/* After an outstanding request completed with status s: check it. */
static void finish(pend_t *e, const MPI_Status *s) {
  if (e->recv) {
    maybe_corrupt(e->buf, e->len);
    check_msg(e->buf, e->cap, e->len, e->pseed, s, e->root, e->tag, e->what);
    free(e->buf);
    e->buf = NULL;
  }
}

/* complete_due's work space. */
static int cd_idx[MAXPEND], cd_im[MAXPEND], cd_ir[MAXPEND], cd_indices[MAXPEND];
static MPICAST_Request *cd_mr[MAXPEND];
static MPI_Request cd_r[MAXPEND];
static MPI_Status cd_ms[MAXPEND], cd_rs[MAXPEND];
static char cd_done[MAXPEND];

/* Collects a GOAL run and checks what it received. */
static void collect_goal(pend_t *e) {
  int rc;
  if (e->gcollect == 0) {
    at("MPICAST_Goal_wait");
    rc = MPICAST_Goal_wait(e->mr);
  } else {
    at("a MPICAST_Goal_test loop");
    for (int done = 0; !done;) {
      rc = MPICAST_Goal_test(e->mr, &done);
      if (rc != MPICAST_OK) break;
    }
  }
  REQUIRE(rc == MPICAST_OK, "%s of step %d: status %d: %s", e->what, e->step, rc,
          MPICAST_Goal_error(e->gh));
  if (e->recv) {
    maybe_corrupt(e->buf, e->len);
    check_bytes(e->buf, e->cap, e->len, e->pseed, e->root, e->what);
  }
  if (e->mbuf) check_bytes(e->mbuf, e->mcap, e->len, e->pseed, e->root, "goal multicast");
  free(e->buf);
  free(e->mbuf);
  e->buf = e->mbuf = NULL;
}

/* Collects this rank's GOAL runs due at step d (all when d < 0), in their order. */
static void complete_goals(int d) {
  int j = 0;
  for (int i = 0; i < npend; i++) {
    if (pend[i].goal && (d < 0 || pend[i].due == d)) {
      collect_goal(&pend[i]);
      continue;
    }
    pend[j++] = pend[i];
  }
  npend = j;
}

/* Completes this rank's outstanding requests due at step d (all of them when d < 0): GOAL
 * runs first, then the others by `mode`. */
static void complete_due(int d, int mode) {
  complete_goals(d);
  int *idx = cd_idx, n = 0;
  for (int i = 0; i < npend; i++)
    if (d < 0 || pend[i].due == d) idx[n++] = i;
  if (n == 0) return;
  at(d < 0 ? "completing everything outstanding at the program's end"
           : "completing deferred requests");
  MPI_Status s;
  int rc;
  if (mode == 0 || mode == 1) {
    for (int k = 0; k < n; k++) {
      pend_t *e = &pend[idx[mode == 0 ? k : n - 1 - k]];
      memset(&s, 0, sizeof s);
      if (e->mc) {
        rc = MPICAST_Wait(&e->mr, &s);
        REQUIRE(rc == MPICAST_OK && e->mr == NULL, "MPICAST_Wait (deferred %s of step %d): %d",
                e->what, e->step, rc);
      } else {
        MPI_Wait(&e->r, &s);
      }
      finish(e, &s);
    }
  } else if (mode == 2) {
    MPICAST_Request **mr = cd_mr;
    MPI_Request *r = cd_r;
    MPI_Status *ms = cd_ms, *rs = cd_rs;
    int nm = 0, nr = 0, *im = cd_im, *ir = cd_ir;
    for (int k = 0; k < n; k++) {
      pend_t *e = &pend[idx[k]];
      if (e->mc) {
        im[nm] = idx[k];
        mr[nm++] = e->mr;
      } else {
        ir[nr] = idx[k];
        r[nr++] = e->r;
      }
    }
    if (nm) {
      memset(ms, 0, sizeof(MPI_Status) * (size_t)nm);
      rc = MPICAST_Waitall(nm, mr, ms);
      REQUIRE(rc == MPICAST_OK, "MPICAST_Waitall of %d deferred requests: %d", nm, rc);
      for (int k = 0; k < nm; k++) {
        REQUIRE(mr[k] == NULL, "MPICAST_Waitall left request %d", k);
        pend[im[k]].mr = NULL;
        finish(&pend[im[k]], &ms[k]);
      }
    }
    if (nr) {
      MPI_Waitall(nr, r, rs);
      for (int k = 0; k < nr; k++) {
        pend[ir[k]].r = r[k];
        finish(&pend[ir[k]], &rs[k]);
      }
    }
  } else if (mode == 4) {
    /* MPICAST_Testsome and MPI_Testsome until all are done. */
    MPICAST_Request **mr = cd_mr;
    MPI_Request *r = cd_r;
    MPI_Status *ms = cd_ms, *rs = cd_rs;
    int nm = 0, nr = 0, *im = cd_im, *ir = cd_ir, *indices = cd_indices, left;
    for (int k = 0; k < n; k++) {
      pend_t *e = &pend[idx[k]];
      if (e->mc) {
        im[nm] = idx[k];
        mr[nm++] = e->mr;
      } else {
        ir[nr] = idx[k];
        r[nr++] = e->r;
      }
    }
    for (left = nm + nr; left > 0;) {
      int out = 0;
      if (nm) {
        rc = MPICAST_Testsome(nm, mr, &out, indices, ms);
        REQUIRE(rc == MPICAST_OK, "MPICAST_Testsome of %d deferred requests: %d", nm, rc);
        if (out != MPI_UNDEFINED)
          for (int k = 0; k < out; k++) {
            int i = indices[k];
            REQUIRE(i >= 0 && i < nm && mr[i] == NULL, "MPICAST_Testsome: index %d", i);
            pend[im[i]].mr = NULL;
            finish(&pend[im[i]], &ms[k]);
            left--;
          }
      }
      if (nr) {
        MPI_Testsome(nr, r, &out, indices, rs);
        if (out != MPI_UNDEFINED)
          for (int k = 0; k < out; k++) {
            int i = indices[k];
            pend[ir[i]].r = r[i];
            finish(&pend[ir[i]], &rs[k]);
            left--;
          }
      }
    }
  } else if (mode == 5) {
    /* MPICAST_Testany over the multicast requests, MPI_Waitany over the others. */
    MPICAST_Request **mr = cd_mr;
    MPI_Request *r = cd_r;
    int nm = 0, nr = 0, *im = cd_im, *ir = cd_ir;
    for (int k = 0; k < n; k++) {
      pend_t *e = &pend[idx[k]];
      if (e->mc) {
        im[nm] = idx[k];
        mr[nm++] = e->mr;
      } else {
        ir[nr] = idx[k];
        r[nr++] = e->r;
      }
    }
    for (int left = nm; left > 0;) {
      int i = -1, flag = 0;
      memset(&s, 0, sizeof s);
      rc = MPICAST_Testany(nm, mr, &i, &flag, &s);
      REQUIRE(rc == MPICAST_OK, "MPICAST_Testany of %d deferred requests: %d", nm, rc);
      if (!flag) continue;
      REQUIRE(i >= 0 && i < nm && mr[i] == NULL, "MPICAST_Testany: index %d", i);
      pend[im[i]].mr = NULL;
      finish(&pend[im[i]], &s);
      left--;
    }
    for (int left = nr; left > 0; left--) {
      int i = -1;
      memset(&s, 0, sizeof s);
      MPI_Waitany(nr, r, &i, &s);
      REQUIRE(i >= 0 && i < nr && r[i] == MPI_REQUEST_NULL, "MPI_Waitany: index %d", i);
      pend[ir[i]].r = r[i];
      finish(&pend[ir[i]], &s);
    }
  } else {
    /* A test loop over all of them. */
    int left = n;
    char *done = cd_done;
    memset(done, 0, (size_t)n);
    while (left) {
      for (int k = 0; k < n; k++) {
        if (done[k]) continue;
        pend_t *e = &pend[idx[k]];
        int flag = 0;
        memset(&s, 0, sizeof s);
        if (e->mc) {
          rc = MPICAST_Test(&e->mr, &flag, &s);
          REQUIRE(rc == MPICAST_OK, "MPICAST_Test (deferred %s of step %d): %d", e->what,
                  e->step, rc);
        } else {
          MPI_Test(&e->r, &flag, &s);
        }
        if (flag) {
          done[k] = 1;
          left--;
          finish(e, &s);
        }
      }
    }
  }
  /* Drop the completed ones, keeping the others in their order. */
  int j = 0;
  for (int i = 0; i < npend; i++) {
    int gone = 0;
    for (int k = 0; k < n; k++) gone |= idx[k] == i;
    if (!gone) pend[j++] = pend[i];
  }
  npend = j;
}

/* ---------------------------------------------------------------------------------------- */
/* Receives. */

/* A receive by MPI calls (dbcast and release recipients, and everything under --reference). */
static void mpi_receive(int s, int root, size_t len, const recv_t *r, MPI_Comm comm, int tag,
                        uint64_t pseed, const char *what) {
  uint8_t *buf = malloc(r->cap + 1);
  REQUIRE(buf != NULL, "out of memory");
  poison_buf(buf, r->cap, pseed);
  int src = r->any_src ? MPI_ANY_SOURCE : root;
  int rtag = r->any_tag ? MPI_ANY_TAG : tag;
  MPI_Status st;
  memset(&st, 0, sizeof st);
  MPI_Request q = MPI_REQUEST_NULL;
  at(rf_name[r->form]);
  switch (r->form) {
  case RF_RECV:
    MPI_Recv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &st);
    break;
  case RF_IRECV_WAIT:
    MPI_Irecv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &q);
    MPI_Wait(&q, &st);
    REQUIRE(q == MPI_REQUEST_NULL, "%s: MPI_Wait left the request", what);
    break;
  case RF_PROBE:
  case RF_IPROBE: {
    MPI_Status ps;
    memset(&ps, 0, sizeof ps);
    if (r->form == RF_PROBE) {
      MPI_Probe(src, rtag, comm, &ps);
    } else {
      for (int flag = 0; !flag;) MPI_Iprobe(src, rtag, comm, &flag, &ps);
    }
    int count = -1;
    MPI_Get_count(&ps, MPI_BYTE, &count);
    REQUIRE(ps.MPI_SOURCE == root && ps.MPI_TAG == tag && count == (int)len,
            "%s: the probe says source %d tag %d count %d, want %d, %d, %zu", what, ps.MPI_SOURCE,
            ps.MPI_TAG, count, root, tag, len);
    MPI_Recv(buf, (int)r->cap, MPI_BYTE, ps.MPI_SOURCE, ps.MPI_TAG, comm, &st);
    break;
  }
  case RF_TEST:
    MPI_Irecv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &q);
    for (int flag = 0; !flag;) MPI_Test(&q, &flag, &st);
    break;
  case RF_MPROBE: {
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status ps;
    memset(&ps, 0, sizeof ps);
    MPI_Mprobe(src, rtag, comm, &m, &ps);
    int count = -1;
    MPI_Get_count(&ps, MPI_BYTE, &count);
    REQUIRE(ps.MPI_SOURCE == root && ps.MPI_TAG == tag && count == (int)len,
            "%s: MPI_Mprobe says source %d tag %d count %d, want %d, %d, %zu", what,
            ps.MPI_SOURCE, ps.MPI_TAG, count, root, tag, len);
    MPI_Mrecv(buf, (int)r->cap, MPI_BYTE, &m, &st);
    REQUIRE(m == MPI_MESSAGE_NULL, "%s: MPI_Mrecv left the message handle", what);
    break;
  }
  case RF_DEFER: {
    pend_t *e = new_pend();
    e->recv = 1;
    e->buf = buf;
    e->cap = r->cap;
    e->len = len;
    e->pseed = pseed;
    e->root = root;
    e->tag = tag;
    e->step = s;
    e->due = r->due;
    e->what = what;
    MPI_Irecv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &e->r);
    return;
  }
  }
  maybe_corrupt(buf, len);
  check_msg(buf, r->cap, len, pseed, &st, root, tag, what);
  free(buf);
}

/* An imcast destination's receive by the extension calls. */
static void mc_receive(int s, int root, size_t len, const recv_t *r, MPI_Comm comm, int tag,
                       uint64_t pseed, const char *what) {
  uint8_t *buf = malloc(r->cap + 1);
  REQUIRE(buf != NULL, "out of memory");
  poison_buf(buf, r->cap, pseed);
  int src = r->any_src ? MPI_ANY_SOURCE : root;
  int rtag = r->any_tag ? MPI_ANY_TAG : tag;
  MPI_Status st;
  memset(&st, 0, sizeof st);
  at(mf_name[r->form]);
  if (r->form == MF_IPROBE) {
    MPI_Status ps;
    memset(&ps, 0, sizeof ps);
    for (int flag = 0; !flag;) {
      int rc = MPICAST_Mcast_iprobe(src, rtag, comm, &flag, &ps);
      REQUIRE(rc == MPICAST_OK, "%s: MPICAST_Mcast_iprobe returned %d", what, rc);
    }
    int count = -1;
    MPI_Get_count(&ps, MPI_BYTE, &count);
    REQUIRE(ps.MPI_SOURCE == root && ps.MPI_TAG == tag && count == (int)len,
            "%s: MPICAST_Mcast_iprobe says source %d tag %d count %d, want %d, %d, %zu", what,
            ps.MPI_SOURCE, ps.MPI_TAG, count, root, tag, len);
  }
  MPICAST_Request *q = NULL;
  int rc = MPICAST_Mcast_irecv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &q);
  REQUIRE(rc == MPICAST_OK && q != NULL, "%s: MPICAST_Mcast_irecv returned %d", what, rc);
  if (r->form == MF_DEFER) {
    pend_t *e = new_pend();
    e->mc = 1;
    e->mr = q;
    e->recv = 1;
    e->buf = buf;
    e->cap = r->cap;
    e->len = len;
    e->pseed = pseed;
    e->root = root;
    e->tag = tag;
    e->step = s;
    e->due = r->due;
    e->what = what;
    return;
  }
  if (r->form == MF_TEST) {
    for (int flag = 0; !flag;) {
      rc = MPICAST_Test(&q, &flag, &st);
      REQUIRE(rc == MPICAST_OK, "%s: MPICAST_Test returned %d", what, rc);
    }
  } else {
    rc = MPICAST_Wait(&q, &st);
    REQUIRE(rc == MPICAST_OK, "%s: MPICAST_Wait returned %d", what, rc);
  }
  REQUIRE(q == NULL, "%s: the completed request was not set to NULL", what);
  maybe_corrupt(buf, len);
  check_msg(buf, r->cap, len, pseed, &st, root, tag, what);
  free(buf);
}

/* The root's request of an extension call: now, or at its due step. */
static void root_request(int s, int due, MPICAST_Request *q, const char *what) {
  if (due == s) {
    MPI_Status st;
    int rc = MPICAST_Wait(&q, &st);
    REQUIRE(rc == MPICAST_OK && q == NULL, "%s: the root's MPICAST_Wait returned %d", what, rc);
    return;
  }
  pend_t *e = new_pend();
  e->mc = 1;
  e->mr = q;
  e->step = s;
  e->due = due;
  e->what = what;
}

/* --reference: the root's MPI_Isend of buf to dest with tag on refc. */
static void ref_send(int s, int due, const void *buf, size_t len, int dest, int tag,
                     const char *what) {
  pend_t *e = new_pend();
  e->step = s;
  e->due = due;
  e->what = what;
  MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, refc, &e->r);
}

/* ---------------------------------------------------------------------------------------- */
/* The steps. */

static void step_imcast(int prog, int s, const step_t *p) {
  int tag = tag_of(prog, s, 0);
  uint64_t pseed = pseed_of(prog, s, 0, p->root, p->len);
  MPI_Comm comm = reference ? refc : comm_of(p->comm);
  if (rank == p->root) {
    uint8_t *buf = malloc(p->len);
    REQUIRE(buf != NULL, "out of memory");
    tc_fill(buf, p->len, pseed);
    if (reference) {
      keep_buf(buf);
      at("reference MPI_Isend (imcast)");
      for (int i = 0; i < p->ndests; i++)
        ref_send(s, p->root_due, buf, p->len, p->dests[i], tag, "imcast's MPI_Isend");
      if (p->root_due == s) complete_due(s, 0);
      return;
    }
    MPICAST_Request *q = NULL;
    at("MPICAST_Imcast");
    int rc = MPICAST_Imcast(buf, (int)p->len, MPI_BYTE, p->dests, p->ndests, tag, comm, &q);
    REQUIRE(rc == MPICAST_OK && q != NULL, "MPICAST_Imcast of %zu B to %d ranks on %s: %d",
            p->len, p->ndests, comm_name[p->comm], rc);
    /* The data was taken: the buffer may change and go at once. */
    tc_poison(buf, p->len, pseed);
    free(buf);
    root_request(s, p->root_due, q, "imcast root");
    return;
  }
  for (int i = 0; i < p->nrecv; i++) {
    const recv_t *r = &p->r[i];
    if (r->dest != rank) continue;
    if (reference) {
      static const int map[NMF] = {RF_IRECV_WAIT, RF_DEFER, RF_IPROBE, RF_TEST};
      recv_t rr = *r;
      rr.form = map[r->form];
      mpi_receive(s, p->root, p->len, &rr, comm, tag, pseed, "imcast (reference)");
    } else {
      mc_receive(s, p->root, p->len, r, comm, tag, pseed, mf_name[r->form]);
    }
  }
}

static void step_dbcast(int prog, int s, const step_t *p) {
  int tag = tag_of(prog, s, 0);
  uint64_t pseed = pseed_of(prog, s, 0, p->root, p->len);
  MPI_Comm comm = reference ? refc : MPI_COMM_WORLD;
  if (rank == p->root) {
    uint8_t *buf = malloc(p->len);
    REQUIRE(buf != NULL, "out of memory");
    tc_fill(buf, p->len, pseed);
    if (reference) {
      keep_buf(buf);
      at("reference MPI_Isend (dbcast)");
      for (int i = 0; i < p->ndests; i++)
        ref_send(s, p->root_due, buf, p->len, p->dests[i], tag, "dbcast's MPI_Isend");
      if (p->root_due == s) complete_due(s, 0);
      return;
    }
    MPICAST_Request *q = NULL;
    at("MPICAST_Dbcast");
    int rc = MPICAST_Dbcast(buf, (int)p->len, MPI_BYTE, p->dests, p->use_prio ? p->prio : NULL,
                            p->ndests, tag, comm, &q);
    REQUIRE(rc == MPICAST_OK && q != NULL, "MPICAST_Dbcast of %zu B to %d ranks: %d", p->len,
            p->ndests, rc);
    tc_poison(buf, p->len, pseed);
    free(buf);
    root_request(s, p->root_due, q, "dbcast root");
    return;
  }
  for (int i = 0; i < p->nrecv; i++)
    if (p->r[i].dest == rank)
      mpi_receive(s, p->root, p->len, &p->r[i], comm, tag, pseed,
                  reference ? "dbcast (reference)" : rf_name[p->r[i].form]);
}

static int64_t key_of(int prog, int s) { return ((int64_t)prog << 8) | s; }

/* The root registers the deferred sends of release steps whose defer_at is s. */
static void register_defers(int prog, int s, const step_t *steps, int K) {
  if (reference) return;
  for (int t = s; t < K; t++) {
    const step_t *p = &steps[t];
    if (p->kind != K_RELEASE || p->defer_at != s || p->root != rank) continue;
    at("MPICAST_Send_defer");
    for (int i = 0; i < p->ndefer; i++) {
      int rc = MPICAST_Send_defer(key_of(prog, t), p->defer[i].dest,
                                  tag_of(prog, t, p->defer[i].tagi), p->defer[i].prio,
                                  MPI_COMM_WORLD);
      REQUIRE(rc == MPICAST_OK, "MPICAST_Send_defer(key of step %d, dest %d): %d", t,
              p->defer[i].dest, rc);
    }
  }
}

static void step_release(int prog, int s, const step_t *p) {
  /* Both tags carry the same bytes: the pattern of tag index 0. */
  uint64_t pseed = pseed_of(prog, s, 0, p->root, p->len);
  MPI_Comm comm = reference ? refc : MPI_COMM_WORLD;
  if (rank == p->root) {
    uint8_t *buf = malloc(p->len);
    REQUIRE(buf != NULL, "out of memory");
    tc_fill(buf, p->len, pseed);
    keep_buf(buf); /* until the request completes: the program's end at the latest */
    if (reference) {
      at("reference MPI_Isend (release)");
      for (int i = 0; i < p->nrecv; i++)
        ref_send(s, p->root_due, buf, p->len, p->r[i].dest, tag_of(prog, s, p->r[i].tagi),
                 "release's MPI_Isend");
      if (p->root_due == s) complete_due(s, 0);
      return;
    }
    MPICAST_Request *q = NULL;
    at("MPICAST_Send_release");
    int rc = MPICAST_Send_release(key_of(prog, s), buf, (int)p->len, MPI_BYTE, &q);
    REQUIRE(rc == MPICAST_OK && q != NULL, "MPICAST_Send_release of %zu B (%d sends): %d", p->len,
            p->ndefer, rc);
    root_request(s, p->root_due, q, "release root");
    return;
  }
  for (int i = 0; i < p->nrecv; i++)
    if (p->r[i].dest == rank)
      mpi_receive(s, p->root, p->len, &p->r[i], comm, tag_of(prog, s, p->r[i].tagi), pseed,
                  reference      ? "release (reference)"
                  : p->r[i].tagi ? "release, second tag"
                                 : "release");
}

/* Several roots at once, each multicasting or broadcasting to its own set; every receive of
 * a rank is posted or done in the order of the roots, the roots' requests completed after
 * them (a root's sends may need its receivers to receive first: under --reference, MPI_Isend's
 * rendezvous). */
static void step_multi(int prog, int s, const step_t *p) {
  MPI_Comm icomm = reference ? refc : comm_of(p->comm);
  if (p->mroot[rank]) {
    size_t len = p->mlen[rank];
    int tag = tag_of(prog, s, rank);
    uint64_t pseed = pseed_of(prog, s, 0, rank, len);
    uint8_t *buf = malloc(len);
    REQUIRE(buf != NULL, "out of memory");
    tc_fill(buf, len, pseed);
    if (reference) {
      keep_buf(buf);
      at("reference MPI_Isend (multi)");
      for (int i = 0; i < p->mnd[rank]; i++)
        ref_send(s, p->mdue[rank], buf, len, p->mdests[rank][i], tag, "multi's MPI_Isend");
    } else {
      MPICAST_Request *q = NULL;
      int rc;
      if (p->mtype[rank] == 0) {
        at("MPICAST_Imcast (multi)");
        rc = MPICAST_Imcast(buf, (int)len, MPI_BYTE, p->mdests[rank], p->mnd[rank], tag, icomm,
                            &q);
      } else {
        at("MPICAST_Dbcast (multi)");
        rc = MPICAST_Dbcast(buf, (int)len, MPI_BYTE, p->mdests[rank], NULL, p->mnd[rank], tag,
                            MPI_COMM_WORLD, &q);
      }
      REQUIRE(rc == MPICAST_OK && q != NULL, "MPICAST_%s of %zu B to %d ranks (multi): %d",
              p->mtype[rank] ? "Dbcast" : "Imcast", len, p->mnd[rank], rc);
      tc_poison(buf, len, pseed);
      free(buf);
      pend_t *e = new_pend();
      e->mc = 1;
      e->mr = q;
      e->step = s;
      e->due = p->mdue[rank];
      e->what = p->mtype[rank] ? "multi dbcast root" : "multi imcast root";
    }
  }
  for (int i = 0; i < p->nrecv; i++) {
    const recv_t *r = &p->r[i];
    if (r->dest != rank) continue;
    size_t len = p->mlen[r->from];
    int tag = tag_of(prog, s, r->from);
    uint64_t pseed = pseed_of(prog, s, 0, r->from, len);
    if (p->mtype[r->from] == 0) {
      if (reference) {
        static const int map[NMF] = {RF_IRECV_WAIT, RF_DEFER, RF_IPROBE, RF_TEST};
        recv_t rr = *r;
        rr.form = map[r->form];
        mpi_receive(s, r->from, len, &rr, icomm, tag, pseed, "multi imcast (reference)");
      } else {
        mc_receive(s, r->from, len, r, icomm, tag, pseed, "multi imcast");
      }
    } else {
      mpi_receive(s, r->from, len, r, reference ? refc : MPI_COMM_WORLD, tag, pseed,
                  reference ? "multi dbcast (reference)" : "multi dbcast");
    }
  }
  /* The roots' requests due now (the receives due now are done). */
  complete_due(s, p->complete_mode);
}

static void comm_info(int c, MPI_Comm *comm, int *me, int *size) {
  *comm = comm_of(c);
  MPI_Comm_rank(*comm, me);
  MPI_Comm_size(*comm, size);
}

static void step_bcast(int prog, int s, const step_t *p) {
  MPI_Comm comm;
  int me, size;
  comm_info(p->comm, &comm, &me, &size);
  int root = p->root % size;
  /* The halves broadcast different data: the root's world rank is in the pattern. */
  int wroot = p->comm == C_SPLIT ? split_members[root] : root;
  uint64_t pseed = pseed_of(prog, s, 0, wroot, p->len);
  uint8_t *buf = malloc(p->len);
  REQUIRE(buf != NULL, "out of memory");
  if (me == root)
    tc_fill(buf, p->len, pseed);
  else
    tc_poison(buf, p->len, pseed);
  at(p->large ? "MPI_Bcast (large)" : "MPI_Bcast (8 B)");
  MPI_Bcast(buf, (int)p->len, MPI_BYTE, root, comm);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < p->len; i++)
    if (buf[i] != tc_pattern_byte(pseed, i) && bad++ == 0) first = i;
  REQUIRE(bad == 0, "MPI_Bcast of %zu B from %d on %s: %zu bytes wrong, first at %zu", p->len,
          root, comm_name[p->comm], bad, first);
  free(buf);
}

static uint64_t contrib(int prog, int s, int r, int j) {
  return mix(seed ^ ((uint64_t)prog << 40) ^ ((uint64_t)s << 32) ^ ((uint64_t)r << 20) ^
             (uint64_t)j) >> 32;
}

/* The reductions and gathers: MPI_Allreduce, MPI_Reduce, MPI_Allgather, MPI_Scan (variant). */
static void step_allreduce(int prog, int s, const step_t *p) {
  static const char *names[4] = {"MPI_Allreduce", "MPI_Reduce", "MPI_Allgather", "MPI_Scan"};
  MPI_Comm comm;
  int me, size;
  comm_info(p->comm, &comm, &me, &size);
  int n = p->count, v = p->variant, root = p->root % size;
  size_t nout = v == 2 ? (size_t)n * (size_t)size : (size_t)n;
  uint64_t *in = malloc(sizeof(uint64_t) * (size_t)n), *out = malloc(sizeof(uint64_t) * nout);
  REQUIRE(in && out, "out of memory");
  for (int j = 0; j < n; j++) in[j] = contrib(prog, s, rank, j);
  for (size_t j = 0; j < nout; j++) out[j] = 0x5a5a5a5a5a5a5a5aULL;
  at(names[v]);
  if (v == 0)
    MPI_Allreduce(in, out, n, MPI_UINT64_T, MPI_SUM, comm);
  else if (v == 1)
    MPI_Reduce(in, out, n, MPI_UINT64_T, MPI_SUM, root, comm);
  else if (v == 2)
    MPI_Allgather(in, n, MPI_UINT64_T, out, n, MPI_UINT64_T, comm);
  else
    MPI_Scan(in, out, n, MPI_UINT64_T, MPI_SUM, comm);
  if (v == 1 && me != root) {
    for (int j = 0; j < n; j++)
      REQUIRE(out[j] == 0x5a5a5a5a5a5a5a5aULL, "MPI_Reduce wrote a non-root's buffer");
  } else if (v == 2) {
    for (int m = 0; m < size; m++)
      for (int j = 0; j < n; j++) {
        uint64_t want = contrib(prog, s, p->comm == C_SPLIT ? split_members[m] : m, j);
        REQUIRE(out[(size_t)m * (size_t)n + (size_t)j] == want,
                "MPI_Allgather of %d on %s: element %d of rank %d is %" PRIu64 ", want %" PRIu64,
                n, comm_name[p->comm], j, m, out[(size_t)m * (size_t)n + (size_t)j], want);
      }
  } else {
    int upto = v == 3 ? me + 1 : size; /* MPI_Scan: inclusive prefix */
    for (int j = 0; j < n; j++) {
      uint64_t want = 0;
      for (int m = 0; m < upto; m++)
        want += contrib(prog, s, p->comm == C_SPLIT ? split_members[m] : m, j);
      REQUIRE(out[j] == want, "%s of %d on %s: element %d is %" PRIu64 ", want %" PRIu64,
              names[v], n, comm_name[p->comm], j, out[j], want);
    }
  }
  free(in);
  free(out);
}

static void step_pairs(int prog, int s, const step_t *p) {
  MPI_Comm comm = comm_of(p->comm);
  int tag = tag_of(prog, s, 0);
  for (int i = 0; i < p->npairs; i++) {
    int from = p->pair_from[i], to = p->pair_to[i];
    uint64_t pseed = pseed_of(prog, s, 0, from, p->len);
    if (rank == from) {
      uint8_t *buf = malloc(p->len);
      REQUIRE(buf != NULL, "out of memory");
      tc_fill(buf, p->len, pseed);
      if (p->kind == K_SEND) {
        at(p->ssend ? "MPI_Ssend" : "MPI_Send");
        if (p->ssend)
          MPI_Ssend(buf, (int)p->len, MPI_BYTE, to, tag, comm);
        else
          MPI_Send(buf, (int)p->len, MPI_BYTE, to, tag, comm);
      } else {
        MPI_Request q;
        at("MPI_Isend + MPI_Wait");
        MPI_Isend(buf, (int)p->len, MPI_BYTE, to, tag, comm, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
      }
      free(buf);
    } else if (rank == to) {
      const recv_t *r = &p->r[0];
      uint8_t *buf = malloc(r->cap + 1);
      REQUIRE(buf != NULL, "out of memory");
      poison_buf(buf, r->cap, pseed);
      int src = r->any_src ? MPI_ANY_SOURCE : from;
      int rtag = r->any_tag ? MPI_ANY_TAG : tag;
      MPI_Status st;
      memset(&st, 0, sizeof st);
      if (p->kind == K_SEND) {
        at("MPI_Recv (pair)");
        MPI_Recv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &st);
      } else {
        MPI_Request q;
        at("MPI_Irecv + MPI_Wait (pair)");
        MPI_Irecv(buf, (int)r->cap, MPI_BYTE, src, rtag, comm, &q);
        MPI_Wait(&q, &st);
      }
      check_msg(buf, r->cap, p->len, pseed, &st, from, tag,
                p->kind == K_SEND ? "MPI_Recv of a pair" : "MPI_Irecv + MPI_Wait of a pair");
      free(buf);
    }
  }
}

static void step_ring(int prog, int s, const step_t *p) {
  MPI_Comm comm;
  int me, size;
  comm_info(p->comm, &comm, &me, &size);
  int next = (me + 1) % size, prev = (me + size - 1) % size;
  int wprev = p->comm == C_SPLIT ? split_members[prev] : prev;
  int tag = tag_of(prog, s, 0);
  uint64_t sseed = pseed_of(prog, s, 0, rank, p->len), rseed = pseed_of(prog, s, 0, wprev, p->len);
  uint8_t *out = malloc(p->len), *in = malloc(p->len);
  REQUIRE(out && in, "out of memory");
  tc_fill(out, p->len, sseed);
  tc_poison(in, p->len, rseed);
  MPI_Status st;
  if (p->variant % 2 == 0) {
    at("MPI_Sendrecv (ring)");
    MPI_Sendrecv(out, (int)p->len, MPI_BYTE, next, tag, in, (int)p->len, MPI_BYTE, prev, tag,
                 comm, &st);
    check_msg(in, p->len, p->len, rseed, &st, prev, tag, "MPI_Sendrecv in a ring");
  } else {
    at("MPI_Sendrecv_replace (ring)");
    MPI_Sendrecv_replace(out, (int)p->len, MPI_BYTE, next, tag, prev, tag, comm, &st);
    check_msg(out, p->len, p->len, rseed, &st, prev, tag, "MPI_Sendrecv_replace in a ring");
  }
  free(out);
  free(in);
}

static void step_dupfree(int prog, int s, const step_t *p) {
  MPI_Comm base = p->comm == C_WORLD ? MPI_COMM_WORLD : splitc, c;
  if (p->variant % 2) {
    /* MPI_Comm_split by the plan's colors (some ranks in none); the members' world ranks in
     * the order of their keys, checked through MPI_Allgather when there are collectives. */
    int color = p->colors[rank] < 0 ? MPI_UNDEFINED : p->colors[rank];
    at("MPI_Comm_split");
    MPI_Comm_split(base, color, nranks - rank, &c);
    if (color == MPI_UNDEFINED) {
      REQUIRE(c == MPI_COMM_NULL, "MPI_Comm_split with MPI_UNDEFINED gave a communicator");
      return;
    }
    int size, want = 0;
    MPI_Comm_size(c, &size);
    int bsize;
    MPI_Comm_size(base, &bsize);
    for (int b = 0; b < bsize; b++) {
      int w = p->comm == C_SPLIT ? split_members[b] : b;
      want += p->colors[w] == p->colors[rank];
    }
    REQUIRE(size == want, "MPI_Comm_split: %d ranks in my part, want %d", size, want);
    if (p->with_coll) {
      int *who = malloc(sizeof(int) * (size_t)size);
      REQUIRE(who != NULL, "out of memory");
      at("MPI_Allgather (new communicator)");
      MPI_Allgather(&rank, 1, MPI_INT, who, 1, MPI_INT, c);
      for (int i = 1; i < size; i++)
        REQUIRE(who[i] < who[i - 1], "MPI_Comm_split: world rank %d after %d (keys descend)",
                who[i], who[i - 1]);
      free(who);
      at("MPI_Barrier (new communicator)");
      MPI_Barrier(c);
    }
    at("MPI_Comm_free");
    MPI_Comm_free(&c);
    return;
  }
  at("MPI_Comm_dup");
  MPI_Comm_dup(base, &c);
  if (p->with_coll) {
    int me;
    MPI_Comm_rank(c, &me);
    at("MPI_Barrier (new communicator)");
    MPI_Barrier(c);
    uint64_t v = me == 0 ? mix(seed ^ (uint64_t)prog ^ ((uint64_t)s << 32)) : 0;
    at("MPI_Bcast (new communicator)");
    MPI_Bcast(&v, 1, MPI_UINT64_T, 0, c);
    REQUIRE(v == mix(seed ^ (uint64_t)prog ^ ((uint64_t)s << 32)),
            "MPI_Bcast of 8 B on a new duplicate of %s: wrong value", comm_name[p->comm]);
  }
  at("MPI_Comm_free");
  MPI_Comm_free(&c);
}

/* A GOAL run's parts for this rank: the receive from its parent, the sends to its children
 * (each after the receive), the multicast of the first destination, or its receive. Under
 * --reference the root sends to every rank that gets the bytes, and they receive by MPI. */
static void step_goal(int prog, int s, const step_t *p) {
  uint64_t pseed = pseed_of(prog, s, 0, p->root, p->len);
  int relay = p->dests[0], mine = -1;
  for (int i = 0; i < p->ndests; i++)
    if (p->dests[i] == rank) mine = i;
  if (rank != p->root && mine < 0 && !p->gmcast) return;
  uint8_t *buf = NULL;
  if (rank == p->root) {
    buf = malloc(p->len);
    REQUIRE(buf != NULL, "out of memory");
    tc_fill(buf, p->len, pseed);
    keep_buf(buf);
  }
  if (reference) {
    if (rank == p->root) {
      at("reference MPI_Isend (goal)");
      for (int i = 0; i < p->ndests; i++)
        ref_send(s, p->root_due, buf, p->len, p->dests[i], tag_of(prog, s, i), "goal's MPI_Isend");
      for (int w = 0; w < nranks && p->gmcast; w++)
        if (w != relay && w != p->root)
          ref_send(s, p->root_due, buf, p->len, w, tag_of(prog, s, MAXR + w), "goal's MPI_Isend");
      if (p->root_due == s) complete_due(s, 0);
      return;
    }
    recv_t rr;
    memset(&rr, 0, sizeof rr);
    rr.form = p->root_due == s ? RF_IRECV_WAIT : RF_DEFER;
    rr.due = p->root_due;
    if (mine >= 0) {
      rr.cap = p->r[mine].cap;
      mpi_receive(s, p->root, p->len, &rr, refc, tag_of(prog, s, mine), pseed,
                  "goal (reference)");
    }
    if (p->gmcast && rank != relay) {
      rr.cap = p->r[MAXR + rank].cap;
      mpi_receive(s, p->root, p->len, &rr, refc, tag_of(prog, s, MAXR + rank), pseed,
                  "goal multicast (reference)");
    }
    return;
  }
  MPICAST_Goal *g = goals[p->handle];
  pend_t *e = new_pend();
  e->goal = 1;
  e->gh = g;
  e->step = s;
  e->due = p->root_due;
  e->gcollect = p->gcollect;
  e->len = p->len;
  e->pseed = pseed;
  e->root = p->root;
  e->what = rank == p->root ? "goal root" : "goal";
  int rv = -1, a = -1, rc;
  at("building a GOAL schedule");
  if (mine >= 0) {
    e->recv = 1;
    e->cap = p->r[mine].cap;
    e->buf = buf = malloc(e->cap + 1);
    REQUIRE(buf != NULL, "out of memory");
    poison_buf(buf, e->cap, pseed);
    int from = p->parent[mine] < 0 ? p->root : p->dests[p->parent[mine]];
    rc = MPICAST_Goal_recv(g, buf, e->cap, from, tag_of(prog, s, mine), &rv);
    REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_recv: %d", rc);
  }
  for (int i = 0; i < p->ndests; i++) {
    int from = p->parent[i] < 0 ? p->root : p->dests[p->parent[i]];
    if (from != rank) continue;
    rc = MPICAST_Goal_send(g, buf, p->len, p->dests[i], tag_of(prog, s, i), &a);
    REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_send: %d", rc);
    if (rv >= 0) {
      rc = MPICAST_Goal_requ(g, a, rv);
      REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_requ: %d", rc);
    }
  }
  if (p->gmcast && rank == relay) {
    rc = MPICAST_Goal_mcast_send(g, buf, p->len, &a);
    REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_mcast_send: %d", rc);
    rc = MPICAST_Goal_requ(g, a, rv);
    REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_requ: %d", rc);
  } else if (p->gmcast) {
    e->mcap = p->r[MAXR + rank].cap;
    e->mbuf = malloc(e->mcap + 1);
    REQUIRE(e->mbuf != NULL, "out of memory");
    poison_buf(e->mbuf, e->mcap, pseed);
    rc = MPICAST_Goal_mcast_recv(g, e->mbuf, e->mcap, relay, &a);
    REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_mcast_recv: %d", rc);
  }
  rc = MPICAST_Goal_compile(g);
  REQUIRE(rc == MPICAST_OK, "MPICAST_Goal_compile: %d: %s", rc, MPICAST_Goal_error(g));
  at("MPICAST_Goal_start");
  rc = MPICAST_Goal_start(g, &e->mr);
  REQUIRE(rc == MPICAST_OK && e->mr != NULL, "MPICAST_Goal_start on handle %d: %d: %s",
          p->handle, rc, MPICAST_Goal_error(g));
  if (p->root_due == s) complete_goals(s);
}

static void run_program(int prog, step_t *steps) {
  int K = nsteps;
  cur_prog = prog;
  cur_step = -1;
  gen_program(prog, K, steps);
  if (verbose && rank == 0) {
    printf("program %d:", prog);
    for (int s = 0; s < K; s++)
      printf(" %s/%s(root %d)", kind_name[steps[s].kind], comm_name[steps[s].comm], steps[s].root);
    printf("\n");
    fflush(stdout);
  }
  for (int s = 0; s < K; s++) {
    const step_t *p = &steps[s];
    cur_step = s;
    at("the start of the step");
    complete_due(s, p->complete_mode);
    register_defers(prog, s, steps, K);
    if (p->lag_rank == rank) {
      at("a lag before the step (no MPI call)");
      struct timespec ts = {0, (long)p->lag_us * 1000L};
      nanosleep(&ts, NULL);
    }
    kind_count[p->kind]++;
    switch (p->kind) {
    case K_IMCAST:
      step_imcast(prog, s, p);
      break;
    case K_DBCAST:
      step_dbcast(prog, s, p);
      break;
    case K_RELEASE:
      step_release(prog, s, p);
      break;
    case K_MULTI:
      step_multi(prog, s, p);
      break;
    case K_BARRIER:
      at("MPI_Barrier");
      MPI_Barrier(comm_of(p->comm));
      break;
    case K_BCAST:
      step_bcast(prog, s, p);
      break;
    case K_ALLREDUCE:
      step_allreduce(prog, s, p);
      break;
    case K_SEND:
    case K_IRECV:
      step_pairs(prog, s, p);
      break;
    case K_RING:
      step_ring(prog, s, p);
      break;
    case K_DUPFREE:
      step_dupfree(prog, s, p);
      break;
    case K_GOAL:
      step_goal(prog, s, p);
      break;
    }
  }
  cur_step = K;
  complete_due(-1, 2);
  REQUIRE(npend == 0, "%d requests left at the program's end", npend);
  at("MPI_Barrier(MPI_COMM_WORLD) at the program's end");
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < nstep_bufs; i++) free(step_bufs[i]);
  nstep_bufs = 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int nprog = (int)tc_arg_ll(argc, argv, "--programs", 100);
  int first = (int)tc_arg_ll(argc, argv, "--first", 0);
  seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 20261128);
  nsteps = (int)tc_arg_ll(argc, argv, "--steps", 12);
  watchdog_s = (int)tc_arg_ll(argc, argv, "--watchdog", 8);
  hang_exit_s = (int)tc_arg_ll(argc, argv, "--hang-exit", 40);
  reference = tc_flag(argc, argv, "--reference");
  corrupt = tc_flag(argc, argv, "--corrupt");
  verbose = tc_flag(argc, argv, "--verbose");
  make_envhint();
  if (nsteps < 1 || nsteps > MAXSTEPS) {
    if (rank == 0) fprintf(stderr, "int_progress: --steps 1..%d\n", MAXSTEPS);
    MPI_Finalize();
    return 2;
  }
  if (nranks < 3 || nranks > MAXR) {
    if (rank == 0) printf("int_progress: needs 3 to %d ranks, have %d: skipped\n", MAXR, nranks);
    MPI_Finalize();
    return TC_SKIP;
  }
  if (rank == 0) {
    printf("int_progress: %d ranks, programs %d..%d of seed %" PRIu64 ", %d steps each%s\n",
           nranks, first, first + nprog - 1, seed, nsteps, reference ? ", reference" : "");
    fflush(stdout);
  }
  pthread_t wd;
  pthread_create(&wd, NULL, watchdog, NULL);

  MPI_Comm_dup(MPI_COMM_WORLD, &dupc);
  split_color = rank < nranks / 2 ? 0 : 1;
  MPI_Comm_split(MPI_COMM_WORLD, split_color, rank, &splitc);
  MPI_Comm_rank(splitc, &split_rank);
  MPI_Comm_size(splitc, &split_size);
  for (int m = 0; m < split_size; m++) split_members[m] = split_color ? nranks / 2 + m : m;
  MPI_Comm_dup(MPI_COMM_WORLD, &refc);
  if (!reference) {
    at("MPICAST_Dbcast_enable");
    int rc = MPICAST_Dbcast_enable(MPI_COMM_WORLD);
    if (rc != MPICAST_OK) tc_fail("MPICAST_Dbcast_enable(MPI_COMM_WORLD) returned %d", rc);
    at("MPICAST_Mcast_enable");
    rc = MPICAST_Mcast_enable(dupc);
    if (rc != MPICAST_OK) tc_fail("MPICAST_Mcast_enable(dup) returned %d", rc);
    at("MPICAST_Goal_create");
    for (int h = 0; h < NGOAL; h++) {
      rc = MPICAST_Goal_create(MPI_COMM_WORLD, &goals[h]);
      if (rc != MPICAST_OK) tc_fail("MPICAST_Goal_create(MPI_COMM_WORLD) returned %d", rc);
    }
  }

  step_t *steps = malloc(sizeof(step_t) * (size_t)nsteps);
  if (!steps) tc_fail("out of memory");
  double t0 = tc_now(), slowest = 0;
  int slowest_prog = first;
  for (int prog = first; prog < first + nprog; prog++) {
    double t = tc_now();
    run_program(prog, steps);
    t = tc_now() - t;
    if (t > slowest) {
      slowest = t;
      slowest_prog = prog;
    }
  }
  double total = tc_now() - t0;
  cur_prog = -1;
  cur_step = -1;
  at("the end");
  long msgs = 0;
  MPI_Reduce(&n_checked_msgs, &msgs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (corrupt && corrupt_done) tc_fail("--corrupt: a corrupted message passed the checks");
  /* TC_EXPECT=mcast (the ctests): mpicast's own MPI_Bcast and MPI_Barrier took part. */
  tc_expect_check(kind_count[K_BCAST] > 0, 1);
  if (rank == 0) {
    printf("int_progress: %d programs ok (%s) in %.2f s: %.1f ms per program, slowest %.1f ms "
           "(program %d); %ld messages checked; steps:",
           nprog, reference ? "reference" : "extension calls", total,
           nprog ? 1e3 * total / nprog : 0.0, 1e3 * slowest, slowest_prog, msgs);
    for (int k = 0; k < NKINDS; k++) printf(" %s %ld", kind_name[k], kind_count[k]);
    printf("\n");
    fflush(stdout);
  }
  finished = 1;
  pthread_join(wd, NULL);
  free(steps);
  free(pend);
  free(step_bufs);
  for (int h = 0; h < NGOAL; h++) MPICAST_Goal_free(goals[h]);
  MPI_Comm_free(&refc);
  MPI_Comm_free(&splitc);
  MPI_Comm_free(&dupc);
  MPI_Finalize();
  return 0;
}
