/* The GOAL executor's costs (docs/goal.md, seed 004), three parts:
 *
 *   goal_bench --part bcast    [--sizes 8,64,...] [--reps N]
 *       A binomial broadcast from rank 0 (Listing 2; the schedule of `mpicast goal gen
 *       binomial-bcast`, algo/binomial.rs) run by the executor (MPICAST_Goal_start + wait)
 *       against the same algorithm written by hand with PMPI_Irecv/PMPI_Isend/PMPI_Waitall
 *       on a duplicate of MPI_COMM_WORLD. The two alternate rep by rep. A rep's figure is
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


extern double probe_first_isend, probe_first_wait, probe_last_wait, probe_first_irecv;
extern void probe_reset(void);
#define NF 6
static void pr(const char*name, double (*v)[NF], int n){
  double med[NF]; double *col=malloc(sizeof(double)*n);
  for(int f=0;f<NF;f++){ for(int i=0;i<n;i++) col[i]=v[i][f]; med[f]=median(col,n);} 
  double all[4*NF]; PMPI_Gather(med,NF,MPI_DOUBLE,all,NF,MPI_DOUBLE,0,MPI_COMM_WORLD);
  if(rank==0){ printf("%s (ns: start->isend, firstwait->isend, lastwait->end, total, t0->irecv, end-rootT0)\n",name); for(int r=0;r<nranks;r++){printf("  rank %d:",r); for(int f=0;f<NF;f++) printf(" %7.0f",all[r*NF+f]*1e9); printf("\n");}}
  free(col);
}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); MPI_Comm_rank(MPI_COMM_WORLD,&rank); MPI_Comm_size(MPI_COMM_WORLD,&nranks);
  size_t len=argc>1?atoi(argv[1]):8; int n=argc>2?atoi(argv[2]):5000;
  unsigned char*buf=malloc(len+1); MPI_Comm comm; PMPI_Comm_dup(MPI_COMM_WORLD,&comm);
  MPICAST_Goal*g; ok(NULL,MPICAST_Goal_create(MPI_COMM_WORLD,&g),"create");
  binomial_text(nranks,len); ok(g,MPICAST_Goal_load_text(g,text),"load"); ok(g,MPICAST_Goal_bind_buffer(g,"buf",buf,len),"bind");
  double (*vg)[NF]=malloc(sizeof(double)*NF*n),(*vp)[NF]=malloc(sizeof(double)*NF*n);
  for(int r=-100;r<n;r++){
    for(int v=0;v<2;v++){
      PMPI_Barrier(MPI_COMM_WORLD);
      double t0=mono(); probe_reset();
      if(v==0) goal_bcast_once(g); else binomial_p2p(buf,len,comm);
      double t1=mono();
      double root0=t0; PMPI_Bcast(&root0,1,MPI_DOUBLE,0,MPI_COMM_WORLD);
      double x[NF]={probe_first_isend?probe_first_isend-t0:0, probe_first_isend&&probe_first_wait&&probe_first_isend>probe_first_wait?probe_first_isend-probe_first_wait:0, t1-probe_last_wait, t1-t0, probe_first_irecv?probe_first_irecv-t0:0, t1-root0};
      if(r>=0) memcpy(v?vp[r]:vg[r],x,sizeof x);
    }
  }
  pr("goal",vg,n); pr("p2p",vp,n);
  MPICAST_Goal_free(g); MPI_Finalize(); return 0;
}
