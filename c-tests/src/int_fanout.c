/* Fan-out detection (MPICAST_FANOUT=on): a program that knows nothing of mpicast, whose
 * MPI_Isends of one buffer to several ranks mpicast may turn into dynamic broadcasts. The
 * same program runs with the setting off; both must deliver exactly what MPI says.
 *
 *   int_fanout [--rounds R] [--seed S]
 *
 * Every rank draws every rank's plan from one seed (printed), so each receiver knows what
 * comes to it, from whom, with which tag, in which order. In each round every rank:
 *  A. pre-posts MPI_Irecvs for a random prefix of each (source, tag 1 or 2) stream to it;
 *  B. sends: fan-outs of MPI_Isends of one of its buffers (sizes below and above the 1 KiB
 *     threshold, up to 200000 bytes, some of a vector type made anew for each send and freed
 *     right after it) to random subsets of ranks with tag 1, 2 or 3; sometimes one rank twice
 *     (the datum must arrive twice); blocking MPI_Sends and MPI_Issends of small messages to
 *     the same ranks interleaved, inside fan-outs too;
 *  C. receives the rest: per stream MPI_Recv in order, or MPI_Irecv + MPI_Waitall, after a
 *     short sleep now and then (data first, receive later); tag 3 always by MPI_Recv with
 *     MPI_ANY_SOURCE, each message checked against the next one expected from its source;
 *  D. completes its sends: MPI_Waitall, an MPI_Testall loop, or MPI_Request_free of some
 *     MPI_Isend requests (their completion shows at the receivers, before the barrier);
 *  E. checks every byte and count received, then MPI_Barrier.
 * A message overtaking an earlier one of its source and tag gets the wrong bytes or count.
 *
 *   int_fanout --early N
 *
 * Data before its receive: rank 0 sends N buffers of 64 KiB, each to every other rank (tag 9),
 * and enters MPI_Barrier; the others enter it too, stay in MPI (MPI_Iprobe of a tag nobody
 * sends) for 200 ms while the data comes, and only then receive and check it. With
 * MPICAST_IMCAST_BUFFER below N x 64 KiB the job must stop with a message naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAXP 16
#define MAXMSG 4096
#define K 4
#define SMALL_MAX 900
#define BIG 200000

enum kind { DATUM, SMALL_SEND, SMALL_ISSEND };

struct msg {
  int src, dst, tag;
  enum kind kind;
  int datum;   /* DATUM: which buffer of the sender */
  int op;      /* small: the op number (its pattern) */
  int bytes;   /* bytes received */
  int vec;     /* DATUM sent as the vector type */
};

static struct msg plan[MAXMSG];
static int nplan;

static const int sizes[] = {200, 1024, 5000, 65536, BIG};

/* The datum buffers of (sender, round): sizes and whether datum 0 is sent as a vector. */
struct datums {
  int bytes[K];
  int vec0;
};

static uint64_t seed_of(uint64_t base, int round, int rank) {
  uint64_t s = base ^ ((uint64_t)round << 20) ^ (uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ULL;
  tc_rand(&s);
  return s;
}

static struct datums datums_of(uint64_t base, int round, int s) {
  uint64_t st = seed_of(base, round, s) ^ 0xdada;
  struct datums d;
  for (int k = 0; k < K; k++) d.bytes[k] = sizes[tc_rand(&st) % 5];
  /* The vector: every other 64-byte block of a buffer twice the message (doubles). */
  d.vec0 = (int)(tc_rand(&st) % 2);
  if (d.vec0) d.bytes[0] = 8192;
  return d;
}

static uint64_t datum_seed(int s, int round, int k) { return tc_pattern_seed(s, (uint64_t)round * 64 + k, 1); }
static uint64_t small_seed(int s, int round, int op) { return tc_pattern_seed(s + 1000, (uint64_t)round * 100000 + op, 2); }

/* The bytes a datum message carries (the vector's blocks, or the buffer). */
static void datum_bytes(int s, int round, int k, int vec, int bytes, uint8_t *out) {
  if (!vec) {
    tc_fill(out, (size_t)bytes, datum_seed(s, round, k));
    return;
  }
  uint8_t *full = malloc((size_t)bytes * 2);
  tc_fill(full, (size_t)bytes * 2, datum_seed(s, round, k));
  for (int b = 0; b < bytes / 64; b++) memcpy(out + b * 64, full + b * 128, 64);
  free(full);
}

static void add(int src, int dst, int tag, enum kind kind, int datum, int op, int bytes, int vec) {
  if (nplan >= MAXMSG) tc_fail("plan too long");
  plan[nplan++] = (struct msg){src, dst, tag, kind, datum, op, bytes, vec};
}

/* The plan of sender s in round r: appended to plan[]; `run` sends it as well. */
static void sender_plan(uint64_t base, int round, int s, int size, int run, uint8_t **bufs,
                        MPI_Request *reqs, int *nreq, uint8_t **smalls) {
  uint64_t st = seed_of(base, round, s);
  struct datums d = datums_of(base, round, s);
  int nops = 4 + (int)(tc_rand(&st) % 10);
  int op = 0;
  for (int o = 0; o < nops; o++) {
    int kind = (int)(tc_rand(&st) % 10);
    if (kind <= 1) {
      int dst = (int)((s + 1 + tc_rand(&st) % (uint64_t)(size - 1)) % (uint64_t)size);
      int tag = 1 + (int)(tc_rand(&st) % 2);
      int bytes = 16 + (int)(tc_rand(&st) % (SMALL_MAX - 16));
      int myop = op++;
      add(s, dst, tag, kind == 0 ? SMALL_SEND : SMALL_ISSEND, -1, myop, bytes, 0);
      if (run) {
        smalls[myop] = malloc((size_t)bytes);
        tc_fill(smalls[myop], (size_t)bytes, small_seed(s, round, myop));
        if (kind == 0)
          MPI_Send(smalls[myop], bytes, MPI_BYTE, dst, tag, MPI_COMM_WORLD);
        else
          MPI_Issend(smalls[myop], bytes, MPI_BYTE, dst, tag, MPI_COMM_WORLD, &reqs[(*nreq)++]);
      }
      continue;
    }
    /* A fan-out of datum k. */
    int k = (int)(tc_rand(&st) % K);
    int tag = 1 + (int)(tc_rand(&st) % 3);
    int vec = k == 0 && d.vec0;
    int dsts[MAXP + 1], n = 0;
    int want = 1 + (int)(tc_rand(&st) % (uint64_t)(size - 1));
    for (int i = 1; i < size && n < want; i++) {
      int r = (s + i) % size;
      if (tc_rand(&st) % 2 || size - i <= want - n) dsts[n++] = r;
    }
    if (tc_rand(&st) % 8 == 0) dsts[n++] = dsts[0]; /* twice to one rank */
    for (int i = 0; i < n; i++) {
      add(s, dsts[i], tag, DATUM, k, -1, d.bytes[k], vec);
      if (run) {
        if (vec) {
          MPI_Datatype v;
          MPI_Type_vector(d.bytes[k] / 64, 8, 16, MPI_DOUBLE, &v);
          MPI_Type_commit(&v);
          MPI_Isend(bufs[k], 1, v, dsts[i], tag, MPI_COMM_WORLD, &reqs[(*nreq)++]);
          MPI_Type_free(&v); /* allowed with the send pending */
        } else {
          MPI_Isend(bufs[k], d.bytes[k], MPI_BYTE, dsts[i], tag, MPI_COMM_WORLD,
                    &reqs[(*nreq)++]);
        }
      }
      /* Now and then a small blocking send to the same rank inside the fan-out. */
      if (tc_rand(&st) % 6 == 0) {
        int bytes = 16 + (int)(tc_rand(&st) % (SMALL_MAX - 16));
        int myop = op++;
        int stag = 1 + (int)(tc_rand(&st) % 2);
        add(s, dsts[i], stag, SMALL_SEND, -1, myop, bytes, 0);
        if (run) {
          smalls[myop] = malloc((size_t)bytes);
          tc_fill(smalls[myop], (size_t)bytes, small_seed(s, round, myop));
          MPI_Send(smalls[myop], bytes, MPI_BYTE, dsts[i], stag, MPI_COMM_WORLD);
        }
      }
    }
  }
}

static void expected(const struct msg *m, int round, uint8_t *out) {
  if (m->kind == DATUM)
    datum_bytes(m->src, round, m->datum, m->vec, m->bytes, out);
  else
    tc_fill(out, (size_t)m->bytes, small_seed(m->src, round, m->op));
}

static void check_msg(const struct msg *m, int round, const uint8_t *got, int count,
                      const char *how) {
  if (count != m->bytes)
    tc_fail("round %d: %s from %d tag %d: %d bytes, expected %d (a message out of order?)",
            round, how, m->src, m->tag, count, m->bytes);
  uint8_t *want = malloc((size_t)m->bytes + 1);
  expected(m, round, want);
  for (int i = 0; i < m->bytes; i++)
    if (got[i] != want[i])
      tc_fail("round %d: %s from %d tag %d (%s %d, %d bytes): byte %d is %u, expected %u",
              round, how, m->src, m->tag, m->kind == DATUM ? "datum" : "small",
              m->kind == DATUM ? m->datum : m->op, m->bytes, i, got[i], want[i]);
  free(want);
}

static void early(int n) {
  int rank = tc_world_rank(), size = tc_world_size();
  const int bytes = 64 << 10;
  uint8_t *buf = malloc((size_t)n * bytes);
  if (rank == 0) {
    MPI_Request *reqs = malloc((size_t)n * (size_t)size * sizeof *reqs);
    int nr = 0;
    for (int i = 0; i < n; i++) {
      tc_fill(buf + (size_t)i * bytes, (size_t)bytes, tc_pattern_seed(0, (uint64_t)i, 9));
      for (int d = 1; d < size; d++)
        MPI_Isend(buf + (size_t)i * bytes, bytes, MPI_BYTE, d, 9, MPI_COMM_WORLD, &reqs[nr++]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Status *sts = malloc((size_t)nr * sizeof *sts);
    MPI_Waitall(nr, reqs, sts);
    free(sts);
    free(reqs);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    double until = tc_now() + 0.2;
    while (tc_now() < until) {
      int flag;
      MPI_Iprobe(0, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < n; i++) {
      MPI_Status st;
      int count;
      uint8_t *p = buf + (size_t)i * bytes;
      MPI_Recv(p, bytes, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      if (count != bytes) tc_fail("early %d: %d bytes", i, count);
      tc_check(p, (size_t)bytes, tc_pattern_seed(0, (uint64_t)i, 9), "early", 0, (uint64_t)i);
    }
  }
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("int_fanout: ok (%d early fan-outs)\n", n);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank(), size = tc_world_size();
  if (size < 2 || size > MAXP) tc_fail("2 to %d ranks", MAXP);
  if (tc_arg(argc, argv, "--early")) {
    early((int)tc_arg_ll(argc, argv, "--early", 8));
    MPI_Finalize();
    return 0;
  }
  int rounds = (int)tc_arg_ll(argc, argv, "--rounds", 30);
  uint64_t base = (uint64_t)tc_arg_ll(argc, argv, "--seed", 0x42f00d);
  if (rank == 0) printf("int_fanout: seed %llu, %d rounds\n", (unsigned long long)base, rounds);
  long long total = 0;
  for (int round = 0; round < rounds; round++) {
    /* Everyone's plan, for the receiving side. */
    nplan = 0;
    for (int s = 0; s < size; s++) sender_plan(base, round, s, size, 0, NULL, NULL, NULL, NULL);
    int nall = nplan;
    /* Messages to this rank, in plan order (per source: issue order). */
    int mine[MAXMSG], nmine = 0;
    for (int i = 0; i < nall; i++)
      if (plan[i].dst == rank) mine[nmine++] = i;
    uint8_t **rbuf = calloc((size_t)nmine + 1, sizeof *rbuf);
    MPI_Request *rreq = malloc(((size_t)nmine + 1) * sizeof *rreq);
    uint64_t rs = seed_of(base, round, rank) ^ 0xbeef;
    /* A. Pre-posted prefix of each (source, tag 1/2) stream. */
    int done_pre[MAXMSG] = {0};
    for (int s = 0; s < size; s++)
      for (int tag = 1; tag <= 2; tag++) {
        int n = 0;
        for (int j = 0; j < nmine; j++) {
          const struct msg *m = &plan[mine[j]];
          if (m->src == s && m->tag == tag) n++;
        }
        int prefix = n ? (int)(tc_rand(&rs) % (uint64_t)(n + 1)) : 0;
        for (int j = 0; j < nmine && prefix > 0; j++) {
          const struct msg *m = &plan[mine[j]];
          if (m->src != s || m->tag != tag) continue;
          rbuf[j] = malloc((size_t)m->bytes + 1);
          MPI_Irecv(rbuf[j], m->bytes, MPI_BYTE, s, tag, MPI_COMM_WORLD, &rreq[j]);
          done_pre[j] = 1;
          prefix--;
        }
      }
    /* B. Send. */
    struct datums d = datums_of(base, round, rank);
    uint8_t *bufs[K];
    for (int k = 0; k < K; k++) {
      size_t n = (size_t)d.bytes[k] * ((k == 0 && d.vec0) ? 2 : 1);
      bufs[k] = malloc(n);
      tc_fill(bufs[k], n, datum_seed(rank, round, k));
    }
    MPI_Request sreq[MAXMSG];
    uint8_t *smalls[MAXMSG] = {0};
    int nsreq = 0;
    /* Sending appends this rank's plan to plan[] again: drop that copy afterwards. */
    sender_plan(base, round, rank, size, 1, bufs, sreq, &nsreq, smalls);
    nplan = nall;
    /* C. The rest, by stream. */
    if (tc_rand(&rs) % 3 == 0) tc_sleep_ms(1 + (int)(tc_rand(&rs) % 3));
    for (int s = 0; s < size; s++)
      for (int tag = 1; tag <= 2; tag++) {
        int blocking = (int)(tc_rand(&rs) % 2);
        int idx[MAXMSG], n = 0;
        for (int j = 0; j < nmine; j++) {
          const struct msg *m = &plan[mine[j]];
          if (m->src != s || m->tag != tag || done_pre[j]) continue;
          rbuf[j] = malloc((size_t)m->bytes + 1);
          if (blocking) {
            MPI_Status st;
            int count;
            MPI_Recv(rbuf[j], m->bytes, MPI_BYTE, s, tag, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            check_msg(m, round, rbuf[j], count, "MPI_Recv");
            rreq[j] = MPI_REQUEST_NULL;
          } else {
            MPI_Irecv(rbuf[j], m->bytes, MPI_BYTE, s, tag, MPI_COMM_WORLD, &rreq[j]);
            idx[n++] = j;
          }
        }
        for (int i = 0; i < n; i++) {
          MPI_Status st;
          int count;
          MPI_Wait(&rreq[idx[i]], &st);
          MPI_Get_count(&st, MPI_BYTE, &count);
          check_msg(&plan[mine[idx[i]]], round, rbuf[idx[i]], count, "MPI_Irecv");
        }
      }
    /* Pre-posted ones: MPI_Waitall, then checked. */
    {
      MPI_Request pre[MAXMSG];
      int pj[MAXMSG], n = 0;
      for (int j = 0; j < nmine; j++)
        if (done_pre[j]) {
          pre[n] = rreq[j];
          pj[n++] = j;
        }
      MPI_Status *sts = malloc(((size_t)n + 1) * sizeof *sts);
      MPI_Waitall(n, pre, sts);
      for (int i = 0; i < n; i++) {
        int count;
        MPI_Get_count(&sts[i], MPI_BYTE, &count);
        check_msg(&plan[mine[pj[i]]], round, rbuf[pj[i]], count, "pre-posted MPI_Irecv");
      }
      free(sts);
    }
    /* Tag 3: MPI_ANY_SOURCE, each source's in order. */
    {
      int next[MAXP] = {0};
      int n3 = 0;
      for (int j = 0; j < nmine; j++) n3 += plan[mine[j]].tag == 3;
      uint8_t *any = malloc(BIG + 1);
      for (int i = 0; i < n3; i++) {
        MPI_Status st;
        int count;
        MPI_Recv(any, BIG, MPI_BYTE, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        int s = st.MPI_SOURCE, seen = 0, found = -1;
        for (int j = 0; j < nmine; j++) {
          const struct msg *m = &plan[mine[j]];
          if (m->src == s && m->tag == 3 && seen++ == next[s]) {
            found = j;
            break;
          }
        }
        if (found < 0) tc_fail("round %d: an extra tag 3 message from %d", round, s);
        next[s]++;
        check_msg(&plan[mine[found]], round, any, count, "MPI_Recv(MPI_ANY_SOURCE)");
      }
      free(any);
    }
    /* D. Complete the sends. */
    uint64_t ss = seed_of(base, round, rank) ^ 0xc0de;
    int how = (int)(tc_rand(&ss) % 3);
    /* Statuses kept (GCC takes MPICH's MPI_STATUSES_IGNORE for an empty array). */
    MPI_Status *sst = malloc(((size_t)nsreq + 1) * sizeof *sst);
    if (how == 0) {
      MPI_Waitall(nsreq, sreq, sst);
    } else if (how == 1) {
      int flag = 0;
      while (!flag) MPI_Testall(nsreq, sreq, &flag, sst);
    } else {
      /* Free half of them (the receivers have all their messages by now), wait for the rest. */
      for (int i = 0; i < nsreq; i += 2) MPI_Request_free(&sreq[i]);
      MPI_Waitall(nsreq, sreq, sst);
    }
    free(sst);
    for (int i = 0; i < nsreq; i++)
      if (sreq[i] != MPI_REQUEST_NULL) tc_fail("round %d: send request %d still active", round, i);
    total += nmine;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < K; k++) free(bufs[k]);
    for (int i = 0; i < MAXMSG; i++) free(smalls[i]);
    for (int j = 0; j < nmine; j++) free(rbuf[j]);
    free(rbuf);
    free(rreq);
  }
  long long sum = 0;
  MPI_Reduce(&total, &sum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("int_fanout: ok (%lld messages checked)\n", sum);
  MPI_Finalize();
  return 0;
}
