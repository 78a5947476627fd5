/* C helpers for the Fortran test programs, bound with bind(C) in tc_fortran.f90:
 * this rank's MPICAST_Get_stats (found with dlsym, so preloaded and linked alike), the
 * TC_EXPECT mode, and failure reporting through tc_fail. Nothing here calls MPI_Bcast or
 * MPI_Barrier. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"

typedef int (*get_stats_fn)(MPICAST_Stats *);

/* 1 and out[0..10) = this rank's counters in MPICAST_Stats order; 0 when no mpicast. */
int tc_f_stats(int64_t out[10]) {
  get_stats_fn get = NULL;
  void *sym = dlsym(RTLD_DEFAULT, "MPICAST_Get_stats");
  memcpy(&get, &sym, sizeof get);
  memset(out, 0, 10 * sizeof out[0]);
  if (!get) return 0;
  MPICAST_Stats s;
  memset(&s, 0, sizeof s);
  int rc = get(&s);
  if (rc != 0) tc_fail("MPICAST_Get_stats returned %d", rc);
  uint64_t v[10] = {s.bcast_mcast, s.bcast_pmpi,  s.barrier_mcast, s.barrier_pmpi,
                    s.bytes_mcast, s.dgrams_sent, s.dgrams_recv,   s.repairs,
                    s.rejected,    s.fallbacks};
  for (int i = 0; i < 10; i++) out[i] = (int64_t)v[i];
  return 1;
}

/* TC_EXPECT: 0 unset (report only), 1 mcast, 2 pmpi; anything else fails. */
int tc_f_expect(void) {
  const char *e = getenv("TC_EXPECT");
  if (!e || !*e) return 0;
  if (strcmp(e, "mcast") == 0) return 1;
  if (strcmp(e, "pmpi") == 0) return 2;
  tc_fail("unknown TC_EXPECT=%s (want mcast or pmpi)", e);
}

void tc_f_fail(const char *msg) { tc_fail("%s", msg); }
