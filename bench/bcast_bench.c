/* MPI_Bcast latency per message size, root 0.
 *   bcast_bench [--sizes 1,1024,...] [--reps N] [--barrier]
 * For each size: a few warm-up broadcasts, then N repetitions of
 * (MPI_Barrier; t0; MPI_Bcast; t = now - t0). A repetition's figure is the
 * slowest rank's time (MPI_Reduce MAX to rank 0); the size's figure is the
 * median over repetitions, with the min and max beside it. --barrier adds a
 * row for MPI_Barrier itself, timed the same way. Only MPI_* calls are made,
 * so the same binary measures the host MPI and, preloaded, mpicast.
 * Output: CSV on stdout from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 3

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

/* Times one operation `reps` times; rank 0 prints its CSV row. */
static void measure(const char *op, size_t size, int reps, unsigned char *buf, int rank) {
  double *t = malloc(sizeof(double) * (size_t)reps);
  if (!t) MPI_Abort(MPI_COMM_WORLD, 1);
  int is_bcast = strcmp(op, "bcast") == 0;
  for (int r = -WARMUP; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (is_bcast)
      MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    else
      MPI_Barrier(MPI_COMM_WORLD);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r >= 0) t[r] = slowest;
  }
  if (rank == 0) {
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    double median = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    printf("%s,%zu,%d,%.9f,%.9f,%.9f\n", op, size, reps, median, t[0], t[reps - 1]);
    fflush(stdout);
  }
  free(t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *list = arg(argc, argv, "--sizes");
  int reps = arg(argc, argv, "--reps") ? atoi(arg(argc, argv, "--reps")) : 100;
  int barrier = 0;
  for (int i = 1; i < argc; i++) barrier |= strcmp(argv[i], "--barrier") == 0;
  if (reps < 1) reps = 1;

  size_t sizes[64], n = 0, max = 1;
  char *copy = strdup(list ? list : "1,1024,16384,65536,262144,1048576,4194304");
  for (char *tok = strtok(copy, ","); tok && n < 64; tok = strtok(NULL, ","))
    sizes[n++] = (size_t)strtoull(tok, NULL, 0);
  free(copy);
  for (size_t i = 0; i < n; i++)
    if (sizes[i] > max) max = sizes[i];
  unsigned char *buf = malloc(max);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(buf, rank, max);

  if (rank == 0) {
    printf("# bcast_bench: %d ranks, root 0, %d reps, seconds (max over ranks; median, min, max over reps)\n",
           nranks, reps);
    printf("op,size,reps,median_s,min_s,max_s\n");
  }
  if (barrier) measure("barrier", 0, reps, buf, rank);
  for (size_t i = 0; i < n; i++) measure("bcast", sizes[i], reps, buf, rank);
  free(buf);
  MPI_Finalize();
  return 0;
}
