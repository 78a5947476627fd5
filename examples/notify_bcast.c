/* --notify=bcast: the dynamic broadcast of the next issue (after "Using Dynamic Broadcasts to
 * improve Task-Based Runtime Performances", Denis et al., Euro-Par 2020): the owner of an item
 * makes one call naming every destination; the library spreads it along a tree over that list,
 * carrying each subtree's list with the data, and the receivers do not know it is a broadcast.
 *
 * PLANNED, NOT IMPLEMENTED: the library has no dynamic broadcast yet, so this backend only
 * refuses and --notify=bcast stops with a clear message.
 *
 * ---- TO FILL IN when the library has it ---------------------------------------------------
 *   send       the library's dynamic-broadcast call: (buf, bytes, MPI_BYTE, dests, ndests, tag,
 *              comm) -> one request.
 *   post_recv, poll, recvs_pending
 *              unchanged from notify_p2p.c: the receiver posts a plain MPI_Irecv from the owner
 *              with the item's tag, and libmpicast's interception of the point-to-point
 *              receives (MPI_Irecv, the wait and test family) delivers the broadcast into it.
 *              So this backend will reuse p2p's receive side and replace only its send.
 *   flush      wait for the broadcast requests; as for imcast, forwards owed to others must be
 *              done before the next run reuses the tags.
 * ---------------------------------------------------------------------------------------- */
#include "notify.h"

#include <stdio.h>

notify_t *notify_bcast_create(MPI_Comm comm, char *err, size_t errlen) {
  (void)comm;
  snprintf(err, errlen,
           "--notify=bcast: not available in this build yet (the dynamic broadcast is planned "
           "for the next issue; use --notify=p2p)");
  return NULL;
}
