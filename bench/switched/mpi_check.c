/* A plain MPI program for bench/switched.sh's selftest: every rank says which data address it
 * has (the address of its interface data0), then rank 0 broadcasts SIZE bytes REPS times with
 * MPI_Bcast (the MPI's own algorithm, over its TCP transport across the switches) and an
 * MPI_Allreduce checks that every rank got them. Prints the mean time of one broadcast.
 *
 *   mpi_check [SIZE [REPS]]      (default 1048576 bytes, 3 reps) */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void data_addr(char *out, size_t n) {
  struct ifaddrs *ifs, *i;
  snprintf(out, n, "none");
  if (getifaddrs(&ifs) != 0) return;
  for (i = ifs; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, "data0") == 0)
      inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out, n);
  freeifaddrs(ifs);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = argc > 1 ? atol(argv[1]) : 1048576;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  char addr[64], *all = malloc(64 * (size_t)size);
  data_addr(addr, sizeof addr);
  MPI_Gather(addr, 64, MPI_CHAR, all, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; r++) printf("rank %d data0 %s\n", r, all + 64 * r);
  unsigned char *buf = malloc(bytes);
  double total = 0;
  long bad = 0;
  for (int rep = 0; rep < reps; rep++) {
    for (long i = 0; i < bytes; i++) buf[i] = rank == 0 ? (unsigned char)(i * 7 + rep) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    total += MPI_Wtime() - t;
    for (long i = 0; i < bytes; i++) bad += buf[i] != (unsigned char)(i * 7 + rep);
  }
  long badall = 0;
  MPI_Allreduce(&bad, &badall, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("ranks %d bytes %ld reps %d mean bcast+barrier %.3f ms wrong bytes %ld\n", size, bytes,
           reps, 1e3 * total / reps, badall);
    printf("# end\n");
    fflush(stdout);
  }
  free(buf);
  free(all);
  MPI_Finalize();
  return badall != 0;
}
