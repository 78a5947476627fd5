/* notify: mode names and the choice of backend. The backends live one per file. */
#include "notify.h"

#include <string.h>

static const char *const names[] = {"p2p", "imcast", "bcast"};

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
  case NOTIFY_BCAST:
    return notify_bcast_create(comm, err, errlen);
  }
  if (errlen) err[0] = '\0';
  return NULL;
}
