/* Communicators: MPI_COMM_WORLD, a duplicate, a split with reversed rank order
 * and MPI_COMM_SELF used interleaved, so per-communicator state (groups,
 * sequence numbers) cannot leak from one to another; then many create/free
 * cycles, each with a broadcast and a barrier, to catch leaks of sockets,
 * groups or attributes.
 *   --rounds N   interleaved rounds (default 60)
 *   --cycles N   dup/split + free cycles (default 200) */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define MAXSZ (70 * 1024)

static void bcast_checked(MPI_Comm comm, const char *name, int root, uint64_t iter, size_t n,
                          uint8_t *buf) {
  uint64_t seed = tc_bcast_prepare(comm, buf, n, root, iter);
  if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm) != MPI_SUCCESS)
    tc_fail("%s: MPI_Bcast failed", name);
  tc_check(buf, n, seed, name, root, iter);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wrank = tc_world_rank(), wsize = tc_world_size();
  long long rounds = tc_arg_ll(argc, argv, "--rounds", 60);
  long long cycles = tc_arg_ll(argc, argv, "--cycles", 200);
  uint8_t *buf = malloc(MAXSZ);
  if (!buf) tc_fail("out of memory");

  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  /* Reversed keys: split rank 0 is the highest world rank of its colour. */
  MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, &split);
  int ssize;
  MPI_Comm_size(split, &ssize);

  static const size_t sizes[] = {0, 1, 100, 1471, 1473, 9000, 65536, MAXSZ};
  const size_t nsz = sizeof sizes / sizeof sizes[0];
  for (long long r = 0; r < rounds; r++) {
    uint64_t it = (uint64_t)r;
    bcast_checked(MPI_COMM_WORLD, "world", (int)(r % wsize), it, sizes[r % nsz], buf);
    bcast_checked(split, "split", (int)((r + 1) % ssize), it, sizes[(r + 3) % nsz], buf);
    bcast_checked(dup, "dup", (int)((r + 2) % wsize), it, sizes[(r + 5) % nsz], buf);
    bcast_checked(MPI_COMM_SELF, "self", 0, it, sizes[(r + 1) % nsz], buf);
    MPI_Comm bar = r % 3 == 0 ? MPI_COMM_WORLD : r % 3 == 1 ? dup : split;
    if (MPI_Barrier(bar) != MPI_SUCCESS) tc_fail("MPI_Barrier failed in round %lld", r);
  }
  MPI_Comm_free(&dup);
  MPI_Comm_free(&split);

  for (long long c = 0; c < cycles; c++) {
    MPI_Comm comm;
    if (c % 2)
      MPI_Comm_split(MPI_COMM_WORLD, (int)((wrank + c) % 2), wrank, &comm);
    else
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int csize;
    MPI_Comm_size(comm, &csize);
    bcast_checked(comm, c % 2 ? "cycle split" : "cycle dup", (int)(c % csize),
                  (uint64_t)(1000 + c), (size_t)(c * 997) % MAXSZ, buf);
    if (MPI_Barrier(comm) != MPI_SUCCESS) tc_fail("MPI_Barrier failed in cycle %lld", c);
    MPI_Comm_free(&comm);
  }
  if (wrank == 0)
    printf("int_comms: %lld interleaved rounds, %lld create/free cycles on %d ranks ok\n", rounds,
           cycles, wsize);
  free(buf);
  tc_expect_check(1, 1);
  MPI_Finalize();
  return 0;
}
