/* core_rate: bytes moved per CPU second, at the root and at each receiver, for large broadcasts.
 *
 *   core_rate [--size BYTES] [--reps N] [--variants host,mpicast]
 *
 * A projection to fast networks: on loopback (2 ranks, MPICAST_TOPO=flat) the wire costs
 * nothing, so what a broadcast of --size bytes (default 64 MiB) costs in CPU is what a rank would
 * need per byte on a network of any speed. Variants, each on its own communicator, run in turns
 * (round r runs every variant once, the order rotated from round to round):
 *   host     PMPI_Bcast on a duplicate of MPI_COMM_WORLD (the host MPI's own broadcast)
 *   mpicast  MPI_Bcast on a duplicate with the hint mpicast_min_bytes=0 (mpicast's path when
 *            preloaded; the host MPI again when not)
 * One repetition: PMPI_Barrier, each rank reads its CPU time (getrusage RUSAGE_SELF: user +
 * system, all threads) and CLOCK_MONOTONIC, the broadcast, the same again. The root fills the
 * buffer with a pattern of the round, every receiver clears its buffer before and checks every
 * byte after (outside the measured part); any error makes the program exit 1.
 *
 * Output, from rank 0, CSV: variant,size,reps,wall_s,root_cpu_s,recv_cpu_s,root_gbps,recv_gbps,
 * recv_vcsw where wall_s is the median over repetitions of the slowest rank's time, root_cpu_s
 * the median of the root's CPU time per broadcast, recv_cpu_s the median of the receivers' mean
 * CPU time per broadcast, *_gbps = size * 8 / that CPU time / 1e9 (bytes sent by the root, or
 * received by one receiver, per CPU second), recv_vcsw the receivers' mean voluntary context
 * switches per broadcast. A receiver that waits by spinning counts its waiting as CPU: the
 * figure is then a lower bound of what its core could take. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage_now(double *cpu, double *vcsw) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *cpu = (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  *vcsw = (double)u.ru_nvcsw;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static unsigned char pattern(size_t i, int round) {
  return (unsigned char)((i * 131u) ^ (i >> 11) ^ (unsigned)round * 29u);
}

enum { HOST, MPICAST, NVAR };
static const char *names[NVAR] = {"host", "mpicast"};

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t size = arg(argc, argv, "--size") ? strtoull(arg(argc, argv, "--size"), NULL, 0) : 64u << 20;
  int reps = arg(argc, argv, "--reps") ? atoi(arg(argc, argv, "--reps")) : 10;
  const char *vlist = arg(argc, argv, "--variants") ? arg(argc, argv, "--variants") : "host,mpicast";
  if (reps < 1) reps = 1;
  if (size > (size_t)INT32_MAX) {
    if (rank == 0) fprintf(stderr, "core_rate: --size must fit an int\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int on[NVAR] = {0, 0};
  for (int v = 0; v < NVAR; v++) on[v] = strstr(vlist, names[v]) != NULL;

  MPI_Comm comm[NVAR];
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm[HOST]);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpicast_min_bytes", "0");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm[MPICAST]);
  MPI_Info_free(&info);

  unsigned char *buf = malloc(size);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(buf, 0, size);
  /* Per variant and repetition: wall (slowest rank), root CPU, receivers' mean CPU and vcsw. */
  double *wall = calloc((size_t)(NVAR * reps), sizeof(double));
  double *rcpu = calloc((size_t)(NVAR * reps), sizeof(double));
  double *vcpu = calloc((size_t)(NVAR * reps), sizeof(double));
  double *vsw = calloc((size_t)(NVAR * reps), sizeof(double));
  int bad = 0;
  for (int r = -2; r < reps; r++) {
    for (int k = 0; k < NVAR; k++) {
      int v = (k + (r < 0 ? 0 : r)) % NVAR;
      if (!on[v]) continue;
      int round = (r + 3) * NVAR + v;
      if (rank == 0)
        for (size_t i = 0; i < size; i++) buf[i] = pattern(i, round);
      else
        memset(buf, 0, size);
      PMPI_Barrier(MPI_COMM_WORLD);
      double c0, s0, c1, s1;
      usage_now(&c0, &s0);
      double t0 = now_s();
      if (v == HOST)
        PMPI_Bcast(buf, (int)size, MPI_BYTE, 0, comm[v]);
      else
        MPI_Bcast(buf, (int)size, MPI_BYTE, 0, comm[v]);
      double t = now_s() - t0;
      usage_now(&c1, &s1);
      if (rank != 0)
        for (size_t i = 0; i < size; i++)
          if (buf[i] != pattern(i, round)) {
            fprintf(stderr, "core_rate: rank %d, %s, byte %zu wrong\n", rank, names[v], i);
            bad = 1;
            break;
          }
      double mine[3] = {t, c1 - c0, s1 - s0}, slowest = 0;
      double *all = rank == 0 ? malloc(sizeof(double) * 3 * (size_t)nranks) : NULL;
      PMPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      PMPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank == 0 && r >= 0) {
        double cpu = 0, sw = 0;
        for (int i = 1; i < nranks; i++) {
          cpu += all[3 * i + 1];
          sw += all[3 * i + 2];
        }
        wall[v * reps + r] = slowest;
        rcpu[v * reps + r] = all[1];
        vcpu[v * reps + r] = nranks > 1 ? cpu / (nranks - 1) : 0;
        vsw[v * reps + r] = nranks > 1 ? sw / (nranks - 1) : 0;
      }
      free(all);
    }
  }
  int anybad = 0;
  PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# core_rate: %d ranks, root 0, %zu bytes, %d reps; medians per broadcast\n", nranks,
           size, reps);
    printf("variant,size,reps,wall_s,root_cpu_s,recv_cpu_s,root_gbps,recv_gbps,recv_vcsw\n");
    for (int v = 0; v < NVAR; v++) {
      if (!on[v]) continue;
      double w = median(wall + v * reps, reps), rc = median(rcpu + v * reps, reps);
      double vc = median(vcpu + v * reps, reps), sw = median(vsw + v * reps, reps);
      double bits = 8.0 * (double)size / 1e9;
      printf("%s,%zu,%d,%.6f,%.6f,%.6f,%.2f,%.2f,%.1f\n", names[v], size, reps, w, rc, vc,
             rc > 0 ? bits / rc : 0, vc > 0 ? bits / vc : 0, sw);
    }
  }
  free(wall);
  free(rcpu);
  free(vcpu);
  free(vsw);
  free(buf);
  MPI_Comm_free(&comm[HOST]);
  MPI_Comm_free(&comm[MPICAST]);
  MPI_Finalize();
  return anybad ? 1 : 0;
}
