/* dbcast_bench: mpicast's dynamic broadcast (MPICAST_Dbcast, received by plain MPI_Recv)
 * against the ways an MPI program sends one buffer to a set of ranks without it, side by side
 * in one run; the experiment of Fig. 2 of "Using Dynamic Broadcasts to improve Task-Based
 * Runtime Performances" (Euro-Par 2020): one root, k recipients.
 *
 *   dbcast_bench [--label TEXT] [--sizes LIST] [--ks LIST] [--variants LIST] [--reps N]
 *                [--warmup N] [--seed S]
 *
 * One process per rank, linked with libmpicast ahead of the MPI library (bench/dbcast.sh
 * builds build/<flavour>/bench/dbcast_bench). The root is rank 0. Per configuration (size,
 * number of recipients k), the recipients are k distinct ranks other than 0 drawn once from
 * --seed (every rank draws the same, and every launch with the same seed too, so that two
 * launches that differ only in mpicast's settings see the same sets). --ks: numbers, or
 * `half` (nranks / 2 recipients) and `all` (nranks - 1). Variants, each run once per
 * repetition, interleaved, in an order rotated from repetition to repetition:
 *
 *   linear     the root MPI_Isend's the buffer to every recipient, then MPI_Waitall; each
 *              recipient MPI_Recv (application calls, on a duplicate of MPI_COMM_WORLD that
 *              is not enabled for dynamic broadcast).
 *   dbcast     MPICAST_Dbcast from the root with the recipients in rank order, no priorities,
 *              then MPICAST_Wait (done at once: the library copied the data); each recipient
 *              a plain MPI_Recv(source 0, tag) on the enabled communicator. The tree order is
 *              this launch's MPICAST_DBCAST_TREE (binomial: the list's order; topo: by
 *              topology ID).
 *   dbcast_rand  the same with the list in a random order, drawn afresh every repetition
 *              (the same draws in every launch with the same seed): a caller whose order
 *              says nothing about where ranks are, as a task runtime's list of consumers.
 *   bcast      the host MPI's broadcast, PMPI_Bcast (never mpicast's), on a communicator of
 *              the root and the recipients made beforehand (MPI_Comm_create_group, untimed).
 *   mbcast     mpicast's own MPI_Bcast (IP multicast) on a duplicate of that communicator with
 *              the hint mpicast_min_bytes = 0 (so that it multicasts also with 2 hosts, where
 *              the default would hand it to the host MPI); its setup is done by the warm-up.
 *
 * The figure is the slowest participant's time: PMPI_Barrier of MPI_COMM_WORLD, every rank
 * starts its clock, runs its part (a rank outside the set: nothing), stops it, and PMPI_Reduce
 * MAX. The root of dbcast returns at once; its recipients' times count. span_s: the last
 * participant's end minus the root's start on CLOCK_MONOTONIC, which every emulated host
 * shares (one machine): from the start on the root to the last recipient's completion. After
 * the timed region every rank waits for the others in an MPI_Ibarrier, asleep 50 us between
 * tests, and each test is also an MPI_Iprobe on the enabled communicator, so a rank that is
 * done (the root, a recipient whose own data is in) keeps forwarding what routes through it,
 * as it would inside any later MPI call. The root fills the buffer with a pattern of (seed,
 * size, rep, variant); each recipient clears its buffer before and checks every byte after
 * the timed region (and the status: source 0, the tag, the count): any error makes the
 * program exit 1.
 *
 * Output, from rank 0, on stdout: comment lines (#), then CSV
 *   label,variant,tree,ranks,size,k,reps,median_s,min_s,q1_s,q3_s,max_s,span_median_s,span_min_s,span_max_s,errors
 * and "# end" just before MPI_Finalize (cluster.sh run --done-marker). */
#define _GNU_SOURCE
#include <math.h>

#define BENCH_NAME "dbcast_bench"
#include "bench_common.h"

enum { V_LINEAR, V_DBCAST, V_DBCAST_RAND, V_BCAST, V_MBCAST, NV };
static const char *const VNAME[NV] = {"linear", "dbcast", "dbcast_rand", "bcast", "mbcast"};

static MPI_Comm dcomm; /* enabled for dynamic broadcast */
static MPI_Comm lcomm; /* the linear sends */
static MPI_Group world_group;

/* A look of settle(): forwards dynamic broadcasts. */
static void probe_dcomm(void) {
  int flag;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dcomm, &flag, MPI_STATUS_IGNORE);
}

/* Everyone waits for everyone, asleep; every look also forwards dynamic broadcasts. */
static void settle(void) { settle_with(probe_dcomm); }

/* Shuffles a[0..n) from the state *st (Fisher-Yates). */
static void shuffle(uint64_t *st, int *a, int n) {
  for (int i = n - 1; i > 0; i--) {
    *st = mix(*st);
    int j = (int)(*st % (uint64_t)(i + 1));
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* A random set of k distinct ranks other than 0, sorted, from the state *st. */
static void draw_set(uint64_t *st, int k, int *set) {
  int others = nranks - 1, *pool = malloc(sizeof(int) * (size_t)others);
  if (!pool) die("out of memory");
  for (int i = 0; i < others; i++) pool[i] = i + 1;
  shuffle(st, pool, others);
  memcpy(set, pool, sizeof(int) * (size_t)k);
  free(pool);
  sort_ranks(set, k);
}

struct conf {
  size_t size;
  int k, *set, *list, member, is_dest;
  MPI_Comm sub, msub; /* root + recipients: PMPI_Bcast; a duplicate for mpicast's MPI_Bcast */
  unsigned char *buf;
};

/* One timed operation of variant v; returns (at rank 0) the slowest participant's time and
 * stores the span. */
static double timed(int v, struct conf *c, uint64_t seed, double *span) {
  int tag = op_count % 32000;
  uint64_t key = mix(seed ^ ((uint64_t)op_count << 8) ^ (uint64_t)v);
  op_count++;
  if (rank == 0)
    fill(c->buf, c->size, key);
  else if (c->is_dest)
    memset(c->buf, 0, c->size);
  int part = c->member;
  MPI_Status st;

  PMPI_Barrier(MPI_COMM_WORLD);
  double m0 = mono();
  switch (v) {
    case V_LINEAR:
      if (rank == 0) {
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)c->k);
        MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)c->k);
        if (!rq || !sts) die("out of memory");
        for (int i = 0; i < c->k; i++)
          MPI_Isend(c->buf, (int)c->size, MPI_BYTE, c->set[i], tag, lcomm, &rq[i]);
        MPI_Waitall(c->k, rq, sts);
        free(rq);
        free(sts);
      } else if (c->is_dest) {
        MPI_Recv(c->buf, (int)c->size, MPI_BYTE, 0, tag, lcomm, &st);
      }
      break;
    case V_DBCAST:
    case V_DBCAST_RAND:
      if (rank == 0) {
        MPICAST_Request *r;
        ok(MPICAST_Dbcast(c->buf, (int)c->size, MPI_BYTE, v == V_DBCAST ? c->set : c->list,
                          NULL, c->k, tag, dcomm, &r),
           "MPICAST_Dbcast");
        ok(MPICAST_Wait(&r, MPI_STATUS_IGNORE), "MPICAST_Wait (root)");
      } else if (c->is_dest) {
        MPI_Recv(c->buf, (int)c->size, MPI_BYTE, 0, tag, dcomm, &st);
        int n = -1;
        MPI_Get_count(&st, MPI_BYTE, &n);
        if ((size_t)n != c->size || st.MPI_SOURCE != 0 || st.MPI_TAG != tag) errors++;
      }
      break;
    case V_BCAST:
      if (c->member) PMPI_Bcast(c->buf, (int)c->size, MPI_BYTE, 0, c->sub);
      break;
    case V_MBCAST:
      if (c->member) MPI_Bcast(c->buf, (int)c->size, MPI_BYTE, 0, c->msub);
      break;
  }
  double m1 = mono();
  double mine[2] = {part ? m1 - m0 : 0.0, part ? m1 : 0.0}, slowest[2] = {0, 0};
  settle();
  PMPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  double start = m0;
  PMPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* the root's start */
  if (rank == 0) *span = slowest[1] - start;
  if (c->is_dest) errors += check(c->buf, c->size, key);
  return slowest[0];
}

static const char *label = "-", *tree = "-";

/* One configuration: warm-up rounds, then reps rounds of every variant that is on. */
static void measure(const int *on, size_t size, int k, unsigned char *buf, uint64_t seed,
                    int warmup, int reps) {
  int set[4096], list[4096];
  if (k > 4096) die("too many ranks");
  uint64_t st = mix(seed ^ ((uint64_t)size << 20) ^ (uint64_t)k);
  draw_set(&st, k, set);
  struct conf c = {.size = size, .k = k, .set = set, .list = list, .buf = buf,
                   .sub = MPI_COMM_NULL, .msub = MPI_COMM_NULL};
  c.member = rank == 0;
  for (int i = 0; i < k; i++)
    if (set[i] == rank) c.member = c.is_dest = 1;
  int nv = 0, vs[NV];
  for (int v = 0; v < NV; v++)
    if (on[v]) vs[nv++] = v;
  if ((on[V_BCAST] || on[V_MBCAST]) && c.member) {
    int ranks[4097];
    ranks[0] = 0;
    memcpy(ranks + 1, set, sizeof(int) * (size_t)k);
    MPI_Group g;
    MPI_Group_incl(world_group, k + 1, ranks, &g);
    MPI_Comm_create_group(MPI_COMM_WORLD, g, 78, &c.sub);
    MPI_Group_free(&g);
    if (on[V_MBCAST]) {
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, "mpicast_min_bytes", "0");
      MPI_Comm_dup_with_info(c.sub, info, &c.msub);
      MPI_Info_free(&info);
    }
  }
  /* The shuffled lists: the same sequence in every launch with this seed. */
  uint64_t lst = mix(st ^ 0x5eedull);
  double span;
  for (int w = 0; w < warmup; w++) {
    memcpy(list, set, sizeof(int) * (size_t)k);
    shuffle(&lst, list, k);
    for (int i = 0; i < nv; i++) timed(vs[i], &c, seed, &span);
  }
  double *t = malloc(sizeof(double) * (size_t)(nv * reps)), *sp = malloc(sizeof(double) * (size_t)(nv * reps));
  if (!t || !sp) die("out of memory");
  long errors_before = errors;
  for (int r = 0; r < reps; r++) {
    memcpy(list, set, sizeof(int) * (size_t)k);
    shuffle(&lst, list, k);
    for (int j = 0; j < nv; j++) {
      int i = (j + r) % nv; /* rotated */
      t[i * reps + r] = timed(vs[i], &c, seed, &span);
      sp[i * reps + r] = span;
    }
  }
  long errs = errors - errors_before, all = 0;
  PMPI_Reduce(&errs, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# set k=%d:", k);
    for (int i = 0; i < k; i++) printf(" %d", set[i]);
    printf("\n");
    for (int i = 0; i < nv; i++) {
      double *a = t + i * reps, *b = sp + i * reps;
      qsort(a, (size_t)reps, sizeof(double), cmp_double);
      qsort(b, (size_t)reps, sizeof(double), cmp_double);
      int db = vs[i] == V_DBCAST || vs[i] == V_DBCAST_RAND;
      printf("%s,%s,%s,%d,%zu,%d,%d,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%ld\n", label,
             VNAME[vs[i]], db ? tree : "-", nranks, size, k, reps, quantile(a, reps, 0.5), a[0],
             quantile(a, reps, 0.25), quantile(a, reps, 0.75), a[reps - 1],
             quantile(b, reps, 0.5), b[0], b[reps - 1], all);
    }
    fflush(stdout);
  }
  free(t);
  free(sp);
  if (c.msub != MPI_COMM_NULL) MPI_Comm_free(&c.msub);
  if (c.sub != MPI_COMM_NULL) MPI_Comm_free(&c.sub);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  bench_init();
  if (arg(argc, argv, "--label")) label = arg(argc, argv, "--label");
  tree = env_or("MPICAST_DBCAST_TREE", "binomial");

  int on[NV] = {0};
  parse_variants(argc, argv, "linear,dbcast,bcast,mbcast", VNAME, NV, on,
                 "unknown variant (linear, dbcast, dbcast_rand, bcast, mbcast)");
  size_t sizes[64], max;
  size_t nsizes = parse_sizes(argc, argv, "8m", sizes, &max);
  int ks[64], nks = 0;
  char *kl = strdup(arg(argc, argv, "--ks") ? arg(argc, argv, "--ks") : "all");
  for (char *tok = strtok(kl, ","); tok && nks < 64; tok = strtok(NULL, ",")) {
    int k = strcmp(tok, "all") == 0 ? nranks - 1 : strcmp(tok, "half") == 0 ? nranks / 2 : atoi(tok);
    if (k < 1 || k > nranks - 1) die("--ks: 1..nranks-1, half or all");
    ks[nks++] = k;
  }
  free(kl);
  int reps = (int)num_arg(argc, argv, "--reps", 5);
  int warmup = (int)num_arg(argc, argv, "--warmup", 1);
  if (reps < 1) reps = 1;
  if (warmup < 1) warmup = 1; /* mbcast's setup, the engine's connections */
  uint64_t seed = (uint64_t)num_arg(argc, argv, "--seed", 20261126);
  unsigned char *buf = malloc(max);
  if (!buf) die("out of memory");

  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_dup(MPI_COMM_WORLD, &lcomm);
  MPI_Comm_dup(MPI_COMM_WORLD, &dcomm);
  double enable_max =
      enable_and_connect(MPICAST_Dbcast_enable, dcomm, "MPICAST_Dbcast_enable", lcomm);

  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING], date[32];
    run_facts(version, date);
    printf("# dbcast_bench: %s, %d ranks, root 0, %s, mpicast %s\n", label, nranks, date,
           MPICAST_Version());
    printf("# mpi: %s\n", version);
    printf("# mpicast: MPICAST_DBCAST_TREE=%s MPICAST_DBCAST_CHAIN_BYTES=%s "
           "MPICAST_SEGMENT_BYTES=%s MPICAST_PROGRESS=%s; "
           "MPICAST_Dbcast_enable took %.3f ms (slowest rank)\n",
           tree, env_or("MPICAST_DBCAST_CHAIN_BYTES", "128KiB"),
           env_or("MPICAST_SEGMENT_BYTES", "8KiB"), env_or("MPICAST_PROGRESS", "poll"),
           enable_max * 1e3);
    printf("# figures: seconds, the slowest participant's time per operation; median, min, "
           "quartiles, max over %d reps after %d warm-up rounds; span: last end - root's "
           "start; seed %llu\n",
           reps, warmup, (unsigned long long)seed);
    printf("label,variant,tree,ranks,size,k,reps,median_s,min_s,q1_s,q3_s,max_s,"
           "span_median_s,span_min_s,span_max_s,errors\n");
    fflush(stdout);
  }
  for (size_t i = 0; i < nsizes; i++)
    for (int j = 0; j < nks; j++) measure(on, sizes[i], ks[j], buf, seed, warmup, reps);

  long all = bench_finish();
  MPI_Comm_free(&dcomm);
  MPI_Comm_free(&lcomm);
  MPI_Group_free(&world_group);
  free(buf);
  MPI_Finalize();
  return all ? 1 : 0;
}
