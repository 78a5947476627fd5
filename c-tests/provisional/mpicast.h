/* Provisional stand-in for include/mpicast.h, used by c-tests only while the
 * cbindgen-generated header does not exist yet in the build tree. It declares
 * just what the tests use; CMakeLists.txt prefers the real header whenever
 * <MPICAST_BUILD>/include/mpicast.h is present. */
#ifndef MPICAST_PROVISIONAL_H
#define MPICAST_PROVISIONAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MPICAST_Stats {
  uint64_t bcast_mcast;
  uint64_t bcast_pmpi;
  uint64_t barrier_mcast;
  uint64_t barrier_pmpi;
  uint64_t bytes_mcast;
  uint64_t dgrams_sent;
  uint64_t dgrams_recv;
  uint64_t repairs;
  uint64_t rejected;
  uint64_t fallbacks;
} MPICAST_Stats;

int MPICAST_Get_stats(MPICAST_Stats *stats_out);
const char *MPICAST_Version(void);
const char *MPICAST_Status_string(int status);

#ifdef __cplusplus
}
#endif

#endif
