/* rt: the scheduler loop, the per-item bookkeeping and the graph checks of rt.h. Owns the
 * receive buffers of remote items and the ready queue; the application owns the tasks' data
 * and the notify backend its requests. */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt {
  MPI_Comm comm;
  int rank, size;
  const rt_app_t *app;
  rt_task_t *tasks;
  int ntasks;
  notify_t *nt;
  /* Per item (nitems): where its data is on this rank (NULL: not read or written here), and
   * its local readers (CSR over tasks). */
  void **data;
  int *rd_start, *rd_task;
  /* Receives: slot -> item, and the buffers this runtime owns. */
  int nremote;
  int *remote_item;
  void **remote_buf;
  /* Per published local item: the other ranks that read it (CSR). */
  int *dst_start, *dst_rank;
  /* Ready queue: binary heap of task indices by prio. */
  int *heap, nheap;
  int *scratch_slots;
};

static void heap_push(rt_t *rt, int t) {
  int c = rt->nheap++;
  while (c > 0) {
    int p = (c - 1) / 2;
    if (rt->tasks[rt->heap[p]].prio <= rt->tasks[t].prio) break;
    rt->heap[c] = rt->heap[p];
    c = p;
  }
  rt->heap[c] = t;
}

static int heap_pop(rt_t *rt) {
  int top = rt->heap[0], last = rt->heap[--rt->nheap], c = 0;
  for (;;) {
    int l = 2 * c + 1, best = c;
    long bp = rt->tasks[last].prio;
    if (l < rt->nheap && rt->tasks[rt->heap[l]].prio < bp) {
      best = l;
      bp = rt->tasks[rt->heap[l]].prio;
    }
    if (l + 1 < rt->nheap && rt->tasks[rt->heap[l + 1]].prio < bp) best = l + 1;
    if (best == c) break;
    rt->heap[c] = rt->heap[best];
    c = best;
  }
  if (rt->nheap > 0) rt->heap[c] = last;
  return top;
}

static void release(rt_t *rt, int t) {
  if (--rt->tasks[t].waiting_ == 0) heap_push(rt, t);
}

/* An item's data is present on this rank: its local readers have one input fewer to wait for. */
static void item_present(rt_t *rt, int item) {
  for (int r = rt->rd_start[item]; r < rt->rd_start[item + 1]; r++) release(rt, rt->rd_task[r]);
}

void rt_free(rt_t *rt) {
  if (!rt) return;
  for (int s = 0; s < rt->nremote; s++) free(rt->remote_buf[s]);
  free(rt->remote_buf);
  free(rt->remote_item);
  free(rt->data);
  free(rt->rd_start);
  free(rt->rd_task);
  free(rt->dst_start);
  free(rt->dst_rank);
  free(rt->heap);
  free(rt->scratch_slots);
  free(rt);
}

/* Every rank learns whether every rank succeeded. */
static int all_ok(MPI_Comm comm, int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all;
}

#define FAIL(...)                                                                              \
  do {                                                                                         \
    fprintf(stderr, "rt: rank %d: ", rt->rank);                                                \
    fprintf(stderr, __VA_ARGS__);                                                              \
    fputc('\n', stderr);                                                                       \
    goto local_fail;                                                                           \
  } while (0)

rt_t *rt_create(MPI_Comm comm, const rt_app_t *app, rt_task_t *tasks, int ntasks, notify_t *nt) {
  rt_t *rt = calloc(1, sizeof *rt);
  int *sendc = NULL, *recvc = NULL, *expect = NULL, *mark = NULL, *dbuf = NULL;
  int did_alltoall = 0;
  if (!rt) MPI_Abort(comm, 1); /* nothing to report with, and the others would wait */
  rt->comm = comm;
  MPI_Comm_rank(comm, &rt->rank);
  MPI_Comm_size(comm, &rt->size);
  rt->app = app;
  rt->tasks = tasks;
  rt->ntasks = ntasks;
  rt->nt = nt;
  const int ni = app->nitems, P = rt->size;

  if (ni < 0 || ni > NOTIFY_TAG_LIMIT)
    FAIL("%d items: item ids are tags and must stay below %d", ni, NOTIFY_TAG_LIMIT);
  rt->data = calloc((size_t)ni + 1, sizeof *rt->data);
  rt->rd_start = calloc((size_t)ni + 2, sizeof *rt->rd_start);
  rt->dst_start = calloc((size_t)ni + 2, sizeof *rt->dst_start);
  rt->heap = malloc(((size_t)ntasks + 1) * sizeof *rt->heap);
  sendc = calloc((size_t)P, sizeof *sendc);
  recvc = calloc((size_t)P, sizeof *recvc);
  expect = calloc((size_t)P, sizeof *expect);
  mark = malloc((size_t)P * sizeof *mark);
  dbuf = malloc(2 * (size_t)P * sizeof *dbuf);
  if (!rt->data || !rt->rd_start || !rt->dst_start || !rt->heap || !sendc ||
      !recvc || !expect || !mark || !dbuf)
    FAIL("out of memory");

  /* Tasks: ranges, chains, published items (data in place, owned here, once). */
  int nreads = 0;
  for (int t = 0; t < ntasks; t++) {
    rt_task_t *tk = &tasks[t];
    tk->next_ = -1;
    if (tk->ninputs < 0 || tk->ninputs > RT_MAX_INPUTS) FAIL("task %d: %d inputs", t, tk->ninputs);
    for (int x = 0; x < tk->ninputs; x++)
      if (tk->inputs[x] < 0 || tk->inputs[x] >= ni)
        FAIL("task %d: input item %d", t, tk->inputs[x]);
    nreads += tk->ninputs;
    if (tk->publishes >= ni) FAIL("task %d publishes item %d", t, tk->publishes);
    if (tk->publishes >= 0) {
      int it = tk->publishes;
      if (app->owner(app->ctx, it) != rt->rank)
        FAIL("task %d publishes item %d, owned by rank %d", t, it, app->owner(app->ctx, it));
      if (rt->data[it]) FAIL("item %d published by two tasks", it);
      rt->data[it] = app->local_data(app->ctx, it);
      if (!rt->data[it]) FAIL("item %d has no local storage", it);
    }
  }
  for (int t = 0; t < ntasks; t++) {
    int a = tasks[t].after;
    if (a < -1 || a >= ntasks || a == t) FAIL("task %d: after = %d", t, a);
    if (a >= 0) {
      if (tasks[a].next_ >= 0)
        FAIL("tasks %d and %d both come after task %d", tasks[a].next_, t, a);
      tasks[a].next_ = t;
    }
  }

  /* Readers of each item (CSR), and the remote items to receive, one slot each. */
  rt->rd_task = malloc(((size_t)nreads + 1) * sizeof *rt->rd_task);
  rt->remote_item = malloc(((size_t)nreads + 1) * sizeof *rt->remote_item);
  rt->remote_buf = calloc((size_t)nreads + 1, sizeof *rt->remote_buf);
  if (!rt->rd_task || !rt->remote_item || !rt->remote_buf) FAIL("out of memory");
  for (int t = 0; t < ntasks; t++)
    for (int x = 0; x < tasks[t].ninputs; x++) rt->rd_start[tasks[t].inputs[x] + 1]++;
  for (int it = 0; it < ni; it++) rt->rd_start[it + 1] += rt->rd_start[it];
  {
    int *fill = calloc((size_t)ni + 1, sizeof *fill);
    if (!fill) FAIL("out of memory");
    for (int t = 0; t < ntasks; t++)
      for (int x = 0; x < tasks[t].ninputs; x++) {
        int it = tasks[t].inputs[x];
        rt->rd_task[rt->rd_start[it] + fill[it]++] = t;
      }
    free(fill);
  }
  for (int it = 0; it < ni; it++) {
    if (rt->rd_start[it + 1] == rt->rd_start[it] || rt->data[it]) continue;
    int own = app->owner(app->ctx, it);
    if (own == rt->rank)
      FAIL("item %d is read here and owned here, but no local task publishes it", it);
    if (own < 0 || own >= P) FAIL("item %d: owner %d", it, own);
    int bytes = app->bytes(app->ctx, it);
    void *buf = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!buf) FAIL("out of memory");
    rt->remote_item[rt->nremote] = it;
    rt->remote_buf[rt->nremote] = buf;
    rt->nremote++;
    rt->data[it] = buf;
    recvc[own]++;
  }
  rt->scratch_slots = malloc(((size_t)rt->nremote + 1) * sizeof *rt->scratch_slots);
  if (!rt->scratch_slots) FAIL("out of memory");

  /* Destinations of each item published here: other ranks, once each. */
  {
    size_t cap = 64, used = 0;
    rt->dst_rank = malloc(cap * sizeof *rt->dst_rank);
    if (!rt->dst_rank) FAIL("out of memory");
    for (int r = 0; r < P; r++) mark[r] = -1;
    for (int it = 0; it < ni; it++) {
      rt->dst_start[it] = (int)used;
      if (app->owner(app->ctx, it) != rt->rank || !rt->data[it]) continue;
      int nd = app->dests(app->ctx, it, dbuf, 2 * P);
      if (nd < 0 || nd > 2 * P) FAIL("item %d: more than %d destinations", it, 2 * P);
      for (int d = 0; d < nd; d++) {
        int r = dbuf[d];
        if (r < 0 || r >= P) FAIL("item %d: destination rank %d", it, r);
        if (r == rt->rank || mark[r] == it) continue;
        mark[r] = it;
        if (used == cap) {
          int *q = realloc(rt->dst_rank, 2 * cap * sizeof *q);
          if (!q) FAIL("out of memory");
          rt->dst_rank = q;
          cap *= 2;
        }
        rt->dst_rank[used++] = r;
        sendc[r]++;
      }
    }
    rt->dst_start[ni] = (int)used;
  }

  /* What I send to r must be what r expects from me; a mismatch would hang the run. */
  MPI_Alltoall(sendc, 1, MPI_INT, expect, 1, MPI_INT, comm);
  did_alltoall = 1;
  for (int r = 0; r < P; r++)
    if (expect[r] != recvc[r])
      FAIL("rank %d will send me %d items, but my tasks read %d of its items (the application's "
           "dests() and tasks' inputs disagree)",
           r, expect[r], recvc[r]);
  if (!all_ok(comm, 1)) goto fail;
  free(sendc);
  free(recvc);
  free(expect);
  free(mark);
  free(dbuf);
  return rt;

local_fail:
  /* The other ranks go through the Alltoall and then the verdict: meet them there. */
  if (!did_alltoall) {
    int *zs = calloc((size_t)rt->size, sizeof *zs), *zr = malloc((size_t)rt->size * sizeof *zr);
    if (!zs || !zr) MPI_Abort(comm, 1);
    MPI_Alltoall(zs, 1, MPI_INT, zr, 1, MPI_INT, comm);
    free(zs);
    free(zr);
  }
  all_ok(comm, 0);
fail:
  free(sendc);
  free(recvc);
  free(expect);
  free(mark);
  free(dbuf);
  rt_free(rt);
  return NULL;
}

int rt_run(rt_t *rt, rt_stats_t *st) {
  rt_stats_t s;
  memset(&s, 0, sizeof s);
  const rt_app_t *app = rt->app;
  double t0 = MPI_Wtime();

  /* Inputs outstanding per task: its items, and its predecessor on the same data. */
  rt->nheap = 0;
  for (int t = 0; t < rt->ntasks; t++)
    rt->tasks[t].waiting_ = rt->tasks[t].ninputs + (rt->tasks[t].after >= 0);
  for (int sl = 0; sl < rt->nremote; sl++) {
    int it = rt->remote_item[sl];
    if (notify_post_recv(rt->nt, rt->remote_buf[sl], app->bytes(app->ctx, it),
                         app->owner(app->ctx, it), it, sl)) {
      fprintf(stderr, "rt: rank %d: posting the receive of item %d failed\n", rt->rank, it);
      return -1;
    }
  }
  /* Every send of the run is known before any task runs: tell the backend (dbcast registers
   * them with the library, which then decides at each send how to make it). */
  for (int it = 0; it < app->nitems; it++) {
    int nd = rt->dst_start[it + 1] - rt->dst_start[it];
    if (nd > 0 && notify_defer(rt->nt, it, rt->dst_rank + rt->dst_start[it], nd)) {
      fprintf(stderr, "rt: rank %d: announcing the sends of item %d failed\n", rt->rank, it);
      return -1;
    }
  }
  for (int t = 0; t < rt->ntasks; t++)
    if (rt->tasks[t].waiting_ == 0) heap_push(rt, t);

  int done = 0;
  void *in[RT_MAX_INPUTS];
  while (done < rt->ntasks) {
    int n = 0;
    int block = rt->nheap == 0;
    if (block && notify_recvs_pending(rt->nt) == 0) {
      fprintf(stderr,
              "rt: rank %d: %d of %d tasks cannot run: none is ready and no item is on its way "
              "(a cycle, or an input no task publishes)\n",
              rt->rank, rt->ntasks - done, rt->ntasks);
      return -1;
    }
    double tw = block ? MPI_Wtime() : 0;
    if (notify_poll(rt->nt, block, rt->scratch_slots, rt->nremote + 1, &n)) {
      fprintf(stderr, "rt: rank %d: receiving failed\n", rt->rank);
      return -1;
    }
    if (block) s.t_idle += MPI_Wtime() - tw;
    for (int x = 0; x < n; x++) item_present(rt, rt->remote_item[rt->scratch_slots[x]]);
    s.recvs += n;
    if (rt->nheap == 0) continue;

    int t = heap_pop(rt);
    rt_task_t *tk = &rt->tasks[t];
    for (int x = 0; x < tk->ninputs; x++) in[x] = rt->data[tk->inputs[x]];
    double tr = MPI_Wtime();
    if (app->run(app->ctx, tk, in)) return -1;
    s.t_tasks += MPI_Wtime() - tr;
    s.tasks++;
    done++;

    if (tk->publishes >= 0) {
      int it = tk->publishes;
      int nd = rt->dst_start[it + 1] - rt->dst_start[it];
      if (nd > 0) {
        int bytes = app->bytes(app->ctx, it);
        if (notify_send(rt->nt, rt->data[it], bytes, it, rt->dst_rank + rt->dst_start[it], nd)) {
          fprintf(stderr, "rt: rank %d: notifying item %d failed\n", rt->rank, it);
          return -1;
        }
        s.notifies++;
        s.dest_msgs += nd;
        s.bytes += (double)bytes * nd;
      }
      item_present(rt, it);
    }
    if (tk->next_ >= 0) release(rt, tk->next_);
  }
  if (notify_flush(rt->nt)) {
    fprintf(stderr, "rt: rank %d: completing the sends failed\n", rt->rank);
    return -1;
  }
  s.t_total = MPI_Wtime() - t0;
  if (st) *st = s;
  return 0;
}
