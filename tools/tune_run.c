/* mpicast-tune-run: the measurements of `mpicast tune` (docs/tune.md), side by side in one job.
 *
 *   mpirun -n N mpicast-tune-run [--sizes B,B,...] [--reps R] [--warmup W] [--rcvbuf BYTES]
 *
 * For every size (bytes, default 64 B .. 4 MiB by powers of 2) and every repetition, three
 * broadcasts of the same buffer, in an order that rotates from one repetition to the next:
 *
 *   host    PMPI_Bcast on a duplicate of MPI_COMM_WORLD (the host MPI's own broadcast);
 *   eager   MPI_Bcast through mpicast on a duplicate with the hints mpicast=on,
 *           mpicast_min_bytes=0 and mpicast_eager_bytes=1GiB (every size by multicast, no
 *           scouts);
 *   scouts  the same with mpicast_eager_bytes=0 (scouts before every multicast, the
 *           MPICAST_SYNC in force: tree by default);
 *
 * then the barrier: PMPI_Barrier against MPI_Barrier through mpicast. The root rotates with
 * the repetition (rep % N). Each timed operation is PMPI_Barrier; t0; operation; t1 on every
 * rank, and the repetition's figure is the slowest rank's t1 - t0 (PMPI_Reduce MAX): an eager
 * root returns before its receivers have the data, so only the slowest rank says when the
 * broadcast is over. A barrier repetition is 10 barriers in a row, divided by 10. W warm-up
 * repetitions (default 2) of every mode come first at each size and are not printed (the first
 * broadcast on a communicator sets up its multicast group).
 *
 * Every broadcast's data is checked on every rank after its timing, and the counters of
 * MPICAST_Get_stats must show that each mode took the path meant: the host MPI mode none of
 * mpicast's, the multicast modes one multicast broadcast per call and none handed to the host
 * MPI (else the setup probe failed, or MPICAST_DISABLE is set: exit 4, with the counts).
 *
 * Rank 0 prints, on stdout, one line each (flushed as it goes; times in ns):
 *
 *   tune-run 1 ranks=N hosts=H reps=R warmup=W sizes=K rcvbuf=BYTES
 *   host NAME/ADDR ranks=K rmem_max=BYTES granted=BYTES (one per host, named and told apart
 *                                                       by the address of its route to the
 *                                                       groups; granted: what
 *                                                       getsockopt reports for a UDP socket
 *                                                       that asked for --rcvbuf as the
 *                                                       library asks, FORCE then plain)
 *   bcast BYTES host|eager|scouts T1 T2 ... TR          (three lines per size, in size order)
 *   barrier host|mcast T1 ... TR
 *   traffic dgrams_sent=D repairs=P                     (sums over ranks, multicast modes)
 *   done
 *
 * Exit status: 0 fine; 2 bad usage; 3 a broadcast delivered wrong data; 4 a mode did not take
 * the path it was meant to. `mpicast tune` launches this and reads its output. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mpicast.h>

#define MAX_SIZES 64
#define MAX_REPS 100000
#define BARRIER_BATCH 10

enum mode { HOST, EAGER, SCOUTS, NMODES };
static const char *mode_name[NMODES] = {"host", "eager", "scouts"};

static int rank, nranks;

static void usage(const char *msg, ...) __attribute__((format(printf, 1, 2)));
static void usage(const char *msg, ...) {
  if (rank == 0) {
    char what[512];
    va_list ap;
    va_start(ap, msg);
    vsnprintf(what, sizeof what, msg, ap);
    va_end(ap);
    fprintf(stderr,
            "mpicast-tune-run: %s\nusage: mpicast-tune-run [--sizes B,B,...] [--reps R] "
            "[--warmup W] [--rcvbuf BYTES]\n",
            what);
  }
  MPI_Finalize();
  exit(2);
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  if (!s || !*s)
    return 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || v < lo || v > hi)
    return 0;
  *out = v;
  return 1;
}

static MPI_Comm dup_with_hints(const char *eager_bytes) {
  MPI_Comm c;
  MPI_Info info;
  PMPI_Comm_dup(MPI_COMM_WORLD, &c);
  if (!eager_bytes)
    return c;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpicast", "on");
  MPI_Info_set(info, "mpicast_min_bytes", "0");
  MPI_Info_set(info, "mpicast_eager_bytes", eager_bytes);
  /* Through mpicast's wrapper, which notes its keys. */
  MPI_Comm_set_info(c, info);
  MPI_Info_free(&info);
  return c;
}

static MPICAST_Stats stats(void) {
  MPICAST_Stats s;
  memset(&s, 0, sizeof s);
  if (MPICAST_Get_stats(&s) != MPICAST_OK) {
    fprintf(stderr, "mpicast-tune-run: rank %d: MPICAST_Get_stats failed\n", rank);
    PMPI_Abort(MPI_COMM_WORLD, 1);
  }
  return s;
}

static unsigned char pattern(size_t i, uint64_t seed) {
  return (unsigned char)((i * 131u + seed * 7u + (i >> 11)) & 0xff);
}

/* Ends the job with `code` on every rank when any rank's `bad` is set; rank 0 says why. */
static void agree_ok(int bad, int code, const char *what) {
  int any = 0;
  PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (any) {
    if (rank == 0)
      fprintf(stderr, "mpicast-tune-run: %s\n", what);
    MPI_Finalize();
    exit(code);
  }
}

/* One timed broadcast of `n` bytes: the slowest rank's time on rank 0 (0 elsewhere). */
static double timed_bcast(enum mode m, MPI_Comm comm, unsigned char *buf, size_t n, int root,
                          uint64_t seed) {
  if (rank == root)
    for (size_t i = 0; i < n; i++)
      buf[i] = pattern(i, seed);
  else
    memset(buf, 0, n);
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  int rc = m == HOST ? PMPI_Bcast(buf, (int)n, MPI_BYTE, root, comm)
                     : MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
  double t = MPI_Wtime() - t0;
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "mpicast-tune-run: rank %d: %s broadcast of %zu bytes failed (%d)\n", rank,
            mode_name[m], n, rc);
    PMPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t wrong = n;
  for (size_t i = 0; i < n; i++)
    if (buf[i] != pattern(i, seed)) {
      wrong = i;
      break;
    }
  char msg[160];
  snprintf(msg, sizeof msg, "%s broadcast of %zu bytes from rank %d delivered wrong data",
           mode_name[m], n, root);
  if (wrong != n)
    fprintf(stderr, "mpicast-tune-run: rank %d: %s broadcast of %zu bytes: byte %zu wrong\n",
            rank, mode_name[m], n, wrong);
  agree_ok(wrong != n, 3, msg);
  double slowest = 0;
  PMPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest;
}

static double timed_barrier(int through_mpicast, MPI_Comm comm) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < BARRIER_BATCH; i++)
    if (through_mpicast)
      MPI_Barrier(comm);
    else
      PMPI_Barrier(comm);
  double t = (MPI_Wtime() - t0) / BARRIER_BATCH, slowest = 0;
  PMPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest;
}

static void print_times(const char *head, const double *t, uint64_t reps) {
  if (rank != 0)
    return;
  printf("%s", head);
  for (uint64_t r = 0; r < reps; r++)
    printf(" %.0f", t[r] * 1e9);
  printf("\n");
  fflush(stdout);
}

/* This host's name, rmem_max and the receive buffer a UDP socket gets for `ask` bytes. */
struct host_facts {
  char name[MPI_MAX_PROCESSOR_NAME + 24];
  long long rmem_max;
  long long granted;
};

static struct host_facts my_facts(uint64_t ask) {
  struct host_facts f;
  memset(&f, 0, sizeof f);
  int len = 0;
  char proc[MPI_MAX_PROCESSOR_NAME];
  MPI_Get_processor_name(proc, &len);
  /* Hosts that share a name (containers, network namespaces) are told apart by the address
   * their route to the multicast groups leaves from: connecting a UDP socket sends nothing. */
  char addr[INET_ADDRSTRLEN] = "";
  int us = socket(AF_INET, SOCK_DGRAM, 0);
  if (us >= 0) {
    struct sockaddr_in g, me;
    socklen_t ml = sizeof me;
    memset(&g, 0, sizeof g);
    g.sin_family = AF_INET;
    g.sin_port = htons(9);
    inet_pton(AF_INET, "239.255.0.1", &g.sin_addr);
    if (connect(us, (struct sockaddr *)&g, sizeof g) == 0 &&
        getsockname(us, (struct sockaddr *)&me, &ml) == 0)
      inet_ntop(AF_INET, &me.sin_addr, addr, sizeof addr);
    close(us);
  }
  if (addr[0])
    snprintf(f.name, sizeof f.name, "%s/%s", proc, addr);
  else
    snprintf(f.name, sizeof f.name, "%s", proc);
  f.rmem_max = -1;
  FILE *p = fopen("/proc/sys/net/core/rmem_max", "r");
  if (p) {
    if (fscanf(p, "%lld", &f.rmem_max) != 1)
      f.rmem_max = -1;
    fclose(p);
  }
  f.granted = -1;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0) {
    int v = ask > (uint64_t)(INT32_MAX / 2) ? INT32_MAX / 2 : (int)ask, got = 0;
    socklen_t sl = sizeof got;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
      (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &sl) == 0)
      f.granted = got;
    close(fd);
  }
  return f;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &nranks);

  uint64_t sizes[MAX_SIZES], nsizes = 0, reps = 11, warmup = 2, rcvbuf = 8u << 20;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--sizes")) {
      if (++i >= argc)
        usage("--sizes needs a list of sizes in bytes");
      char *list = strdup(argv[i]), *save = NULL;
      nsizes = 0;
      for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (nsizes == MAX_SIZES)
          usage("at most %d sizes", MAX_SIZES);
        if (!parse_u64(w, 1, INT32_MAX, &sizes[nsizes]))
          usage("--sizes wants sizes in bytes from 1 to 2147483647, not `%s`", w);
        nsizes++;
      }
      free(list);
    } else if (!strcmp(a, "--reps")) {
      if (++i >= argc || !parse_u64(argv[i], 1, MAX_REPS, &reps))
        usage("--reps wants a number from 1 to %d", MAX_REPS);
    } else if (!strcmp(a, "--warmup")) {
      if (++i >= argc || !parse_u64(argv[i], 0, 1000, &warmup))
        usage("--warmup wants a number from 0 to 1000");
    } else if (!strcmp(a, "--rcvbuf")) {
      if (++i >= argc || !parse_u64(argv[i], 1, (uint64_t)1 << 30, &rcvbuf))
        usage("--rcvbuf wants a size in bytes up to 1 GiB");
    } else {
      usage("unknown argument `%s`", a);
    }
  }
  if (nsizes == 0)
    for (uint64_t s = 64; s <= (4u << 20); s *= 2)
      sizes[nsizes++] = s;
  if (nranks < 2)
    usage("needs at least 2 ranks");

  /* The hosts: every rank's facts, gathered; rank 0 prints one line per host. */
  struct host_facts mine = my_facts(rcvbuf);
  struct host_facts *all = rank == 0 ? calloc((size_t)nranks, sizeof *all) : NULL;
  PMPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0,
              MPI_COMM_WORLD);
  if (rank == 0) {
    int nhosts = 0;
    for (int r = 0; r < nranks; r++) {
      int seen = 0;
      for (int q = 0; q < r; q++)
        seen |= !strcmp(all[q].name, all[r].name);
      nhosts += !seen;
    }
    printf("tune-run 1 ranks=%d hosts=%d reps=%" PRIu64 " warmup=%" PRIu64 " sizes=%" PRIu64
           " rcvbuf=%" PRIu64 "\n",
           nranks, nhosts, reps, warmup, nsizes, rcvbuf);
    for (int r = 0; r < nranks; r++) {
      int seen = 0, count = 0;
      for (int q = 0; q < nranks; q++) {
        seen |= q < r && !strcmp(all[q].name, all[r].name);
        count += !strcmp(all[q].name, all[r].name);
      }
      if (!seen)
        printf("host %s ranks=%d rmem_max=%lld granted=%lld\n", all[r].name, count,
               all[r].rmem_max, all[r].granted);
    }
    fflush(stdout);
    free(all);
  }

  MPI_Comm comm[NMODES];
  comm[HOST] = dup_with_hints(NULL);
  comm[EAGER] = dup_with_hints("1GiB");
  comm[SCOUTS] = dup_with_hints("0");
  uint64_t largest = 0;
  for (uint64_t k = 0; k < nsizes; k++)
    largest = sizes[k] > largest ? sizes[k] : largest;
  unsigned char *buf = malloc(largest);
  double *t[NMODES];
  for (int m = 0; m < NMODES; m++)
    t[m] = calloc(reps, sizeof(double));
  if (!buf || !t[HOST] || !t[EAGER] || !t[SCOUTS]) {
    fprintf(stderr, "mpicast-tune-run: rank %d: out of memory for %" PRIu64 " bytes\n", rank,
            largest);
    PMPI_Abort(MPI_COMM_WORLD, 1);
  }

  MPICAST_Stats start = stats();
  uint64_t seed = 1;
  for (uint64_t k = 0; k < nsizes; k++) {
    size_t n = (size_t)sizes[k];
    MPICAST_Stats before[NMODES], after[NMODES];
    uint64_t calls = 0;
    memset(before, 0, sizeof before);
    memset(after, 0, sizeof after);
    for (uint64_t r = 0; r < warmup + reps; r++) {
      int root = (int)(r % (uint64_t)nranks);
      for (int j = 0; j < NMODES; j++) {
        /* host, eager, scouts; then eager, scouts, host; ... */
        enum mode m = (enum mode)((j + (int)r) % NMODES);
        MPICAST_Stats a = stats();
        double s = timed_bcast(m, comm[m], buf, n, root, seed++);
        MPICAST_Stats b = stats();
        before[m].bcast_mcast += a.bcast_mcast;
        after[m].bcast_mcast += b.bcast_mcast;
        before[m].bcast_pmpi += a.bcast_pmpi;
        after[m].bcast_pmpi += b.bcast_pmpi;
        if (r >= warmup)
          t[m][r - warmup] = s;
      }
      calls++;
    }
    for (int m = 0; m < NMODES; m++) {
      uint64_t dm = after[m].bcast_mcast - before[m].bcast_mcast;
      uint64_t dp = after[m].bcast_pmpi - before[m].bcast_pmpi;
      int bad = m == HOST ? (dm != 0 || dp != 0) : (dm != calls || dp != 0);
      char msg[400];
      MPICAST_Stats now = stats();
      snprintf(msg, sizeof msg,
               "%s broadcasts of %zu bytes did not take the path meant (%s): on some rank "
               "%" PRIu64 " calls counted %" PRIu64 " by multicast and %" PRIu64
               " handed to the host MPI (communicators that fell back: %" PRIu64
               "); is MPICAST_DISABLE set, do all ranks share one host without MPICAST_TOPO=flat, "
               "or does multicast not work here (mpicast doctor)?",
               mode_name[m], n, m == HOST ? "PMPI_Bcast, none of mpicast's" : "by multicast",
               calls, dm, dp, now.fallbacks);
      agree_ok(bad, 4, msg);
    }
    for (int m = 0; m < NMODES; m++) {
      char head[64];
      snprintf(head, sizeof head, "bcast %zu %s", n, mode_name[m]);
      print_times(head, t[m], reps);
    }
  }

  /* The barrier: the eager communicator multicasts its barriers (no size threshold applies). */
  MPICAST_Stats a = stats();
  for (uint64_t r = 0; r < warmup + reps; r++) {
    for (int j = 0; j < 2; j++) {
      int through = (j + (int)r) % 2;
      double s = timed_barrier(through, comm[EAGER]);
      if (r >= warmup)
        t[through][r - warmup] = s;
    }
  }
  MPICAST_Stats b = stats();
  uint64_t want = (warmup + reps) * BARRIER_BATCH;
  char msg[256];
  snprintf(msg, sizeof msg,
           "barriers through mpicast did not multicast (on some rank %" PRIu64
           " counted by multicast, %" PRIu64 " handed to the host MPI, of %" PRIu64 ")",
           b.barrier_mcast - a.barrier_mcast, b.barrier_pmpi - a.barrier_pmpi, want);
  agree_ok(b.barrier_mcast - a.barrier_mcast != want, 4, msg);
  print_times("barrier host", t[0], reps);
  print_times("barrier mcast", t[1], reps);

  uint64_t mine_traffic[2] = {b.dgrams_sent - start.dgrams_sent, b.repairs - start.repairs};
  uint64_t sum[2] = {0, 0};
  PMPI_Reduce(mine_traffic, sum, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("traffic dgrams_sent=%" PRIu64 " repairs=%" PRIu64 "\ndone\n", sum[0], sum[1]);
    fflush(stdout);
  }
  for (int m = 0; m < NMODES; m++) {
    free(t[m]);
    if (m != HOST)
      MPI_Comm_free(&comm[m]);
    else
      PMPI_Comm_free(&comm[m]);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
