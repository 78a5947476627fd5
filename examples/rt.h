/* rt: a small distributed task runtime, owner-computes and data-driven.
 *
 * The application hands each rank the tasks it owns (those that write its data) as an array;
 * the runtime runs them, each as soon as its inputs are present, and moves the data between
 * ranks. Data that crosses ranks comes in "items": an item is finalised by exactly one task
 * (on its owner) and may then be read by tasks on any rank. A task
 *   - waits for the local task named by `after` (the previous writer of the data it updates in
 *     place, on the same rank), and for each item in inputs[];
 *   - when it finishes and `publishes` an item, the runtime notifies the item: the ranks that
 *     the application's dests() names (other than the owner) get it through the notify
 *     backend (notify.h), and local readers are released at once.
 * Every rank posts a receive for each remote item its tasks read before the graph starts, so a
 * sender never waits for a receiver. Items are named by their id, which is also the message
 * tag: nitems must stay below NOTIFY_TAG_LIMIT.
 *
 * Single-threaded: one loop runs the highest-priority ready task (smallest prio), and between
 * tasks polls the network; when nothing is ready it blocks in the backend's poll. */
#ifndef EXAMPLES_RT_H
#define EXAMPLES_RT_H

#include <mpi.h>

#include "notify.h"

#define RT_MAX_INPUTS 4

typedef struct rt_task {
  /* Filled by the application. */
  int kind, i, j, k;           /* the application's names for the task (rt never reads them) */
  long prio;                   /* among ready tasks, smaller runs first */
  int ninputs;                 /* items read, produced here or on other ranks */
  int inputs[RT_MAX_INPUTS];
  int after;                   /* index of the local task that must finish first, or -1 */
  int publishes;               /* item that this task finalises, or -1 */
  /* The runtime's. */
  int waiting_;
  int next_;
} rt_task_t;

typedef struct rt_app {
  void *ctx;
  int nitems;
  int (*owner)(void *ctx, int item);
  int (*bytes)(void *ctx, int item);
  /* Storage of an item this rank produces (the task that publishes it wrote it there). */
  void *(*local_data)(void *ctx, int item);
  /* The ranks whose tasks read the item, into dests[] (room for max, twice the number of
   * ranks); may include the owner and repeat ranks: the runtime drops both. Returns the count,
   * or -1 if max is too small. */
  int (*dests)(void *ctx, int item, int *dests, int max);
  /* Run a task; in[] holds its inputs' data in the order of t->inputs. 0 on success. */
  int (*run)(void *ctx, const rt_task_t *t, void *const *in);
} rt_app_t;

typedef struct rt_stats {
  double t_total;   /* this rank's time in rt_run */
  double t_tasks;   /* of which running tasks */
  double t_idle;    /* of which blocked waiting for an item */
  long tasks;       /* tasks run */
  long notifies;    /* items published to at least one other rank (notify_send calls) */
  long dest_msgs;   /* sum of their destination counts (messages in p2p) */
  double bytes;     /* bytes times destinations */
  long recvs;       /* items received */
} rt_stats_t;

typedef struct rt rt_t;

/* Collective over comm. Checks the graph (items in range, each item this rank reads either
 * published here or owned elsewhere, and, across ranks, that what each rank will send to each
 * other equals what that one expects to receive); on any failure every rank gets NULL and rank
 * 0 (at least) has printed why. tasks must stay alive and unmoved until rt_free. */
rt_t *rt_create(MPI_Comm comm, const rt_app_t *app, rt_task_t *tasks, int ntasks, notify_t *nt);

/* Run every local task once (the application resets its data first). May be called again for
 * another repetition. 0 on success, -1 on error (printed). Not collective by itself, but it
 * returns only when this rank's tasks are done and its sends completed. */
int rt_run(rt_t *rt, rt_stats_t *st);

void rt_free(rt_t *rt);

#endif
