/* A started GOAL schedule progresses while its rank sits in any MPI call (MPI's progress
 * rule; docs/goal.md, "Progress"), without MPICAST_Goal_test and without the progress thread.
 *
 *   int_goal_progress [--mode barrier|recv|wait|hostbarrier|allreduce] [--iters N]
 *                     [--len BYTES] [--mcast] [--hang-exit SECONDS]
 *
 * Each iteration rotates four roles over the first four ranks of MPI_COMM_WORLD (a fifth rank
 * and beyond only take part in the blocking calls): C sends --len bytes to A; A's schedule
 * receives them and only then sends them on to B (`requ`); B's receives them and sends them
 * on to D; D's receives them. With --mcast, A's schedule also multicasts the bytes to every
 * other rank after its receive (MPICAST_Goal_mcast_send), and every other rank receives them
 * (MPICAST_Goal_mcast_recv), so the run is no point-to-point program in rounds.
 *
 * A calls MPICAST_Goal_start and at once blocks in one MPI call, never calling
 * MPICAST_Goal_test; only afterwards does it collect its run with MPICAST_Goal_wait. Every
 * other rank calls MPICAST_Goal_wait (which needs A to have forwarded) and then the matching
 * call. A's blocking call, by --mode:
 *   barrier     MPI_Barrier(MPI_COMM_WORLD): mpicast's multicast barrier.
 *   recv        MPI_Recv from D, which sends only after its own MPICAST_Goal_wait; then every
 *               rank calls MPI_Barrier(MPI_COMM_WORLD).
 *   wait        MPI_Irecv from D + MPI_Wait; then MPI_Barrier(MPI_COMM_WORLD).
 *   hostbarrier MPI_Barrier on a duplicate of MPI_COMM_WORLD with the info hint mpicast=off:
 *               the host MPI's barrier, on a communicator within the GOAL handle's.
 *   allreduce   MPI_Allreduce (sum of one int) on MPI_COMM_WORLD: the host's collective.
 * Before the change that made started runs part of the process's progress, every mode hung
 * (A never posted its send to B). A hang ends as a failure: MPICAST_TIMEOUT_MS aborts a wait
 * of mpicast's, and after --hang-exit seconds (default 30; 0: never) without a finished
 * iteration a rank prints a FAIL line and exits 1 (a rank blocked in the host MPI has no
 * other way out).
 *
 * Every received byte is checked against the iteration's pattern, and so are the bytes past
 * the message (the receive buffers are longer: nothing may be written there); in recv and
 * wait modes the status's source, tag and count too; in allreduce mode the sum. Needs 4 ranks
 * or more (exit 77 otherwise). Rank 0 prints "int_goal_progress: N iterations ok". */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

#define SLACK 64

static volatile sig_atomic_t iteration;

static void on_alarm(int sig) {
  (void)sig;
  char msg[128];
  int n = snprintf(msg, sizeof msg,
                   "[rank %d] FAIL: int_goal_progress: no iteration finished in time (hung in "
                   "iteration %d)\n",
                   tc_world_rank(), (int)iteration);
  if (n > 0)
    (void)!write(2, msg, (size_t)n);
  _exit(1);
}

static void check(MPICAST_Goal *g, int rc, const char *what) {
  if (rc != MPICAST_OK)
    tc_fail("%s: status %d (%s): %s", what, rc, API(MPICAST_Status_string)(rc),
            g ? API(MPICAST_Goal_error)(g) : "");
}

/* Bytes [0, n) follow the pattern of `seed`; bytes [n, n + SLACK) are still poison. */
static void check_recv(const unsigned char *buf, size_t n, uint64_t seed, const char *what,
                       int it) {
  tc_check(buf, n, seed, what, 0, (uint64_t)it);
  unsigned char want[SLACK];
  tc_poison(want, SLACK, seed ^ 0x5a5a5a5aULL);
  if (memcmp(buf + n, want, SLACK) != 0)
    tc_fail("%s: iteration %d: bytes written past the %zu-byte message", what, it, n);
}

/* Fills all n + SLACK bytes with poison: [0, n) unlike the pattern, the rest a second seed. */
static void poison(unsigned char *buf, size_t n, uint64_t seed) {
  tc_poison(buf, n, seed);
  tc_poison(buf + n, SLACK, seed ^ 0x5a5a5a5aULL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank(), size = tc_world_size();
  if (size < 4) {
    if (rank == 0)
      fprintf(stderr, "int_goal_progress: needs 4 ranks or more (skipped)\n");
    MPI_Finalize();
    return TC_SKIP;
  }
  const char *mode = tc_arg(argc, argv, "--mode");
  if (!mode)
    mode = "barrier";
  int m_barrier = !strcmp(mode, "barrier"), m_recv = !strcmp(mode, "recv"),
      m_wait = !strcmp(mode, "wait"), m_host = !strcmp(mode, "hostbarrier"),
      m_allreduce = !strcmp(mode, "allreduce");
  if (!(m_barrier || m_recv || m_wait || m_host || m_allreduce))
    tc_fail("unknown --mode %s", mode);
  int iters = (int)tc_arg_ll(argc, argv, "--iters", 12);
  size_t len = (size_t)tc_arg_ll(argc, argv, "--len", 100000);
  int mcast = tc_flag(argc, argv, "--mcast");
  int hang = (int)tc_arg_ll(argc, argv, "--hang-exit", 30);
  if (hang > 0) {
    signal(SIGALRM, on_alarm);
    alarm((unsigned)hang);
  }

  /* The host's barrier: mpicast hands every collective of this communicator to the host. */
  MPI_Comm hc = MPI_COMM_NULL;
  if (m_host) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpicast", "off");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &hc);
    MPI_Info_free(&info);
  }

  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create");
  unsigned char *buf = malloc(len + SLACK), *mbuf = malloc(len + SLACK);
  if (!buf || !mbuf)
    tc_fail("out of memory");

  for (int it = 0; it < iters; it++) {
    iteration = it;
    int o = it % 4;
    int A = o, B = (1 + o) % 4, C = (2 + o) % 4, D = (3 + o) % 4;
    uint64_t seed = tc_pattern_seed(C, (uint64_t)it, len);
    if (rank == C)
      tc_fill(buf, len, seed);
    else
      poison(buf, len, seed);
    poison(mbuf, len, seed);

    /* This rank's part of the schedule. */
    int a = -1, rv = -1, s = -1;
    if (rank == C)
      check(g, API(MPICAST_Goal_send)(g, buf, len, A, 1, &s), "C send");
    if (rank == A) {
      check(g, API(MPICAST_Goal_recv)(g, buf, len + SLACK, C, 1, &rv), "A recv");
      check(g, API(MPICAST_Goal_send)(g, buf, len, B, 2, &s), "A send");
      check(g, API(MPICAST_Goal_requ)(g, s, rv), "A requ");
      if (mcast) {
        check(g, API(MPICAST_Goal_mcast_send)(g, buf, len, &a), "A mcast");
        check(g, API(MPICAST_Goal_requ)(g, a, rv), "A requ mcast");
      }
    }
    if (rank == B) {
      check(g, API(MPICAST_Goal_recv)(g, buf, len + SLACK, A, 2, &rv), "B recv");
      check(g, API(MPICAST_Goal_send)(g, buf, len, D, 3, &s), "B send");
      check(g, API(MPICAST_Goal_requ)(g, s, rv), "B requ");
    }
    if (rank == D)
      check(g, API(MPICAST_Goal_recv)(g, buf, len + SLACK, B, 3, &rv), "D recv");
    if (mcast && rank != A)
      check(g, API(MPICAST_Goal_mcast_recv)(g, mbuf, len + SLACK, A, &a), "mcast recv");
    check(g, API(MPICAST_Goal_compile)(g), "compile");

    MPICAST_Request *req = NULL;
    check(g, API(MPICAST_Goal_start)(g, &req), "start");
    int token = -1, sum = 0, one = 1;
    MPI_Status st;
    if (rank == A) {
      /* No MPICAST_Goal_test: only the blocking call below can move the run on. */
      if (m_barrier) {
        MPI_Barrier(MPI_COMM_WORLD);
      } else if (m_recv) {
        MPI_Recv(&token, 1, MPI_INT, D, 77, MPI_COMM_WORLD, &st);
      } else if (m_wait) {
        MPI_Request r;
        MPI_Irecv(&token, 1, MPI_INT, D, 77, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
      } else if (m_host) {
        MPI_Barrier(hc);
      } else {
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      }
      check(g, API(MPICAST_Goal_wait)(req), "A wait");
    } else {
      check(g, API(MPICAST_Goal_wait)(req), "wait");
      if (m_barrier)
        MPI_Barrier(MPI_COMM_WORLD);
      else if ((m_recv || m_wait) && rank == D)
        MPI_Send(&it, 1, MPI_INT, A, 77, MPI_COMM_WORLD);
      else if (m_host)
        MPI_Barrier(hc);
      else if (m_allreduce)
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    if (m_recv || m_wait) {
      if (rank == A) {
        int count = -1;
        MPI_Get_count(&st, MPI_INT, &count);
        if (token != it || st.MPI_SOURCE != D || st.MPI_TAG != 77 || count != 1)
          tc_fail("%s: iteration %d: got %d from %d tag %d count %d, want %d from %d tag 77",
                  mode, it, token, st.MPI_SOURCE, st.MPI_TAG, count, it, D);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    if (m_allreduce && sum != size)
      tc_fail("allreduce: iteration %d: sum %d, want %d", it, sum, size);

    if (rank == A || rank == B || rank == D)
      check_recv(buf, len, seed, "chain", it);
    if (rank == C)
      tc_check(buf, len, seed, "C's own bytes", 0, (uint64_t)it);
    if (mcast && rank != A)
      check_recv(mbuf, len, seed, "mcast", it);
    if (hang > 0)
      alarm((unsigned)hang);
  }
  alarm(0);

  API(MPICAST_Goal_free)(g);
  if (hc != MPI_COMM_NULL)
    MPI_Comm_free(&hc);
  free(buf);
  free(mbuf);
  if (rank == 0)
    printf("int_goal_progress: %d iterations ok (--mode %s%s)\n", iters, mode,
           mcast ? " --mcast" : "");
  MPI_Finalize();
  return 0;
}
