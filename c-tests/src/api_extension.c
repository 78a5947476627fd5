/* The MPICAST_* extension calls in one process. Built linked (direct calls,
 * MPICAST_LINKED defined) and plain (resolved with dlsym from the preloaded
 * library). TC_EXPECTED_VERSION comes from Cargo.toml via CMake. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpicast.h>

#include "common.h"

static int (*get_stats)(MPICAST_Stats *);
static const char *(*version)(void);
static const char *(*status_string)(int);

#ifndef MPICAST_LINKED
static void *must_sym(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  if (!p) {
    fprintf(stderr, "FAIL: %s not found (is libmpicast preloaded?)\n", name);
    exit(1);
  }
  return p;
}
#endif

static void resolve(void) {
#ifdef MPICAST_LINKED
  get_stats = MPICAST_Get_stats;
  version = MPICAST_Version;
  status_string = MPICAST_Status_string;
#else
  void *p = must_sym("MPICAST_Get_stats");
  memcpy(&get_stats, &p, sizeof p);
  p = must_sym("MPICAST_Version");
  memcpy(&version, &p, sizeof p);
  p = must_sym("MPICAST_Status_string");
  memcpy(&status_string, &p, sizeof p);
#endif
}

#define REQUIRE(cond, ...)                  \
  do {                                      \
    if (!(cond)) {                          \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fprintf(stderr, "\n");                \
      exit(1);                              \
    }                                       \
  } while (0)

int main(int argc, char **argv) {
  resolve();
  /* A version string is static data: it must not need MPI_Init. */
  const char *v = version();
  REQUIRE(v != NULL && *v, "MPICAST_Version() before MPI_Init returned NULL or empty");
  REQUIRE(strstr(v, TC_EXPECTED_VERSION) != NULL, "MPICAST_Version() = \"%s\", want %s", v,
          TC_EXPECTED_VERSION);

  MPI_Init(&argc, &argv);
  const char *ok = status_string(0);
  REQUIRE(ok != NULL && *ok, "MPICAST_Status_string(0) is NULL or empty");

  /* A NULL output pointer is refused with a status that has its own name. */
  int rc = get_stats(NULL);
  REQUIRE(rc != 0, "MPICAST_Get_stats(NULL) returned 0");
  const char *bad = status_string(rc);
  REQUIRE(bad != NULL && *bad, "MPICAST_Status_string(%d) is NULL or empty", rc);
  REQUIRE(strcmp(bad, ok) != 0, "status %d has the same name as success: \"%s\"", rc, ok);

  MPICAST_Stats s;
  memset(&s, 0x5A, sizeof s);
  rc = get_stats(&s);
  REQUIRE(rc == 0, "MPICAST_Get_stats returned %d (%s)", rc, status_string(rc));
  REQUIRE(s.bcast_mcast == 0 && s.bytes_mcast == 0 && s.dgrams_sent == 0 && s.fallbacks == 0,
          "counters not zero before any broadcast (bcast_mcast=%llu)",
          (unsigned long long)s.bcast_mcast);

  unsigned char byte = 42;
  MPI_Bcast(&byte, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  MPICAST_Stats after;
  REQUIRE(get_stats(&after) == 0, "MPICAST_Get_stats failed after a broadcast");
  REQUIRE(after.bcast_mcast + after.bcast_pmpi >= 1,
          "a broadcast on a one-rank communicator was counted on neither path");
  REQUIRE(byte == 42, "one-rank broadcast changed the root's buffer");

  printf("api_extension: version \"%s\", status 0 \"%s\", status %d \"%s\" ok\n", v, ok,
         get_stats(NULL), bad);
  MPI_Finalize();
  return 0;
}
