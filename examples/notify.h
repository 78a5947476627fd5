/* notify: how a finished task's output tile reaches the ranks that run its successor tasks, and
 * how those ranks receive it. The runtime (rt.c) talks to the network only through this
 * interface; each --notify mode is one backend behind it:
 *
 *   p2p     one MPI_Isend per destination rank, MPI_Irecv per expected item (notify_p2p.c)
 *   imcast  libmpicast's non-blocking multicast, MPICAST_Imcast (notify_imcast.c)
 *   dbcast  p2p's receives; the sends registered before the item is computed
 *           (MPICAST_Send_defer) and made when it is ready (MPICAST_Send_release): the
 *           library turns an item's sends to several ranks into one dynamic broadcast
 *           (notify_dbcast.c)
 *
 * An item is named by a tag, 0 <= tag < NOTIFY_TAG_LIMIT, unique within one run of the graph:
 * its owner sends it once to each rank that needs it, and each such rank posts one receive
 * for it from that owner (the root). A backend works on a private duplicate of the
 * communicator, so these tags never meet the application's own messages. */
#ifndef EXAMPLES_NOTIFY_H
#define EXAMPLES_NOTIFY_H

#include <mpi.h>
#include <stddef.h>

/* 32767 is the smallest MPI_TAG_UB the standard allows. */
#define NOTIFY_TAG_LIMIT 32767

typedef enum { NOTIFY_P2P, NOTIFY_IMCAST, NOTIFY_DBCAST } notify_mode_t;

typedef struct notify notify_t;

typedef struct notify_ops {
  /* Optional (NULL: the backend learns the destinations at send). Before any task of a run,
   * the runtime announces each item it will send in that run: tag, and the ranks dests[] that
   * the send of the item will name (the same list, as for send). */
  int (*defer)(notify_t *nt, int tag, const int *dests, int ndests);
  /* Start sending bytes at buf to the ndests ranks dests[] (the caller's rank not among them,
   * no duplicates). Non-blocking: buf is read until notify_flush returns, so the caller must
   * not change it before then (reading it is fine). */
  int (*send)(notify_t *nt, const void *buf, int bytes, int tag, const int *dests, int ndests);
  /* Post the receive of item tag from root into buf (exactly bytes long). slot is the caller's
   * name for it, handed back by poll when the data is there. */
  int (*post_recv)(notify_t *nt, void *buf, int bytes, int root, int tag, int slot);
  /* Receives completed since the last call: up to max slots into slots[], their number into
   * *nslots. block != 0: wait until at least one completes (the caller guarantees one is
   * pending). Also lets sends make progress. */
  int (*poll)(notify_t *nt, int block, int *slots, int max, int *nslots);
  /* Number of posted receives not yet reported by poll. */
  int (*recvs_pending)(const notify_t *nt);
  /* Complete every send started (buffers free to change afterwards). */
  int (*flush)(notify_t *nt);
  void (*destroy)(notify_t *nt);
} notify_ops_t;

struct notify {
  const notify_ops_t *ops;
  const char *name;
  MPI_Comm comm; /* the backend's private duplicate */
};

/* "p2p", "imcast" or "dbcast". 0 on success, -1 for an unknown name. */
int notify_mode_parse(const char *s, notify_mode_t *mode);
const char *notify_mode_name(notify_mode_t mode);

/* Collective over comm (every rank with the same mode). On failure NULL, with the reason in
 * err (the same on every rank: availability is decided when the program is built). */
notify_t *notify_create(notify_mode_t mode, MPI_Comm comm, char *err, size_t errlen);

/* The backends' constructors (one per file). */
notify_t *notify_p2p_create(MPI_Comm comm, char *err, size_t errlen);
notify_t *notify_imcast_create(MPI_Comm comm, char *err, size_t errlen);
notify_t *notify_dbcast_create(MPI_Comm comm, char *err, size_t errlen);

/* Helpers of the backends. p (capacity cap elements of elem bytes) grown to hold need, the
 * new capacity in *newcap; NULL when out of memory (p is then still valid). */
void *notify_grow(void *p, int cap, int need, size_t elem, int *newcap);
/* Index and status arrays (*idx, *st, capacity *cap) for at least need requests; -1 when out
 * of memory. */
int notify_scratch(int **idx, MPI_Status **st, int *cap, int need);
/* The receives that one Testsome completed, as a backend's poll hands them over: outc of them,
 * at indices idx[] of the backend's arrays of slots (rslot[]) and expected sizes (rbytes[]),
 * with their statuses st[]. Checks each one's length against its size and that they fit in
 * the caller's max, then puts their slots in slots[] and their number in *nslots. 0, or -1
 * with the reason on stderr, prefixed "notify <who>: ". */
int notify_recvs_done(const char *who, int outc, const int *idx, const MPI_Status *st,
                      const int *rslot, const int *rbytes, int *slots, int max, int *nslots);
/* Every rank of comm learns whether every rank had ok != 0 (collective). */
int notify_all_ok(MPI_Comm comm, int ok);

static inline int notify_defer(notify_t *nt, int tag, const int *dests, int ndests) {
  return nt->ops->defer ? nt->ops->defer(nt, tag, dests, ndests) : 0;
}
static inline int notify_send(notify_t *nt, const void *buf, int bytes, int tag,
                              const int *dests, int ndests) {
  return nt->ops->send(nt, buf, bytes, tag, dests, ndests);
}
static inline int notify_post_recv(notify_t *nt, void *buf, int bytes, int root, int tag,
                                   int slot) {
  return nt->ops->post_recv(nt, buf, bytes, root, tag, slot);
}
static inline int notify_poll(notify_t *nt, int block, int *slots, int max, int *nslots) {
  return nt->ops->poll(nt, block, slots, max, nslots);
}
static inline int notify_recvs_pending(const notify_t *nt) { return nt->ops->recvs_pending(nt); }
static inline int notify_flush(notify_t *nt) { return nt->ops->flush(nt); }
static inline void notify_destroy(notify_t *nt) {
  if (nt) nt->ops->destroy(nt);
}

#endif
