/* Many multicasts at once: MPICAST_Mmcast, tested against the host MPI's own point-to-point.
 *
 *   int_mmcast [--rounds N] [--seed S] [--max-bytes B] [--expect-topology-error 1]
 *
 * 1. Rounds (a shared seed: every rank knows the pattern): each rank multicasts with
 *    probability 3/4 to a random set of the others (up to all of them), sizes from 0 to
 *    --max-bytes; every rank passes what it sends and what it expects. The same pattern then
 *    runs over the host MPI (MPI_Isend/MPI_Irecv of every message to every destination), and
 *    the two receive areas must be equal byte for byte, and equal to the pattern. Every third
 *    round receives into a strided datatype (every other int) with displacements, and the gaps
 *    must stay untouched.
 * 2. Arguments that do not agree: rank 1 expects a message from a rank that sends it none;
 *    every rank gets MPICAST_ERR_ARG and the next call works. A destination out of range on
 *    one rank: MPICAST_ERR_ARG on every rank. Ranks whose algorithms differ (the hint
 *    mpicast_mmcast_algo on rank 0 only): MPICAST_ERR_ARG on every rank.
 * 3. --expect-topology-error 1: MPICAST_SWITCH_TOPOLOGY names a file without this machine's
 *    host: every rank gets MPICAST_ERR_TOPOLOGY. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

#ifndef MPICAST_LINKED
#define MPICAST_Mmcast API(MPICAST_Mmcast)
#endif

#define REQUIRE(c, ...)             \
  do {                              \
    if (!(c)) tc_fail(__VA_ARGS__); \
  } while (0)

static int rank, nranks;

/* One round's pattern: who sends how many ints to whom. */
struct pattern {
  int *count;  /* ints each rank sends */
  int *to;     /* to[s * n + d]: s sends to d */
};

static void draw(struct pattern *p, uint64_t *st, long max_ints) {
  for (int s = 0; s < nranks; s++) {
    int sends = tc_rand(st) % 4 != 0;
    p->count[s] = (int)(tc_rand(st) % (uint64_t)(max_ints + 1));
    int any = 0;
    for (int d = 0; d < nranks; d++) {
      int on = sends && d != s && tc_rand(st) % 2;
      p->to[s * nranks + d] = on;
      any |= on;
    }
    if (!any) p->count[s] = 0;
  }
}

static void fill_ints(int *buf, int n, int src, uint64_t round) {
  for (int i = 0; i < n; i++) buf[i] = (int)(src * 1000003 + round * 7919 + (uint64_t)i * 31);
}

static void one_round(uint64_t round, uint64_t *st, long max_ints, int strided) {
  struct pattern p;
  p.count = calloc(nranks, sizeof(int));
  p.to = calloc((size_t)nranks * nranks, sizeof(int));
  draw(&p, st, max_ints);
  int mine = p.count[rank];
  int *send = malloc(sizeof(int) * (mine + 1));
  fill_ints(send, mine, rank, round);
  int dests[1024], ndests = 0, sources[1024], nsources = 0;
  for (int d = 0; d < nranks; d++)
    if (p.to[rank * nranks + d]) dests[ndests++] = d;
  int counts[1024], displs[1024];
  long total = 0;
  for (int s = 0; s < nranks; s++)
    if (p.to[s * nranks + rank]) {
      sources[nsources] = s;
      counts[nsources] = p.count[s];
      displs[nsources] = (int)total;
      total += p.count[s] + 3; /* a gap of 3 elements between messages */
      nsources++;
    }
  /* Strided: each element is one int out of two, so the area is twice as long. */
  long area = strided ? 2 * total + 2 : total + 1;
  int *got = malloc(sizeof(int) * area), *want = malloc(sizeof(int) * area);
  for (long i = 0; i < area; i++) got[i] = want[i] = -7;
  MPI_Datatype rtype = MPI_INT;
  if (strided) {
    MPI_Datatype v;
    MPI_Type_vector(1, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 2 * sizeof(int), &rtype);
    MPI_Type_free(&v);
    MPI_Type_commit(&rtype);
  }
  int rc = MPICAST_Mmcast(send, mine, MPI_INT, dests, ndests, got, counts, displs, rtype, sources,
                          nsources, MPI_COMM_WORLD);
  REQUIRE(rc == MPICAST_OK, "round %llu: MPICAST_Mmcast returned %d", (unsigned long long)round,
          rc);
  /* The host MPI's own delivery of the same pattern. */
  /* Statuses, not MPI_STATUSES_IGNORE: GCC's access checks on MPICH's MPI_Waitall take the
   * NULL for an array of size 0. */
  static MPI_Request reqs[2048];
  static MPI_Status sts[2048];
  int nr = 0;
  for (int i = 0; i < nsources; i++) {
    long stride = strided ? 2 : 1;
    MPI_Irecv(want + displs[i] * stride, counts[i], rtype, sources[i], 99, MPI_COMM_WORLD,
              &reqs[nr++]);
  }
  for (int i = 0; i < ndests; i++)
    MPI_Isend(send, mine, MPI_INT, dests[i], 99, MPI_COMM_WORLD, &reqs[nr++]);
  MPI_Waitall(nr, reqs, sts);
  for (long i = 0; i < area; i++)
    REQUIRE(got[i] == want[i],
            "round %llu%s: int %ld is %d, the host MPI's delivery has %d (%d sources)",
            (unsigned long long)round, strided ? " (strided)" : "", i, got[i], want[i], nsources);
  /* And the pattern itself, so that a host delivery as wrong as ours cannot pass. */
  for (int i = 0; i < nsources; i++) {
    long stride = strided ? 2 : 1;
    for (int k = 0; k < counts[i]; k++) {
      int expect = (int)(sources[i] * 1000003 + round * 7919 + (uint64_t)k * 31);
      REQUIRE(got[(displs[i] + k) * stride] == expect, "round %llu: from %d int %d wrong",
              (unsigned long long)round, sources[i], k);
    }
  }
  if (strided) MPI_Type_free(&rtype);
  free(got);
  free(want);
  free(send);
  free(p.count);
  free(p.to);
}

static void disagreement(void) {
  /* Everyone sends one int to the next rank, and rank 1 also expects one from rank 0's
   * left neighbour (which sends it none) when there are more than 2 ranks. */
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  int one = rank, got[2] = {0, 0}, counts[2] = {1, 1}, displs[2] = {0, 1};
  int sources[2] = {prev, (prev + nranks - 1) % nranks};
  int n = (rank == 1 && nranks > 2) ? 2 : 1;
  int rc = MPICAST_Mmcast(&one, 1, MPI_INT, &next, 1, got, counts, displs, MPI_INT, sources, n,
                          MPI_COMM_WORLD);
  if (nranks > 2)
    REQUIRE(rc == MPICAST_ERR_ARG, "a disagreement gave %d, not MPICAST_ERR_ARG", rc);
  /* The next call works. */
  rc = MPICAST_Mmcast(&one, 1, MPI_INT, &next, 1, got, counts, displs, MPI_INT, sources, 1,
                      MPI_COMM_WORLD);
  REQUIRE(rc == MPICAST_OK && got[0] == prev, "after a disagreement: rc %d, got %d from %d", rc,
          got[0], prev);
  /* A destination out of range on the last rank only. */
  int bad = rank == nranks - 1 ? nranks : next;
  rc = MPICAST_Mmcast(&one, 1, MPI_INT, &bad, 1, got, counts, displs, MPI_INT, sources, 1,
                      MPI_COMM_WORLD);
  REQUIRE(rc == MPICAST_ERR_ARG, "a destination out of range gave %d, not MPICAST_ERR_ARG", rc);
  /* Ranks that would plan with different algorithms (the hint differs on rank 0). */
  MPI_Info info;
  MPI_Comm c;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpicast_mmcast_algo", rank == 0 ? "naive" : "spcco");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
  MPI_Info_free(&info);
  rc = MPICAST_Mmcast(&one, 1, MPI_INT, &next, 1, got, counts, displs, MPI_INT, sources, 1, c);
  REQUIRE(rc == MPICAST_ERR_ARG, "different algorithms gave %d, not MPICAST_ERR_ARG", rc);
  MPI_Comm_free(&c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks > 1024) tc_fail("at most 1024 ranks");
  if (tc_arg_ll(argc, argv, "--expect-topology-error", 0)) {
    int one = rank, got = 0, next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    int c = 1, d = 0;
    int rc = MPICAST_Mmcast(&one, 1, MPI_INT, &next, 1, &got, &c, &d, MPI_INT, &prev, 1,
                            MPI_COMM_WORLD);
    REQUIRE(rc == MPICAST_ERR_TOPOLOGY, "expected MPICAST_ERR_TOPOLOGY, got %d", rc);
    if (rank == 0) printf("int_mmcast: MPICAST_ERR_TOPOLOGY on every rank, as expected\n");
    MPI_Finalize();
    return 0;
  }
  long rounds = tc_arg_ll(argc, argv, "--rounds", 30);
  uint64_t st = (uint64_t)tc_arg_ll(argc, argv, "--seed", 1);
  long max_ints = tc_arg_ll(argc, argv, "--max-bytes", 40000) / (long)sizeof(int);
  for (long r = 0; r < rounds; r++) one_round((uint64_t)r, &st, max_ints, r % 3 == 2);
  disagreement();
  if (rank == 0)
    printf("int_mmcast: %ld rounds of %d ranks equal to the host MPI's delivery\n", rounds,
           nranks);
  MPI_Finalize();
  return 0;
}
