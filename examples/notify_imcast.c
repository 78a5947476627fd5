/* --notify=imcast: libmpicast's non-blocking multicast (include/mpicast.h, docs/imcast.md).
 * One MPICAST_Imcast per finished item, whatever the number of destinations; the library
 * routes it (topology IDs, routing table, the stage rule) and every destination has posted
 * one MPICAST_Mcast_irecv matched by (root, tag).
 *
 * Built in three ways:
 *   -DEXAMPLES_HAVE_IMCAST -DEXAMPLES_MPICAST_LINKED
 *       the program is linked with -lmpicast (ahead of the MPI library): direct calls.
 *       `make examples` builds it so, and c-tests' example_cholesky_linked.
 *   -DEXAMPLES_HAVE_IMCAST
 *       the program is not linked with libmpicast; the calls are looked up with dlsym when
 *       the backend is created, so the same binary runs p2p on the plain MPI and imcast with
 *       libmpicast preloaded (LD_PRELOAD). Without the library, --notify=imcast refuses.
 *       c-tests' example_cholesky, when a library is built.
 *   neither
 *       no mpicast header at hand (c-tests without a library): --notify=imcast refuses.
 * Both real builds need mpicast.h on the include path (include/ of the tree, or
 * build/<flavour>/include).
 *
 * The ops:
 *   create     every rank checks that it has the calls (one verdict for all: an Allreduce),
 *              MPI_Comm_dup, then MPICAST_Mcast_enable on the duplicate (collective).
 *   send       MPICAST_Imcast(buf, bytes, MPI_BYTE, dests, ndests, tag): one request for the
 *              whole destination set. The library takes the data at return.
 *   post_recv  MPICAST_Mcast_irecv(buf, bytes, MPI_BYTE, root, tag). A fast rank may publish
 *              before a slower one has posted: the library keeps early arrivals.
 *   poll       MPICAST_Testsome over the sends (they complete at the first test) and over the
 *              receives, again with sched_yield() between tries when blocking (ranks share
 *              cores). Every call also forwards the multicasts this rank relays for others.
 *   flush      MPICAST_Waitall over the sends; then an MPI_Ibarrier on the duplicate, tested
 *              between MPICAST_Mcast_iprobe calls (each forwards what is waiting), so that a
 *              rank whose own tasks are done still relays for the others until every rank is
 *              done. When the barrier completes, every rank has received every item of the
 *              run, so nothing of it is left in flight and the next run may reuse the tags.
 *   destroy    MPICAST_Request_free what is left (only after an error), MPI_Comm_free. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include "notify.h"

#include <stdio.h>

#ifndef EXAMPLES_HAVE_IMCAST

notify_t *notify_imcast_create(MPI_Comm comm, char *err, size_t errlen) {
  (void)comm;
  snprintf(err, errlen,
           "--notify=imcast: not available in this build (built without mpicast.h: "
           "EXAMPLES_HAVE_IMCAST not defined; use --notify=p2p)");
  return NULL;
}

#else

#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

/* The library's calls this backend makes, typed from the header. */
typedef struct {
  __typeof__(&MPICAST_Mcast_enable) enable;
  __typeof__(&MPICAST_Imcast) imcast;
  __typeof__(&MPICAST_Mcast_irecv) irecv;
  __typeof__(&MPICAST_Mcast_iprobe) iprobe;
  __typeof__(&MPICAST_Waitall) waitall;
  __typeof__(&MPICAST_Testsome) testsome;
  __typeof__(&MPICAST_Request_free) request_free;
  __typeof__(&MPICAST_Status_string) status_string;
} api_t;

/* Fills api with the library's entry points; the name of the first missing one, or NULL. */
static const char *api_load(api_t *api) {
#ifdef EXAMPLES_MPICAST_LINKED
  api->enable = MPICAST_Mcast_enable;
  api->imcast = MPICAST_Imcast;
  api->irecv = MPICAST_Mcast_irecv;
  api->iprobe = MPICAST_Mcast_iprobe;
  api->waitall = MPICAST_Waitall;
  api->testsome = MPICAST_Testsome;
  api->request_free = MPICAST_Request_free;
  api->status_string = MPICAST_Status_string;
  return NULL;
#else
  /* memcpy: ISO C has no conversion from object pointer (dlsym) to function pointer. */
#define LOAD(field, name)                                                                      \
  do {                                                                                         \
    void *p_ = dlsym(RTLD_DEFAULT, name);                                                      \
    if (!p_) return name;                                                                      \
    memcpy(&api->field, &p_, sizeof p_);                                                       \
  } while (0)
  LOAD(enable, "MPICAST_Mcast_enable");
  LOAD(imcast, "MPICAST_Imcast");
  LOAD(irecv, "MPICAST_Mcast_irecv");
  LOAD(iprobe, "MPICAST_Mcast_iprobe");
  LOAD(waitall, "MPICAST_Waitall");
  LOAD(testsome, "MPICAST_Testsome");
  LOAD(request_free, "MPICAST_Request_free");
  LOAD(status_string, "MPICAST_Status_string");
#undef LOAD
  return NULL;
#endif
}

typedef struct {
  notify_t base;
  api_t api;
  /* Sends not yet completed (compacted as they complete). */
  MPICAST_Request **sreq;
  int nsend, capsend;
  /* Receives in flight: request, the caller's slot, the size expected. */
  MPICAST_Request **rreq;
  int *rslot, *rbytes;
  int nrecv, caprecv;
  /* Scratch for MPICAST_Testsome and MPICAST_Waitall. */
  int *idx;
  MPI_Status *st;
  int capscratch;
} imcast_t;

static int scratch(imcast_t *s, int need) {
  return notify_scratch(&s->idx, &s->st, &s->capscratch, need);
}

static int failed(const imcast_t *s, const char *call, int rc) {
  fprintf(stderr, "notify imcast: %s: %s (%d)\n", call, s->api.status_string(rc), rc);
  return -1;
}

static int imcast_send(notify_t *nt, const void *buf, int bytes, int tag, const int *dests,
                       int ndests) {
  imcast_t *s = (imcast_t *)nt;
  int cap;
  MPICAST_Request **sreq = notify_grow(s->sreq, s->capsend, s->nsend + 1, sizeof *sreq, &cap);
  if (!sreq) return -1;
  s->sreq = sreq;
  s->capsend = cap;
  MPICAST_Request *req = NULL;
  int rc = s->api.imcast(buf, bytes, MPI_BYTE, dests, ndests, tag, nt->comm, &req);
  if (rc != MPICAST_OK) return failed(s, "MPICAST_Imcast", rc);
  s->sreq[s->nsend++] = req;
  return 0;
}

static int imcast_post_recv(notify_t *nt, void *buf, int bytes, int root, int tag, int slot) {
  imcast_t *s = (imcast_t *)nt;
  if (s->nrecv == s->caprecv) {
    int cap = s->caprecv, c1, c2, c3;
    MPICAST_Request **rreq = notify_grow(s->rreq, cap, cap + 1, sizeof *rreq, &c1);
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
  MPICAST_Request *req = NULL;
  int rc = s->api.irecv(buf, bytes, MPI_BYTE, root, tag, nt->comm, &req);
  if (rc != MPICAST_OK) return failed(s, "MPICAST_Mcast_irecv", rc);
  s->rreq[s->nrecv] = req;
  s->rslot[s->nrecv] = slot;
  s->rbytes[s->nrecv] = bytes;
  s->nrecv++;
  return 0;
}

/* Drop completed (now NULL) sends. */
static void reap_sends(imcast_t *s) {
  int w = 0;
  for (int r = 0; r < s->nsend; r++)
    if (s->sreq[r]) s->sreq[w++] = s->sreq[r];
  s->nsend = w;
}

static int imcast_poll(notify_t *nt, int block, int *slots, int max, int *nslots) {
  imcast_t *s = (imcast_t *)nt;
  *nslots = 0;
  if (scratch(s, s->nsend > s->nrecv ? s->nsend : s->nrecv)) return -1;
  int rc, outc = 0;
  if (s->nsend > 0) {
    rc = s->api.testsome(s->nsend, s->sreq, &outc, s->idx, s->st);
    if (rc != MPICAST_OK) return failed(s, "MPICAST_Testsome (sends)", rc);
    if (outc > 0) reap_sends(s);
  }
  if (s->nrecv == 0) {
    /* Nothing to receive (this rank's tasks need nothing more): one progress step, for the
     * multicasts this rank relays, when the sends did not make one. */
    if (s->nsend == 0) {
      int flag = 0;
      rc = s->api.iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, nt->comm, &flag, MPI_STATUS_IGNORE);
      if (rc != MPICAST_OK) return failed(s, "MPICAST_Mcast_iprobe", rc);
    }
    return 0;
  }
  /* Blocking is testing with sched_yield() between tries (see notify_p2p.c): every test is
   * also a progress step of the library, which forwards for the other ranks. */
  for (;;) {
    outc = 0;
    rc = s->api.testsome(s->nrecv, s->rreq, &outc, s->idx, s->st);
    if (rc != MPICAST_OK) {
      for (int c = 0; c < outc && c < s->nrecv; c++)
        fprintf(stderr, "notify imcast: receive of item tag %d from rank %d: error %d\n",
                s->st[c].MPI_TAG, s->st[c].MPI_SOURCE, s->st[c].MPI_ERROR);
      return failed(s, "MPICAST_Testsome (receives)", rc);
    }
    if (outc == MPI_UNDEFINED) return 0; /* cannot happen: no NULL is kept */
    if (outc > 0 || !block) break;
    sched_yield();
  }
  if (outc == 0) return 0;
  if (notify_recvs_done("imcast", outc, s->idx, s->st, s->rslot, s->rbytes, slots, max,
                        nslots))
    return -1;
  int w = 0;
  for (int r = 0; r < s->nrecv; r++) {
    if (!s->rreq[r]) continue;
    s->rreq[w] = s->rreq[r];
    s->rslot[w] = s->rslot[r];
    s->rbytes[w] = s->rbytes[r];
    w++;
  }
  s->nrecv = w;
  return 0;
}

static int imcast_recvs_pending(const notify_t *nt) { return ((const imcast_t *)nt)->nrecv; }

static int imcast_flush(notify_t *nt) {
  imcast_t *s = (imcast_t *)nt;
  if (s->nsend > 0) {
    if (scratch(s, s->nsend)) return -1;
    int rc = s->api.waitall(s->nsend, s->sreq, s->st);
    if (rc != MPICAST_OK) return failed(s, "MPICAST_Waitall", rc);
    s->nsend = 0;
  }
  /* Other ranks' multicasts may still need this rank to pass them on: keep the library
   * making progress until every rank has finished its run (and so received all of it). */
  MPI_Request bar;
  if (MPI_Ibarrier(nt->comm, &bar) != MPI_SUCCESS) return -1;
  for (;;) {
    int done = 0, flag = 0;
    if (MPI_Test(&bar, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
    if (done) break;
    int rc = s->api.iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, nt->comm, &flag, MPI_STATUS_IGNORE);
    if (rc != MPICAST_OK) return failed(s, "MPICAST_Mcast_iprobe", rc);
    sched_yield();
  }
  return 0;
}

static void imcast_destroy(notify_t *nt) {
  imcast_t *s = (imcast_t *)nt;
  /* Requests are left only after an error (a run receives all it posts and flushes its
   * sends): withdraw them. */
  for (int r = 0; r < s->nrecv; r++) s->api.request_free(&s->rreq[r]);
  for (int r = 0; r < s->nsend; r++) s->api.request_free(&s->sreq[r]);
  MPI_Comm_free(&nt->comm);
  free(s->sreq);
  free(s->rreq);
  free(s->rslot);
  free(s->rbytes);
  free(s->idx);
  free(s->st);
  free(s);
}

static const notify_ops_t imcast_ops = {
    .send = imcast_send,
    .post_recv = imcast_post_recv,
    .poll = imcast_poll,
    .recvs_pending = imcast_recvs_pending,
    .flush = imcast_flush,
    .destroy = imcast_destroy,
};

notify_t *notify_imcast_create(MPI_Comm comm, char *err, size_t errlen) {
  imcast_t *s = calloc(1, sizeof *s);
  const char *missing = s ? api_load(&s->api) : NULL;
  /* One verdict for all: the others would wait in MPICAST_Mcast_enable. */
  if (!notify_all_ok(comm, s && !missing)) {
    if (!s)
      snprintf(err, errlen, "out of memory");
    else if (missing)
      snprintf(err, errlen,
               "--notify=imcast: %s not found: libmpicast is not loaded (link the program with "
               "-lmpicast ahead of the MPI library, or run it with libmpicast in LD_PRELOAD)",
               missing);
    else
      snprintf(err, errlen, "--notify=imcast: another rank could not start it");
    free(s);
    return NULL;
  }
  if (MPI_Comm_dup(comm, &s->base.comm) != MPI_SUCCESS) {
    snprintf(err, errlen, "MPI_Comm_dup failed");
    free(s);
    return NULL;
  }
  int rc = s->api.enable(s->base.comm);
  if (!notify_all_ok(comm, rc == MPICAST_OK)) {
    if (rc != MPICAST_OK)
      snprintf(err, errlen, "--notify=imcast: MPICAST_Mcast_enable: %s (%d)",
               s->api.status_string(rc), rc);
    else
      snprintf(err, errlen, "--notify=imcast: MPICAST_Mcast_enable failed on another rank");
    MPI_Comm_free(&s->base.comm);
    free(s);
    return NULL;
  }
  s->base.ops = &imcast_ops;
  s->base.name = "imcast";
  return &s->base;
}

#endif /* EXAMPLES_HAVE_IMCAST */
