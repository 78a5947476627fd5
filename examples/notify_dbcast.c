/* --notify=dbcast: p2p's receives, and sends that libmpicast's detection turns into dynamic
 * broadcasts (include/mpicast.h: MPICAST_Dbcast_enable, MPICAST_Send_defer,
 * MPICAST_Send_release; after "Using Dynamic Broadcasts to improve Task-Based Runtime
 * Performances", Denis et al., Euro-Par 2020). The runtime announces, before any task of a run,
 * every send it will make (defer): one MPICAST_Send_defer per destination rank of each item it
 * owns, keyed by the item. When the item is computed, one MPICAST_Send_release sends it to
 * all of them: to one rank as a plain MPI_Isend, to several as one dynamic broadcast (a
 * binomial tree over the destinations, each forwarding to its subtree). The application never
 * names a broadcast; the receivers do not know that one brought the item.
 *
 * The receive side is p2p's, unchanged: this backend creates a p2p backend (notify_p2p.c) and
 * hands it post_recv, poll and recvs_pending, so every rank posts one plain MPI_Irecv per
 * item from its owner with its tag, and completes them with MPI_Testsome. mpicast intercepts
 * these calls on a communicator where MPICAST_Dbcast_enable was called: a dynamic broadcast
 * completes the receive (its status says the root, the owner), and the calls forward the
 * broadcasts routed through this rank.
 *
 * Built as notify_imcast.c is (the same macros):
 *   -DEXAMPLES_HAVE_IMCAST -DEXAMPLES_MPICAST_LINKED
 *       linked with -lmpicast ahead of the MPI library: direct calls (and the program's MPI
 *       receives are mpicast's).
 *   -DEXAMPLES_HAVE_IMCAST
 *       not linked: the calls are looked up with dlsym when the backend is created; they are
 *       there when libmpicast is preloaded (LD_PRELOAD), which also makes the program's MPI
 *       receives mpicast's. Without the library, --notify=dbcast refuses.
 *   neither
 *       no mpicast.h at hand: --notify=dbcast refuses.
 *
 * The ops:
 *   create     every rank checks that it has the calls (one verdict for all: an Allreduce),
 *              creates the p2p backend (its MPI_Comm_dup is this backend's communicator), then
 *              MPICAST_Dbcast_enable on it (collective).
 *   defer      MPICAST_Send_defer(tag, dest, tag, 0, comm) per destination: the key is the
 *              item, which is also its tag; priority 0 (the runtime does not know the remote
 *              readers' priorities), so the tree keeps the runtime's order of destinations.
 *   send       MPICAST_Send_release(tag, buf, bytes, MPI_BYTE): one request. The key is free
 *              again afterwards, so the next run defers again. An item that was not deferred
 *              (a runtime that does not call defer) is deferred here, just before its release.
 *   post_recv, poll, recvs_pending
 *              p2p's; poll first tests the releases' requests (MPICAST_Testsome), and when no
 *              receive is left makes one progress step (MPI_Iprobe, intercepted) for the
 *              broadcasts this rank forwards.
 *   flush      MPICAST_Waitall over the releases; then an MPI_Ibarrier on the communicator,
 *              tested (each MPI_Test is a progress step of mpicast's, which forwards) with
 *              sched_yield() between tries: a rank whose own tasks are done may still owe a
 *              subtree the rest of a broadcast. When the barrier completes every rank has
 *              received every item of the run, and the next run may reuse the tags.
 *   destroy    MPICAST_Request_free of what is left (only after an error), then the p2p
 *              backend's destroy (cancels its receives, frees the communicator). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include "notify.h"

#include <stdio.h>

#ifndef EXAMPLES_HAVE_IMCAST

notify_t *notify_dbcast_create(MPI_Comm comm, char *err, size_t errlen) {
  (void)comm;
  snprintf(err, errlen,
           "--notify=dbcast: not available in this build (built without mpicast.h: "
           "EXAMPLES_HAVE_IMCAST not defined; use --notify=p2p)");
  return NULL;
}

#else

#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

/* The library's calls this backend makes, typed from the header. */
typedef struct {
  __typeof__(&MPICAST_Dbcast_enable) enable;
  __typeof__(&MPICAST_Send_defer) defer;
  __typeof__(&MPICAST_Send_release) release;
  __typeof__(&MPICAST_Waitall) waitall;
  __typeof__(&MPICAST_Testsome) testsome;
  __typeof__(&MPICAST_Request_free) request_free;
  __typeof__(&MPICAST_Status_string) status_string;
} api_t;

/* Fills api with the library's entry points; the name of the first missing one, or NULL. */
static const char *api_load(api_t *api) {
#ifdef EXAMPLES_MPICAST_LINKED
  api->enable = MPICAST_Dbcast_enable;
  api->defer = MPICAST_Send_defer;
  api->release = MPICAST_Send_release;
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
  LOAD(enable, "MPICAST_Dbcast_enable");
  LOAD(defer, "MPICAST_Send_defer");
  LOAD(release, "MPICAST_Send_release");
  LOAD(waitall, "MPICAST_Waitall");
  LOAD(testsome, "MPICAST_Testsome");
  LOAD(request_free, "MPICAST_Request_free");
  LOAD(status_string, "MPICAST_Status_string");
#undef LOAD
  return NULL;
#endif
}

typedef struct {
  notify_t base; /* base.comm is rx's communicator */
  api_t api;
  /* The receive side: a p2p backend on the same communicator. */
  notify_t *rx;
  /* Releases not yet completed (compacted as they complete). */
  MPICAST_Request **sreq;
  int nsend, capsend;
  /* Scratch for MPICAST_Testsome and MPICAST_Waitall. */
  int *idx;
  MPI_Status *st;
  int capscratch;
} dbcast_t;

static int scratch(dbcast_t *s, int need) {
  return notify_scratch(&s->idx, &s->st, &s->capscratch, need);
}

static int failed(const dbcast_t *s, const char *call, int rc) {
  fprintf(stderr, "notify dbcast: %s: %s (%d)\n", call, s->api.status_string(rc), rc);
  return -1;
}

static int dbcast_defer(notify_t *nt, int tag, const int *dests, int ndests) {
  dbcast_t *s = (dbcast_t *)nt;
  for (int d = 0; d < ndests; d++) {
    int rc = s->api.defer((int64_t)tag, dests[d], tag, 0, nt->comm);
    if (rc != MPICAST_OK) return failed(s, "MPICAST_Send_defer", rc);
  }
  return 0;
}

static int dbcast_send(notify_t *nt, const void *buf, int bytes, int tag, const int *dests,
                       int ndests) {
  dbcast_t *s = (dbcast_t *)nt;
  int cap;
  MPICAST_Request **sreq = notify_grow(s->sreq, s->capsend, s->nsend + 1, sizeof *sreq, &cap);
  if (!sreq) return -1;
  s->sreq = sreq;
  s->capsend = cap;
  MPICAST_Request *req = NULL;
  int rc = s->api.release((int64_t)tag, buf, bytes, MPI_BYTE, &req);
  if (rc == MPICAST_ERR_UNKNOWN_KEY) {
    /* Not announced before: register the sends now (nothing was sent). */
    if (dbcast_defer(nt, tag, dests, ndests)) return -1;
    rc = s->api.release((int64_t)tag, buf, bytes, MPI_BYTE, &req);
  }
  if (rc != MPICAST_OK) return failed(s, "MPICAST_Send_release", rc);
  s->sreq[s->nsend++] = req;
  return 0;
}

static int dbcast_post_recv(notify_t *nt, void *buf, int bytes, int root, int tag, int slot) {
  notify_t *rx = ((dbcast_t *)nt)->rx;
  return rx->ops->post_recv(rx, buf, bytes, root, tag, slot);
}

static int dbcast_recvs_pending(const notify_t *nt) {
  const notify_t *rx = ((const dbcast_t *)nt)->rx;
  return rx->ops->recvs_pending(rx);
}

/* Drop completed (now NULL) releases. */
static void reap_sends(dbcast_t *s) {
  int w = 0;
  for (int r = 0; r < s->nsend; r++)
    if (s->sreq[r]) s->sreq[w++] = s->sreq[r];
  s->nsend = w;
}

static int dbcast_poll(notify_t *nt, int block, int *slots, int max, int *nslots) {
  dbcast_t *s = (dbcast_t *)nt;
  *nslots = 0;
  if (s->nsend > 0) {
    int outc = 0;
    if (scratch(s, s->nsend)) return -1;
    int rc = s->api.testsome(s->nsend, s->sreq, &outc, s->idx, s->st);
    if (rc != MPICAST_OK) return failed(s, "MPICAST_Testsome (releases)", rc);
    if (outc > 0) reap_sends(s);
  }
  if (s->rx->ops->recvs_pending(s->rx) == 0) {
    /* Nothing to receive: one progress step, for the broadcasts this rank forwards. */
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, nt->comm, &flag, &st) != MPI_SUCCESS) return -1;
    return 0;
  }
  return s->rx->ops->poll(s->rx, block, slots, max, nslots);
}

static int dbcast_flush(notify_t *nt) {
  dbcast_t *s = (dbcast_t *)nt;
  if (s->nsend > 0) {
    if (scratch(s, s->nsend)) return -1;
    int rc = s->api.waitall(s->nsend, s->sreq, s->st);
    if (rc != MPICAST_OK) return failed(s, "MPICAST_Waitall", rc);
    s->nsend = 0;
  }
  if (s->rx->ops->flush(s->rx)) return -1; /* it sends nothing: returns at once */
  /* Other ranks' broadcasts may still need this rank to pass them on: keep mpicast making
   * progress (every MPI_Test on an enabled process is a step) until every rank is done. */
  MPI_Request bar;
  MPI_Status st;
  if (MPI_Ibarrier(nt->comm, &bar) != MPI_SUCCESS) return -1;
  for (;;) {
    int done = 0;
    if (MPI_Test(&bar, &done, &st) != MPI_SUCCESS) return -1;
    if (done) break;
    sched_yield();
  }
  return 0;
}

static void dbcast_destroy(notify_t *nt) {
  dbcast_t *s = (dbcast_t *)nt;
  /* Releases are left only after an error (a run flushes them): withdraw them. */
  for (int r = 0; r < s->nsend; r++) s->api.request_free(&s->sreq[r]);
  s->rx->ops->destroy(s->rx); /* cancels its receives, frees the communicator */
  free(s->sreq);
  free(s->idx);
  free(s->st);
  free(s);
}

static const notify_ops_t dbcast_ops = {
    .defer = dbcast_defer,
    .send = dbcast_send,
    .post_recv = dbcast_post_recv,
    .poll = dbcast_poll,
    .recvs_pending = dbcast_recvs_pending,
    .flush = dbcast_flush,
    .destroy = dbcast_destroy,
};

notify_t *notify_dbcast_create(MPI_Comm comm, char *err, size_t errlen) {
  dbcast_t *s = calloc(1, sizeof *s);
  const char *missing = s ? api_load(&s->api) : NULL;
  /* One verdict for all: the others would wait in MPI_Comm_dup and MPICAST_Dbcast_enable. */
  if (!notify_all_ok(comm, s && !missing)) {
    if (!s)
      snprintf(err, errlen, "out of memory");
    else if (missing)
      snprintf(err, errlen,
               "--notify=dbcast: %s not found: libmpicast is not loaded (link the program with "
               "-lmpicast ahead of the MPI library, or run it with libmpicast in LD_PRELOAD)",
               missing);
    else
      snprintf(err, errlen, "--notify=dbcast: another rank could not start it");
    free(s);
    return NULL;
  }
  /* notify_p2p_create fails only locally (out of memory, MPI_Comm_dup): one verdict again. */
  s->rx = notify_p2p_create(comm, err, errlen);
  if (!notify_all_ok(comm, s->rx != NULL)) {
    if (s->rx)
      snprintf(err, errlen, "--notify=dbcast: another rank could not start it");
    notify_destroy(s->rx);
    free(s);
    return NULL;
  }
  s->base.comm = s->rx->comm;
  int rc = s->api.enable(s->base.comm);
  if (!notify_all_ok(comm, rc == MPICAST_OK)) {
    if (rc != MPICAST_OK)
      snprintf(err, errlen, "--notify=dbcast: MPICAST_Dbcast_enable: %s (%d)",
               s->api.status_string(rc), rc);
    else
      snprintf(err, errlen, "--notify=dbcast: MPICAST_Dbcast_enable failed on another rank");
    notify_destroy(s->rx);
    free(s);
    return NULL;
  }
  s->base.ops = &dbcast_ops;
  s->base.name = "dbcast";
  return &s->base;
}

#endif /* EXAMPLES_HAVE_IMCAST */
