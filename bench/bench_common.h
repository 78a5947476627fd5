/* bench_common.h: the skeleton the extension benchmarks share (dbcast_bench.c, imcast_bench.c):
 * arguments, failing, the clock, the data pattern and its check, the wait of every rank for
 * every other after a timed region, quantiles, the set-up of the communicator a benchmark
 * enables, the opening comment lines and the closing data check. Each benchmark keeps its
 * variants, its timed operation, its sets and its CSV.
 *
 * Included once, by the benchmark's own .c file (header-only: the functions are static);
 * before including it, a benchmark defines BENCH_NAME, the prefix of its messages. After
 * MPI_Init it calls bench_init(), which sets `rank` and `nranks`. Counted into `errors`: every
 * data error, which bench_finish() sums over the ranks. */
#ifndef MPICAST_BENCH_COMMON_H
#define MPICAST_BENCH_COMMON_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpicast.h"

#ifndef BENCH_NAME
#error "define BENCH_NAME (the benchmark's name, for its messages) before including bench_common.h"
#endif

static int rank, nranks;
static long errors;
static int op_count; /* tags and patterns differ from operation to operation */

/* The value after the option `name`, or NULL. */
static inline const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static inline double num_arg(int argc, char **argv, const char *name, double dflt) {
  const char *v = arg(argc, argv, name);
  return v ? atof(v) : dflt;
}

static inline const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

static inline _Noreturn void die(const char *what) {
  fprintf(stderr, BENCH_NAME ": rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

/* Dies unless an mpicast call returned MPICAST_OK. */
static inline void ok(int rc, const char *what) {
  if (rc != MPICAST_OK) {
    char m[200];
    snprintf(m, sizeof m, "%s returned %d (%s)", what, rc, MPICAST_Status_string(rc));
    die(m);
  }
}

/* MPI_Init done: this rank and the number of ranks; at least 2. */
static inline void bench_init(void) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks < 2) die("needs at least 2 ranks");
}

static inline double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The pattern: 64-bit word w of operation `key` is mix(key * 2^32 + w). */
static inline void fill(unsigned char *buf, size_t size, uint64_t key) {
  size_t words = size / 8;
  for (size_t w = 0; w < words; w++) {
    uint64_t v = mix((key << 32) + w);
    memcpy(buf + 8 * w, &v, 8);
  }
  uint64_t v = mix((key << 32) + words);
  memcpy(buf + 8 * words, &v, size - 8 * words);
}

/* The words of `buf` that are not the pattern of `key`. */
static inline long check(const unsigned char *buf, size_t size, uint64_t key) {
  long bad = 0;
  size_t words = size / 8;
  for (size_t w = 0; w < words; w++) {
    uint64_t v = mix((key << 32) + w);
    bad += memcmp(buf + 8 * w, &v, 8) != 0;
  }
  uint64_t v = mix((key << 32) + words);
  bad += memcmp(buf + 8 * words, &v, size - 8 * words) != 0;
  return bad;
}

static inline void nap(void) {
  struct timespec ts = {0, 50000};
  nanosleep(&ts, NULL);
}

/* Everyone waits for everyone in an MPI_Ibarrier, asleep 50 us between tests; before each
 * test, `look` (unless NULL), so that a rank that is done keeps forwarding. */
static inline void settle_with(void (*look)(void)) {
  MPI_Request req;
  int done = 0;
  PMPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (;;) {
    if (look) look();
    PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    nap();
  }
}

/* Sorts a[0..k) in place (insertion sort: k is small). */
static inline void sort_ranks(int *a, int k) {
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
      int t = a[j];
      a[j] = a[j - 1];
      a[j - 1] = t;
    }
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline double quantile(const double *s, int n, double q) {
  double pos = q * (n - 1);
  int i = (int)pos;
  if (i + 1 >= n) return s[n - 1];
  return s[i] + (pos - i) * (s[i + 1] - s[i]);
}

/* A size: bytes, or with k or m (KiB, MiB); 1 .. 256 MiB. */
static inline size_t parse_size(const char *tok) {
  char *end;
  unsigned long long v = strtoull(tok, &end, 0);
  if (*end == 'k' || *end == 'K') v <<= 10, end++;
  else if (*end == 'm' || *end == 'M') v <<= 20, end++;
  if (*end || v < 1 || v > (256ull << 20)) {
    if (rank == 0) fprintf(stderr, BENCH_NAME ": bad size '%s'\n", tok);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return (size_t)v;
}

/* --variants (else `dflt`): on[v] for each of the nv names given; an unknown one dies with
 * `known`. */
static inline void parse_variants(int argc, char **argv, const char *dflt,
                                  const char *const *names, int nv, int *on, const char *known) {
  char *vl = strdup(arg(argc, argv, "--variants") ? arg(argc, argv, "--variants") : dflt);
  for (char *tok = strtok(vl, ","); tok; tok = strtok(NULL, ",")) {
    int found = 0;
    for (int v = 0; v < nv; v++)
      if (strcmp(tok, names[v]) == 0) on[v] = found = 1;
    if (!found) die(known);
  }
  free(vl);
}

/* --sizes (else `dflt`), at most 64: their number; *max: the largest (at least 8). */
static inline size_t parse_sizes(int argc, char **argv, const char *dflt, size_t *sizes,
                                 size_t *max) {
  size_t nsizes = 0;
  char *sl = strdup(arg(argc, argv, "--sizes") ? arg(argc, argv, "--sizes") : dflt);
  for (char *tok = strtok(sl, ","); tok && nsizes < 64; tok = strtok(NULL, ","))
    sizes[nsizes++] = parse_size(tok);
  free(sl);
  *max = 8;
  for (size_t i = 0; i < nsizes; i++)
    if (sizes[i] > *max) *max = sizes[i];
  return nsizes;
}

/* Enables `c` by `enable` (MPICAST_Mcast_enable or MPICAST_Dbcast_enable, named `what`);
 * returns (at rank 0) the slowest rank's time. Then every pair's connection once, on `p2p`
 * and on MPI_COMM_WORLD, outside any timed region. */
static inline double enable_and_connect(int (*enable)(MPI_Comm), MPI_Comm c, const char *what,
                                        MPI_Comm p2p) {
  double e0 = mono();
  ok(enable(c), what);
  double enable_s = mono() - e0, enable_max = 0;
  PMPI_Reduce(&enable_s, &enable_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  char *s = calloc((size_t)nranks, 64), *r = calloc((size_t)nranks, 64);
  if (!s || !r) die("out of memory");
  PMPI_Alltoall(s, 64, MPI_BYTE, r, 64, MPI_BYTE, p2p);
  PMPI_Alltoall(s, 64, MPI_BYTE, r, 64, MPI_BYTE, MPI_COMM_WORLD);
  free(s);
  free(r);
  return enable_max;
}

/* The opening comment lines' facts: the host MPI's version on one line (at most 80
 * characters) and the date, UTC. */
static inline void run_facts(char version[MPI_MAX_LIBRARY_VERSION_STRING], char date[32]) {
  int vlen = 0;
  MPI_Get_library_version(version, &vlen);
  for (char *c = version; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  if (vlen > 80) version[80] = 0;
  time_t now = time(NULL);
  strftime(date, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
}

/* The end: the data errors of every rank, summed and said by rank 0 with "# end" (the done
 * marker of cluster.sh run); returns the sum on every rank. */
static inline long bench_finish(void) {
  long all = 0;
  PMPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# data check: %ld errors\n", all);
    printf("# end\n");
    fflush(stdout);
  }
  PMPI_Bcast(&all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return all;
}

#endif
