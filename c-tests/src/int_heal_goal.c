/* GOAL runs with multicast actions for a bounded time, every byte of every message checked,
 * for scripts/heal_goal.sh: a fault comes in the middle (nft drops multicast on lo) and every
 * run must still complete with the right data while the roots repair by unicast and move
 * their multicasts to point-to-point.
 *   --seconds T     run this long (agreed by all ranks every 8 runs; default 10)
 *   --max-size B    largest message (default 256 KiB)
 *   --seed S        the sequence every rank draws alike (default 1)
 *   --slow-ms M     rank 0 prints every run that took M ms or more (default 50)
 * Each run: two multicasts from two roots drawn alike by every rank (sizes from 1 B to B,
 * spread over the powers of two), in one GOAL program (MPICAST_Goal_load_text) on a
 * communicator of its own: each root `mcast`s a pattern of (root, run, which), every other
 * rank `mrecv`s both into poisoned buffers; on every 4th run the second `mrecv` of the first
 * root's first receiver waits for a token from the second root's last receiver, which sends
 * it after its own second `mrecv` (a chain across ranks). Rank 0 prints "ready: 100
 * operations" (the script's fault may come), "slow: ..." and "second K: ..." (heal_loop.h),
 * and at the end "done: N runs (X bytes checked), all correct". A wrong byte aborts. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"
#include "heal_loop.h"

#include "api.h"

static char text[8192];
static size_t text_len;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text + text_len, sizeof text - text_len, fmt, ap);
  va_end(ap);
  if (n < 0 || text_len + (size_t)n >= sizeof text) tc_fail("program text too long");
  text_len += (size_t)n;
}

static void check(MPICAST_Goal *g, int rc, const char *what, long long run) {
  if (rc != MPICAST_OK)
    tc_fail("%s failed at run %lld: %s: %s", what, run, API(MPICAST_Status_string)(rc),
            g ? API(MPICAST_Goal_error)(g) : "");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  heal_loop h;
  heal_loop_init(&h, argc, argv, 256 << 10);
  size_t max = h.max;
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 1);
  int rank = h.rank, n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 3) tc_fail("needs 3 ranks or more");
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(comm, &g), "MPICAST_Goal_create", -1);
  uint8_t *a = malloc(max ? max : 1), *b = malloc(max ? max : 1), tok = 0;
  if (!a || !b) tc_fail("out of memory");

  uint64_t state = seed;
  unsigned long long checked = 0;
  while (!heal_loop_over(&h)) {
    long long run = h.ops;
    int r1 = (int)(tc_rand(&state) % (uint64_t)n);
    int r2 = (r1 + 1 + (int)(tc_rand(&state) % (uint64_t)(n - 1))) % n;
    size_t n1 = heal_loop_size(&h, tc_rand(&state)), n2 = heal_loop_size(&h, tc_rand(&state));
    /* The chain: `from` (a receiver of both) sends the token after its `mrecv` of b; `to`
     * (another receiver of both) takes it before its `mrecv` of b. */
    int chain = run % 4 == 3, from = -1, to = -1;
    for (int i = 0; i < n && chain; i++) {
      if (i == r1 || i == r2) continue;
      if (from < 0)
        from = i;
      else if (to < 0)
        to = i;
    }
    if (to < 0) chain = 0;
    text_len = 0;
    put("num_ranks %d;\n", n);
    for (int q = 0; q < n; q++) {
      put("rank #%d {\n", q);
      if (q == r1)
        put("  x: mcast a+0,%zu;\n", n1);
      else
        put("  x: mrecv a+0,%zu from %d;\n", n1, r1);
      if (q == r2)
        put("  y: mcast b+0,%zu;\n", n2);
      else
        put("  y: mrecv b+0,%zu from %d;\n", n2, r2);
      if (chain && q == from) put("  t: send tok+0,1 to %d tag 9;\n  requ t -> y;\n", to);
      if (chain && q == to) put("  t: recv tok+0,1 from %d tag 9;\n  requ y -> t;\n", from);
      put("}\n");
    }
    uint64_t s1 = tc_pattern_seed(r1, (uint64_t)run * 2, n1);
    uint64_t s2 = tc_pattern_seed(r2, (uint64_t)run * 2 + 1, n2);
    if (rank == r1)
      tc_fill(a, n1, s1);
    else
      tc_poison(a, n1, s1);
    if (rank == r2)
      tc_fill(b, n2, s2);
    else
      tc_poison(b, n2, s2);
    check(g, API(MPICAST_Goal_load_text)(g, text), "MPICAST_Goal_load_text", run);
    check(g, API(MPICAST_Goal_bind_buffer)(g, "a", a, max), "bind a", run);
    check(g, API(MPICAST_Goal_bind_buffer)(g, "b", b, max), "bind b", run);
    check(g, API(MPICAST_Goal_bind_buffer)(g, "tok", &tok, 1), "bind tok", run);
    double t = tc_now();
    MPICAST_Request *req = NULL;
    check(g, API(MPICAST_Goal_start)(g, &req), "MPICAST_Goal_start", run);
    check(g, API(MPICAST_Goal_wait)(req), "MPICAST_Goal_wait", run);
    if (rank != r1) {
      tc_check(a, n1, s1, "int_heal_goal first multicast", r1, (uint64_t)run * 2);
      checked += n1;
    }
    if (rank != r2) {
      tc_check(b, n2, s2, "int_heal_goal second multicast", r2, (uint64_t)run * 2 + 1);
      checked += n2;
    }
    heal_loop_took(&h, (tc_now() - t) * 1e3, "goal", n1 + n2, r1);
    heal_loop_next(&h);
  }
  unsigned long long all_checked = 0;
  MPI_Reduce(&checked, &all_checked, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("done: %lld runs (%llu bytes checked), all correct; slowest %.1f ms\n", h.ops,
           all_checked, h.all_max);
    fflush(stdout);
  }
  API(MPICAST_Goal_free)(g);
  MPI_Comm_free(&comm);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
