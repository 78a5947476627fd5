// The public header compiled as C++ (-Wall -Wextra -Werror): extern "C"
// linkage, no C-only constructs, and the calls link against libmpicast.
#include <mpi.h>
#include <mpicast.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_trivially_copyable<MPICAST_Stats>::value, "MPICAST_Stats must be plain data");
static_assert(sizeof(MPICAST_Stats) >= 10 * sizeof(uint64_t), "MPICAST_Stats lost counters");

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPICAST_Stats stats;
  std::memset(&stats, 0, sizeof stats);
  int rc = MPICAST_Get_stats(&stats);
  const char *version = MPICAST_Version();
  const char *status = MPICAST_Status_string(rc);
  int failed = rc != 0 || version == nullptr || status == nullptr;
  std::printf("api_header_cxx: rc=%d (%s) version=%s\n", rc, status ? status : "(null)",
              version ? version : "(null)");
  MPI_Finalize();
  return failed;
}
