/* The GOAL executor through the C API (docs/goal.md): a binomial broadcast and a
 * dissemination allreduce written as GOAL text in this file, run over MPI and compared
 * with what MPI computes; then the error reports of a bad program and of an unbound buffer;
 * user functions (MPICAST_Goal_reg_func, `exec user N`); schedules built with the builder
 * calls (a binomial broadcast, a recursive-doubling allreduce against MPI_Allreduce, a user
 * function); loading from a file; multicast actions (text and builder); and the errors
 * of each.
 * Plain binary: the MPICAST_Goal_* calls are resolved from the preloaded library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpicast.h>

#include "common.h"

#include "api.h"

/* A growing text buffer. */
static char *text;
static size_t text_len, text_cap;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text + text_len, text_cap - text_len, fmt, ap);
    va_end(ap);
    if (n < 0)
      tc_fail("vsnprintf");
    if (text_len + (size_t)n < text_cap) {
      text_len += (size_t)n;
      return;
    }
    text_cap = text_cap * 2 + (size_t)n + 256;
    text = realloc(text, text_cap);
    if (!text)
      tc_fail("out of memory");
  }
}

static void reset_text(void) { text_len = 0; put("%s", ""); }

static void check(MPICAST_Goal *g, int rc, const char *what) {
  if (rc != MPICAST_OK)
    tc_fail("%s: status %d (%s): %s", what, rc, API(MPICAST_Status_string)(rc),
            g ? API(MPICAST_Goal_error)(g) : "");
}

/* Binomial broadcast of `len` bytes from rank 0 in the paper's dialect. */
static void binomial_bcast(int n, int len) {
  reset_text();
  put("num_ranks %d;\n", n);
  for (int r = 0; r < n; r++) {
    put("rank #%d {\n", r);
    /* Rank r != 0 hears from r minus its lowest set bit, then passes on to r + m for each
     * smaller power of two m; rank 0 to every power of two below n. */
    int lim = r & -r;
    if (r == 0)
      for (lim = 1; lim < n; lim <<= 1)
        ;
    if (r != 0)
      put("  rv: recv 0,%d from %d;\n", len, r - lim);
    for (int m = lim >> 1, k = 0; m > 0; m >>= 1, k++)
      if (r + m < n) {
        put("  s%d: send 0,%d to %d;\n", k, len, r + m);
        if (r != 0)
          put("  requ s%d -> rv;\n", k);
      }
    put("}\n");
  }
}

/* Dissemination allreduce (sum of `count` int32) on a power-of-two group: in round k each
 * rank sends its partial sum to r + 2^k and adds what r - 2^k sent. */
static void dissemination(int n, int count) {
  int len = count * 4;
  reset_text();
  put("num_ranks %d;\n", n);
  for (int r = 0; r < n; r++) {
    put("rank #%d {\n", r);
    for (int d = 1, k = 0; d < n; d <<= 1, k++) {
      put("  s%d: send 0,%d to %d tag %d;\n", k, len, (r + d) % n, k);
      put("  r%d: recv tmp+0,%d from %d tag %d;\n", k, len, (r - d + n) % n, k);
      put("  e%d: exec sumInt32 with tmp+0,%d 0,%d;\n", k, len, len);
      put("  requ e%d -> s%d;\n  requ e%d -> r%d;\n", k, k, k, k);
      if (k > 0)
        put("  requ s%d -> e%d;\n  requ r%d -> e%d;\n", k, k - 1, k, k - 1);
    }
    put("}\n");
  }
}

/* dst[i] += k * src[i] over int32, k from ctx; returns 7 when ctx says so. */
static int scale_add(const void *src, size_t src_len, void *dst, size_t dst_len, void *ctx) {
  int k = *(const int *)ctx;
  if (k == 7)
    return 7;
  if (src_len != dst_len || src_len % 4)
    return 1;
  const int32_t *s = src;
  int32_t *d = dst;
  for (size_t i = 0; i < src_len / 4; i++)
    d[i] += k * s[i];
  return 0;
}

static void run(MPICAST_Goal *g, const char *what) {
  MPICAST_Request *req = NULL;
  check(g, API(MPICAST_Goal_start)(g, &req), what);
  check(g, API(MPICAST_Goal_wait)(req), what);
}

/* (d) user functions in text programs. */
static void user_functions(int rank) {
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create (user)");
  const char *prog = "e1: exec user 0 with 0,16 16,16;\n"
                     "e2: exec user 1 with 0,16 16,16;\n"
                     "requ e2 -> e1;\n";
  check(g, API(MPICAST_Goal_load_text)(g, prog), "load user program");
  int32_t b[8] = {1, 2, 3, 4, 10 * rank, 0, 0, 0};
  check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", b, sizeof b), "bind (user)");
  MPICAST_Request *req = NULL;
  int rc = API(MPICAST_Goal_start)(g, &req);
  if (rc != MPICAST_ERR_GOAL_STATE || !strstr(API(MPICAST_Goal_error)(g), "user function"))
    tc_fail("start without registered functions: status %d, \"%s\"", rc,
            API(MPICAST_Goal_error)(g));
  int two = 2, three = 3, seven = 7, id = -1;
  check(g, API(MPICAST_Goal_reg_func)(g, scale_add, &two, &id), "reg 0");
  if (id != 0)
    tc_fail("first user function got id %d", id);
  check(g, API(MPICAST_Goal_reg_func)(g, scale_add, &three, &id), "reg 1");
  if (id != 1)
    tc_fail("second user function got id %d", id);
  run(g, "user program");
  /* b[4..8] = b[4..8] + 2*b[0..4] + 3*b[0..4] */
  for (int i = 0; i < 4; i++) {
    int32_t want = (i == 0 ? 10 * rank : 0) + 5 * (i + 1);
    if (b[4 + i] != want)
      tc_fail("user functions: element %d is %d, want %d", i, b[4 + i], want);
  }
  /* A function that fails ends the run with its code in the message. */
  check(g, API(MPICAST_Goal_reg_func)(g, scale_add, &seven, &id), "reg 2");
  check(g, API(MPICAST_Goal_load_text)(g, "e: exec user 2 with 0,4 4,4;\n"), "load failing");
  rc = API(MPICAST_Goal_start)(g, &req);
  if (rc == MPICAST_OK)
    rc = API(MPICAST_Goal_wait)(req);
  if (rc != MPICAST_ERR_GOAL_INVALID || !strstr(API(MPICAST_Goal_error)(g), "returned 7"))
    tc_fail("failing user function: status %d, \"%s\"", rc, API(MPICAST_Goal_error)(g));
  if (API(MPICAST_Goal_reg_func)(g, NULL, NULL, &id) != MPICAST_ERR_NULL_ARG)
    tc_fail("NULL user function accepted");
  API(MPICAST_Goal_free)(g);
}

/* (e) the builder calls. */
static void builder(int rank, int size) {
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create (builder)");
  /* Binomial broadcast of 5000 bytes from rank size-1 (ranks relative to the root). */
  int root = size - 1, len = 5000;
  unsigned char *buf = malloc((size_t)len);
  uint64_t seed = tc_pattern_seed(root, 99, (size_t)len);
  if (rank == root)
    tc_fill(buf, (size_t)len, seed);
  else
    tc_poison(buf, (size_t)len, seed);
  int rel = (rank - root + size) % size, lim = rel & -rel, rv = -1, a;
  if (rel == 0)
    for (lim = 1; lim < size; lim <<= 1)
      ;
  if (rel != 0)
    check(g, API(MPICAST_Goal_recv)(g, buf, (size_t)len, (rel - lim + root) % size, 5, &rv),
          "builder recv");
  for (int m = lim >> 1; m > 0; m >>= 1)
    if (rel + m < size) {
      check(g, API(MPICAST_Goal_send)(g, buf, (size_t)len, (rel + m + root) % size, 5, &a),
            "builder send");
      if (rv >= 0)
        check(g, API(MPICAST_Goal_requ)(g, a, rv), "builder requ");
    }
  check(g, API(MPICAST_Goal_compile)(g), "compile bcast");
  run(g, "builder bcast");
  tc_check(buf, (size_t)len, seed, "builder binomial bcast", 0, 99);
  free(buf);

  /* Recursive-doubling allreduce (power-of-two sizes) of int32, then a user function
   * doubling the result: equals 2 x MPI_Allreduce. */
  if ((size & (size - 1)) == 0) {
    enum { COUNT = 333 };
    static int32_t acc[COUNT], in[COUNT], want[COUNT], tmp[32][COUNT];
    for (int i = 0; i < COUNT; i++)
      acc[i] = in[i] = (int32_t)(rank * 7919 + i * (rank + 3));
    MPI_Allreduce(in, want, COUNT, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    int one = 1, uid;
    check(g, API(MPICAST_Goal_reg_func)(g, scale_add, &one, &uid), "reg (builder)");
    int prev = -1, k = 0;
    for (int d = 1; d < size; d <<= 1, k++) {
      int s, r, e;
      check(g, API(MPICAST_Goal_send)(g, acc, sizeof acc, rank ^ d, k, &s), "rd send");
      check(g, API(MPICAST_Goal_recv)(g, tmp[k], sizeof acc, rank ^ d, k, &r), "rd recv");
      check(g, API(MPICAST_Goal_exec)(g, "sumInt32", tmp[k], sizeof acc, acc, sizeof acc, &e),
            "rd exec");
      check(g, API(MPICAST_Goal_requ)(g, e, s), "rd requ e s");
      check(g, API(MPICAST_Goal_requ)(g, e, r), "rd requ e r");
      if (prev >= 0)
        check(g, API(MPICAST_Goal_requ)(g, s, prev), "rd requ s prev");
      prev = e;
    }
    char name[32];
    snprintf(name, sizeof name, "user %d", uid);
    /* acc += 1 * acc through the user function (source and destination overlap). */
    check(g, API(MPICAST_Goal_exec)(g, name, acc, sizeof acc, acc, sizeof acc, &a), "user exec");
    if (prev >= 0)
      check(g, API(MPICAST_Goal_requ)(g, a, prev), "requ user");
    check(g, API(MPICAST_Goal_compile)(g), "compile allreduce");
    run(g, "builder allreduce");
    for (int i = 0; i < COUNT; i++)
      if (acc[i] != 2 * want[i])
        tc_fail("builder allreduce: element %d is %d, want 2 x %d", i, acc[i], want[i]);
  }

  /* Errors: unknown function, bad action numbers, bad ranks and tags, a cycle. */
  int32_t x[4] = {0}, y[4] = {0};
  if (API(MPICAST_Goal_exec)(g, "avgInt32", x, 16, y, 16, &a) != MPICAST_ERR_GOAL_INVALID ||
      !strstr(API(MPICAST_Goal_error)(g), "avgInt32"))
    tc_fail("unknown function accepted or not named: %s", API(MPICAST_Goal_error)(g));
  if (API(MPICAST_Goal_exec)(g, "sumInt32", x, 16, y, 12, &a) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("exec with unequal lengths accepted");
  if (API(MPICAST_Goal_send)(g, x, 16, size, 0, &a) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("send to rank %d accepted", size);
  if (API(MPICAST_Goal_send)(g, x, 16, 0, MPI_ANY_TAG, &a) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("send with MPI_ANY_TAG accepted");
  int e1, e2;
  check(g, API(MPICAST_Goal_exec)(g, "copyUInt8", x, 16, y, 16, &e1), "cycle e1");
  check(g, API(MPICAST_Goal_exec)(g, "copyUInt8", y, 16, x, 16, &e2), "cycle e2");
  if (e1 != 0 || e2 != 1)
    tc_fail("a fresh builder numbered its actions %d, %d", e1, e2);
  if (API(MPICAST_Goal_requ)(g, e1, 2) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("requ on an unknown action accepted");
  check(g, API(MPICAST_Goal_requ)(g, e1, e2), "requ e1 e2");
  check(g, API(MPICAST_Goal_requ)(g, e2, e1), "requ e2 e1");
  if (API(MPICAST_Goal_compile)(g) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("a cycle compiled");
  API(MPICAST_Goal_free)(g);
}

/* (f) loading from a file. */
static void from_file(int rank, int size) {
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create (file)");
  char path[256];
  snprintf(path, sizeof path, "%s/mpicast-int-goal-%d-%d.goal",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), rank);
  binomial_bcast(size, 256);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0)
    tc_fail("cannot write %s", path);
  check(g, API(MPICAST_Goal_load_file)(g, path), "load_file");
  unsigned char b[256];
  uint64_t seed = tc_pattern_seed(0, 5, sizeof b);
  if (rank == 0)
    tc_fill(b, sizeof b, seed);
  else
    tc_poison(b, sizeof b, seed);
  check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", b, sizeof b), "bind (file)");
  run(g, "file program");
  tc_check(b, sizeof b, seed, "goal from file", 0, 5);
  remove(path);
  if (API(MPICAST_Goal_load_file)(g, path) != MPICAST_ERR_GOAL_INVALID ||
      !strstr(API(MPICAST_Goal_error)(g), path))
    tc_fail("missing file: \"%s\" does not name %s", API(MPICAST_Goal_error)(g), path);
  /* The bytes of a text program through load_binary work too. */
  check(g, API(MPICAST_Goal_load_binary)(g, text, strlen(text)), "load_binary (text)");
  if (API(MPICAST_Goal_load_binary)(g, "\x7fGOAL\r\n\x1a\x01", 9) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("a truncated binary schedule loaded");
  API(MPICAST_Goal_free)(g);
}

/* (g) MPICAST_PROGRESS=thread: the host granted MPI_THREAD_MULTIPLE (mpicast's MPI_Init
 * asked for it), and a run completes in the background: with 4+ ranks, rank 3 gets rank 0's
 * data through rank 2 while no rank makes any MPI or mpicast call (each only watches its own
 * memory), which needs rank 2's progress thread to forward it. */
static void background_progress(int rank, int size) {
  const char *p = getenv("MPICAST_PROGRESS");
  int thread = p && strcmp(p, "thread") == 0, level = -1;
  MPI_Query_thread(&level);
  if (!thread)
    return;
  if (level != MPI_THREAD_MULTIPLE)
    tc_fail("MPICAST_PROGRESS=thread: MPI_Query_thread gives %d, not MPI_THREAD_MULTIPLE", level);
  if (size < 4)
    return;
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create (progress)");
  size_t len = 1 << 20;
  binomial_bcast(size, (int)len);
  check(g, API(MPICAST_Goal_load_text)(g, text), "load (progress)");
  unsigned char *buf = malloc(len);
  uint64_t seed = tc_pattern_seed(0, 77, len);
  if (rank == 0)
    tc_fill(buf, len, seed);
  else
    memset(buf, 0, len);
  check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", buf, len), "bind (progress)");
  MPI_Barrier(MPI_COMM_WORLD);
  MPICAST_Request *req = NULL;
  check(g, API(MPICAST_Goal_start)(g, &req), "start (progress)");
  if (rank == 3) {
    /* The last byte of the pattern is nonzero for this seed or the next ones; wait for the
     * whole buffer to match, watching memory only, for at most 20 s. */
    unsigned char *want = malloc(len);
    tc_fill(want, len, seed);
    int ok = 0;
    for (int i = 0; i < 2000 && !ok; i++) {
      usleep(10000);
      __atomic_thread_fence(__ATOMIC_SEQ_CST);
      ok = memcmp((const void *)buf, want, len) == 0;
    }
    free(want);
    if (!ok)
      tc_fail("MPICAST_PROGRESS=thread: rank 3 did not receive the data within 20 s without "
              "calling MPICAST_Goal_test/wait: no background progress");
  } else {
    usleep(200000);
  }
  check(g, API(MPICAST_Goal_wait)(req), "wait (progress)");
  if (rank != 0)
    tc_check(buf, len, seed, "goal bcast with progress thread", 0, 77);
  free(buf);
  API(MPICAST_Goal_free)(g);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf("int_goal: background progress ok (MPICAST_PROGRESS=thread)\n");
}

/* (h) multicast actions: every rank multicasts a block of its own to all the others at the
 * same time (text), then a builder schedule: a 1 MiB multicast from rank 0 into receive
 * buffers larger than the message (the tail must stay untouched), followed by a zero-byte
 * multicast from the last rank that may only complete after its sender got the data.
 * Proves that the datagrams went by multicast (MPICAST_Get_stats) and checks the errors. */
static void multicast(int rank, int size) {
  MPICAST_Stats before, after;
  check(NULL, API(MPICAST_Get_stats)(&before), "stats");
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create (mcast)");
  enum { L = 150000 };
  reset_text();
  put("num_ranks %d;\n", size);
  for (int r = 0; r < size; r++) {
    put("rank #%d {\n  m: mcast buf+%d,%d;\n", r, r * L, L);
    for (int q = 0; q < size; q++)
      if (q != r)
        put("  r%d: mrecv buf+%d,%d from %d;\n", q, q * L, L, q);
    put("}\n");
  }
  check(g, API(MPICAST_Goal_load_text)(g, text), "load all-to-all multicast");
  unsigned char *buf = malloc((size_t)L * (size_t)size);
  for (int iter = 0; iter < 3; iter++) {
    for (int q = 0; q < size; q++) {
      uint64_t seed = tc_pattern_seed(q, 200 + (uint64_t)iter, L);
      if (q == rank)
        tc_fill(buf + (size_t)q * L, L, seed);
      else
        tc_poison(buf + (size_t)q * L, L, seed);
    }
    check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", buf, (size_t)L * (size_t)size), "bind");
    run(g, "all-to-all multicast");
    for (int q = 0; q < size; q++)
      tc_check(buf + (size_t)q * L, L, tc_pattern_seed(q, 200 + (uint64_t)iter, L),
               "goal multicast from every rank", q, 200 + (uint64_t)iter);
  }
  free(buf);

  /* A receiver whose `mrecv` waits for a message that another receiver sends only after its
   * own `mrecv` completed: 8 MiB is more than the root may have in flight beyond its slowest
   * receiver, so rank 2 must take (and acknowledge) the data before its `mrecv` starts. */
  if (size >= 3) {
    enum { HUGE = 8 << 20 };
    reset_text();
    put("num_ranks %d;\nrank #0 { m: mcast big+0,%d; }\n", size, HUGE);
    put("rank #1 { r: mrecv big+0,%d from 0; t: send tok+0,1 to 2; requ t -> r; }\n", HUGE);
    put("rank #2 { t: recv tok+0,1 from 1; r: mrecv big+0,%d from 0; requ r -> t; }\n", HUGE);
    for (int r = 3; r < size; r++)
      put("rank #%d { mrecv big+0,%d from 0; }\n", r, HUGE);
    check(g, API(MPICAST_Goal_load_text)(g, text), "load chained multicast receivers");
    unsigned char *huge = malloc(HUGE), tok = 1;
    uint64_t hseed = tc_pattern_seed(0, 400, HUGE);
    if (rank == 0)
      tc_fill(huge, HUGE, hseed);
    else
      tc_poison(huge, HUGE, hseed);
    check(g, API(MPICAST_Goal_bind_buffer)(g, "big", huge, HUGE), "bind big");
    check(g, API(MPICAST_Goal_bind_buffer)(g, "tok", &tok, 1), "bind tok");
    run(g, "chained multicast receivers");
    tc_check(huge, HUGE, hseed, "goal multicast received before its mrecv started", 0, 400);
    free(huge);
  }

  /* Builder: 1 MiB from rank 0, then 0 bytes from the last rank after it has the data. */
  enum { BIG = 1 << 20, SLACK = 100 };
  unsigned char *big = malloc(BIG + SLACK);
  uint64_t seed = tc_pattern_seed(0, 300, BIG);
  if (rank == 0)
    tc_fill(big, BIG, seed);
  else
    tc_poison(big, BIG, seed);
  memset(big + BIG, 0xA5, SLACK);
  int last = size - 1, a, b, c;
  char zero = 0;
  if (rank == 0) {
    check(g, API(MPICAST_Goal_mcast_send)(g, big, BIG, &a), "mcast_send");
  } else {
    check(g, API(MPICAST_Goal_mcast_recv)(g, big, BIG + SLACK, 0, &a), "mcast_recv");
  }
  if (rank == last) {
    check(g, API(MPICAST_Goal_mcast_send)(g, &zero, 0, &b), "mcast_send 0 bytes");
    check(g, API(MPICAST_Goal_requ)(g, b, a), "requ zero after data");
  } else {
    check(g, API(MPICAST_Goal_mcast_recv)(g, &zero, 0, last, &b), "mcast_recv 0 bytes");
  }
  /* Errors: a multicast receive from this rank itself or from no rank; NULL memory. */
  if (API(MPICAST_Goal_mcast_recv)(g, &zero, 0, rank, &c) != MPICAST_ERR_GOAL_INVALID ||
      !strstr(API(MPICAST_Goal_error)(g), "not another rank"))
    tc_fail("mcast_recv from this rank accepted: %s", API(MPICAST_Goal_error)(g));
  if (API(MPICAST_Goal_mcast_recv)(g, &zero, 0, size, &c) != MPICAST_ERR_GOAL_INVALID)
    tc_fail("mcast_recv from rank %d accepted", size);
  if (API(MPICAST_Goal_mcast_send)(g, NULL, 8, &c) != MPICAST_ERR_NULL_ARG)
    tc_fail("mcast_send of NULL accepted");
  check(g, API(MPICAST_Goal_compile)(g), "compile multicast");
  for (int iter = 0; iter < 2; iter++) {
    run(g, "builder multicast");
    if (rank != 0)
      tc_check(big, BIG, seed, "goal builder multicast", 0, 300);
    for (int i = 0; i < SLACK; i++)
      if (big[BIG + i] != 0xA5)
        tc_fail("multicast receive wrote beyond the message, at byte %d of the slack", i);
  }
  free(big);
  API(MPICAST_Goal_free)(g);

  /* Every rank was a root above: its datagrams went out by multicast, the others' came in
   * (when multicast is expected: on one host without MPICAST_TOPO=flat, point-to-point
   * carries GOAL multicasts, as the host MPI carries broadcasts). */
  check(NULL, API(MPICAST_Get_stats)(&after), "stats");
  const char *expect = getenv("TC_EXPECT");
  if (!expect || strcmp(expect, "mcast") != 0)
    return;
  uint64_t sent = after.dgrams_sent - before.dgrams_sent;
  uint64_t got = after.dgrams_recv - before.dgrams_recv;
  uint64_t bytes = after.bytes_mcast - before.bytes_mcast;
  uint64_t want_bytes = 3ull * L + (rank == 0 ? 2ull * BIG : 0);
  if (sent == 0 || got == 0 || bytes < want_bytes)
    tc_fail("rank %d: GOAL multicasts did not use the multicast channel: %llu datagrams "
            "sent, %llu received, %llu bytes multicast (want at least %llu)",
            rank, (unsigned long long)sent, (unsigned long long)got,
            (unsigned long long)bytes, (unsigned long long)want_bytes);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank(), size = tc_world_size();
  MPICAST_Goal *g = NULL;
  check(NULL, API(MPICAST_Goal_create)(MPI_COMM_WORLD, &g), "create");

  /* (a) broadcast: rank 0's bytes reach everyone, over several sizes and runs. */
  int sizes[] = {1, 1000, 70000};
  for (int si = 0; si < 3; si++) {
    int len = sizes[si];
    binomial_bcast(size, len);
    check(g, API(MPICAST_Goal_load_text)(g, text), "load binomial");
    unsigned char *buf = malloc((size_t)len);
    for (int iter = 0; iter < 3; iter++) {
      uint64_t seed = tc_pattern_seed(0, (uint64_t)iter, (size_t)len);
      if (rank == 0)
        tc_fill(buf, (size_t)len, seed);
      else
        tc_poison(buf, (size_t)len, seed);
      check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", buf, (size_t)len), "bind");
      MPICAST_Request *req = NULL;
      check(g, API(MPICAST_Goal_start)(g, &req), "start");
      if (iter == 1) {
        /* Poll progress with test. */
        int done = 0;
        while (!done)
          check(g, API(MPICAST_Goal_test)(req, &done), "test");
      } else {
        check(g, API(MPICAST_Goal_wait)(req), "wait");
      }
      tc_check(buf, (size_t)len, seed, "goal binomial bcast", 0, (uint64_t)iter);
    }
    free(buf);
  }

  /* (a1) runs without binding again between them: the handle keeps the last run whole and
   * only restarts it. Then a newly bound buffer, then another program: every run must use
   * what is bound and loaded now, never the kept run's. */
  {
    const size_t len = 300;
    unsigned char *b1 = malloc(len), *b2 = malloc(len);
    binomial_bcast(size, (int)len);
    check(g, API(MPICAST_Goal_load_text)(g, text), "load binomial (restarts)");
    check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", b1, len), "bind b1");
    for (int iter = 0; iter < 4; iter++) {
      uint64_t seed = tc_pattern_seed(0, (uint64_t)(100 + iter), len);
      if (rank == 0)
        tc_fill(b1, len, seed);
      else
        tc_poison(b1, len, seed);
      MPICAST_Request *req = NULL;
      check(g, API(MPICAST_Goal_start)(g, &req), "start (restart)");
      if (iter % 2) {
        int done = 0;
        while (!done)
          check(g, API(MPICAST_Goal_test)(req, &done), "test (restart)");
      } else {
        check(g, API(MPICAST_Goal_wait)(req), "wait (restart)");
      }
      tc_check(b1, len, seed, "goal bcast run again without binding", 0, (uint64_t)iter);
    }
    /* While a run is active, starting again and binding are refused, and the run still
     * completes with its data. */
    {
      uint64_t seed = tc_pattern_seed(0, 150, len);
      if (rank == 0)
        tc_fill(b1, len, seed);
      else
        tc_poison(b1, len, seed);
      MPICAST_Request *req = NULL, *again = NULL;
      check(g, API(MPICAST_Goal_start)(g, &req), "start (active)");
      int rc = API(MPICAST_Goal_start)(g, &again);
      if (rc != MPICAST_ERR_GOAL_STATE || again != NULL)
        tc_fail("a second start during a run: status %d, want MPICAST_ERR_GOAL_STATE", rc);
      rc = API(MPICAST_Goal_bind_buffer)(g, "buf", b2, len);
      if (rc != MPICAST_ERR_GOAL_STATE)
        tc_fail("binding during a run: status %d, want MPICAST_ERR_GOAL_STATE", rc);
      check(g, API(MPICAST_Goal_wait)(req), "wait (active)");
      tc_check(b1, len, seed, "goal bcast with refused calls during the run", 0, 150);
    }
    uint64_t keep = tc_pattern_seed(3, 1, len), seed = tc_pattern_seed(0, 200, len);
    tc_fill(b1, len, keep);
    if (rank == 0)
      tc_fill(b2, len, seed);
    else
      tc_poison(b2, len, seed);
    check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", b2, len), "bind b2");
    MPICAST_Request *req = NULL;
    check(g, API(MPICAST_Goal_start)(g, &req), "start (b2)");
    check(g, API(MPICAST_Goal_wait)(req), "wait (b2)");
    tc_check(b2, len, seed, "goal bcast into a newly bound buffer", 0, 200);
    tc_check(b1, len, keep, "the buffer bound before (must stay untouched)", 3, 1);
    /* Another program over the same binding: 40 bytes. */
    uint64_t short_seed = tc_pattern_seed(0, 300, 40);
    if (rank == 0)
      tc_fill(b2, 40, short_seed);
    else
      tc_poison(b2, 40, short_seed);
    binomial_bcast(size, 40);
    check(g, API(MPICAST_Goal_load_text)(g, text), "load binomial (40 B)");
    check(g, API(MPICAST_Goal_start)(g, &req), "start (40 B)");
    check(g, API(MPICAST_Goal_wait)(req), "wait (40 B)");
    tc_check(b2, 40, short_seed, "goal bcast of another program", 0, 300);
    free(b1);
    free(b2);
  }

  /* (a2) seed 004's Example 2 on three ranks: rank 0 adds what ranks 1 and 2 send. */
  if (size == 3) {
    const char *ex2 = "num_ranks 3;\n"
                      "rank #0 {\n"
                      "  r1: recv 503,1 from 1;\n"
                      "  r2: recv 504,1 from 2;\n"
                      "  e1: exec sumInt8 with 501,1 503,1;\n"
                      "  e2: exec sumInt8 with 502,1, 504,1;\n"
                      "  requ e1 -> r1;\n"
                      "  requ e2 -> r2;\n"
                      "}\n"
                      "rank #1, #2 { send 501,1 to 0; }\n";
    check(g, API(MPICAST_Goal_load_text)(g, ex2), "load example 2");
    unsigned char b[505] = {0};
    b[501] = (unsigned char)(10 * (rank + 1));
    b[502] = 7;
    check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", b, sizeof b), "bind");
    MPICAST_Request *req = NULL;
    check(g, API(MPICAST_Goal_start)(g, &req), "start");
    check(g, API(MPICAST_Goal_wait)(req), "wait");
    if (rank == 0 && (b[503] != 30 || b[504] != 37))
      tc_fail("example 2: got %d and %d, want 30 and 37", b[503], b[504]);
  }

  /* (b) allreduce: the dissemination schedule must equal MPI_Allreduce. */
  if ((size & (size - 1)) == 0) {
    int count = 1025;
    dissemination(size, count);
    check(g, API(MPICAST_Goal_load_text)(g, text), "load dissemination");
    int32_t *in = malloc(sizeof(int32_t) * (size_t)count);
    int32_t *out = malloc(sizeof(int32_t) * (size_t)count);
    int32_t *want = malloc(sizeof(int32_t) * (size_t)count);
    for (int i = 0; i < count; i++)
      in[i] = out[i] = (int32_t)((rank + 1) * 1000003 + i * (rank + 7));
    MPI_Allreduce(in, want, count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", out, sizeof(int32_t) * (size_t)count),
          "bind");
    check(g, API(MPICAST_Goal_bind_buffer)(g, "tmp", want + 0, 0), "bind empty tmp");
    int32_t *tmp = malloc(sizeof(int32_t) * (size_t)count);
    MPICAST_Request *req = NULL;
    if (API(MPICAST_Goal_start)(g, &req) != MPICAST_ERR_GOAL_STATE)
      tc_fail("start with a 0-byte tmp was accepted");
    check(g, API(MPICAST_Goal_bind_buffer)(g, "tmp", tmp, sizeof(int32_t) * (size_t)count),
          "bind tmp");
    check(g, API(MPICAST_Goal_start)(g, &req), "start");
    check(g, API(MPICAST_Goal_wait)(req), "wait");
    for (int i = 0; i < count; i++)
      if (out[i] != want[i])
        tc_fail("goal allreduce: element %d is %d, MPI_Allreduce gave %d", i, out[i], want[i]);
    free(tmp);
    free(in);
    free(out);
    free(want);
  } else if (rank == 0) {
    printf("int_goal: %d ranks is not a power of two, allreduce part skipped\n", size);
  }

  /* (c) errors: a misspelt action is reported with line and column, and leaves the
   * previous program loaded; a buffer too small for the program is refused at start. */
  const char *bad = "num_ranks 2;\nrank #0 {\n  sned 0,4 to 1;\n}\n";
  int rc = API(MPICAST_Goal_load_text)(g, bad);
  const char *msg = API(MPICAST_Goal_error)(g);
  if (rc != MPICAST_ERR_GOAL_INVALID)
    tc_fail("bad program: status %d, want MPICAST_ERR_GOAL_INVALID", rc);
  if (!msg || !strstr(msg, "goal:3:3:"))
    tc_fail("bad program: message \"%s\" lacks goal:3:3:", msg ? msg : "(null)");
  binomial_bcast(size, 64);
  check(g, API(MPICAST_Goal_load_text)(g, text), "reload");
  char small[8];
  check(g, API(MPICAST_Goal_bind_buffer)(g, "buf", small, sizeof small), "bind small");
  MPICAST_Request *req = NULL;
  rc = API(MPICAST_Goal_start)(g, &req);
  if (rc != MPICAST_ERR_GOAL_STATE || req != NULL)
    tc_fail("small buffer: status %d, want MPICAST_ERR_GOAL_STATE", rc);
  if (!strstr(API(MPICAST_Goal_error)(g), "buf"))
    tc_fail("small buffer: message \"%s\" does not name the buffer", API(MPICAST_Goal_error)(g));
  if (API(MPICAST_Goal_load_text)(g, NULL) != MPICAST_ERR_NULL_ARG)
    tc_fail("NULL text accepted");

  API(MPICAST_Goal_free)(g);
  API(MPICAST_Goal_free)(NULL);

  user_functions(rank);
  builder(rank, size);
  from_file(rank, size);
  background_progress(rank, size);
  multicast(rank, size);
  free(text);
  if (rank == 0)
    printf("int_goal: ok on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
