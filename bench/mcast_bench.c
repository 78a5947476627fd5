/* mcast_bench: the host MPI's broadcast and barrier against mpicast's, side by side in one run.
 *
 *   mcast_bench [--sizes LIST] [--variants host,tree,linear,eager,default] [--budget SECONDS]
 *               [--reps-min N] [--reps-max N] [--barrier-reps N] [--no-barrier] [--idle-wait]
 *   mcast_bench --overhead [--size BYTES] [--iters N] [--blocks N]
 *
 * Variants, each on its own communicator so that mpicast keeps one channel per variant:
 *   host     PMPI_Bcast / PMPI_Barrier on MPI_COMM_WORLD: the host MPI's own collectives
 *   tree     MPI_Bcast / MPI_Barrier on a duplicate with hints mpicast_sync=tree,
 *            mpicast_min_bytes=0, mpicast_eager_bytes=0 (every size multicast, scouts up the
 *            binary tree before every broadcast: seed 002's algorithm)
 *   linear   the same with mpicast_sync=linear (every scout straight to the root)
 *   eager    the same with mpicast_eager_bytes=1GiB (no scouts: the root multicasts at once;
 *            barriers as tree)
 *   default  MPI_Bcast / MPI_Barrier on a plain MPI_Comm_dup: what a user who sets nothing gets
 * Without mpicast loaded the hints are ignored and every variant is the host MPI (a control).
 *
 * The figure per size is the seed's (002, section 4): the longest completion time among all
 * ranks. One repetition of a variant: PMPI_Barrier, t0, the operation, t = now - t0, and
 * PMPI_Reduce MAX of t to rank 0. Per size: two warm-up rounds, then `reps` rounds, each round
 * running every variant once, in an order rotated from round to round, so that load from
 * elsewhere on the machine falls on all variants alike. `reps` is what fits in --budget seconds
 * (estimated from the warm-up), within [--reps-min, --reps-max]. The root fills the buffer with
 * a pattern that differs per round and variant, every other rank clears its buffer before and
 * checks every byte after (outside the timed region); any error makes the program exit 1.
 *
 * Output, from rank 0, on stdout: comment lines (#) describing the run, then CSV
 *   op,variant,size,reps,median_s,min_s,q1_s,q3_s,max_s,mcast_ops,repairs,span_s,cpu_s,vcsw
 * mcast_ops: operations of that row that rank 0 saw take mpicast's multicast path; repairs:
 * increase of mpicast's repair counter summed over ranks during the row (both from
 * MPICAST_Get_stats, found with dlsym; empty when mpicast is not loaded). Diagnostics, per
 * operation: span_s, the median of (the last rank's end - rank 0's start) on CLOCK_MONOTONIC,
 * which every rank of the emulated cluster shares (one machine), so that the ranks' skew on
 * leaving the barrier is out of it (meaningless across real hosts); cpu_s, the mean CPU time
 * (user + system) that all ranks together spent inside the operation; vcsw, the mean number of
 * voluntary context switches (sleeps) of all ranks together inside it.
 *
 * --overhead: the cost of mpicast's interposition on the host MPI's own path. Blocks of
 * --iters back-to-back broadcasts of --size bytes (default 8, below mpicast's default
 * threshold, so MPI_Bcast is handed to PMPI_Bcast), alternately through PMPI_Bcast and through
 * MPI_Bcast, each block timed as the slowest rank's time. Prints the median time per call of
 * each and the ratio. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "mpicast.h"

enum { V_HOST, V_TREE, V_LINEAR, V_EAGER, V_DEFAULT, NVARIANTS };
static const char *const VNAME[NVARIANTS] = {"host", "tree", "linear", "eager", "default"};

typedef int (*get_stats_fn)(MPICAST_Stats *);
static get_stats_fn get_stats;

static int rank, nranks;
/* --idle-wait: see idle_wait(). */
static int idle_waits;

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static int flag(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

static long num_arg(int argc, char **argv, const char *name, long dflt) {
  const char *v = arg(argc, argv, name);
  return v ? strtol(v, NULL, 0) : dflt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between order statistics of sorted t[0..n-1]. */
static double quantile(const double *t, int n, double q) {
  double pos = q * (n - 1);
  int i = (int)pos;
  if (i >= n - 1) return t[n - 1];
  return t[i] + (pos - i) * (t[i + 1] - t[i]);
}

static MPICAST_Stats stats_now(void) {
  MPICAST_Stats s;
  memset(&s, 0, sizeof s);
  if (get_stats) get_stats(&s);
  return s;
}

/* The pattern of round `round`, variant `v`: cheap to make and check, never the same twice. */
static inline uint64_t pattern_word(uint64_t seed, size_t i) {
  return (seed + i) * 0x9E3779B97F4A7C15ull;
}

static void fill(unsigned char *buf, size_t size, uint64_t seed) {
  size_t words = size / 8;
  uint64_t *w = (uint64_t *)buf;
  for (size_t i = 0; i < words; i++) w[i] = pattern_word(seed, i);
  uint64_t last = pattern_word(seed, words);
  memcpy(buf + words * 8, &last, size - words * 8);
}

static long check(const unsigned char *buf, size_t size, uint64_t seed) {
  size_t words = size / 8;
  const uint64_t *w = (const uint64_t *)buf;
  long bad = 0;
  for (size_t i = 0; i < words; i++) bad += w[i] != pattern_word(seed, i);
  uint64_t last = pattern_word(seed, words);
  bad += memcmp(buf + words * 8, &last, size - words * 8) != 0;
  return bad;
}

struct row {
  double *t, *span;
  int n;
  uint64_t mcast_ops, repairs;
  double cpu, vcsw;
};

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --idle-wait: a rank that has finished its operation waits for the others without taking a
 * core (an MPI_Ibarrier tested every 50 us, sleeping in between) before the reduction of the
 * times. On the emulated cluster all hosts share this machine's cores, and an MPI whose ranks
 * busy-poll (MPICH) lets the ranks that are done, the root of a broadcast first, take the CPU
 * from those still receiving, which a real host, with cores of its own, never would. Every
 * variant waits so; the timed region is unchanged. */
static void idle_wait(void) {
  MPI_Request req;
  int done = 0;
  PMPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (;;) {
    PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

static void usage_now(double *cpu, double *vcsw) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *cpu = (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  *vcsw = (double)u.ru_nvcsw;
}

struct bench {
  MPI_Comm comm[NVARIANTS];
  int on[NVARIANTS];
  unsigned char *buf;
  long errors;
};

/* One timed operation of variant v; returns the slowest rank's time (at rank 0). */
static double timed(struct bench *b, int v, int is_bcast, size_t size, uint64_t seed, struct row *r) {
  if (is_bcast) {
    if (rank == 0)
      fill(b->buf, size, seed);
    else
      memset(b->buf, 0, size);
  }
  MPICAST_Stats s0 = stats_now();
  double c0, w0, c1, w1;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime(), m0 = mono();
  usage_now(&c0, &w0);
  if (is_bcast) {
    if (v == V_HOST)
      PMPI_Bcast(b->buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    else
      MPI_Bcast(b->buf, (int)size, MPI_BYTE, 0, b->comm[v]);
  } else {
    if (v == V_HOST)
      PMPI_Barrier(MPI_COMM_WORLD);
    else
      MPI_Barrier(b->comm[v]);
  }
  double mine[2] = {MPI_Wtime() - t0, mono()}, slowest[2] = {0, 0};
  usage_now(&c1, &w1);
  if (idle_waits) idle_wait();
  PMPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  /* After the reduction: the root of an eager broadcast returns before its receivers are done,
   * and its responder's repairs, counted when sent, are all out once every rank has finished. */
  MPICAST_Stats s1 = stats_now();
  if (is_bcast && rank != 0) b->errors += check(b->buf, size, seed);
  if (r) {
    double part[3] = {(double)(s1.repairs - s0.repairs), c1 - c0, w1 - w0}, sum[3] = {0, 0, 0};
    PMPI_Reduce(part, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    r->repairs += (uint64_t)sum[0];
    r->cpu += sum[1];
    r->vcsw += sum[2];
    r->span[r->n] = slowest[1] - m0; /* rank 0 is the root */
    r->mcast_ops += is_bcast ? s1.bcast_mcast - s0.bcast_mcast : s1.barrier_mcast - s0.barrier_mcast;
  }
  return slowest[0];
}

static void print_row(const char *op, int v, size_t size, struct row *r) {
  qsort(r->t, (size_t)r->n, sizeof(double), cmp_double);
  printf("%s,%s,%zu,%d,%.9f,%.9f,%.9f,%.9f,%.9f,", op, VNAME[v], size, r->n, quantile(r->t, r->n, 0.5),
         r->t[0], quantile(r->t, r->n, 0.25), quantile(r->t, r->n, 0.75), r->t[r->n - 1]);
  if (get_stats)
    printf("%llu,%llu,", (unsigned long long)r->mcast_ops, (unsigned long long)r->repairs);
  else
    printf(",,");
  qsort(r->span, (size_t)r->n, sizeof(double), cmp_double);
  printf("%.9f,%.9f,%.2f\n", quantile(r->span, r->n, 0.5), r->cpu / r->n, r->vcsw / r->n);
  fflush(stdout);
}

/* All variants of one operation at one size, interleaved round by round. */
static void measure(struct bench *b, int is_bcast, size_t size, double budget, int reps_min,
                    int reps_max) {
  const char *op = is_bcast ? "bcast" : "barrier";
  int order[NVARIANTS], nv = 0;
  for (int v = 0; v < NVARIANTS; v++)
    if (b->on[v]) order[nv++] = v;
  double round = 0;
  for (int w = 0; w < 2; w++) {
    round = 0;
    for (int k = 0; k < nv; k++) round += timed(b, order[k], is_bcast, size, 1000 + w * 16 + k, NULL);
  }
  int reps = reps_max;
  if (rank == 0 && round > 0 && budget / round < reps_max) reps = (int)(budget / round);
  if (reps < reps_min) reps = reps_min;
  PMPI_Bcast(&reps, 1, MPI_INT, 0, MPI_COMM_WORLD);

  struct row rows[NVARIANTS];
  for (int v = 0; v < NVARIANTS; v++) {
    rows[v].t = malloc(sizeof(double) * (size_t)reps);
    rows[v].span = malloc(sizeof(double) * (size_t)reps);
    rows[v].n = 0;
    rows[v].mcast_ops = rows[v].repairs = 0;
    rows[v].cpu = rows[v].vcsw = 0;
    if (!rows[v].t || !rows[v].span) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < nv; k++) {
      int v = order[(r + k) % nv];
      uint64_t seed = ((uint64_t)size << 24) ^ ((uint64_t)r << 4) ^ (uint64_t)v;
      double t = timed(b, v, is_bcast, size, seed, &rows[v]); /* writes span[n] */
      rows[v].t[rows[v].n++] = t;
    }
  if (rank == 0)
    for (int k = 0; k < nv; k++) print_row(op, order[k], size, &rows[order[k]]);
  for (int v = 0; v < NVARIANTS; v++) {
    free(rows[v].t);
    free(rows[v].span);
  }
}

static MPI_Comm hinted(const char *sync, const char *eager) {
  MPI_Info info;
  MPI_Comm c;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpicast_sync", sync);
  MPI_Info_set(info, "mpicast_min_bytes", "0");
  MPI_Info_set(info, "mpicast_eager_bytes", eager);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
  MPI_Info_free(&info);
  return c;
}

static int overhead(int argc, char **argv, unsigned char *buf) {
  int size = (int)num_arg(argc, argv, "--size", 8);
  int iters = (int)num_arg(argc, argv, "--iters", 2000);
  int blocks = (int)num_arg(argc, argv, "--blocks", 41);
  if (size < 1 || size > 65536 || iters < 1 || blocks < 1) {
    if (rank == 0) fprintf(stderr, "mcast_bench: bad --size/--iters/--blocks\n");
    return 1;
  }
  double *t[2];
  t[0] = malloc(sizeof(double) * (size_t)blocks);
  t[1] = malloc(sizeof(double) * (size_t)blocks);
  if (!t[0] || !t[1]) MPI_Abort(MPI_COMM_WORLD, 2);
  MPICAST_Stats s0 = stats_now();
  for (int blk = -2; blk < blocks; blk++)
    for (int k = 0; k < 2; k++) {
      int through_mpi = (blk + k) & 1; /* alternate which goes first */
      PMPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (through_mpi)
        for (int i = 0; i < iters; i++) MPI_Bcast(buf, size, MPI_BYTE, 0, MPI_COMM_WORLD);
      else
        for (int i = 0; i < iters; i++) PMPI_Bcast(buf, size, MPI_BYTE, 0, MPI_COMM_WORLD);
      double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
      PMPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (blk >= 0) t[through_mpi][blk] = slowest;
    }
  MPICAST_Stats s1 = stats_now();
  if (rank == 0) {
    qsort(t[0], (size_t)blocks, sizeof(double), cmp_double);
    qsort(t[1], (size_t)blocks, sizeof(double), cmp_double);
    double p = quantile(t[0], blocks, 0.5), m = quantile(t[1], blocks, 0.5);
    printf("op,path,size,blocks,iters,median_per_call_s,q1_s,q3_s\n");
    printf("overhead,PMPI_Bcast,%d,%d,%d,%.12f,%.12f,%.12f\n", size, blocks, iters, p, quantile(t[0], blocks, 0.25),
           quantile(t[0], blocks, 0.75));
    printf("overhead,MPI_Bcast,%d,%d,%d,%.12f,%.12f,%.12f\n", size, blocks, iters, m, quantile(t[1], blocks, 0.25),
           quantile(t[1], blocks, 0.75));
    printf("# overhead: MPI_Bcast / PMPI_Bcast = %.4f (%+.2f%%)", m / p, 100.0 * (m / p - 1));
    if (get_stats)
      printf("; at rank 0 MPI_Bcast went to the host MPI %llu times, to multicast %llu times\n",
             (unsigned long long)(s1.bcast_pmpi - s0.bcast_pmpi),
             (unsigned long long)(s1.bcast_mcast - s0.bcast_mcast));
    else
      printf("; mpicast not loaded\n");
  }
  free(t[0]);
  free(t[1]);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  get_stats = (get_stats_fn)dlsym(RTLD_DEFAULT, "MPICAST_Get_stats");
  idle_waits = flag(argc, argv, "--idle-wait");

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int vlen = 0;
  MPI_Get_library_version(version, &vlen);
  for (char *c = version; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  if (vlen > 80) version[80] = 0;
  if (rank == 0) {
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    printf("# mcast_bench: %d ranks, root 0, %s, mpicast %s\n", nranks, date,
           get_stats ? "loaded" : "not loaded");
    printf("# mpi: %s\n", version);
  }

  if (flag(argc, argv, "--overhead")) {
    unsigned char buf[65536];
    memset(buf, rank, sizeof buf);
    int rc = overhead(argc, argv, buf);
    if (rank == 0) printf("# end\n");
    fflush(stdout);
    MPI_Finalize();
    return rc;
  }

  struct bench b;
  memset(&b, 0, sizeof b);
  const char *vlist = arg(argc, argv, "--variants");
  char *vcopy = strdup(vlist ? vlist : "host,tree,linear,eager,default");
  for (char *tok = strtok(vcopy, ","); tok; tok = strtok(NULL, ",")) {
    int found = 0;
    for (int v = 0; v < NVARIANTS; v++)
      if (strcmp(tok, VNAME[v]) == 0) b.on[v] = found = 1;
    if (!found) {
      if (rank == 0) fprintf(stderr, "mcast_bench: unknown variant '%s'\n", tok);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  free(vcopy);
  b.comm[V_HOST] = MPI_COMM_WORLD;
  b.comm[V_TREE] = hinted("tree", "0");
  b.comm[V_LINEAR] = hinted("linear", "0");
  b.comm[V_EAGER] = hinted("tree", "1GiB");
  MPI_Comm_dup(MPI_COMM_WORLD, &b.comm[V_DEFAULT]);

  double budget = arg(argc, argv, "--budget") ? atof(arg(argc, argv, "--budget")) : 10.0;
  int reps_min = (int)num_arg(argc, argv, "--reps-min", 5);
  int reps_max = (int)num_arg(argc, argv, "--reps-max", 30);
  int barrier_reps = (int)num_arg(argc, argv, "--barrier-reps", 200);
  if (reps_min < 1) reps_min = 1;
  if (reps_max < reps_min) reps_max = reps_min;

  size_t sizes[128], n = 0, max = 8;
  const char *list = arg(argc, argv, "--sizes");
  if (list) {
    char *copy = strdup(list);
    for (char *tok = strtok(copy, ","); tok && n < 128; tok = strtok(NULL, ",")) {
      char *end;
      unsigned long long v = strtoull(tok, &end, 0);
      if (*end == 'k' || *end == 'K') v <<= 10;
      if (*end == 'm' || *end == 'M') v <<= 20;
      if (v < 1 || v > (1ull << 30)) {
        if (rank == 0) fprintf(stderr, "mcast_bench: bad size '%s'\n", tok);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      sizes[n++] = (size_t)v;
    }
    free(copy);
  } else {
    /* 1 B to 16 MiB in powers of two, and one Ethernet frame's payload. */
    for (size_t s = 1; s <= (16u << 20); s *= 2) {
      if (s == 2048) sizes[n++] = 1500;
      sizes[n++] = s;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (sizes[i] > max) max = sizes[i];
  b.buf = malloc(max);
  if (!b.buf) MPI_Abort(MPI_COMM_WORLD, 2);

  if (rank == 0) {
    printf("# figures: seconds, the slowest rank's time per operation; median, min, quartiles, max over reps\n");
    printf("# budget %.1f s per size, reps %d..%d, barrier reps %d\n", budget, reps_min, reps_max, barrier_reps);
    printf("op,variant,size,reps,median_s,min_s,q1_s,q3_s,max_s,mcast_ops,repairs,span_s,cpu_s,vcsw\n");
    fflush(stdout);
  }
  if (!flag(argc, argv, "--no-barrier")) measure(&b, 0, 0, 1e9, barrier_reps, barrier_reps);
  for (size_t i = 0; i < n; i++) measure(&b, 1, sizes[i], budget, reps_min, reps_max);

  long errors = 0;
  PMPI_Reduce(&b.errors, &errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPICAST_Stats s = stats_now(), sum;
  PMPI_Reduce(&s, &sum, sizeof s / sizeof(uint64_t), MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# data check: %ld wrong words\n", errors);
    if (get_stats)
      printf("# mpicast stats summed over ranks: bcast_mcast=%llu bcast_pmpi=%llu barrier_mcast=%llu "
             "barrier_pmpi=%llu dgrams_sent=%llu dgrams_recv=%llu repairs=%llu rejected=%llu fallbacks=%llu\n",
             (unsigned long long)sum.bcast_mcast, (unsigned long long)sum.bcast_pmpi,
             (unsigned long long)sum.barrier_mcast, (unsigned long long)sum.barrier_pmpi,
             (unsigned long long)sum.dgrams_sent, (unsigned long long)sum.dgrams_recv,
             (unsigned long long)sum.repairs, (unsigned long long)sum.rejected,
             (unsigned long long)sum.fallbacks);
  }
  MPI_Comm_free(&b.comm[V_TREE]);
  MPI_Comm_free(&b.comm[V_LINEAR]);
  MPI_Comm_free(&b.comm[V_EAGER]);
  MPI_Comm_free(&b.comm[V_DEFAULT]);
  free(b.buf);
  /* The last line before MPI_Finalize: a driver that sees it knows the figures are complete
   * (bench/cluster.sh --done-marker). */
  if (rank == 0) printf("# end\n");
  fflush(stdout);
  MPI_Finalize();
  return errors ? 1 : 0;
}
