/* cholesky: tiled Cholesky factorisation A = L L^T on the task runtime of rt.h.
 *
 *   cholesky --n N --nb NB [--grid PxQ] [--notify p2p|imcast|dbcast] [--reps R]
 *            [--check]
 *
 * The matrix is cut into T x T tiles of NB (the last row and column of tiles may be smaller);
 * only the lower triangle is stored. Tile (i, j) lives on grid rank (i mod P, j mod Q) of a
 * P x Q process grid (2D block-cyclic), rank = (i mod P) * Q + (j mod Q), and that rank runs
 * every task that writes it (owner-computes). The task of tile (i, j) at step k, k <= j <= i:
 *   i == j == k  POTRF  L[k][k] = chol(A[k][k])            publishes L[k][k]
 *   i >  j == k  TRSM   L[i][k] = A[i][k] L[k][k]^-T        reads L[k][k], publishes L[i][k]
 *   i == j >  k  SYRK   A[i][i] -= L[i][k] L[i][k]^T        reads L[i][k]
 *   i >  j >  k  GEMM   A[i][j] -= L[i][k] L[j][k]^T        reads L[i][k], L[j][k]
 * and the tasks of one tile run in order of k (the runtime's `after`). The items that cross
 * ranks are the finished tiles of L, named (and tagged) by i (i + 1) / 2 + j.
 *
 * A = B B^T + n I, with B n x B_COLS uniform in [-0.5, 0.5) from a counter-based generator
 * of (seed, row, column): every rank makes its own tiles, and the matrix is the same whatever
 * the grid, the tile size or the number of ranks. B is not square because forming a square
 * B B^T costs n^3 flops, three times the factorisation. --check computes ||A - L L^T||_F / ||A||_F over
 * the whole matrix (every rank gets all of L by MPI_Bcast, one per rank) and fails above
 * 30 n eps; exit status 1 then. */
#include <cblas.h>
#include <lapacke.h>
#include <mpi.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notify.h"
#include "rt.h"

enum { POTRF, TRSM, SYRK, GEMM };
enum { B_COLS = 128 };

typedef struct chol {
  int n, nb, T, P, Q, rank, size;
  uint64_t seed;
  double **tile; /* [item]: this rank's working tiles (A, then L), NULL elsewhere */
  double **orig; /* [item]: this rank's tiles of A as generated */
} chol_t;

static int item_of(int i, int j) { return i * (i + 1) / 2 + j; }
static void tile_of(int item, int *i, int *j) {
  int r = (int)((sqrt(8.0 * item + 1.0) - 1.0) / 2.0);
  while (r * (r + 1) / 2 > item) r--;
  while ((r + 1) * (r + 2) / 2 <= item) r++;
  *i = r;
  *j = item - r * (r + 1) / 2;
}
static int rows(const chol_t *c, int i) { return i < c->T - 1 ? c->nb : c->n - (c->T - 1) * c->nb; }
static int owner_ij(const chol_t *c, int i, int j) { return (i % c->P) * c->Q + (j % c->Q); }

/* ---- the application's side of rt_app_t ---- */

static int app_owner(void *ctx, int item) {
  int i, j;
  tile_of(item, &i, &j);
  return owner_ij(ctx, i, j);
}

static int app_bytes(void *ctx, int item) {
  int i, j;
  tile_of(item, &i, &j);
  return rows(ctx, i) * rows(ctx, j) * (int)sizeof(double);
}

static void *app_local_data(void *ctx, int item) { return ((chol_t *)ctx)->tile[item]; }

/* Who reads a finished tile. L[k][k]: the TRSMs of column k, tiles (m, k), m > k.
 * L[i][k], i > k: SYRK(i, k) on (i, i) and GEMM(i, j, k) on (i, j), k < j < i (row i), and
 * GEMM(m, i, k) on (m, i), m > i (column i). */
static int app_dests(void *ctx, int item, int *dests, int max) {
  const chol_t *c = ctx;
  int i, k, nd = 0;
  tile_of(item, &i, &k);
  if (i == k) {
    for (int m = k + 1; m < c->T && m < k + 1 + c->P; m++) {
      if (nd == max) return -1;
      dests[nd++] = owner_ij(c, m, k);
    }
    return nd;
  }
  /* Row i, columns k+1..i: Q distinct owners at most. */
  for (int j = k + 1; j <= i && j < k + 1 + c->Q; j++) {
    if (nd == max) return -1;
    dests[nd++] = owner_ij(c, i, j);
  }
  /* Column i, rows i+1..T-1: P distinct owners at most. P + Q <= 2 P Q. */
  for (int m = i + 1; m < c->T && m < i + 1 + c->P; m++) {
    if (nd == max) return -1;
    dests[nd++] = owner_ij(c, m, i);
  }
  return nd;
}

static int app_run(void *ctx, const rt_task_t *t, void *const *in) {
  chol_t *c = ctx;
  int i = t->i, j = t->j, k = t->k;
  int mi = rows(c, i), mj = rows(c, j), mk = rows(c, k);
  double *a = c->tile[item_of(i, j)];
  switch (t->kind) {
  case POTRF: {
    lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', mk, a, mk);
    if (info != 0) {
      fprintf(stderr, "cholesky: rank %d: POTRF(%d): LAPACKE_dpotrf returned %d\n", c->rank, k,
              (int)info);
      return -1;
    }
    /* L's diagonal tile is lower triangular: clear what SYRK left above the diagonal. */
    for (int col = 1; col < mk; col++) memset(a + (size_t)col * mk, 0, (size_t)col * sizeof *a);
    break;
  }
  case TRSM:
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, mi, mk, 1.0,
                in[0], mk, a, mi);
    break;
  case SYRK:
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, mi, mk, -1.0, in[0], mi, 1.0, a, mi);
    break;
  case GEMM:
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, mi, mj, mk, -1.0, in[0], mi, in[1], mj,
                1.0, a, mi);
    break;
  }
  return 0;
}

/* The local task list: for each tile owned, its tasks k = 0..j in order. Priority: the column
 * of the tile first (what the panel of step j waits for), then k, then the row. */
static rt_task_t *make_tasks(const chol_t *c, int *ntasks) {
  long count = 0;
  for (int i = 0; i < c->T; i++)
    for (int j = 0; j <= i; j++)
      if (owner_ij(c, i, j) == c->rank) count += j + 1;
  rt_task_t *tasks = calloc((size_t)count + 1, sizeof *tasks);
  if (!tasks) return NULL;
  int t = 0;
  for (int i = 0; i < c->T; i++)
    for (int j = 0; j <= i; j++) {
      if (owner_ij(c, i, j) != c->rank) continue;
      for (int k = 0; k <= j; k++, t++) {
        rt_task_t *tk = &tasks[t];
        tk->i = i;
        tk->j = j;
        tk->k = k;
        tk->prio = ((long)j * c->T + k) * c->T + i;
        tk->after = k > 0 ? t - 1 : -1;
        tk->publishes = k == j ? item_of(i, j) : -1;
        if (i == j && k == j) {
          tk->kind = POTRF;
          tk->ninputs = 0;
        } else if (k == j) {
          tk->kind = TRSM;
          tk->ninputs = 1;
          tk->inputs[0] = item_of(k, k);
        } else if (i == j) {
          tk->kind = SYRK;
          tk->ninputs = 1;
          tk->inputs[0] = item_of(i, k);
        } else {
          tk->kind = GEMM;
          tk->ninputs = 2;
          tk->inputs[0] = item_of(i, k);
          tk->inputs[1] = item_of(j, k);
        }
      }
    }
  *ntasks = t;
  return tasks;
}

/* ---- the matrix ---- */

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* B's rows of tile row r, B_COLS columns, column-major with leading dimension rows(r). */
static double *b_rows(const chol_t *c, int r) {
  int m = rows(c, r);
  double *b = malloc((size_t)m * B_COLS * sizeof *b);
  if (!b) return NULL;
  for (int col = 0; col < B_COLS; col++)
    for (int x = 0; x < m; x++) {
      uint64_t row = (uint64_t)r * c->nb + x;
      uint64_t h = splitmix64(c->seed ^ splitmix64(row * B_COLS + (uint64_t)col));
      b[(size_t)col * m + x] = (double)(h >> 11) * 0x1.0p-53 - 0.5;
    }
  return b;
}

/* This rank's tiles of A = B B^T + n I into orig[] (tile[] allocated alongside). */
static int generate(chol_t *c) {
  double **brow = calloc((size_t)c->T, sizeof *brow);
  if (!brow) return -1;
  for (int i = 0; i < c->T; i++)
    for (int j = 0; j <= i; j++) {
      if (owner_ij(c, i, j) != c->rank) continue;
      int it = item_of(i, j), mi = rows(c, i), mj = rows(c, j);
      if ((!brow[i] && !(brow[i] = b_rows(c, i))) || (!brow[j] && !(brow[j] = b_rows(c, j))))
        return -1;
      c->orig[it] = malloc((size_t)mi * mj * sizeof(double));
      c->tile[it] = malloc((size_t)mi * mj * sizeof(double));
      if (!c->orig[it] || !c->tile[it]) return -1;
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, mi, mj, B_COLS, 1.0, brow[i], mi,
                  brow[j], mj, 0.0, c->orig[it], mi);
      if (i == j)
        for (int x = 0; x < mi; x++) c->orig[it][(size_t)x * mi + x] += c->n;
    }
  for (int i = 0; i < c->T; i++) free(brow[i]);
  free(brow);
  return 0;
}

static void reset(chol_t *c) {
  for (int it = 0; it <= item_of(c->T - 1, c->T - 1); it++)
    if (c->orig[it]) memcpy(c->tile[it], c->orig[it], (size_t)app_bytes(c, it));
}

/* ||A - L L^T||_F / ||A||_F over the full symmetric matrix: off-diagonal tiles count twice.
 * Every rank gets all of L, each rank's tiles packed into one buffer that it broadcasts (one
 * MPI_Bcast per rank, in pieces of at most 2^27 doubles; per tile would be T (T + 1) / 2
 * collectives, which take seconds on 9 ranks sharing 2 cores), then checks its own tiles. */
static double residual(chol_t *c) {
  int ni = item_of(c->T - 1, c->T - 1) + 1;
  const double **l = calloc((size_t)ni, sizeof *l);
  double **packed = calloc((size_t)c->size, sizeof *packed);
  double *r = malloc((size_t)c->nb * c->nb * sizeof *r);
  if (!l || !packed || !r) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int root = 0; root < c->size; root++) {
    size_t count = 0;
    for (int it = 0; it < ni; it++)
      if (app_owner(c, it) == root) count += (size_t)app_bytes(c, it) / sizeof(double);
    double *buf = packed[root] = malloc((count ? count : 1) * sizeof *buf);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    size_t off = 0;
    for (int it = 0; it < ni; it++) {
      if (app_owner(c, it) != root) continue;
      size_t len = (size_t)app_bytes(c, it) / sizeof(double);
      if (root == c->rank) memcpy(buf + off, c->tile[it], len * sizeof *buf);
      l[it] = buf + off;
      off += len;
    }
    for (size_t at = 0; at < count; at += (size_t)1 << 27) {
      size_t piece = count - at < ((size_t)1 << 27) ? count - at : (size_t)1 << 27;
      MPI_Bcast(buf + at, (int)piece, MPI_DOUBLE, root, MPI_COMM_WORLD);
    }
  }
  double sums[2] = {0, 0}, all[2];
  for (int i = 0; i < c->T; i++)
    for (int j = 0; j <= i; j++) {
      int it = item_of(i, j);
      if (!c->orig[it]) continue;
      int mi = rows(c, i), mj = rows(c, j);
      size_t len = (size_t)mi * mj;
      memcpy(r, c->orig[it], len * sizeof *r);
      for (int k = 0; k <= j; k++)
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, mi, mj, rows(c, k), -1.0,
                    l[item_of(i, k)], mi, l[item_of(j, k)], mj, 1.0, r, mi);
      double w = i == j ? 1.0 : 2.0, dr = 0, da = 0;
      for (size_t x = 0; x < len; x++) {
        dr += r[x] * r[x];
        da += c->orig[it][x] * c->orig[it][x];
      }
      sums[0] += w * dr;
      sums[1] += w * da;
    }
  MPI_Allreduce(sums, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int root = 0; root < c->size; root++) free(packed[root]);
  free(packed);
  free(l);
  free(r);
  return sqrt(all[0]) / sqrt(all[1]);
}

/* ---- the command line ---- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: cholesky [--n N] [--nb NB] [--grid PxQ] [--notify p2p|imcast|dbcast]\n"
          "                [--reps R] [--check] [--seed S] [--corrupt]\n"
          "  --n N        matrix order (default 1024)\n"
          "  --nb NB      tile size (default 128); at most 255 tiles a side (tags < 32767)\n"
          "  --grid PxQ   process grid, P * Q = number of ranks (default: the squarest, P <= Q)\n"
          "  --notify M   how a finished tile reaches the ranks that need it (default p2p):\n"
          "               p2p: one MPI_Isend per destination; imcast: libmpicast's non-blocking\n"
          "               multicast (MPICAST_Imcast; needs libmpicast linked or preloaded);\n"
          "               dbcast: p2p's receives, and sends registered before the tile is\n"
          "               computed (MPICAST_Send_defer)\n"
          "               and made when it is ready (MPICAST_Send_release): libmpicast turns\n"
          "               a tile's sends to several ranks into one dynamic broadcast (needs\n"
          "               libmpicast linked or preloaded)\n"
          "  --reps R     factorisations timed (default 3); A is generated once, reset before\n"
          "               each\n"
          "  --check      residual ||A - L L^T||_F / ||A||_F against 30 n eps: exit 1 above it\n"
          "  --seed S     seed of the matrix (default 24)\n"
          "  --corrupt    self-test of --check: change one entry of L before checking (it must\n"
          "               FAIL)\n");
}

typedef struct opts {
  int n, nb, P, Q, reps, check, corrupt;
  uint64_t seed;
  notify_mode_t mode;
} opts_t;

/* "--name value" or "--name=value". */
static const char *optval(int argc, char **argv, int *a, const char *name) {
  size_t len = strlen(name);
  if (strncmp(argv[*a], name, len) != 0) return NULL;
  if (argv[*a][len] == '=') return argv[*a] + len + 1;
  if (argv[*a][len] != '\0') return NULL;
  if (*a + 1 >= argc) return "";
  return argv[++*a];
}

static int parse_int(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < 1 || v > 1000000000L) return -1;
  *out = (int)v;
  return 0;
}

/* 0 ok, 1 --help, -1 error (message in err). */
static int parse(int argc, char **argv, int size, opts_t *o, char *err, size_t errlen) {
  o->n = 1024;
  o->nb = 128;
  o->P = o->Q = 0;
  o->reps = 3;
  o->check = o->corrupt = 0;
  o->seed = 24;
  o->mode = NOTIFY_P2P;
  for (int a = 1; a < argc; a++) {
    const char *v;
    if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) return 1;
    if (strcmp(argv[a], "--check") == 0) {
      o->check = 1;
    } else if (strcmp(argv[a], "--corrupt") == 0) {
      o->corrupt = o->check = 1;
    } else if ((v = optval(argc, argv, &a, "--n"))) {
      if (parse_int(v, &o->n)) goto bad;
    } else if ((v = optval(argc, argv, &a, "--nb"))) {
      if (parse_int(v, &o->nb)) goto bad;
    } else if ((v = optval(argc, argv, &a, "--reps"))) {
      if (parse_int(v, &o->reps)) goto bad;
    } else if ((v = optval(argc, argv, &a, "--seed"))) {
      char *end;
      o->seed = strtoull(v, &end, 10);
      if (!*v || *end) goto bad;
    } else if ((v = optval(argc, argv, &a, "--grid"))) {
      char *end;
      long p = strtol(v, &end, 10), q;
      if (end == v || (*end != 'x' && *end != 'X')) goto bad;
      q = strtol(end + 1, &end, 10);
      if (*end || p < 1 || q < 1 || p * q > 1000000) goto bad;
      o->P = (int)p;
      o->Q = (int)q;
    } else if ((v = optval(argc, argv, &a, "--notify"))) {
      if (notify_mode_parse(v, &o->mode)) {
        snprintf(err, errlen, "--notify %s: unknown mode (p2p, imcast or dbcast)", v);
        return -1;
      }
    } else {
      snprintf(err, errlen, "unknown argument '%s'", argv[a]);
      return -1;
    }
    continue;
  bad:
    snprintf(err, errlen, "bad value for %s", argv[a]);
    return -1;
  }
  if (o->P == 0) {
    /* The squarest grid P x Q = size with P <= Q. */
    for (int p = 1; p * p <= size; p++)
      if (size % p == 0) o->P = p;
    o->Q = size / o->P;
  }
  if (o->P * o->Q != size) {
    snprintf(err, errlen, "--grid %dx%d needs %d ranks, not %d", o->P, o->Q, o->P * o->Q, size);
    return -1;
  }
  if (o->nb > o->n) o->nb = o->n;
  int T = (o->n + o->nb - 1) / o->nb;
  if (T > 255) {
    snprintf(err, errlen, "%d tiles a side: at most 255 (tile tags must stay below %d); raise --nb",
             T, NOTIFY_TAG_LIMIT);
    return -1;
  }
  if ((double)o->nb * o->nb * sizeof(double) > 2147483647.0) {
    snprintf(err, errlen, "--nb %d: a tile must stay below 2 GiB", o->nb);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  opts_t o;
  char err[512] = "";
  int pr = parse(argc, argv, size, &o, err, sizeof err);
  if (pr != 0) {
    if (rank == 0) {
      if (pr < 0) fprintf(stderr, "cholesky: %s\n", err);
      usage(pr < 0 ? stderr : stdout);
    }
    MPI_Finalize();
    return pr < 0 ? 2 : 0;
  }

  notify_t *nt = notify_create(o.mode, MPI_COMM_WORLD, err, sizeof err);
  if (!nt) {
    if (rank == 0) fprintf(stderr, "cholesky: %s\n", err);
    MPI_Finalize();
    return 2;
  }

  chol_t c = {.n = o.n, .nb = o.nb, .P = o.P, .Q = o.Q, .rank = rank, .size = size, .seed = o.seed};
  c.T = (o.n + o.nb - 1) / o.nb;
  int ni = item_of(c.T - 1, c.T - 1) + 1;
  c.tile = calloc((size_t)ni, sizeof *c.tile);
  c.orig = calloc((size_t)ni, sizeof *c.orig);
  if (!c.tile || !c.orig || generate(&c)) {
    fprintf(stderr, "cholesky: rank %d: out of memory generating the matrix\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  int ntasks = 0;
  rt_task_t *tasks = make_tasks(&c, &ntasks);
  if (!tasks) MPI_Abort(MPI_COMM_WORLD, 1);
  rt_app_t app = {.ctx = &c,
                  .nitems = ni,
                  .owner = app_owner,
                  .bytes = app_bytes,
                  .local_data = app_local_data,
                  .dests = app_dests,
                  .run = app_run};
  rt_t *rt = rt_create(MPI_COMM_WORLD, &app, tasks, ntasks, nt);
  if (!rt) MPI_Abort(MPI_COMM_WORLD, 1);

  double tsum = 0, tmin = 0;
  rt_stats_t st, tot = {0};
  for (int rep = 0; rep < o.reps; rep++) {
    reset(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_run(rt, &st)) {
      fprintf(stderr, "cholesky: rank %d: the factorisation failed\n", rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double tmax;
    MPI_Allreduce(&st.t_total, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    tsum += tmax;
    tmin = rep == 0 || tmax < tmin ? tmax : tmin;
    tot.t_total += st.t_total;
    tot.t_tasks += st.t_tasks;
    tot.t_idle += st.t_idle;
  }
  /* Counts: one repetition's (each sends the same), summed over ranks. Times: shares of the
   * ranks' time in rt_run, over all repetitions. */
  long cnt[4] = {st.tasks, st.notifies, st.dest_msgs, st.recvs}, cnt_all[4];
  double tm[4] = {tot.t_total, tot.t_tasks, tot.t_idle, st.bytes}, tm_all[4];
  MPI_Reduce(cnt, cnt_all, 4, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(tm, tm_all, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

  double res = -1, tol = 30.0 * o.n * DBL_EPSILON;
  if (o.check) {
    if (o.corrupt) {
      int it = item_of(c.T - 1, 0);
      if (c.tile[it]) c.tile[it][0] += 1.0;
    }
    res = residual(&c);
  }
  int pass = !o.check || res <= tol;

  if (rank == 0) {
    double t = tsum / o.reps, flops = (double)o.n * o.n * o.n / 3.0;
    char check[128];
    if (o.check)
      snprintf(check, sizeof check, "residual=%.3e tol=%.1e %s", res, tol, pass ? "PASS" : "FAIL");
    else
      snprintf(check, sizeof check, "residual=unchecked");
    printf("cholesky: n=%d nb=%d tiles=%d grid=%dx%d ranks=%d notify=%s reps=%d time=%.4f s "
           "(min %.4f, %.2f GFLOP/s) tasks=%ld sent=%ld items to %ld dests (%.1f MiB) "
           "kernels=%.0f%% idle=%.0f%% %s\n",
           o.n, o.nb, c.T, o.P, o.Q, size, notify_mode_name(o.mode), o.reps, t, tmin,
           flops / t * 1e-9, cnt_all[0], cnt_all[1], cnt_all[2], tm_all[3] / 1048576.0,
           100.0 * tm_all[1] / tm_all[0], 100.0 * tm_all[2] / tm_all[0], check);
    fflush(stdout);
  }

  rt_free(rt);
  notify_destroy(nt);
  for (int it = 0; it < ni; it++) {
    free(c.tile[it]);
    free(c.orig[it]);
  }
  free(c.tile);
  free(c.orig);
  free(tasks);
  MPI_Finalize();
  return pass ? 0 : 1;
}
