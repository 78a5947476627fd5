/* mpicast-goal-run: run a GOAL program (docs/goal.md) over MPI with the mpicast executor.
 *
 *   mpirun -n N mpicast-goal-run FILE [--buffer NAME=SIZE]... [--reps R] [--check]
 *                                [--expect bcast|sum-int32]
 *
 * Every rank creates a goal on MPI_COMM_WORLD, loads FILE (GOAL text of either dialect, or
 * a binary schedule from `mpicast goal asm`), binds each --buffer to SIZE bytes of fresh
 * memory filled with a rank-dependent pattern, and runs the program R times (default 1),
 * each run timed as PMPI_Barrier; start; wait. Rank 0 prints one line per run with the
 * slowest rank's time (PMPI_Reduce MAX):
 *
 *   run 1/R: 0.000123456 s (slowest of N ranks)
 *
 * --check refills the buffers before every run and, after it, requires buffer `buf` to be
 * identical on every rank (what a broadcast or an allreduce leaves); rank 0 prints
 * `check 1/R: buf identical on N ranks (fnv1a 0x...)`. --expect bcast (implies --check) also
 * requires `buf` to hold what rank 0 put there; --expect sum-int32 requires it to hold the
 * element-wise int32 sum of every rank's initial `buf` (computed with PMPI_Allreduce); rank 0
 * then prints `expect 1/R: buf is ... on N ranks`.
 *
 * Exit status: 0 fine; 1 the program did not load or a run failed (MPICAST_Goal_error's
 * text on stderr); 2 bad usage, or a buffer the program names was not given with --buffer
 * (or is too small); 3 --check found ranks that differ. `mpicast goal run` launches this. */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#define MAX_BUFFERS 64

struct buffer {
  const char *name;
  size_t size;
  unsigned char *data;
};

static int rank, nranks;

static void usage(const char *msg, ...) __attribute__((format(printf, 1, 2)));
static void usage(const char *msg, ...) {
  if (rank == 0) {
    /* One write (stderr is unbuffered): the launcher must not split the message. */
    char what[512];
    va_list ap;
    va_start(ap, msg);
    vsnprintf(what, sizeof what, msg, ap);
    va_end(ap);
    fprintf(stderr,
            "mpicast-goal-run: %s\nusage: mpicast-goal-run FILE [--buffer NAME=SIZE]... [--reps R] "
            "[--check] [--expect bcast|sum-int32]\n",
            what);
  }
  MPI_Finalize();
  exit(2);
}

/* A whole decimal number in [min, max], or -1. */
static long long parse_num(const char *s, long long min, long long max) {
  if (!s || !*s || *s == '-' || *s == '+')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < (unsigned long long)min || v > (unsigned long long)max)
    return -1;
  return (long long)v;
}

/* The same on every rank: the code of the first failing rank (or 0) and that rank (or -1).
 * Each rank passes its own outcome, so a failure on any rank ends the job everywhere. */
static int agree(int rc, int *failed_rank) {
  /* MAXLOC over -rank picks the lowest failing rank (ranks that did not fail offer -nranks);
   * the code travels as the location. */
  struct {
    int v, i;
  } in = {rc ? -rank : -nranks, rc}, out;
  PMPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
  *failed_rank = out.v == -nranks ? -1 : -out.v;
  return *failed_rank < 0 ? 0 : out.i;
}

/* The pattern rank `r` puts into buffer number `k`. */
static void pattern(unsigned char *out, size_t n, int r, int k) {
  for (size_t i = 0; i < n; i++)
    out[i] = (unsigned char)((r + 1) * 37 + k * 11 + (int)(i * 7));
}

static void fill(struct buffer *b, int k) { pattern(b->data, b->size, rank, k); }

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  const char *file = NULL;
  struct buffer bufs[MAX_BUFFERS];
  int nbufs = 0, check = 0;
  enum { EXPECT_NONE, EXPECT_BCAST, EXPECT_SUM_INT32 } expect = EXPECT_NONE;
  long long reps = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--buffer") == 0 || strcmp(a, "-b") == 0) {
      if (++i >= argc)
        usage("--buffer needs NAME=SIZE");
      char *eq = strchr(argv[i], '=');
      long long size = eq ? parse_num(eq + 1, 0, (long long)(SIZE_MAX / 2)) : -1;
      if (!eq || eq == argv[i] || size < 0)
        usage("--buffer wants NAME=SIZE (SIZE in bytes), not `%s`", argv[i]);
      if (nbufs == MAX_BUFFERS)
        usage("at most %d buffers", MAX_BUFFERS);
      *eq = '\0';
      for (int k = 0; k < nbufs; k++)
        if (strcmp(bufs[k].name, argv[i]) == 0)
          usage("buffer `%s` given twice", argv[i]);
      bufs[nbufs].name = argv[i];
      bufs[nbufs].size = (size_t)size;
      bufs[nbufs].data = NULL;
      nbufs++;
    } else if (strcmp(a, "--reps") == 0) {
      if (++i >= argc || (reps = parse_num(argv[i], 1, 100000000)) < 0)
        usage("--reps wants a number from 1 to 100000000");
    } else if (strcmp(a, "--check") == 0) {
      check = 1;
    } else if (strcmp(a, "--expect") == 0) {
      if (++i >= argc)
        usage("--expect wants bcast or sum-int32");
      if (strcmp(argv[i], "bcast") == 0)
        expect = EXPECT_BCAST;
      else if (strcmp(argv[i], "sum-int32") == 0)
        expect = EXPECT_SUM_INT32;
      else
        usage("--expect wants bcast or sum-int32, not `%s`", argv[i]);
      check = 1;
    } else if (a[0] == '-' && a[1]) {
      usage("unknown option `%s`", a);
    } else if (file) {
      usage("one FILE only (got `%s` and `%s`)", file, a);
    } else {
      file = a;
    }
  }
  if (!file)
    usage("no FILE given");
  struct buffer *checked = NULL;
  for (int k = 0; k < nbufs; k++)
    if (strcmp(bufs[k].name, "buf") == 0)
      checked = &bufs[k];
  if (check && !checked)
    usage("--check compares buffer `buf`: give it with --buffer buf=SIZE");
  if (expect == EXPECT_SUM_INT32 && checked->size % 4)
    usage("--expect sum-int32 wants `buf` a multiple of 4 bytes");

  MPICAST_Goal *g = NULL;
  int rc = MPICAST_Goal_create(MPI_COMM_WORLD, &g), who;
  if (agree(rc, &who)) {
    if (rank == who)
      fprintf(stderr, "mpicast-goal-run: rank %d: MPICAST_Goal_create: %s\n", rank,
              MPICAST_Status_string(rc));
    MPI_Finalize();
    return 1;
  }

  rc = MPICAST_Goal_load_file(g, file);
  if (agree(rc, &who)) {
    if (rank == who)
      fprintf(stderr, "mpicast-goal-run: rank %d: cannot load %s: %s\n", rank, file,
              MPICAST_Goal_error(g));
    MPICAST_Goal_free(g);
    MPI_Finalize();
    return 1;
  }

  rc = 0;
  for (int k = 0; k < nbufs && !rc; k++) {
    /* malloc(0) may give NULL: keep a valid pointer for empty buffers. */
    bufs[k].data = malloc(bufs[k].size ? bufs[k].size : 1);
    if (!bufs[k].data) {
      fprintf(stderr, "mpicast-goal-run: rank %d: out of memory for buffer `%s` (%zu bytes)\n",
              rank, bufs[k].name, bufs[k].size);
      rc = -1;
      break;
    }
    fill(&bufs[k], k);
    rc = MPICAST_Goal_bind_buffer(g, bufs[k].name, bufs[k].data, bufs[k].size);
    if (rc)
      fprintf(stderr, "mpicast-goal-run: rank %d: binding buffer `%s`: %s\n", rank, bufs[k].name,
              MPICAST_Goal_error(g));
  }
  if (agree(rc, &who)) {
    MPICAST_Goal_free(g);
    MPI_Finalize();
    return 1;
  }

  double *times = malloc(sizeof(double) * (size_t)reps);
  if (!times)
    MPI_Abort(MPI_COMM_WORLD, 1);
  int status = 0;
  for (long long r = 0; r < reps; r++) {
    if (check && r > 0)
      for (int k = 0; k < nbufs; k++)
        fill(&bufs[k], k);
    unsigned char *want = NULL;
    if (expect != EXPECT_NONE) {
      want = malloc(checked->size ? checked->size : 1);
      if (!want)
        MPI_Abort(MPI_COMM_WORLD, 1);
      if (expect == EXPECT_BCAST) {
        pattern(want, checked->size, 0, (int)(checked - bufs));
      } else {
        /* memcpy keeps the byte buffer free of alignment and aliasing questions. */
        int n = (int)(checked->size / 4);
        int32_t *in = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
        int32_t *sum = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
        if (!in || !sum)
          MPI_Abort(MPI_COMM_WORLD, 1);
        memcpy(in, checked->data, checked->size);
        PMPI_Allreduce(in, sum, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        memcpy(want, sum, checked->size);
        free(in);
        free(sum);
      }
    }
    MPICAST_Request *req = NULL;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    rc = MPICAST_Goal_start(g, &req);
    /* Every rank loads the same program with the same buffers, so a start fails everywhere
     * or nowhere; agreeing first keeps a rank from waiting on peers that never started. */
    int code = agree(rc, &who);
    if (code) {
      int started = rc == MPICAST_OK, any_started;
      PMPI_Allreduce(&started, &any_started, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
      if (rank == who) {
        fprintf(stderr, "mpicast-goal-run: rank %d: cannot start %s: %s\n", rank, file,
                MPICAST_Goal_error(g));
        if (code == MPICAST_ERR_GOAL_STATE)
          fprintf(stderr,
                  "mpicast-goal-run: give every buffer the program names with --buffer NAME=SIZE, "
                  "at least as large as its furthest reference (`buf` is the un-named buffer; "
                  "`mpicast goal check FILE --buffer NAME=SIZE` checks the sizes)\n");
      }
      if (any_started) /* some rank has a run in flight that can never finish */
        MPI_Abort(MPI_COMM_WORLD, code == MPICAST_ERR_GOAL_STATE ? 2 : 1);
      MPICAST_Goal_free(g);
      MPI_Finalize();
      return code == MPICAST_ERR_GOAL_STATE ? 2 : 1;
    }
    rc = MPICAST_Goal_wait(req);
    double mine = MPI_Wtime() - t0, slowest = 0;
    if (rc) {
      /* The peers may be blocked on this rank: nothing to agree on, end the job. */
      fprintf(stderr, "mpicast-goal-run: rank %d: run %lld of %s failed: %s\n", rank, r + 1, file,
              MPICAST_Goal_error(g));
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    PMPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    times[r] = slowest;
    if (rank == 0) {
      printf("run %lld/%lld: %.9f s (slowest of %d ranks)\n", r + 1, reps, slowest, nranks);
      fflush(stdout);
    }
    if (check) {
      uint64_t h = fnv1a(checked->data, checked->size);
      uint64_t *all = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)nranks) : NULL;
      if (rank == 0 && !all)
        MPI_Abort(MPI_COMM_WORLD, 1);
      PMPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        /* The whole line in one write: stderr is unbuffered, and the launcher forwarding it
         * could interleave pieces with this rank's stdout. */
        size_t cap = 128 + 48 * (size_t)nranks, len = 0;
        char *line = malloc(cap);
        if (!line)
          MPI_Abort(MPI_COMM_WORLD, 1);
        int bad = 0;
        len += (size_t)snprintf(line, cap,
                                "mpicast-goal-run: check %lld/%lld: buffer `buf` differs:", r + 1,
                                reps);
        for (int i = 1; i < nranks; i++)
          if (all[i] != all[0]) {
            len += (size_t)snprintf(line + len, cap - len, " rank %d has fnv1a 0x%016" PRIx64 ",",
                                    i, all[i]);
            bad = 1;
          }
        if (bad) {
          snprintf(line + len, cap - len, " rank 0 0x%016" PRIx64 "\n", all[0]);
          fputs(line, stderr);
          status = 3;
        } else {
          printf("check %lld/%lld: buf identical on %d ranks (fnv1a 0x%016" PRIx64 ")\n", r + 1,
                 reps, nranks, all[0]);
        }
        free(line);
        fflush(stdout);
      }
      free(all);
      PMPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (want) {
        int wrong = memcmp(want, checked->data, checked->size) != 0, any = 0;
        PMPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (wrong)
          fprintf(stderr, "mpicast-goal-run: rank %d: expect %lld/%lld: buf is not %s\n", rank,
                  r + 1, reps, expect == EXPECT_BCAST ? "rank 0's data" : "the int32 sum");
        if (rank == 0 && !any) {
          printf("expect %lld/%lld: buf is %s on %d ranks\n", r + 1, reps,
                 expect == EXPECT_BCAST ? "rank 0's data" : "the int32 sum", nranks);
          fflush(stdout);
        }
        if (any && !status)
          status = 3;
        free(want);
        want = NULL;
      }
      if (status)
        break;
    }
  }
  if (rank == 0 && reps > 1 && !status) {
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    double median = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    printf("summary: %lld runs, median %.9f s, min %.9f s, max %.9f s\n", reps, median, times[0],
           times[reps - 1]);
  }
  free(times);
  MPICAST_Goal_free(g);
  for (int k = 0; k < nbufs; k++)
    free(bufs[k].data);
  MPI_Finalize();
  return status;
}
