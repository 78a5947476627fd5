/* The GOAL executor's costs (docs/goal.md, seed 004), three parts:
 *
 *   goal_bench --part bcast    [--sizes 8,64,...] [--reps N] [--first goal|hand]
 *       A binomial broadcast from rank 0 (Listing 2; the schedule of `mpicast goal gen
 *       binomial-bcast`, algo/binomial.rs) run by the executor (MPICAST_Goal_start + wait)
 *       against the same algorithm written by hand with PMPI_Irecv/PMPI_Isend/PMPI_Waitall
 *       on a duplicate of MPI_COMM_WORLD. The two alternate rep by rep (the executor first in
 *       each rep, or with --first hand the hand-written one). A rep's figure is
 *       the slowest rank's time (PMPI_Reduce MAX); a size's figure is the median over reps.
 *       CSV: size,reps,goal_median_s,goal_min_s,p2p_median_s,p2p_min_s,ratio,
 *            goal_span_median_s,p2p_span_median_s,span_ratio
 *       (ratio = goal_median / p2p_median). The slowest rank's time starts at each rank's own
 *       exit from the barrier, so for small messages it misses the time the data spent in
 *       flight before a receiver left the barrier (a hand-written 8 B broadcast can look
 *       like 0.3 us). The span columns time the whole broadcast instead: from the root's
 *       start to the last rank's completion, on CLOCK_MONOTONIC, which all ranks share when
 *       they run on one host (empty when they do not). Every rank's data is checked after the
 *       last rep.
 *
 *   goal_bench --part overhead [--k 10000] [--reps N]          (rank 0 only, MPI_COMM_SELF)
 *       Executor cost per action: K `calc 0` actions chained by requ, and K independent
 *       ones, against a program of one action. CSV:
 *       shape,k,reps,load_s,median_s,min_s,per_action_ns
 *       per_action_ns = (median(K) - median(1)) / (K - 1).
 *
 *   goal_bench --part overlap  [--sizes 65536,...] [--reps N] [--tests T] [--algo A]
 *       LibNBC-style overlap of a non-blocking GOAL broadcast with computation (A = binomial,
 *       the broadcast above, or mcast: one `mcast` from rank 0 and an `mrecv` on every other
 *       rank, over the reliable multicast channel):
 *       t_bcast (start + wait alone), t_compute (a spin loop calibrated to about t_bcast, alone),
 *       t_total (start, the same spin in T slices with MPICAST_Goal_test between slices in
 *       the poll case and none in the thread case, wait), each the median over reps of the
 *       slowest rank; overlap = 1 - (t_total - t_compute) / t_bcast. The progress mode is
 *       read from MPICAST_PROGRESS (thread, else poll): the library picks its mode from the
 *       same variable. CSV: progress,size,reps,tests,t_bcast_s,t_compute_s,t_total_s,overlap
 *       (with --algo mcast a first column algo=mcast is added)
 *
 * Output: CSV with a `#` comment line on stdout from rank 0. Linked against libmpicast. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpicast.h>

#define WARMUP 3

static int rank, nranks;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "goal_bench: rank %d: ", rank);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void ok(MPICAST_Goal *g, int rc, const char *what) {
  if (rc != MPICAST_OK)
    die("%s: %s: %s", what, MPICAST_Status_string(rc), g ? MPICAST_Goal_error(g) : "");
}

/* ---- a growing text buffer ---- */
static char *text;
static size_t text_len, text_cap;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text + text_len, text_cap - text_len, fmt, ap);
    va_end(ap);
    if (n < 0)
      die("vsnprintf");
    if (text_len + (size_t)n < text_cap) {
      text_len += (size_t)n;
      return;
    }
    text_cap = text_cap * 2 + (size_t)n + 4096;
    text = realloc(text, text_cap);
    if (!text)
      die("out of memory");
  }
}

static void reset_text(void) {
  text_len = 0;
  put("%s", "");
}

/* ---- statistics ---- */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts `t` and gives its median. */
static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* The slowest rank's value, on rank 0 (others get 0). */
static double slowest(double mine) {
  double s = 0;
  PMPI_Reduce(&mine, &s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return s;
}

/* CLOCK_MONOTONIC in seconds: one clock for every process of a host. */
static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1 when every rank runs on the same host as rank 0 (by processor name). */
static int one_host(void) {
  char name[MPI_MAX_PROCESSOR_NAME + 1] = {0}, root[MPI_MAX_PROCESSOR_NAME + 1] = {0};
  int len;
  MPI_Get_processor_name(name, &len);
  memcpy(root, name, sizeof name);
  PMPI_Bcast(root, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = strcmp(root, name) == 0, all;
  PMPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

/* One timed rep ends: `t0` this rank's start, now its end. On rank 0: the slowest rank's
 * time into *slow and (root's start to last end) into *span. */
static void rep_end(double t0, double *slow, double *span) {
  double t1 = mono(), mine[2] = {t1 - t0, t1}, max[2] = {0, 0};
  PMPI_Reduce(mine, max, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  *slow = max[0];
  *span = max[1] - t0; /* meaningful on rank 0, the root */
}

/* ---- the binomial tree of algo/binomial.rs (Listing 2), root 0 ---- */

/* Rounds: ceil(log2 n). */
static int rounds_of(int n) {
  int r = 0;
  while ((1 << r) < n)
    r++;
  return r;
}

/* This rank's parent (-1 for the root) and children in send order. */
static int tree(int me, int n, int *children, int *nchildren) {
  int parent = -1, k = 0;
  for (int r = 0, R = rounds_of(n); r < R; r++) {
    int d = 1 << r;
    if (me + d < n && me < d)
      children[k++] = me + d;
    if (d <= me && me < 2 * d)
      parent = me - d;
  }
  *nchildren = k;
  return parent;
}

/* The paper's text of a binomial broadcast of `len` bytes of `buf` from rank 0, the same
 * program as `mpicast goal gen binomial-bcast --ranks n --size len`: a rank's sends wait for
 * its receive (requ), the root's sends are independent. */
static void binomial_text(int n, size_t len) {
  reset_text();
  put("num_ranks %d;\n", n);
  int children[32], nc;
  for (int me = 0; me < n; me++) {
    int parent = tree(me, n, children, &nc);
    int labels = parent >= 0 && nc > 0; /* labels only where a requ needs them */
    put("rank #%d {\n", me);
    if (parent >= 0)
      put("  %srecv 0,%zu from %d;\n", labels ? "a0: " : "", len, parent);
    for (int c = 0; c < nc; c++) {
      if (labels)
        put("  a%d: send 0,%zu to %d;\n", c + 1, len, children[c]);
      else
        put("  send 0,%zu to %d;\n", len, children[c]);
    }
    for (int c = 0; labels && c < nc; c++)
      put("  requ a%d -> a0;\n", c + 1);
    put("}\n");
  }
}

/* The multicast broadcast: rank 0 multicasts, every other rank receives it. */
static void mcast_text(int n, size_t len) {
  reset_text();
  put("num_ranks %d;\n", n);
  put("rank #0 {\n  mcast 0,%zu;\n}\n", len);
  for (int me = 1; me < n; me++)
    put("rank #%d {\n  mrecv 0,%zu from 0;\n}\n", me, len);
}

/* The same broadcast by hand. */
static void binomial_p2p(unsigned char *buf, size_t len, MPI_Comm comm) {
  int children[32], nc;
  int parent = tree(rank, nranks, children, &nc);
  MPI_Request reqs[32];
  MPI_Status stats[32]; /* not MPI_STATUSES_IGNORE: gcc's stringop-overflow trips on it */
  if (parent >= 0) {
    PMPI_Irecv(buf, (int)len, MPI_BYTE, parent, 0, comm, &reqs[0]);
    PMPI_Wait(&reqs[0], &stats[0]);
  }
  for (int c = 0; c < nc; c++)
    PMPI_Isend(buf, (int)len, MPI_BYTE, children[c], 0, comm, &reqs[c]);
  if (nc > 0)
    PMPI_Waitall(nc, reqs, stats);
}

static void pattern(unsigned char *buf, size_t len, int who, int salt) {
  for (size_t i = 0; i < len; i++)
    buf[i] = (unsigned char)(who * 101 + salt * 7 + (int)(i * 13) + 1);
}

/* Every rank must hold the root's pattern; aborts otherwise. */
static void verify(const unsigned char *buf, size_t len, int salt, const char *what) {
  for (size_t i = 0; i < len; i++)
    if (buf[i] != (unsigned char)(0 * 101 + salt * 7 + (int)(i * 13) + 1))
      die("%s of %zu bytes: byte %zu wrong", what, len, i);
}

static int goal_bcast_once(MPICAST_Goal *g) {
  MPICAST_Request *req;
  ok(g, MPICAST_Goal_start(g, &req), "start");
  ok(g, MPICAST_Goal_wait(req), "wait");
  return 0;
}

static void part_bcast(const size_t *sizes, int nsizes, int reps, int hand_first) {
  size_t max = 1;
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] > max)
      max = sizes[i];
  unsigned char *buf = malloc(max);
  double *tg = malloc(sizeof(double) * (size_t)reps), *tp = malloc(sizeof(double) * (size_t)reps);
  double *sg = malloc(sizeof(double) * (size_t)reps), *sp = malloc(sizeof(double) * (size_t)reps);
  if (!buf || !tg || !tp || !sg || !sp)
    die("out of memory");
  int host = one_host();
  MPI_Comm comm;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPICAST_Goal *g;
  ok(NULL, MPICAST_Goal_create(MPI_COMM_WORLD, &g), "create");
  if (rank == 0) {
    printf("# goal_bench bcast: binomial tree from rank 0 on %d ranks, GOAL executor vs "
           "PMPI_Isend/Irecv/Waitall (%s first in each rep); seconds, slowest rank, over reps; "
           "MPICAST_PROGRESS=%s\n",
           nranks, hand_first ? "by hand" : "executor",
           getenv("MPICAST_PROGRESS") ? getenv("MPICAST_PROGRESS") : "(unset)");
    printf("size,reps,goal_median_s,goal_min_s,p2p_median_s,p2p_min_s,ratio,goal_span_median_s,"
           "p2p_span_median_s,span_ratio\n");
    fflush(stdout);
  }
  for (int s = 0; s < nsizes; s++) {
    size_t len = sizes[s];
    /* Fewer repetitions for the large sizes: at least 10. */
    int n = len >= (1u << 20) ? (reps / 4 > 10 ? reps / 4 : (reps < 10 ? reps : 10)) : reps;
    binomial_text(nranks, len);
    ok(g, MPICAST_Goal_load_text(g, text), "load_text");
    ok(g, MPICAST_Goal_bind_buffer(g, "buf", buf, len), "bind_buffer");
    for (int r = -WARMUP; r < n; r++) {
      for (int k = 0; k < 2; k++) {
        int by_hand = k != hand_first, salt = r + 1000 * s + k;
        pattern(buf, len, rank, salt);
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = mono(), t, sp_;
        if (by_hand)
          binomial_p2p(buf, len, comm);
        else
          goal_bcast_once(g);
        rep_end(t0, &t, &sp_);
        if (r >= 0) {
          (by_hand ? tp : tg)[r] = t;
          (by_hand ? sp : sg)[r] = sp_;
        }
        if (r == n - 1)
          verify(buf, len, salt, by_hand ? "hand-written broadcast" : "GOAL broadcast");
      }
    }
    if (rank == 0) {
      double mg = median(tg, n), mp = median(tp, n);
      printf("%zu,%d,%.9f,%.9f,%.9f,%.9f,%.4f", len, n, mg, tg[0], mp, tp[0], mg / mp);
      if (host) {
        double msg = median(sg, n), msp = median(sp, n);
        printf(",%.9f,%.9f,%.4f\n", msg, msp, msg / msp);
      } else {
        printf(",,,\n");
      }
      fflush(stdout);
    }
  }
  MPICAST_Goal_free(g);
  PMPI_Comm_free(&comm);
  free(buf);
  free(tg);
  free(tp);
  free(sg);
  free(sp);
}

/* ---- executor overhead per action ---- */

/* K `calc 0` actions in the local view; chained: each requires the previous one. */
static void calc_text(int k, int chained) {
  reset_text();
  for (int i = 0; i < k; i++) {
    put("c%d: calc 0;\n", i);
    if (chained && i > 0)
      put("requ c%d -> c%d;\n", i, i - 1);
  }
}

static void part_overhead(int kmax, int reps) {
  if (rank == 0) {
    printf("# goal_bench overhead: K `calc 0` actions on one rank (MPI_COMM_SELF), start + "
           "wait; seconds over reps; per_action_ns = (median(K) - median(1)) / (K - 1)\n");
    printf("shape,k,reps,load_s,median_s,min_s,per_action_ns\n");
    fflush(stdout);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t)
      die("out of memory");
    MPICAST_Goal *g;
    ok(NULL, MPICAST_Goal_create(MPI_COMM_SELF, &g), "create");
    const char *shapes[2] = {"chain", "independent"};
    for (int sh = 0; sh < 2; sh++) {
      double base = 0;
      int ks[3] = {1, kmax / 10 > 1 ? kmax / 10 : 2, kmax};
      for (int ki = 0; ki < 3; ki++) {
        int k = ks[ki];
        calc_text(k, sh == 0);
        double t0 = MPI_Wtime();
        ok(g, MPICAST_Goal_load_text(g, text), "load_text");
        double load = MPI_Wtime() - t0;
        for (int r = -WARMUP; r < reps; r++) {
          MPICAST_Request *req;
          t0 = MPI_Wtime();
          ok(g, MPICAST_Goal_start(g, &req), "start");
          ok(g, MPICAST_Goal_wait(req), "wait");
          double dt = MPI_Wtime() - t0;
          if (r >= 0)
            t[r] = dt;
        }
        double m = median(t, reps);
        if (k == 1)
          base = m;
        double per = k > 1 ? (m - base) / (k - 1) * 1e9 : 0;
        printf("%s,%d,%d,%.9f,%.9f,%.9f,%.1f\n", shapes[sh], k, reps, load, m, t[0], per);
        fflush(stdout);
      }
    }
    MPICAST_Goal_free(g);
    free(t);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
}

/* ---- overlap ---- */

static volatile uint64_t sink;

/* `iters` iterations of dependent integer arithmetic. */
static void spin(uint64_t iters) {
  uint64_t x = sink + 1;
  for (uint64_t i = 0; i < iters; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  sink = x;
}

/* Iterations per second of `spin` on this rank (the slowest rank's rate, everywhere). */
static double spin_rate(void) {
  uint64_t iters = 1 << 16;
  double dt;
  for (;;) {
    double t0 = MPI_Wtime();
    spin(iters);
    dt = MPI_Wtime() - t0;
    if (dt > 0.02)
      break;
    iters *= 2;
  }
  double rate = (double)iters / dt, all;
  PMPI_Allreduce(&rate, &all, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

/* Median over `n` reps (slowest rank, on every rank) of `slices` spins of `per` iterations. */
static double compute_median(uint64_t per, int slices, int n, double *t) {
  for (int r = -WARMUP; r < n; r++) {
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < slices; i++)
      spin(per);
    double dt = slowest(MPI_Wtime() - t0);
    if (r >= 0)
      t[r] = dt;
  }
  double m = rank == 0 ? median(t, n) : 0;
  PMPI_Bcast(&m, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return m;
}

static void part_overlap(const size_t *sizes, int nsizes, int reps, int tests, int mcast) {
  const char *mode = getenv("MPICAST_PROGRESS");
  int thread = mode && strcmp(mode, "thread") == 0;
  size_t max = 1;
  for (int i = 0; i < nsizes; i++)
    if (sizes[i] > max)
      max = sizes[i];
  unsigned char *buf = malloc(max);
  double *tb = malloc(sizeof(double) * (size_t)reps), *tc = malloc(sizeof(double) * (size_t)reps),
         *tt = malloc(sizeof(double) * (size_t)reps);
  if (!buf || !tb || !tc || !tt)
    die("out of memory");
  MPICAST_Goal *g;
  ok(NULL, MPICAST_Goal_create(MPI_COMM_WORLD, &g), "create");
  double rate = spin_rate();
  if (rank == 0) {
    printf("# goal_bench overlap: %s broadcast from rank 0 on %d ranks through the GOAL "
           "executor with computation; progress=%s (%s); spin %.3g iterations/s; seconds, "
           "median over reps of the slowest rank; overlap = 1 - (t_total - t_compute)/t_bcast\n",
           mcast ? "multicast (mcast/mrecv)" : "binomial", nranks, thread ? "thread" : "poll",
           thread ? "no MPICAST_Goal_test during the computation"
                  : "MPICAST_Goal_test between computation slices",
           rate);
    printf("%sprogress,size,reps,tests,t_bcast_s,t_compute_s,t_total_s,overlap\n",
           mcast ? "algo," : "");
    fflush(stdout);
  }
  for (int s = 0; s < nsizes; s++) {
    size_t len = sizes[s];
    if (mcast)
      mcast_text(nranks, len);
    else
      binomial_text(nranks, len);
    ok(g, MPICAST_Goal_load_text(g, text), "load_text");
    ok(g, MPICAST_Goal_bind_buffer(g, "buf", buf, len), "bind_buffer");
    /* t_bcast */
    for (int r = -WARMUP; r < reps; r++) {
      pattern(buf, len, rank, r);
      PMPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      goal_bcast_once(g);
      double t = slowest(MPI_Wtime() - t0);
      if (r >= 0)
        tb[r] = t;
    }
    double t_bcast = 0;
    if (rank == 0)
      t_bcast = median(tb, reps);
    PMPI_Bcast(&t_bcast, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int slices = thread ? 1 : tests;
    /* The spin rate alone misjudges short bursts on a shared machine: calibrate the
     * computation itself, timed as it will be, until its median is within 5% of t_bcast. */
    double iters = t_bcast * rate + 1;
    for (int cal = 0; cal < 6; cal++) {
      double m = compute_median((uint64_t)(iters / slices) + 1, slices, reps < 10 ? reps : 10, tc);
      if (m <= 0)
        break;
      double f = t_bcast / m;
      iters *= f;
      if (f > 0.95 && f < 1.05)
        break;
    }
    uint64_t per = (uint64_t)(iters / slices) + 1;
    /* t_compute: the same slices, without the broadcast */
    double t_compute = compute_median(per, slices, reps, tc);
    /* t_total */
    for (int r = -WARMUP; r < reps; r++) {
      int salt = 500 + r;
      pattern(buf, len, rank, salt);
      PMPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPICAST_Request *req;
      ok(g, MPICAST_Goal_start(g, &req), "start");
      int done = 0;
      for (int i = 0; i < slices; i++) {
        spin(per);
        if (!thread && !done)
          ok(g, MPICAST_Goal_test(req, &done), "test");
      }
      ok(g, MPICAST_Goal_wait(req), "wait");
      double t = slowest(MPI_Wtime() - t0);
      if (r >= 0)
        tt[r] = t;
      if (r == reps - 1)
        verify(buf, len, salt, "overlapped GOAL broadcast");
    }
    if (rank == 0) {
      double mc = t_compute, mt = median(tt, reps);
      printf("%s%s,%zu,%d,%d,%.9f,%.9f,%.9f,%.4f\n", mcast ? "mcast," : "", thread ? "thread" : "poll", len, reps,
             thread ? 0 : slices, t_bcast, mc, mt, 1.0 - (mt - mc) / t_bcast);
      fflush(stdout);
    }
  }
  MPICAST_Goal_free(g);
  free(buf);
  free(tb);
  free(tc);
  free(tt);
}

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0)
      return argv[i + 1];
  return NULL;
}

static int parse_sizes(const char *list, size_t *sizes, int cap) {
  int n = 0;
  char *copy = strdup(list);
  if (!copy)
    die("out of memory");
  for (char *tok = strtok(copy, ","); tok && n < cap; tok = strtok(NULL, ","))
    sizes[n++] = (size_t)strtoull(tok, NULL, 0);
  free(copy);
  return n;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *part = arg(argc, argv, "--part");
  int reps = arg(argc, argv, "--reps") ? atoi(arg(argc, argv, "--reps")) : 0;
  if (!part) {
    if (rank == 0)
      fprintf(stderr, "usage: goal_bench --part bcast|overhead|overlap|text [--sizes LIST] [--reps N] "
                      "[--k K] [--tests T] [--algo binomial|mcast] [--first goal|hand]\n");
    MPI_Finalize();
    return 2;
  }
  size_t sizes[64];
  int nsizes;
  if (strcmp(part, "bcast") == 0) {
    const char *l = arg(argc, argv, "--sizes");
    nsizes = parse_sizes(l ? l : "8,64,512,4096,32768,262144,1048576,4194304", sizes, 64);
    const char *first = arg(argc, argv, "--first");
    if (first && strcmp(first, "goal") != 0 && strcmp(first, "hand") != 0)
      die("--first wants goal or hand, not `%s`", first);
    part_bcast(sizes, nsizes, reps > 0 ? reps : 100, first && strcmp(first, "hand") == 0);
  } else if (strcmp(part, "text") == 0) {
    /* The broadcast's GOAL text, to compare with `mpicast goal gen binomial-bcast`. */
    const char *l = arg(argc, argv, "--sizes");
    binomial_text(nranks, l ? (size_t)strtoull(l, NULL, 0) : 8);
    if (rank == 0)
      fputs(text, stdout);
  } else if (strcmp(part, "overhead") == 0) {
    int k = arg(argc, argv, "--k") ? atoi(arg(argc, argv, "--k")) : 10000;
    part_overhead(k > 1 ? k : 2, reps > 0 ? reps : 50);
  } else if (strcmp(part, "overlap") == 0) {
    const char *l = arg(argc, argv, "--sizes");
    int tests = arg(argc, argv, "--tests") ? atoi(arg(argc, argv, "--tests")) : 100;
    nsizes = parse_sizes(l ? l : "65536,1048576,4194304", sizes, 64);
    const char *algo = arg(argc, argv, "--algo");
    if (algo && strcmp(algo, "binomial") != 0 && strcmp(algo, "mcast") != 0) {
      if (rank == 0)
        fprintf(stderr, "goal_bench: --algo wants binomial or mcast, not `%s`\n", algo);
      MPI_Finalize();
      return 2;
    }
    part_overlap(sizes, nsizes, reps > 0 ? reps : 30, tests > 0 ? tests : 1,
                 algo && strcmp(algo, "mcast") == 0);
  } else {
    if (rank == 0)
      fprintf(stderr, "goal_bench: unknown part `%s`\n", part);
    MPI_Finalize();
    return 2;
  }
  free(text);
  /* The last line before MPI_Finalize (bench/cluster.sh run --done-marker: MPICH over UCX's
   * TCP sometimes never returns from it). */
  if (rank == 0) {
    printf("# end\n");
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
