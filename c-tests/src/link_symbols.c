/* Which library answers the MPI calls: MPI_Bcast and MPI_Barrier, the
 * point-to-point calls that dynamic broadcast intercepts, and the blocking calls
 * that mpicast polls while a forwarding engine exists (collectives,
 * MPI_Sendrecv, communicator creation), and MPI_Comm_free and MPI_Type_free (which
 * release the sends fan-out detection holds), must resolve to libmpicast (first in the
 * symbol search order, preloaded or linked before -lmpi); everything else, and
 * every PMPI name, to the host MPI. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static const char *owner(const char *sym) {
  void *p = dlsym(RTLD_DEFAULT, sym);
  Dl_info info;
  if (!p || !dladdr(p, &info) || !info.dli_fname) return "(unresolved)";
  return info.dli_fname;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int fails = 0;
  const char *ours[] = {"MPI_Bcast",     "MPI_Barrier",    "MPICAST_Version", "MPI_Send",
                        "MPI_Recv",      "MPI_Wait",       "MPI_Mprobe",      "MPI_Allreduce",
                        "MPI_Sendrecv",  "MPI_Comm_split", "MPI_Alltoallw",   "MPI_Comm_free",
                        "MPI_Type_free"};
  const char *host[] = {"MPI_Ibarrier", "MPI_Iallreduce", "MPI_Comm_rank", "PMPI_Bcast",
                        "PMPI_Barrier", "PMPI_Send",      "PMPI_Recv",     "PMPI_Allreduce"};
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
    const char *lib = owner(ours[i]);
    int ok = strstr(lib, "libmpicast") != NULL;
    fails += !ok;
    printf("%s %-16s -> %s\n", ok ? "ok  " : "FAIL", ours[i], lib);
  }
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
    const char *lib = owner(host[i]);
    int ok = strstr(lib, "libmpicast") == NULL && strcmp(lib, "(unresolved)") != 0;
    fails += !ok;
    printf("%s %-16s -> %s\n", ok ? "ok  " : "FAIL", host[i], lib);
  }
  /* The address the program itself calls must be the one dlsym finds. */
  void *direct = (void *)&MPI_Bcast;
  void *found = dlsym(RTLD_DEFAULT, "MPI_Bcast");
  if (direct != found) {
    printf("FAIL &MPI_Bcast %p differs from dlsym %p\n", direct, found);
    fails++;
  }
  fflush(stdout);
  int all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all != 0;
}
