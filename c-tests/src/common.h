/* Helpers shared by the c-tests programs: the data pattern every broadcast is
 * checked against, failure reporting that aborts the whole job, argument
 * parsing, and the TC_EXPECT check of which path (multicast or PMPI) the
 * library took. Nothing here calls MPI_Bcast or MPI_Barrier, so the checks do
 * not depend on the code under test. */
#ifndef MPICAST_CTESTS_COMMON_H
#define MPICAST_CTESTS_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* ctest SKIP_RETURN_CODE for tests whose precondition the MPI lacks. */
#define TC_SKIP 77

/* Byte i of the payload for (root, iter, size): every byte depends on all
 * four, so stale data from another iteration, root or size never passes. */
uint8_t tc_pattern_byte(uint64_t seed, size_t i);
uint64_t tc_pattern_seed(int root, uint64_t iter, size_t size);
void tc_fill(void *buf, size_t n, uint64_t seed);
/* Fill with bytes that differ from the pattern at every offset. */
void tc_poison(void *buf, size_t n, uint64_t seed);
/* Before a checked broadcast of n bytes from root on comm: the root fills buf
 * with the pattern of (root, iter, n), every other rank poisons it. Returns the
 * pattern's seed, for tc_check after the broadcast. */
uint64_t tc_bcast_prepare(MPI_Comm comm, void *buf, size_t n, int root, uint64_t iter);
/* Compare byte by byte; on a mismatch print where and MPI_Abort. */
void tc_check(const void *buf, size_t n, uint64_t seed, const char *what, int root,
              uint64_t iter);

/* Print "[rank r] FAIL: ..." to stderr and MPI_Abort(MPI_COMM_WORLD). */
void tc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

int tc_world_rank(void);
int tc_world_size(void);

/* CLOCK_MONOTONIC seconds: one clock for every process of the machine (Open
 * MPI's MPI_Wtime counts from each process's own start, so it is not). */
double tc_now(void);
void tc_sleep_ms(int ms);

/* splitmix64: every rank draws the same sequence from the same seed. */
uint64_t tc_rand(uint64_t *state);

/* "--name value" lookup; NULL when absent. tc_flag: "--name" present. */
const char *tc_arg(int argc, char **argv, const char *name);
int tc_flag(int argc, char **argv, const char *name);
long long tc_arg_ll(int argc, char **argv, const char *name, long long dflt);
/* Comma separated sizes; returns how many were parsed (at most max). */
size_t tc_parse_sizes(const char *list, size_t *out, size_t max);

/* Collective over MPI_COMM_WORLD. Sums every rank's MPICAST_Get_stats
 * (found with dlsym, so it works preloaded and linked), prints the sums on
 * rank 0, and enforces env TC_EXPECT: "mcast" requires bcast_mcast > 0
 * when ran_bcasts and barrier_mcast > 0 when ran_barriers; "pmpi" requires
 * no multicast at all and PMPI counts for what ran. Unset: report only. */
void tc_expect_check(int ran_bcasts, int ran_barriers);

#endif
