/* mmcast_bench: k simultaneous multicasts (MPICAST_Mmcast, every algorithm of
 * MPICAST_MMCAST_ALGO) against the host MPI doing k broadcasts on k sub-communicators, side by
 * side in one run: the experiment of seed 003 (Liu, Wu, Lin, agent-based multicast on
 * switch-based irregular networks, IPDPS 2003) on a real MPI.
 *
 *   mmcast_bench [--ks 1,2,4,8] [--sizes 64k,1m] [--dests D] [--reps N] [--seed S]
 *                [--variants LIST] [--label TEXT]
 *
 * Linked with libmpicast ahead of the MPI library (the Makefile's build/<flavour>/bench/
 * mmcast_bench). Per configuration (k, size) and repetition, every rank draws the same
 * pattern from --seed: k distinct sources, each with --dests distinct destinations among the
 * other ranks (default: half of the ranks, at least 1), at random. Variants, run once per
 * repetition each, interleaved, in an order rotated from repetition to repetition:
 *
 *   naive, spcco, sametree-binomial, sametree-cyclic, random-binomial, random-cyclic
 *           MPICAST_Mmcast on a duplicate of MPI_COMM_WORLD with the MPI_Info hint
 *           mpicast_mmcast_algo=<variant> (made at the start); the switch topology is the
 *           launch's MPICAST_SWITCH_TOPOLOGY.
 *   host    the host MPI: k communicators, each of a source and its destinations
 *           (MPI_Comm_create_group in multicast order, untimed, made per repetition), and
 *           every rank starts PMPI_Ibcast on each of its communicators, then PMPI_Waitall.
 *
 * The figure is the slowest rank's time: PMPI_Barrier, each rank times its part, PMPI_Reduce
 * MAX. Output, CSV on rank 0's stdout: label,variant,ranks,k,bytes,rep,seconds,spec (spec: the
 * pattern as `mpicast goal gen mmcast-*` and `mpicast sim` take it, --mcasts
 * "SRC:D,D;SRC:D", so that the simulator can time the very same multicasts), then a line
 * "# mmcast_bench: done"; every
 * received byte is checked against its source's pattern after each run (a wrong byte stops
 * the job). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpicast.h>

#define MAXV 8
static const char *ALL[] = {"naive",          "spcco",         "sametree-binomial",
                            "sametree-cyclic", "random-binomial", "random-cyclic",
                            "host"};

static int rank, nranks;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void die(const char *m) {
  fprintf(stderr, "mmcast_bench (rank %d): %s\n", rank, m);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static size_t parse_size(const char *s) {
  char *e;
  double v = strtod(s, &e);
  if (*e == 'k' || *e == 'K') v *= 1024;
  if (*e == 'm' || *e == 'M') v *= 1024 * 1024;
  return (size_t)v;
}

static const char *arg(int argc, char **argv, const char *name, const char *dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) return argv[i + 1];
  return dflt;
}

/* One pattern: src[m] sends to to[m * nranks + d]. */
struct pattern {
  int k;
  int src[1024];
  char *to;
};

static void draw(struct pattern *p, int k, int ndests, uint64_t *st) {
  int *perm = malloc(sizeof(int) * nranks);
  for (int i = 0; i < nranks; i++) perm[i] = i;
  for (int i = nranks - 1; i > 0; i--) {
    int j = (int)(rnd(st) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  p->k = k;
  memset(p->to, 0, (size_t)k * nranks);
  for (int m = 0; m < k; m++) {
    p->src[m] = perm[m];
    int n = 0;
    while (n < ndests) {
      int d = (int)(rnd(st) % (uint64_t)nranks);
      if (d == p->src[m] || p->to[m * nranks + d]) continue;
      p->to[m * nranks + d] = 1;
      n++;
    }
  }
  free(perm);
}

static unsigned char pat(int src, size_t i) { return (unsigned char)(src * 31 + i * 7 + (i >> 9)); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks < 2 || nranks > 1024) die("needs 2 to 1024 ranks");
  const char *label = arg(argc, argv, "--label", "run");
  int reps = atoi(arg(argc, argv, "--reps", "5"));
  uint64_t seed = strtoull(arg(argc, argv, "--seed", "1"), NULL, 10);
  int ndests = atoi(arg(argc, argv, "--dests", "0"));
  if (ndests <= 0) ndests = nranks / 2 > 0 ? nranks / 2 : 1;
  if (ndests > nranks - 1) ndests = nranks - 1;
  int ks[16], nk = 0;
  size_t sizes[16];
  int ns = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", arg(argc, argv, "--ks", "1,2,4,8"));
  for (char *t = strtok(buf, ","); t && nk < 16; t = strtok(NULL, ",")) ks[nk++] = atoi(t);
  snprintf(buf, sizeof buf, "%s", arg(argc, argv, "--sizes", "64k,1m"));
  for (char *t = strtok(buf, ","); t && ns < 16; t = strtok(NULL, ",")) sizes[ns++] = parse_size(t);
  const char *vars[MAXV];
  int nv = 0;
  snprintf(buf, sizeof buf, "%s",
           arg(argc, argv, "--variants",
               "naive,spcco,sametree-binomial,sametree-cyclic,random-binomial,random-cyclic,host"));
  for (char *t = strtok(buf, ","); t && nv < MAXV; t = strtok(NULL, ",")) {
    int known = 0;
    for (size_t i = 0; i < sizeof ALL / sizeof *ALL; i++)
      if (!strcmp(t, ALL[i])) vars[nv++] = ALL[i], known = 1;
    if (!known) die("unknown variant");
  }
  /* One communicator per mpicast variant, with its algorithm as a hint. */
  MPI_Comm comms[MAXV];
  for (int v = 0; v < nv; v++) {
    comms[v] = MPI_COMM_NULL;
    if (!strcmp(vars[v], "host")) continue;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpicast_mmcast_algo", vars[v]);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[v]);
    MPI_Info_free(&info);
    /* Untimed: the communicator's setup (its duplicate, the switch topology) is made by the
     * first call. */
    if (MPICAST_Mmcast(NULL, 0, MPI_BYTE, NULL, 0, NULL, NULL, NULL, MPI_BYTE, NULL, 0,
                       comms[v]) != MPICAST_OK)
      die("MPICAST_Mmcast (setup) failed");
  }
  size_t maxsize = 0;
  for (int i = 0; i < ns; i++)
    if (sizes[i] > maxsize) maxsize = sizes[i];
  unsigned char *send = malloc(maxsize + 1), *recv = malloc((size_t)nranks * maxsize + 1);
  struct pattern p;
  p.to = malloc((size_t)1024 * nranks);
  int *dests = malloc(sizeof(int) * nranks), *sources = malloc(sizeof(int) * nranks);
  int *counts = malloc(sizeof(int) * nranks), *displs = malloc(sizeof(int) * nranks);
  /* Statuses, not MPI_STATUSES_IGNORE: GCC's access checks on MPICH's prototype. */
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * 1024);
  MPI_Status *sts = malloc(sizeof(MPI_Status) * 1024);
  MPI_Comm *sub = malloc(sizeof(MPI_Comm) * 1024);
  if (rank == 0) printf("label,variant,ranks,k,bytes,rep,seconds,spec\n");
  char *spec = malloc((size_t)1024 * (nranks + 1) * 6 + 1);
  for (int ki = 0; ki < nk; ki++) {
    int k = ks[ki] < nranks ? ks[ki] : nranks;
    if ((double)k * (double)maxsize > 2147483647.0) die("k times the size exceeds an int");
    for (int si = 0; si < ns; si++) {
      size_t size = sizes[si];
      uint64_t st = seed * 1000003 + (uint64_t)k * 7919 + size;
      for (int rep = 0; rep < reps; rep++) {
        draw(&p, k, ndests, &st);
        size_t at = 0;
        spec[0] = 0;
        for (int m = 0; m < k; m++) {
          at += (size_t)sprintf(spec + at, "%s%d:", m ? ";" : "", p.src[m]);
          int first = 1;
          for (int d = 0; d < nranks; d++)
            if (p.to[m * nranks + d]) {
              at += (size_t)sprintf(spec + at, "%s%d", first ? "" : ",", d);
              first = 0;
            }
        }
        int mine = -1, nd = 0, nsrc = 0;
        for (int m = 0; m < k; m++) {
          if (p.src[m] == rank) mine = m;
          if (p.to[m * nranks + rank]) {
            sources[nsrc] = p.src[m];
            counts[nsrc] = (int)size;
            displs[nsrc] = (int)(nsrc * size);
            nsrc++;
          }
        }
        if (mine >= 0)
          for (int d = 0; d < nranks; d++)
            if (p.to[mine * nranks + d]) dests[nd++] = d;
        for (size_t i = 0; i < size; i++) send[i] = pat(rank, i);
        for (int vi = 0; vi < nv; vi++) {
          int v = (vi + rep) % nv;
          int host = !strcmp(vars[v], "host");
          int nsub = 0, mysub[1024];
          if (host) {
            MPI_Group world, g;
            MPI_Comm_group(MPI_COMM_WORLD, &world);
            for (int m = 0; m < k; m++) {
              int in = p.src[m] == rank || p.to[m * nranks + rank];
              if (!in) continue;
              int members[1024], n = 0;
              members[n++] = p.src[m];
              for (int d = 0; d < nranks; d++)
                if (p.to[m * nranks + d]) members[n++] = d;
              MPI_Group_incl(world, n, members, &g);
              MPI_Comm_create_group(MPI_COMM_WORLD, g, m, &sub[nsub]);
              MPI_Group_free(&g);
              mysub[nsub++] = m;
            }
            MPI_Group_free(&world);
          }
          memset(recv, 0, (size_t)nsrc * size);
          PMPI_Barrier(MPI_COMM_WORLD);
          double t0 = now();
          if (host) {
            int r = 0;
            for (int j = 0; j < nsub; j++) {
              int m = mysub[j];
              void *b = send;
              if (p.src[m] != rank) {
                int s = 0;
                while (sources[s] != p.src[m]) s++;
                b = recv + (size_t)displs[s];
              }
              PMPI_Ibcast(b, (int)size, MPI_BYTE, 0, sub[j], &reqs[r++]);
            }
            PMPI_Waitall(r, reqs, sts);
          } else {
            int rc = MPICAST_Mmcast(send, (int)size, MPI_BYTE, dests, nd, recv, counts, displs,
                                    MPI_BYTE, sources, nsrc, comms[v]);
            if (rc != MPICAST_OK) die("MPICAST_Mmcast failed");
          }
          double mine_t = now() - t0, worst = 0;
          PMPI_Reduce(&mine_t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
          for (int s = 0; s < nsrc; s++)
            for (size_t i = 0; i < size; i++)
              if (recv[(size_t)displs[s] + i] != pat(sources[s], i)) die("wrong byte received");
          for (int j = 0; j < nsub; j++) MPI_Comm_free(&sub[j]);
          if (rank == 0)
            printf("%s,%s,%d,%d,%zu,%d,%.9f,\"%s\"\n", label, vars[v], nranks, k, size, rep, worst,
                   spec);
          fflush(stdout);
        }
      }
    }
  }
  for (int v = 0; v < nv; v++)
    if (comms[v] != MPI_COMM_NULL) MPI_Comm_free(&comms[v]);
  if (rank == 0) printf("# mmcast_bench: done\n");
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
