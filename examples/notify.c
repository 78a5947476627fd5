/* notify: mode names, the choice of backend, and the backends' array helpers. The backends
 * live one per file. */
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"p2p", "imcast", "dbcast"};

int notify_mode_parse(const char *s, notify_mode_t *mode) {
  for (int m = 0; m < (int)(sizeof names / sizeof names[0]); m++) {
    if (strcmp(s, names[m]) == 0) {
      *mode = (notify_mode_t)m;
      return 0;
    }
  }
  return -1;
}

const char *notify_mode_name(notify_mode_t mode) {
  return (unsigned)mode < sizeof names / sizeof names[0] ? names[mode] : "?";
}

notify_t *notify_create(notify_mode_t mode, MPI_Comm comm, char *err, size_t errlen) {
  switch (mode) {
  case NOTIFY_P2P:
    return notify_p2p_create(comm, err, errlen);
  case NOTIFY_IMCAST:
    return notify_imcast_create(comm, err, errlen);
  case NOTIFY_DBCAST:
    return notify_dbcast_create(comm, err, errlen);
  }
  if (errlen) err[0] = '\0';
  return NULL;
}

void *notify_grow(void *p, int cap, int need, size_t elem, int *newcap) {
  *newcap = cap;
  if (need <= cap) return p;
  int c = cap ? cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(p, (size_t)c * elem);
  if (q) *newcap = c;
  return q;
}

int notify_scratch(int **idx, MPI_Status **st, int *cap, int need) {
  if (need <= *cap) return 0;
  int c = need < 64 ? 64 : need;
  int *i = realloc(*idx, (size_t)c * sizeof *i);
  if (!i) return -1;
  *idx = i;
  MPI_Status *t = realloc(*st, (size_t)c * sizeof *t);
  if (!t) return -1;
  *st = t;
  *cap = c;
  return 0;
}

int notify_recvs_done(const char *who, int outc, const int *idx, const MPI_Status *st,
                      const int *rslot, const int *rbytes, int *slots, int max, int *nslots) {
  *nslots = 0;
  for (int c = 0; c < outc; c++) {
    int r = idx[c], got = 0;
    MPI_Get_count(&st[c], MPI_BYTE, &got);
    if (got != rbytes[r]) {
      fprintf(stderr, "notify %s: item tag %d from rank %d: %d bytes, expected %d\n", who,
              st[c].MPI_TAG, st[c].MPI_SOURCE, got, rbytes[r]);
      return -1;
    }
  }
  /* The runtime gives room for every receive it posted (the completed requests are gone from
   * the backend's arrays now: there is no reporting them later). */
  if (outc > max) {
    fprintf(stderr, "notify %s: %d receives completed, room for %d\n", who, outc, max);
    return -1;
  }
  for (int c = 0; c < outc; c++) slots[c] = rslot[idx[c]];
  *nslots = outc;
  return 0;
}

int notify_all_ok(MPI_Comm comm, int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all;
}
