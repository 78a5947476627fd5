/* What mpicast costs the application's point-to-point calls where dynamic broadcast is not in
 * use: ping-pong latency and message rate of 8-byte messages on 2 ranks. The same binary runs
 * on the host MPI alone and with libmpicast preloaded (bench/p2p_overhead.sh compares them):
 *
 *   mpirun -np 2 [-x LD_PRELOAD=build/openmpi/lib/libmpicast.so] p2p_overhead [options]
 *
 *   --reps R        timed repetitions of each measure (default 15; the median is printed)
 *   --warmup W      untimed repetitions first (default 2)
 *   --iters K       round trips per repetition of a latency measure (default 20000)
 *   --rate-iters M  windows per repetition of the message rate (default 500)
 *   --window N      messages per window (default 64)
 *   --bytes B       bytes per message of the three latency measures (default 8; the message
 *                   rate and the allreduce keep 8)
 *   --enable        MPICAST_Dbcast_enable on a duplicate of MPI_COMM_WORLD (looked up with
 *                   dlsym: without the library, or a library without it, nothing is enabled
 *                   and a comment line says so); the measures run on ANOTHER duplicate, which
 *                   is not enabled (comm "dup")
 *   --on-enabled    also measure on the enabled duplicate (comm "enabled"; without the call,
 *                   on a plain duplicate of that name, so that host and preloaded runs compare)
 *
 * Measures (the repetitions of all of them interleaved, so that drift hits each alike):
 *   lat_send_recv    MPI_Send / MPI_Recv ping-pong, ns per round trip
 *   lat_isend_wait   MPI_Irecv + MPI_Isend + MPI_Wait ping-pong, ns per round trip
 *   lat_irecv_test   MPI_Irecv posted, MPI_Send, MPI_Test until done, ns per round trip
 *   lat_allreduce    8-byte MPI_Allreduce, ns per call
 *   rate_window      N MPI_Isend (rank 0) / MPI_Irecv (rank 1) + MPI_Waitall, a 0-byte
 *                    acknowledgement per window, messages per second
 *
 * Output (rank 0, stdout): comment lines starting with '#', then one CSV line per measure and
 * communicator: measure,comm,unit,median,min,max,reps,iters. Synchronisation between
 * repetitions uses PMPI_Barrier, so that mpicast's MPI_Barrier is not part of what is compared. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank;
/* The latency measures' buffers (--bytes). */
static char *sbuf, *lbuf;
static int nbytes = 8;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long long arg_ll(int argc, char **argv, const char *name, long long dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return atoll(argv[i + 1]);
  return dflt;
}

static int flag(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ns per round trip. */
static double lat_send_recv(MPI_Comm c, int k) {
  char *b = lbuf;
  int peer = 1 - rank;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t = now();
  for (int i = 0; i < k; i++) {
    if (rank == 0) {
      MPI_Send(b, nbytes, MPI_BYTE, peer, 1, c);
      MPI_Recv(b, nbytes, MPI_BYTE, peer, 1, c, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(b, nbytes, MPI_BYTE, peer, 1, c, MPI_STATUS_IGNORE);
      MPI_Send(b, nbytes, MPI_BYTE, peer, 1, c);
    }
  }
  return (now() - t) / k * 1e9;
}

static double lat_isend_wait(MPI_Comm c, int k) {
  char *sb = sbuf, *rb = lbuf;
  int peer = 1 - rank;
  MPI_Request s, r;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t = now();
  for (int i = 0; i < k; i++) {
    if (rank == 0) {
      MPI_Irecv(rb, nbytes, MPI_BYTE, peer, 2, c, &r);
      MPI_Isend(sb, nbytes, MPI_BYTE, peer, 2, c, &s);
      MPI_Wait(&s, MPI_STATUS_IGNORE);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPI_Irecv(rb, nbytes, MPI_BYTE, peer, 2, c, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      MPI_Isend(sb, nbytes, MPI_BYTE, peer, 2, c, &s);
      MPI_Wait(&s, MPI_STATUS_IGNORE);
    }
  }
  return (now() - t) / k * 1e9;
}

static double lat_irecv_test(MPI_Comm c, int k) {
  char *sb = sbuf, *rb = lbuf;
  int peer = 1 - rank;
  MPI_Request r;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t = now();
  for (int i = 0; i < k; i++) {
    int f = 0;
    MPI_Irecv(rb, nbytes, MPI_BYTE, peer, 3, c, &r);
    if (rank == 0) MPI_Send(sb, nbytes, MPI_BYTE, peer, 3, c);
    while (!f) MPI_Test(&r, &f, MPI_STATUS_IGNORE);
    if (rank == 1) MPI_Send(sb, nbytes, MPI_BYTE, peer, 3, c);
  }
  return (now() - t) / k * 1e9;
}

/* Messages per second. */
static double rate_window(MPI_Comm c, int m, int w, MPI_Request *req, MPI_Status *sts,
                          char *rbuf) {
  char sb[8] = {0};
  int peer = 1 - rank;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t = now();
  for (int i = 0; i < m; i++) {
    if (rank == 0) {
      for (int j = 0; j < w; j++) MPI_Isend(sb, 8, MPI_BYTE, peer, 4, c, &req[j]);
      MPI_Waitall(w, req, sts);
      MPI_Recv(NULL, 0, MPI_BYTE, peer, 5, c, MPI_STATUS_IGNORE);
    } else {
      for (int j = 0; j < w; j++) MPI_Irecv(rbuf + 8 * j, 8, MPI_BYTE, peer, 4, c, &req[j]);
      MPI_Waitall(w, req, sts);
      MPI_Send(NULL, 0, MPI_BYTE, peer, 5, c);
    }
  }
  return (double)m * w / (now() - t);
}

/* A blocking collective of the application: 8-byte MPI_Allreduce, ns per call (mpicast
 * intercepts it to keep forwarding while an engine exists; with none, one branch). */
static double lat_allreduce(MPI_Comm c, int k) {
  double in = rank, out = 0;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t = now();
  for (int i = 0; i < k; i++) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, c);
  return (now() - t) / k * 1e9;
}

enum { NMEAS = 5 };
static const char *meas_name[NMEAS] = {"lat_send_recv", "lat_isend_wait", "lat_irecv_test",
                                       "rate_window", "lat_allreduce"};
static const char *meas_unit[NMEAS] = {"ns_per_roundtrip", "ns_per_roundtrip", "ns_per_roundtrip",
                                       "msgs_per_s", "ns_per_call"};

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "p2p_overhead: needs 2 ranks, not %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int reps = (int)arg_ll(argc, argv, "--reps", 15);
  int warmup = (int)arg_ll(argc, argv, "--warmup", 2);
  int iters = (int)arg_ll(argc, argv, "--iters", 20000);
  int rate_iters = (int)arg_ll(argc, argv, "--rate-iters", 500);
  int window = (int)arg_ll(argc, argv, "--window", 64);
  int enable = flag(argc, argv, "--enable"), on_enabled = flag(argc, argv, "--on-enabled");
  long long bytes = arg_ll(argc, argv, "--bytes", 8);
  if (reps < 1 || iters < 1 || rate_iters < 1 || window < 1 || warmup < 0 || bytes < 0 ||
      bytes > (1 << 30)) {
    if (rank == 0) fprintf(stderr, "p2p_overhead: bad option value\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int vlen = 0;
  MPI_Get_library_version(version, &vlen);
  char *nl = strchr(version, '\n');
  if (nl) *nl = 0;
  int loaded = dlsym(RTLD_DEFAULT, "MPICAST_Get_stats") != NULL;

  /* The enabled duplicate (when asked), and the one the measures run on. */
  MPI_Comm en = MPI_COMM_NULL, dup;
  const char *enabled_state = "not asked";
  if (enable || on_enabled) {
    MPI_Comm_dup(MPI_COMM_WORLD, &en);
    if (enable) {
      void *p = dlsym(RTLD_DEFAULT, "MPICAST_Dbcast_enable");
      int (*fn)(MPI_Comm) = NULL;
      memcpy(&fn, &p, sizeof p);
      if (!fn) {
        enabled_state = "MPICAST_Dbcast_enable not found: nothing enabled";
      } else {
        int rc = fn(en);
        if (rc != 0) {
          if (rank == 0) fprintf(stderr, "p2p_overhead: MPICAST_Dbcast_enable returned %d\n", rc);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        enabled_state = "enabled";
      }
    }
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);

  MPI_Comm comms[2] = {dup, en};
  const char *comm_name[2] = {"dup", "enabled"};
  int ncomms = on_enabled ? 2 : 1;
  double *v = malloc(sizeof(double) * (size_t)(2 * NMEAS * reps));
  MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)window);
  MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)window);
  char *rbuf = malloc(8 * (size_t)window);
  nbytes = (int)bytes;
  sbuf = calloc((size_t)nbytes + 1, 1);
  lbuf = calloc((size_t)nbytes + 1, 1);
  for (int r = 0; r < warmup + reps; r++)
    for (int ci = 0; ci < ncomms; ci++)
      for (int mi = 0; mi < NMEAS; mi++) {
        MPI_Comm c = comms[ci];
        double x = 0;
        switch (mi) {
          case 0: x = lat_send_recv(c, iters); break;
          case 1: x = lat_isend_wait(c, iters); break;
          case 2: x = lat_irecv_test(c, iters); break;
          case 3: x = rate_window(c, rate_iters, window, req, sts, rbuf); break;
          case 4: x = lat_allreduce(c, iters); break;
        }
        if (r >= warmup) v[(ci * NMEAS + mi) * reps + (r - warmup)] = x;
      }
  if (rank == 0) {
    printf("# p2p_overhead: %s\n", version);
    printf("# libmpicast: %s\n", loaded ? "loaded" : "not loaded");
    printf("# dynamic broadcast on a duplicate of MPI_COMM_WORLD: %s\n", enabled_state);
    printf("# reps %d (+%d warmup), iters %d, rate %d windows of %d, latency messages of %d "
           "bytes\n",
           reps, warmup, iters, rate_iters, window, nbytes);
    printf("measure,comm,unit,median,min,max,reps,iters\n");
    for (int ci = 0; ci < ncomms; ci++)
      for (int mi = 0; mi < NMEAS; mi++) {
        double *x = &v[(ci * NMEAS + mi) * reps];
        qsort(x, (size_t)reps, sizeof(double), cmp_double);
        double med = reps % 2 ? x[reps / 2] : (x[reps / 2 - 1] + x[reps / 2]) / 2;
        printf("%s,%s,%s,%.3f,%.3f,%.3f,%d,%d\n", meas_name[mi], comm_name[ci], meas_unit[mi],
               med, x[0], x[reps - 1], reps, mi == 3 ? rate_iters * window : iters);
      }
    fflush(stdout);
  }
  free(v);
  free(req);
  free(sts);
  free(rbuf);
  free(sbuf);
  free(lbuf);
  MPI_Comm_free(&dup);
  if (en != MPI_COMM_NULL) MPI_Comm_free(&en);
  MPI_Finalize();
  return 0;
}
