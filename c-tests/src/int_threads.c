/* MPI_THREAD_MULTIPLE: several threads per rank, each with its own duplicate
 * of MPI_COMM_WORLD, broadcasting and synchronising concurrently. Exits with
 * TC_SKIP when the MPI does not provide MPI_THREAD_MULTIPLE.
 *   --threads T (default 4)   --iters N (default 100) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define MAXT 16
#define MAXSZ (200 * 1024)

typedef struct {
  int id;
  long long iters;
  MPI_Comm comm;
} job_t;

static void *worker(void *arg) {
  job_t *job = arg;
  int rank, nranks;
  MPI_Comm_rank(job->comm, &rank);
  MPI_Comm_size(job->comm, &nranks);
  uint8_t *buf = malloc(MAXSZ);
  if (!buf) tc_fail("out of memory");
  static const size_t sizes[] = {0, 7, 1472, 1473, 30000, 65537, MAXSZ};
  const size_t nsz = sizeof sizes / sizeof sizes[0];
  for (long long i = 0; i < job->iters; i++) {
    int root = (int)((i + job->id) % nranks);
    size_t n = sizes[(size_t)(i + job->id) % nsz];
    /* The thread id is part of the pattern: data from another thread's
     * communicator fails the check. */
    uint64_t iter = (uint64_t)job->id * 1000000u + (uint64_t)i;
    uint64_t seed = tc_pattern_seed(root, iter, n);
    if (rank == root)
      tc_fill(buf, n, seed);
    else
      tc_poison(buf, n, seed);
    if (MPI_Bcast(buf, (int)n, MPI_BYTE, root, job->comm) != MPI_SUCCESS)
      tc_fail("thread %d: MPI_Bcast %lld failed", job->id, i);
    char what[32];
    snprintf(what, sizeof what, "thread %d", job->id);
    tc_check(buf, n, seed, what, root, iter);
    if (i % 10 == 9 && MPI_Barrier(job->comm) != MPI_SUCCESS)
      tc_fail("thread %d: MPI_Barrier failed", job->id);
  }
  free(buf);
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (tc_world_rank() == 0)
      printf("SKIP: MPI_THREAD_MULTIPLE not provided (got level %d)\n", provided);
    MPI_Finalize();
    return TC_SKIP;
  }
  int nthreads = (int)tc_arg_ll(argc, argv, "--threads", 4);
  long long iters = tc_arg_ll(argc, argv, "--iters", 100);
  if (nthreads < 1 || nthreads > MAXT) tc_fail("--threads must be 1..%d", MAXT);

  job_t jobs[MAXT];
  pthread_t tids[MAXT];
  /* Duplicated in the main thread: MPI_Comm_dup is collective and the
   * creation order must match on every rank. */
  for (int t = 0; t < nthreads; t++) {
    jobs[t].id = t;
    jobs[t].iters = iters;
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
  }
  double t0 = tc_now();
  for (int t = 0; t < nthreads; t++)
    if (pthread_create(&tids[t], NULL, worker, &jobs[t]) != 0) tc_fail("pthread_create failed");
  for (int t = 0; t < nthreads; t++) pthread_join(tids[t], NULL);
  for (int t = 0; t < nthreads; t++) MPI_Comm_free(&jobs[t].comm);
  if (tc_world_rank() == 0)
    printf("int_threads: %d threads x %lld bcasts on %d ranks ok in %.3f s\n", nthreads, iters,
           tc_world_size(), tc_now() - t0);
  tc_expect_check(1, 1);
  MPI_Finalize();
  return 0;
}
