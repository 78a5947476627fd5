/* Per-communicator MPI_Info hints, intercommunicators, and the largest size.
 *
 * - "mpicast"="off" on a duplicate: its broadcasts go to the host MPI (this
 *   rank's bcast_pmpi grows, bcast_mcast does not), data still correct.
 * - "mpicast_min_bytes"="1MiB": 1000 B goes to the host MPI, 2 MiB multicasts.
 * - "mpicast_min_bytes"="auto": the threshold for the communicator's size.
 * - "mpicast_sync"="linear": correct data by multicast.
 * - MPI_Comm_dup of a communicator with "mpicast"="off" keeps the hint (MPI
 *   copies hints on dup); MPI_Comm_dup_with_info sets it on the new one.
 * - MPI_Comm_set_info on a communicator already used by multicast: "off"
 *   moves it to the host MPI, "on" brings it back.
 * - An invalid hint value: that communicator uses the host MPI (with a
 *   warning), the program goes on.
 * - An intercommunicator broadcast (MPI_ROOT / MPI_PROC_NULL): handed to the
 *   host MPI, correct data.
 * - --large: one broadcast of 256 MiB + 1 from rank 1 by multicast.
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

static MPI_Comm dup_with(const char *key, const char *value) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, key, value);
  MPI_Comm_set_info(c, info);
  MPI_Info_free(&info);
  return c;
}

/* One broadcast of n bytes from root on comm, checked; returns the change of
 * this rank's (bcast_mcast, bcast_pmpi). */
static void bcast_checked(MPI_Comm comm, size_t n, int root, uint64_t iter, const char *what,
                          uint64_t *d_mcast, uint64_t *d_pmpi) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf)
    tc_fail("out of memory for %zu bytes", n);
  uint64_t seed = tc_pattern_seed(root, iter, n);
  if (rank == root)
    tc_fill(buf, n, seed);
  else
    tc_poison(buf, n, seed);
  MPICAST_Stats a = stats();
  if (n > (size_t)2147483647)
    tc_fail("size too large for one count");
  MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
  MPICAST_Stats b = stats();
  tc_check(buf, n, seed, what, root, iter);
  free(buf);
  *d_mcast = b.bcast_mcast - a.bcast_mcast;
  *d_pmpi = b.bcast_pmpi - a.bcast_pmpi;
}

static void expect_path(const char *what, uint64_t d_mcast, uint64_t d_pmpi, int want_mcast) {
  if (!get_stats)
    return; /* host MPI only: nothing to check */
  if (want_mcast && !(d_mcast == 1 && d_pmpi == 0))
    tc_fail("%s: expected the multicast path, got mcast+%llu pmpi+%llu", what,
            (unsigned long long)d_mcast, (unsigned long long)d_pmpi);
  if (!want_mcast && !(d_mcast == 0 && d_pmpi == 1))
    tc_fail("%s: expected the host MPI, got mcast+%llu pmpi+%llu", what,
            (unsigned long long)d_mcast, (unsigned long long)d_pmpi);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  void *p = dlsym(RTLD_DEFAULT, "MPICAST_Get_stats");
  memcpy(&get_stats, &p, sizeof p);
  int rank = tc_world_rank(), size = tc_world_size();
  if (size < 2)
    tc_fail("needs at least 2 ranks");
  uint64_t dm, dp;

  MPI_Comm off = dup_with("mpicast", "off");
  bcast_checked(off, 65536, 1, 1, "hint mpicast=off", &dm, &dp);
  expect_path("hint mpicast=off", dm, dp, 0);

  MPI_Comm big = dup_with("mpicast_min_bytes", "1MiB");
  bcast_checked(big, 1000, 0, 2, "hint min_bytes, small", &dm, &dp);
  expect_path("hint mpicast_min_bytes=1MiB, 1000 B", dm, dp, 0);
  bcast_checked(big, 2 << 20, size - 1, 3, "hint min_bytes, large", &dm, &dp);
  expect_path("hint mpicast_min_bytes=1MiB, 2 MiB", dm, dp, 1);

  /* "auto" on a flat communicator: the threshold follows the member count
   * (never with 2, 32 KiB from 3). */
  MPI_Comm aut = dup_with("mpicast_min_bytes", "auto");
  size_t auto_min = size <= 2 ? 0 : 32768;
  bcast_checked(aut, 2000, 0, 5, "hint min_bytes=auto, 2000 B", &dm, &dp);
  expect_path("hint mpicast_min_bytes=auto, 2000 B", dm, dp, 0);
  if (auto_min) {
    bcast_checked(aut, auto_min - 1, 0, 6, "hint min_bytes=auto, below", &dm, &dp);
    expect_path("hint mpicast_min_bytes=auto, just below the threshold", dm, dp, 0);
    bcast_checked(aut, auto_min, size - 1, 7, "hint min_bytes=auto, at", &dm, &dp);
    expect_path("hint mpicast_min_bytes=auto, at the threshold", dm, dp, 1);
  } else {
    bcast_checked(aut, 1 << 20, 0, 6, "hint min_bytes=auto, 2 ranks", &dm, &dp);
    expect_path("hint mpicast_min_bytes=auto, 2 ranks, 1 MiB", dm, dp, 0);
  }
  MPI_Comm_free(&aut);

  MPI_Comm lin = dup_with("mpicast_sync", "linear");
  for (int root = 0; root < size; root++) {
    bcast_checked(lin, 100000, root, 4, "hint mpicast_sync=linear", &dm, &dp);
    expect_path("hint mpicast_sync=linear", dm, dp, 1);
  }

  MPI_Comm off2;
  MPI_Comm_dup(off, &off2);
  bcast_checked(off2, 65536, 0, 8, "dup of mpicast=off", &dm, &dp);
  expect_path("MPI_Comm_dup of a communicator with mpicast=off", dm, dp, 0);

  MPI_Comm offi;
  {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpicast", "off");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &offi);
    MPI_Info_free(&info);
  }
  bcast_checked(offi, 65536, size - 1, 9, "dup_with_info mpicast=off", &dm, &dp);
  expect_path("MPI_Comm_dup_with_info mpicast=off", dm, dp, 0);

  /* Hints changed on a communicator already set up for multicast. */
  {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpicast", "off");
    MPI_Comm_set_info(lin, info);
    bcast_checked(lin, 100000, 1, 10, "lin set off", &dm, &dp);
    expect_path("MPI_Comm_set_info mpicast=off on a used communicator", dm, dp, 0);
    MPI_Info_set(info, "mpicast", "on");
    MPI_Comm_set_info(lin, info);
    MPI_Info_free(&info);
    for (int root = 0; root < size; root++) {
      bcast_checked(lin, 100000, root, 11, "lin set on again", &dm, &dp);
      expect_path("MPI_Comm_set_info mpicast=on again", dm, dp, 1);
    }
  }

  MPI_Comm bad = dup_with("mpicast_sync", "sideways");
  bcast_checked(bad, 5000, 0, 5, "invalid hint", &dm, &dp);
  expect_path("invalid hint (host MPI for that communicator)", dm, dp, 0);

  /* Intercommunicator: lower half and upper half. */
  int color = rank < size / 2 ? 0 : 1;
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
  int remote_leader = color == 0 ? size / 2 : 0;
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 77, &inter);
  {
    size_t n = 30000;
    uint8_t *buf = malloc(n);
    uint64_t seed = tc_pattern_seed(0, 6, n);
    int half_rank;
    MPI_Comm_rank(half, &half_rank);
    int root_arg;
    if (color == 0)
      root_arg = half_rank == 0 ? MPI_ROOT : MPI_PROC_NULL;
    else
      root_arg = 0; /* rank 0 of the remote group */
    if (root_arg == MPI_ROOT)
      tc_fill(buf, n, seed);
    else
      tc_poison(buf, n, seed);
    MPICAST_Stats a = stats();
    MPI_Bcast(buf, (int)n, MPI_BYTE, root_arg, inter);
    MPICAST_Stats b = stats();
    if (color == 1)
      tc_check(buf, n, seed, "intercommunicator", 0, 6);
    expect_path("intercommunicator", b.bcast_mcast - a.bcast_mcast, b.bcast_pmpi - a.bcast_pmpi,
                0);
    free(buf);
  }

  if (tc_flag(argc, argv, "--large")) {
    size_t n = ((size_t)256 << 20) + 1;
    double t0 = tc_now();
    bcast_checked(MPI_COMM_WORLD, n, 1, 7, "256 MiB + 1", &dm, &dp);
    expect_path("256 MiB + 1", dm, dp, 1);
    if (rank == 0)
      printf("int_hints: 256 MiB + 1 in %.2f s\n", tc_now() - t0);
  }

  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Comm_free(&bad);
  MPI_Comm_free(&offi);
  MPI_Comm_free(&off2);
  MPI_Comm_free(&lin);
  MPI_Comm_free(&big);
  MPI_Comm_free(&off);
  tc_expect_check(1, 0);
  if (rank == 0)
    printf("int_hints: ok\n");
  MPI_Finalize();
  return 0;
}
