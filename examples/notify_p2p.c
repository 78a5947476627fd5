/* --notify=p2p: what task runtimes do today. A finished item goes out as one MPI_Isend per
 * destination rank; each rank that needs an item has posted one MPI_Irecv for it, from the
 * item's owner with the item's tag, before the graph starts. Owns its requests and its
 * duplicate of the communicator; never touches the buffers beyond what MPI does. */
#include "notify.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  notify_t base;
  /* Sends in flight (compacted as they complete). */
  MPI_Request *sreq;
  int nsend, capsend;
  /* Receives in flight: request, the caller's slot, the size expected. */
  MPI_Request *rreq;
  int *rslot, *rbytes;
  int nrecv, caprecv;
  /* Scratch for MPI_Testsome and MPI_Testall. */
  int *idx;
  MPI_Status *st;
  int capscratch;
} p2p_t;

static int scratch(p2p_t *s, int need) {
  return notify_scratch(&s->idx, &s->st, &s->capscratch, need);
}

static int p2p_send(notify_t *nt, const void *buf, int bytes, int tag, const int *dests,
                    int ndests) {
  p2p_t *s = (p2p_t *)nt;
  int cap;
  MPI_Request *sreq = notify_grow(s->sreq, s->capsend, s->nsend + ndests, sizeof *sreq, &cap);
  if (!sreq) return -1;
  s->sreq = sreq;
  s->capsend = cap;
  for (int d = 0; d < ndests; d++) {
    if (MPI_Isend(buf, bytes, MPI_BYTE, dests[d], tag, nt->comm, &s->sreq[s->nsend]) !=
        MPI_SUCCESS)
      return -1;
    s->nsend++;
  }
  return 0;
}

static int p2p_post_recv(notify_t *nt, void *buf, int bytes, int root, int tag, int slot) {
  p2p_t *s = (p2p_t *)nt;
  if (s->nrecv == s->caprecv) {
    int cap = s->caprecv, c1, c2, c3;
    MPI_Request *rreq = notify_grow(s->rreq, cap, cap + 1, sizeof *rreq, &c1);
    if (!rreq) return -1;
    s->rreq = rreq;
    int *rslot = notify_grow(s->rslot, cap, cap + 1, sizeof *rslot, &c2);
    if (!rslot) return -1;
    s->rslot = rslot;
    int *rbytes = notify_grow(s->rbytes, cap, cap + 1, sizeof *rbytes, &c3);
    if (!rbytes) return -1;
    s->rbytes = rbytes;
    s->caprecv = c1; /* all three grew alike */
  }
  if (MPI_Irecv(buf, bytes, MPI_BYTE, root, tag, nt->comm, &s->rreq[s->nrecv]) != MPI_SUCCESS)
    return -1;
  s->rslot[s->nrecv] = slot;
  s->rbytes[s->nrecv] = bytes;
  s->nrecv++;
  return 0;
}

/* Drop completed (now MPI_REQUEST_NULL) sends. */
static void reap_sends(p2p_t *s) {
  int w = 0;
  for (int r = 0; r < s->nsend; r++)
    if (s->sreq[r] != MPI_REQUEST_NULL) s->sreq[w++] = s->sreq[r];
  s->nsend = w;
}

static int p2p_poll(notify_t *nt, int block, int *slots, int max, int *nslots) {
  p2p_t *s = (p2p_t *)nt;
  *nslots = 0;
  if (scratch(s, s->nsend > s->nrecv ? s->nsend : s->nrecv)) return -1;
  if (s->nsend > 0) {
    int outc = 0;
    if (MPI_Testsome(s->nsend, s->sreq, &outc, s->idx, s->st) != MPI_SUCCESS)
      return -1;
    if (outc > 0) reap_sends(s);
  }
  if (s->nrecv == 0) return 0;
  /* Blocking is testing with sched_yield() between tries, not MPI_Waitsome: MPICH's wait spins
   * without yielding, and with more ranks than cores (4 on 2 here) the rank that holds the
   * item then waits for the spinner's time slice to end before it can send (measured on 4
   * ranks, 2 cores, 8 x 8 tiles of 32: MPICH 3.3 times faster than with MPI_Waitsome, Open MPI,
   * which yields by itself when oversubscribed, the same). */
  int outc = 0;
  for (;;) {
    if (MPI_Testsome(s->nrecv, s->rreq, &outc, s->idx, s->st) != MPI_SUCCESS) return -1;
    if (outc == MPI_UNDEFINED) return 0;
    if (outc > 0 || !block) break;
    sched_yield();
  }
  if (outc == 0) return 0;
  if (notify_recvs_done("p2p", outc, s->idx, s->st, s->rslot, s->rbytes, slots, max, nslots))
    return -1;
  int w = 0;
  for (int r = 0; r < s->nrecv; r++) {
    if (s->rreq[r] == MPI_REQUEST_NULL) continue;
    s->rreq[w] = s->rreq[r];
    s->rslot[w] = s->rslot[r];
    s->rbytes[w] = s->rbytes[r];
    w++;
  }
  s->nrecv = w;
  return 0;
}

static int p2p_recvs_pending(const notify_t *nt) { return ((const p2p_t *)nt)->nrecv; }

static int p2p_flush(notify_t *nt) {
  p2p_t *s = (p2p_t *)nt;
  /* Statuses into scratch, not MPI_STATUSES_IGNORE: with MPICH's definition of it gcc 12
   * sees a write through a pointer to nothing (-Wstringop-overflow). Test and yield, as poll
   * does. */
  if (s->nsend == 0) return 0;
  if (scratch(s, s->nsend)) return -1;
  for (;;) {
    int flag = 0;
    if (MPI_Testall(s->nsend, s->sreq, &flag, s->st) != MPI_SUCCESS) return -1;
    if (flag) break;
    sched_yield();
  }
  s->nsend = 0;
  return 0;
}

static void p2p_destroy(notify_t *nt) {
  p2p_t *s = (p2p_t *)nt;
  /* Receives are left only after an error (a run receives all it posts): cancel them. */
  for (int r = 0; r < s->nrecv; r++) {
    MPI_Status st;
    MPI_Cancel(&s->rreq[r]);
    MPI_Wait(&s->rreq[r], &st);
  }
  p2p_flush(nt);
  MPI_Comm_free(&nt->comm);
  free(s->sreq);
  free(s->rreq);
  free(s->rslot);
  free(s->rbytes);
  free(s->idx);
  free(s->st);
  free(s);
}

static const notify_ops_t p2p_ops = {
    .send = p2p_send,
    .post_recv = p2p_post_recv,
    .poll = p2p_poll,
    .recvs_pending = p2p_recvs_pending,
    .flush = p2p_flush,
    .destroy = p2p_destroy,
};

notify_t *notify_p2p_create(MPI_Comm comm, char *err, size_t errlen) {
  p2p_t *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (MPI_Comm_dup(comm, &s->base.comm) != MPI_SUCCESS) {
    snprintf(err, errlen, "MPI_Comm_dup failed");
    free(s);
    return NULL;
  }
  s->base.ops = &p2p_ops;
  s->base.name = "p2p";
  return &s->base;
}
