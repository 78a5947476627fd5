/* imcast_bench: mpicast's non-blocking multicast (MPICAST_Imcast) against the ways an MPI
 * program multicasts without it, side by side in one run; the experiments of Fig. 4 and
 * Fig. 5 of "A Scalable Non-blocking Multicast Scheme for Distributed DAG Scheduling"
 * (ICCS 2009).
 *
 *   imcast_bench [--mode fig4|fig5] [--label TEXT] [--sizes LIST] [--fracs LIST]
 *                [--variants LIST] [--budget SECONDS] [--reps-min N] [--reps-max N]
 *                [--seed S] [--timer-slack-ns N] [--recv-spin]
 *
 * One process per rank, linked with libmpicast ahead of the MPI library (the Makefile's
 * build/<flavour>/bench/imcast_bench). The root is rank 0. Per configuration (size, share of
 * destinations), every repetition draws a destination set: `ndests` = ceil(frac % of the other
 * ranks) distinct ranks, random from --seed (every rank draws the same, and every launch with
 * the same seed too, so that two launches that differ only in mpicast's settings see the same
 * sets). Variants, each run once per repetition, interleaved, in an order rotated from
 * repetition to repetition:
 *
 *   imcast    MPICAST_Imcast from the root; each destination MPICAST_Mcast_irecv + MPICAST_Wait.
 *             Routing, base and segment size are mpicast's settings of this launch
 *             (MPICAST_IMCAST_ROUTE, MPICAST_TOPO_BASE, MPICAST_SEGMENT_BYTES).
 *   flat      the flat tree: the root PMPI_Isend's the buffer to every destination, then
 *             PMPI_Waitall; each destination PMPI_Recv.
 *   bcast     the host MPI's broadcast, PMPI_Bcast (never mpicast's), on a communicator of the
 *             root and the destinations made beforehand (MPI_Comm_create_group, untimed).
 *   bcast_cg  the same with the creation timed: MPI_Group_incl + MPI_Comm_create_group +
 *             PMPI_Bcast (the communicator is freed after the timed region).
 *   split     MPI_Comm_split of MPI_COMM_WORLD alone (all ranks; no broadcast): the
 *             creation the seed's authors left out, as MPI-2 programs had to do it.
 *   mbcast    mpicast's own MPI_Bcast (IP multicast, with mpicast's default settings) on a
 *             duplicate of MPI_COMM_WORLD made at the start: a reference for what one
 *             multicast datagram stream costs. Only where every other rank is a destination
 *             (--fracs 100); skipped at other shares. Not in the defaults.
 *
 * --mode fig4 is --fracs 100 --variants imcast --sizes 512k,1m (the segment size is the
 * launch's MPICAST_SEGMENT_BYTES); --mode fig5 (the default) is --fracs 25,50,100
 * --variants imcast,flat,bcast,bcast_cg,split --sizes 1k,16k,256k,1m,4m.
 *
 * The figure is the slowest participant's time: PMPI_Barrier of MPI_COMM_WORLD, every rank
 * starts its clock, runs its part (a rank outside the set: nothing), stops it, and PMPI_Reduce
 * MAX. The root of imcast returns at once (the library copied the data); its receivers' times
 * count. span_s: the last participant's end minus the root's start on CLOCK_MONOTONIC, which
 * every emulated host shares (one machine), free of the skew of leaving the barrier. Apart,
 * the two sides of that time (medians over the repetitions too): root_s, the root's own
 * time (its call and wait); dest_s, the slowest destination's own time; deliver_s, the last
 * destination's end minus the root's start (the latency of delivery, the root's return
 * left out; for split, which has no destinations, the three are 0). After the
 * timed region every rank waits for the others in an MPI_Ibarrier, asleep 50 us between tests,
 * as mcast_bench --idle-wait does; in imcast each test is also an MPICAST_Mcast_iprobe, so a
 * rank that is done (or outside the set) keeps forwarding what routes through it
 * (docs/imcast.md, "Progress"). The root fills the buffer with a pattern of (seed, size, rep,
 * variant); each destination clears its buffer before and checks every byte after the timed
 * region (and the length imcast delivered): any error makes the program exit 1.
 *
 * --timer-slack-ns N sets the process's timer slack (prctl PR_SET_TIMERSLACK; Linux's default
 * is 50 us): every sleep of the benchmark and of the libraries it calls wakes up to that much
 * later. A diagnostic: how much of a small operation's time is late wake-ups. --recv-spin: the
 * destinations of imcast complete their receive by calling MPICAST_Test in a loop instead of
 * MPICAST_Wait (a diagnostic of MPICAST_Wait's own waiting).
 *
 * Output, from rank 0, on stdout: comment lines (#), then CSV
 *   label,mode,variant,route,base,seg_bytes,ranks,size,frac,ndests,reps,median_s,min_s,q1_s,q3_s,max_s,span_s,errors,root_s,dest_s,deliver_s
 * and "# end" just before MPI_Finalize (cluster.sh run --done-marker). */
#define _GNU_SOURCE
#include <math.h>
#include <sys/prctl.h>

#define BENCH_NAME "imcast_bench"
#include "bench_common.h"

enum { V_IMCAST, V_FLAT, V_BCAST, V_BCAST_CG, V_SPLIT, V_MBCAST, NV };
static const char *const VNAME[NV] = {"imcast", "flat", "bcast", "bcast_cg", "split", "mbcast"};

static MPI_Comm ecomm;  /* enabled for MPICAST_Imcast */
static MPI_Comm pcomm;  /* the flat tree's messages */
static MPI_Comm mcomm;  /* mbcast: mpicast's MPI_Bcast */
static MPI_Group world_group;
static int recv_spin;   /* --recv-spin */

/* A look of settle() in imcast: forwards multicasts. */
static void probe_ecomm(void) {
  int flag;
  ok(MPICAST_Mcast_iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ecomm, &flag, MPI_STATUS_IGNORE),
     "MPICAST_Mcast_iprobe");
}

/* Everyone waits for everyone, asleep; in imcast every look also forwards. */
static void settle(int forward) { settle_with(forward ? probe_ecomm : NULL); }

/* A random set of k distinct ranks other than 0, sorted, from the state *st. */
static void draw_dests(uint64_t *st, int k, int *dests) {
  int others = nranks - 1, *pool = malloc(sizeof(int) * (size_t)others);
  if (!pool) die("out of memory");
  for (int i = 0; i < others; i++) pool[i] = i + 1;
  for (int i = 0; i < k; i++) { /* partial Fisher-Yates */
    *st = mix(*st);
    int j = i + (int)(*st % (uint64_t)(others - i));
    int t = pool[i];
    pool[i] = pool[j];
    pool[j] = t;
  }
  for (int i = 0; i < k; i++) dests[i] = pool[i];
  free(pool);
  sort_ranks(dests, k);
}

/* Root then the destinations: the group of the sub-communicator (the root is its rank 0). */
static MPI_Comm create_sub(const int *dests, int k, int member) {
  MPI_Comm sub = MPI_COMM_NULL;
  if (!member) return sub;
  int *ranks = malloc(sizeof(int) * (size_t)(k + 1));
  if (!ranks) die("out of memory");
  ranks[0] = 0;
  memcpy(ranks + 1, dests, sizeof(int) * (size_t)k);
  MPI_Group g;
  MPI_Group_incl(world_group, k + 1, ranks, &g);
  MPI_Comm_create_group(MPI_COMM_WORLD, g, 77, &sub);
  MPI_Group_free(&g);
  free(ranks);
  return sub;
}

struct op {
  size_t size;
  int k, *dests, member, is_dest;
  unsigned char *buf;
  uint64_t key;
};

/* The sides of one timed operation (at rank 0): span, root's time, slowest destination's
 * time, delivery. */
struct sides {
  double span, root, dest, deliver;
};

/* One timed operation of variant v; returns (at rank 0) the slowest participant's time and
 * stores the span and the sides. */
static double timed(int v, struct op *o, uint64_t seed, struct sides *sd) {
  int tag = op_count % 32000;
  o->key = mix(seed ^ ((uint64_t)op_count << 8) ^ (uint64_t)v);
  op_count++;
  if (rank == 0)
    fill(o->buf, o->size, o->key);
  else if (o->is_dest)
    memset(o->buf, 0, o->size);
  MPI_Comm pre = MPI_COMM_NULL;
  if (v == V_BCAST) pre = create_sub(o->dests, o->k, o->member);
  MPI_Comm made = MPI_COMM_NULL;
  int part = o->member || v == V_SPLIT;
  MPI_Status st;

  PMPI_Barrier(MPI_COMM_WORLD);
  double m0 = mono();
  switch (v) {
    case V_IMCAST:
      if (rank == 0) {
        MPICAST_Request *r;
        ok(MPICAST_Imcast(o->buf, (int)o->size, MPI_BYTE, o->dests, o->k, tag, ecomm, &r),
           "MPICAST_Imcast");
        ok(MPICAST_Wait(&r, MPI_STATUS_IGNORE), "MPICAST_Wait (send)");
      } else if (o->is_dest) {
        MPICAST_Request *r;
        ok(MPICAST_Mcast_irecv(o->buf, (int)o->size, MPI_BYTE, 0, tag, ecomm, &r),
           "MPICAST_Mcast_irecv");
        if (recv_spin) {
          int flag = 0;
          while (!flag) ok(MPICAST_Test(&r, &flag, &st), "MPICAST_Test (receive)");
        } else {
          ok(MPICAST_Wait(&r, &st), "MPICAST_Wait (receive)");
        }
        int c = -1;
        MPI_Get_count(&st, MPI_BYTE, &c);
        if ((size_t)c != o->size || st.MPI_SOURCE != 0 || st.MPI_TAG != tag) errors++;
      }
      break;
    case V_FLAT:
      if (rank == 0) {
        /* Statuses, not MPI_STATUSES_IGNORE: GCC 12 takes MPICH's for an array of size 0. */
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)o->k);
        MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)o->k);
        if (!rq || !sts) die("out of memory");
        for (int i = 0; i < o->k; i++)
          PMPI_Isend(o->buf, (int)o->size, MPI_BYTE, o->dests[i], tag, pcomm, &rq[i]);
        PMPI_Waitall(o->k, rq, sts);
        free(rq);
        free(sts);
      } else if (o->is_dest) {
        PMPI_Recv(o->buf, (int)o->size, MPI_BYTE, 0, tag, pcomm, &st);
      }
      break;
    case V_BCAST:
      if (o->member) PMPI_Bcast(o->buf, (int)o->size, MPI_BYTE, 0, pre);
      break;
    case V_BCAST_CG:
      if (o->member) {
        made = create_sub(o->dests, o->k, 1);
        PMPI_Bcast(o->buf, (int)o->size, MPI_BYTE, 0, made);
      }
      break;
    case V_MBCAST:
      MPI_Bcast(o->buf, (int)o->size, MPI_BYTE, 0, mcomm);
      break;
    case V_SPLIT:
      MPI_Comm_split(MPI_COMM_WORLD, o->member ? 0 : MPI_UNDEFINED, rank == 0 ? 0 : rank + 1,
                     &made);
      break;
  }
  double m1 = mono();
  int dest = o->is_dest && v != V_SPLIT;
  double mine[4] = {part ? m1 - m0 : 0.0, part ? m1 : 0.0, dest ? m1 - m0 : 0.0, dest ? m1 : 0.0};
  double slowest[4] = {0, 0, 0, 0};
  settle(v == V_IMCAST);
  PMPI_Reduce(mine, slowest, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  double start = m0;
  PMPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* the root's start */
  if (rank == 0) {
    sd->span = slowest[1] - start;
    sd->root = m1 - m0;
    sd->dest = slowest[2];
    sd->deliver = v == V_SPLIT ? 0.0 : slowest[3] - start;
  }
  if (v == V_SPLIT && o->member) {
    int sz = -1;
    MPI_Comm_size(made, &sz);
    if (sz != o->k + 1) errors++;
  }
  if (made != MPI_COMM_NULL) MPI_Comm_free(&made);
  if (pre != MPI_COMM_NULL) MPI_Comm_free(&pre);
  if (o->is_dest && v != V_SPLIT) errors += check(o->buf, o->size, o->key);
  return slowest[0];
}

static const char *label = "-", *mode = "fig5", *route = "-", *base = "-", *seg = "-";

/* One configuration: a warm-up round, then reps rounds of every variant that is on. */
static void measure(const int *on, size_t size, int frac, unsigned char *buf, uint64_t seed,
                    double budget, int reps_min, int reps_max) {
  int k = (int)ceil((double)frac * (nranks - 1) / 100.0 - 1e-9);
  if (k < 1) k = 1;
  if (k > nranks - 1) k = nranks - 1;
  int dests[4096];
  if (k > 4096) die("too many ranks");
  /* The sets of this configuration: the same in every launch with the same seed. */
  uint64_t st = mix(seed ^ ((uint64_t)size << 20) ^ (uint64_t)frac);
  struct op o = {.size = size, .k = k, .dests = dests, .buf = buf};
  int nv = 0, vs[NV];
  for (int v = 0; v < NV; v++)
    if (on[v] && (v != V_MBCAST || k == nranks - 1)) vs[nv++] = v;
  struct sides sd;
  /* Warm-up: one round, which also says how many fit in the budget. */
  draw_dests(&st, k, dests);
  o.member = rank == 0;
  o.is_dest = 0;
  for (int i = 0; i < k; i++)
    if (dests[i] == rank) o.member = o.is_dest = 1;
  double round = 0;
  for (int i = 0; i < nv; i++) round += timed(vs[i], &o, seed, &sd);
  int reps = round > 0 ? (int)(budget / round) : reps_max;
  if (reps < reps_min) reps = reps_min;
  if (reps > reps_max) reps = reps_max;
  PMPI_Bcast(&reps, 1, MPI_INT, 0, MPI_COMM_WORLD);
  size_t cells = sizeof(double) * (size_t)(nv * reps);
  double *t = malloc(cells), *sp = malloc(cells), *ro = malloc(cells), *de = malloc(cells),
         *dl = malloc(cells);
  if (!t || !sp || !ro || !de || !dl) die("out of memory");
  long errors_before = errors;
  for (int r = 0; r < reps; r++) {
    draw_dests(&st, k, dests);
    o.member = rank == 0;
    o.is_dest = 0;
    for (int i = 0; i < k; i++)
      if (dests[i] == rank) o.member = o.is_dest = 1;
    for (int j = 0; j < nv; j++) {
      int i = (j + r) % nv; /* rotated */
      t[i * reps + r] = timed(vs[i], &o, seed, &sd);
      sp[i * reps + r] = sd.span;
      ro[i * reps + r] = sd.root;
      de[i * reps + r] = sd.dest;
      dl[i * reps + r] = sd.deliver;
    }
  }
  long errs = errors - errors_before, all = 0;
  PMPI_Reduce(&errs, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int i = 0; i < nv; i++) {
      double *a = t + i * reps, *b = sp + i * reps, *c = ro + i * reps, *d = de + i * reps,
             *e = dl + i * reps;
      qsort(a, (size_t)reps, sizeof(double), cmp_double);
      qsort(b, (size_t)reps, sizeof(double), cmp_double);
      qsort(c, (size_t)reps, sizeof(double), cmp_double);
      qsort(d, (size_t)reps, sizeof(double), cmp_double);
      qsort(e, (size_t)reps, sizeof(double), cmp_double);
      printf("%s,%s,%s,%s,%s,%s,%d,%zu,%d,%d,%d,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%ld,%.9f,%.9f,%.9f\n",
             label, mode,
             VNAME[vs[i]], vs[i] == V_IMCAST ? route : "-", vs[i] == V_IMCAST ? base : "-",
             vs[i] == V_IMCAST ? seg : "-", nranks, size, frac, k, reps, quantile(a, reps, 0.5),
             a[0], quantile(a, reps, 0.25), quantile(a, reps, 0.75), a[reps - 1],
             quantile(b, reps, 0.5), all, quantile(c, reps, 0.5), quantile(d, reps, 0.5),
             quantile(e, reps, 0.5));
    }
    fflush(stdout);
  }
  free(t);
  free(sp);
  free(ro);
  free(de);
  free(dl);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  bench_init();
  label = env_or("IMCAST_BENCH_LABEL", "-");
  if (arg(argc, argv, "--label")) label = arg(argc, argv, "--label");
  if (arg(argc, argv, "--mode")) mode = arg(argc, argv, "--mode");
  int fig4 = strcmp(mode, "fig4") == 0;
  if (!fig4 && strcmp(mode, "fig5") != 0) die("--mode fig4 or fig5");
  route = env_or("MPICAST_IMCAST_ROUTE", "dests");
  base = env_or("MPICAST_TOPO_BASE", "16");
  seg = env_or("MPICAST_SEGMENT_BYTES", "8KiB");

  int on[NV] = {0};
  parse_variants(argc, argv, fig4 ? "imcast" : "imcast,flat,bcast,bcast_cg,split", VNAME, NV, on,
                 "unknown variant (imcast, flat, bcast, bcast_cg, split, mbcast)");
  size_t sizes[64], max;
  size_t nsizes = parse_sizes(argc, argv, fig4 ? "512k,1m" : "1k,16k,256k,1m,4m", sizes, &max);
  int fracs[16], nfracs = 0;
  char *fl = strdup(arg(argc, argv, "--fracs") ? arg(argc, argv, "--fracs") : fig4 ? "100" : "25,50,100");
  for (char *tok = strtok(fl, ","); tok && nfracs < 16; tok = strtok(NULL, ",")) {
    fracs[nfracs] = atoi(tok);
    if (fracs[nfracs] < 1 || fracs[nfracs] > 100) die("--fracs: percentages 1..100");
    nfracs++;
  }
  free(fl);
  double budget = num_arg(argc, argv, "--budget", 6.0);
  int reps_min = (int)num_arg(argc, argv, "--reps-min", 3);
  int reps_max = (int)num_arg(argc, argv, "--reps-max", 15);
  if (reps_min < 1) reps_min = 1;
  if (reps_max < reps_min) reps_max = reps_min;
  uint64_t seed = (uint64_t)num_arg(argc, argv, "--seed", 20261126);
  long slack_ns = (long)num_arg(argc, argv, "--timer-slack-ns", -1);
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--recv-spin") == 0) recv_spin = 1;
  if (slack_ns >= 1 && prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0) != 0)
    die("prctl(PR_SET_TIMERSLACK) failed");
  unsigned char *buf = malloc(max);
  if (!buf) die("out of memory");

  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_dup(MPI_COMM_WORLD, &pcomm);
  MPI_Comm_dup(MPI_COMM_WORLD, &mcomm);
  MPI_Comm_dup(MPI_COMM_WORLD, &ecomm);
  double enable_max =
      enable_and_connect(MPICAST_Mcast_enable, ecomm, "MPICAST_Mcast_enable", pcomm);

  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING], date[32];
    run_facts(version, date);
    printf("# imcast_bench: %s, %d ranks, root 0, mode %s, %s, mpicast %s\n", label, nranks, mode,
           date, MPICAST_Version());
    printf("# mpi: %s\n", version);
    printf("# mpicast: MPICAST_IMCAST_ROUTE=%s MPICAST_TOPO_BASE=%s MPICAST_SEGMENT_BYTES=%s "
           "MPICAST_IMCAST_TRANSPORT=%s; MPICAST_Mcast_enable took %.3f ms (slowest rank)\n",
           route, base, seg, env_or("MPICAST_IMCAST_TRANSPORT", "(default)"), enable_max * 1e3);
    printf("# timer slack: %ld ns; imcast receives %s\n", (long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0),
           recv_spin ? "by MPICAST_Test in a loop (--recv-spin)" : "by MPICAST_Wait");
    printf("# figures: seconds, the slowest participant's time per operation; median, min, "
           "quartiles, max over reps; budget %.1f s per configuration, reps %d..%d, seed %llu\n",
           budget, reps_min, reps_max, (unsigned long long)seed);
    printf("label,mode,variant,route,base,seg_bytes,ranks,size,frac,ndests,reps,median_s,min_s,"
           "q1_s,q3_s,max_s,span_s,errors,root_s,dest_s,deliver_s\n");
    fflush(stdout);
  }
  for (size_t i = 0; i < nsizes; i++)
    for (int f = 0; f < nfracs; f++)
      measure(on, sizes[i], fracs[f], buf, seed, budget, reps_min, reps_max);

  long all = bench_finish();
  MPI_Comm_free(&ecomm);
  MPI_Comm_free(&pcomm);
  MPI_Comm_free(&mcomm);
  MPI_Group_free(&world_group);
  free(buf);
  MPI_Finalize();
  return all ? 1 : 0;
}
