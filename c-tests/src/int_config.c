/* MPICAST_CONFIG under the launcher: a file of settings loaded at start, under the
 * environment. The tests give a file that sets MPICAST_MIN_BYTES (and a few settings
 * in the shapes `mpicast tune` prints: export, quotes, comments), and either an empty
 * MPICAST_MIN_BYTES in the environment (unset: the file's value applies) or one of its own
 * (which wins). --min N is the threshold that must be in force: N - 1 bytes go to the host
 * MPI and N bytes by multicast, from every root, on MPI_COMM_WORLD and on a duplicate, the
 * data checked each time. Without the library (host mode) only the data is checked.
 * Needs at least 2 ranks. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"

static int (*get_stats)(MPICAST_Stats *);

static MPICAST_Stats stats(void) {
  MPICAST_Stats s;
  memset(&s, 0, sizeof s);
  if (get_stats && get_stats(&s) != 0)
    tc_fail("MPICAST_Get_stats failed");
  return s;
}

/* One checked broadcast of n bytes from root on comm; fails unless it took the
 * expected path on this rank. */
static void bcast_on(MPI_Comm comm, size_t n, int root, uint64_t iter, int want_mcast) {
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf)
    tc_fail("out of memory for %zu bytes", n);
  uint64_t seed = tc_bcast_prepare(comm, buf, n, root, iter);
  MPICAST_Stats a = stats();
  MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
  MPICAST_Stats b = stats();
  tc_check(buf, n, seed, "MPICAST_CONFIG threshold", root, iter);
  free(buf);
  if (!get_stats)
    return;
  uint64_t dm = b.bcast_mcast - a.bcast_mcast, dp = b.bcast_pmpi - a.bcast_pmpi;
  if (want_mcast && !(dm == 1 && dp == 0))
    tc_fail("%zu bytes from root %d: expected multicast, got mcast+%llu pmpi+%llu", n, root,
            (unsigned long long)dm, (unsigned long long)dp);
  if (!want_mcast && !(dm == 0 && dp == 1))
    tc_fail("%zu bytes from root %d: expected the host MPI, got mcast+%llu pmpi+%llu", n, root,
            (unsigned long long)dm, (unsigned long long)dp);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  void *p = dlsym(RTLD_DEFAULT, "MPICAST_Get_stats");
  memcpy(&get_stats, &p, sizeof p);
  int rank = tc_world_rank(), size = tc_world_size();
  if (size < 2)
    tc_fail("needs at least 2 ranks");
  long long min = tc_arg_ll(argc, argv, "--min", -1);
  if (min < 1)
    tc_fail("--min N (N >= 1) is required");
  if (!getenv("MPICAST_CONFIG"))
    tc_fail("MPICAST_CONFIG is not set: this test is about its file");

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm comms[2] = {MPI_COMM_WORLD, dup};
  uint64_t iter = 0;
  for (int c = 0; c < 2; c++)
    for (int root = 0; root < size; root++) {
      bcast_on(comms[c], (size_t)min - 1, root, iter++, 0);
      bcast_on(comms[c], (size_t)min, root, iter++, 1);
      bcast_on(comms[c], (size_t)min * 3 + 1, root, iter++, 1);
    }
  MPI_Comm_free(&dup);
  tc_expect_check(1, 0);
  if (rank == 0)
    printf("int_config: threshold %lld in force, ok\n", min);
  MPI_Finalize();
  return 0;
}
