/* Broadcasts of random derived datatypes, compared with the host MPI.
 *
 * Every case is broadcast from the same initial memory three ways: through MPI_Bcast
 * (mpicast: the test runs with MPICAST_MIN_BYTES=0, so every case multicasts), through
 * PMPI_Bcast (the host MPI's own broadcast), and as MPI defines the result: the root's
 * MPI_Pack (its elements in type-map order) broadcast as bytes and MPI_Unpack'ed by each
 * receiver. mpicast's buffer must equal the definition byte for byte on every rank, the
 * bytes the datatype does not cover included; so must the host's broadcast, except where
 * the host itself gets it wrong (Open MPI 4.1 does, for a few cases in a thousand), which
 * is reported and counted, not failed. The root and every receiver use a datatype of their
 * own, built at random with the same type signature:
 * nested structs, indexed, hindexed, indexed_block, hindexed_block, vectors with negative
 * strides, resized types with a negative lower bound, subarrays in C and Fortran order,
 * darrays and dups, with blocks listed in or out of memory order and often without holes
 * (dense types listed out of order are what a layout test that ignores order gets wrong);
 * one case in eight passes MPI_BOTTOM with the elements at absolute addresses.
 *
 *   int_dtype_diff [--cases N] [--seed S] [--first C] [--max-bytes B]
 *
 * The seed is printed first, and with every failure, with the root's and the failing
 * rank's datatypes. A case depends on the seed and its number only: --seed S --first C
 * --cases 1 replays case C alone. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* ---- what every rank's type is made of ---- */

/* The signature element: a predefined type, or a struct of (char, int, double) whose
 * fields each rank lays out in memory in its own order (its type map is always char,
 * int, double). */
enum { U_INT, U_DOUBLE, U_CHAR, U_SHORT, U_STRUCT, U_KINDS };
static const int unit_bytes[U_KINDS] = {4, 8, 1, 2, 13};

typedef struct {
  char text[4096];
  size_t len;
} desc_t;

static void say(desc_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(desc_t *d, const char *fmt, ...) {
  if (d->len + 1 >= sizeof d->text) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(d->text + d->len, sizeof d->text - d->len, fmt, ap);
  va_end(ap);
  if (n > 0) d->len += (size_t)n;
  if (d->len >= sizeof d->text) d->len = sizeof d->text - 1;
}

/* Every derived type a case makes, freed at its end. */
typedef struct {
  MPI_Datatype made[512];
  int n;
} pool_t;

static MPI_Datatype keep(pool_t *p, MPI_Datatype t) {
  if (p->n == (int)(sizeof p->made / sizeof p->made[0])) tc_fail("type pool full");
  p->made[p->n++] = t;
  return t;
}

static void pool_free(pool_t *p) {
  for (int i = 0; i < p->n; i++) MPI_Type_free(&p->made[i]);
  p->n = 0;
}

typedef struct {
  uint64_t state;
  pool_t *pool;
  desc_t *desc;
  MPI_Datatype unit;
  int unit_kind;
} gen_t;

static uint64_t below(gen_t *g, uint64_t n) { return n ? tc_rand(&g->state) % n : 0; }
static int chance(gen_t *g, int pct) { return (int)below(g, 100) < pct; }

/* A random divisor of k (1 and k included). */
static int divisor(gen_t *g, int k) {
  int ds[64], n = 0;
  for (int d = 1; d <= k && n < 64; d++)
    if (k % d == 0) ds[n++] = d;
  return ds[below(g, (uint64_t)n)];
}

static void shuffle(gen_t *g, int *a, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)below(g, (uint64_t)i + 1), t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

static void bounds(MPI_Datatype t, MPI_Aint *lb, MPI_Aint *ext, MPI_Aint *tlb, MPI_Aint *text) {
  MPI_Type_get_extent(t, lb, ext);
  MPI_Type_get_true_extent(t, tlb, text);
}

static MPI_Datatype commit(gen_t *g, MPI_Datatype t) {
  MPI_Type_commit(&t);
  return keep(g->pool, t);
}

/* The signature element of this rank. */
static MPI_Datatype make_unit(gen_t *g, int kind) {
  switch (kind) {
    case U_INT: say(g->desc, "U=int"); return MPI_INT;
    case U_DOUBLE: say(g->desc, "U=double"); return MPI_DOUBLE;
    case U_CHAR: say(g->desc, "U=char"); return MPI_CHAR;
    case U_SHORT: say(g->desc, "U=short"); return MPI_SHORT;
    default: break;
  }
  /* char, int, double at displacements of this rank's choosing: placed one after the
   * other in a random memory order, with or without gaps. */
  int order[3] = {0, 1, 2}, lens[3] = {1, 1, 1};
  const int sz[3] = {1, 4, 8};
  MPI_Datatype types[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE};
  MPI_Aint disp[3];
  shuffle(g, order, 3);
  MPI_Aint at = 0;
  for (int i = 0; i < 3; i++) {
    disp[order[i]] = at;
    at += sz[order[i]] + (chance(g, 60) ? 0 : (MPI_Aint)below(g, 4));
  }
  MPI_Datatype raw;
  MPI_Type_create_struct(3, lens, disp, types, &raw);
  say(g->desc, "U={c@%ld,i@%ld,d@%ld}", (long)disp[0], (long)disp[1], (long)disp[2]);
  /* The extent is the span, without alignment padding (so that dense units stay dense). */
  MPI_Datatype unit;
  MPI_Type_create_resized(raw, 0, at, &unit);
  MPI_Type_free(&raw);
  return commit(g, unit);
}

/* A type holding exactly k signature elements. */
static MPI_Datatype build(gen_t *g, int k, int depth);

static MPI_Datatype leaf(gen_t *g, int k) {
  if (k == 1) {
    say(g->desc, "U");
    return g->unit;
  }
  MPI_Datatype t;
  MPI_Type_contiguous(k, g->unit, &t);
  say(g->desc, "contig(%d,U)", k);
  return commit(g, t);
}

/* Places n blocks of `lens[i]` child elements one after another in a random memory order,
 * with or without gaps (in elements, or bytes when `bytes`), then lists them in memory
 * order or shuffled: writes displacements in elements or bytes. */
static void place_blocks(gen_t *g, int n, const int *lens, MPI_Aint ext, int bytes, int tight,
                         MPI_Aint *disp) {
  int order[64];
  for (int i = 0; i < n; i++) order[i] = i;
  if (chance(g, 50)) shuffle(g, order, n);
  MPI_Aint at = chance(g, 30) ? -(MPI_Aint)below(g, 3) : 0; /* elements */
  if (bytes) at *= ext;
  for (int i = 0; i < n; i++) {
    int b = order[i];
    disp[b] = at;
    MPI_Aint gap = tight ? 0 : (MPI_Aint)below(g, 3);
    at += bytes ? lens[b] * ext + gap : lens[b] + gap;
  }
}

static MPI_Datatype build(gen_t *g, int k, int depth) {
  if (depth == 0 || chance(g, 20)) return leaf(g, k);
  int tight = chance(g, 60);
  MPI_Datatype t, child;
  MPI_Aint lb, ext, tlb, text;
  uint64_t pick = below(g, 11);
  switch (pick) {
    case 0: { /* contiguous */
      int c = divisor(g, k);
      say(g->desc, "contig(%d,", c);
      child = build(g, k / c, depth - 1);
      MPI_Type_contiguous(c, child, &t);
      break;
    }
    case 1:   /* vector, stride in elements */
    case 2: { /* hvector, stride in bytes */
      int cb = divisor(g, k), c = divisor(g, cb), b = cb / c;
      int h = pick == 2;
      say(g->desc, "%svector(%d,%d,", h ? "h" : "", c, b);
      child = build(g, k / cb, depth - 1);
      bounds(child, &lb, &ext, &tlb, &text);
      int neg = chance(g, 35);
      if (h) {
        MPI_Aint stride = b * ext + (tight ? 0 : (MPI_Aint)below(g, 9));
        if (neg) stride = -stride;
        MPI_Type_create_hvector(c, b, stride, child, &t);
        say(g->desc, ")/%ldB", (long)stride);
      } else {
        int stride = b + (tight ? 0 : (int)below(g, 3));
        if (neg) stride = -stride;
        MPI_Type_vector(c, b, stride, child, &t);
        say(g->desc, ")/%d", stride);
      }
      break;
    }
    case 3:   /* indexed */
    case 4: { /* hindexed */
      int h = pick == 4;
      int m = divisor(g, k), n = 1 + (int)below(g, m < 8 ? (uint64_t)m : 8);
      int lens[64] = {0};
      /* m elements in n blocks, some of them empty. */
      for (int i = 0; i < m; i++) lens[below(g, (uint64_t)n)]++;
      say(g->desc, "%sindexed[", h ? "h" : "");
      child = build(g, k / m, depth - 1);
      bounds(child, &lb, &ext, &tlb, &text);
      MPI_Aint disp[64];
      place_blocks(g, n, lens, ext, h, tight, disp);
      for (int i = 0; i < n; i++) say(g->desc, "%s%d@%ld", i ? " " : "|", lens[i], (long)disp[i]);
      say(g->desc, "]");
      if (h) {
        MPI_Type_create_hindexed(n, lens, disp, child, &t);
      } else {
        int idisp[64];
        for (int i = 0; i < n; i++) idisp[i] = (int)disp[i];
        MPI_Type_indexed(n, lens, idisp, child, &t);
      }
      break;
    }
    case 5: { /* indexed_block / hindexed_block */
      int h = (int)below(g, 2);
      int m = divisor(g, k), n = divisor(g, m), bl = m / n;
      if (n > 64) n = 1, bl = m;
      int lens[64];
      for (int i = 0; i < n; i++) lens[i] = bl;
      say(g->desc, "%sindexed_block(%d)[", h ? "h" : "", bl);
      child = build(g, k / m, depth - 1);
      bounds(child, &lb, &ext, &tlb, &text);
      MPI_Aint disp[64];
      place_blocks(g, n, lens, ext, h, tight, disp);
      for (int i = 0; i < n; i++) say(g->desc, "%s%ld", i ? " " : "|", (long)disp[i]);
      say(g->desc, "]");
      if (h) {
        MPI_Type_create_hindexed_block(n, bl, disp, child, &t);
      } else {
        int idisp[64];
        for (int i = 0; i < n; i++) idisp[i] = (int)disp[i];
        MPI_Type_create_indexed_block(n, bl, idisp, child, &t);
      }
      break;
    }
    case 6: { /* struct of children of their own */
      int n = 1 + (int)below(g, k < 4 ? (uint64_t)k : 4);
      int parts[4] = {0}, lens[4];
      /* k elements in n non-empty parts, each part = len children of parts[i]/len. */
      for (int i = 0; i < n; i++) parts[i] = 1;
      for (int i = n; i < k; i++) parts[below(g, (uint64_t)n)]++;
      MPI_Datatype kids[4];
      MPI_Aint kl[4], ke[4], ktl[4], kte[4], disp[4];
      say(g->desc, "struct[");
      for (int i = 0; i < n; i++) {
        lens[i] = divisor(g, parts[i]);
        say(g->desc, "%s%dx", i ? " " : "", lens[i]);
        kids[i] = build(g, parts[i] / lens[i], depth - 1);
        bounds(kids[i], &kl[i], &ke[i], &ktl[i], &kte[i]);
      }
      /* Memory order of the blocks, then their displacements: each block's data starts
       * where the one before ends, or a few bytes later. */
      int order[4] = {0, 1, 2, 3};
      shuffle(g, order, n);
      MPI_Aint at = chance(g, 30) ? -(MPI_Aint)below(g, 8) : 0;
      for (int i = 0; i < n; i++) {
        int b = order[i];
        disp[b] = at - ktl[b];
        at += (lens[b] - 1) * ke[b] + kte[b] + (tight ? 0 : (MPI_Aint)below(g, 8));
      }
      for (int i = 0; i < n; i++) say(g->desc, "%s@%ld", i ? "," : "|", (long)disp[i]);
      say(g->desc, "]");
      MPI_Type_create_struct(n, lens, disp, kids, &t);
      break;
    }
    case 7: { /* resized: the bounds move, the data does not */
      say(g->desc, "resized(");
      child = build(g, k, depth - 1);
      bounds(child, &lb, &ext, &tlb, &text);
      MPI_Aint new_lb = (lb < tlb ? lb : tlb) - (chance(g, 60) ? 8 + (MPI_Aint)below(g, 9) : 0);
      MPI_Aint need = tlb + text - new_lb;
      if (lb + ext > tlb + text) need = lb + ext - new_lb;
      MPI_Aint new_ext = need + (tight ? 0 : (MPI_Aint)below(g, 9));
      MPI_Type_create_resized(child, new_lb, new_ext, &t);
      say(g->desc, ")lb%ld/ext%ld", (long)new_lb, (long)new_ext);
      break;
    }
    case 8: { /* subarray, C or Fortran order */
      int nd = 1 + (int)below(g, 3), sizes[3], subs[3], starts[3], rest = divisor(g, k);
      int m = rest;
      for (int i = 0; i < nd; i++) {
        subs[i] = i == nd - 1 ? rest : divisor(g, rest);
        rest /= subs[i];
        sizes[i] = subs[i] + (chance(g, 50) ? 0 : (int)below(g, 3));
        starts[i] = (int)below(g, (uint64_t)(sizes[i] - subs[i] + 1));
      }
      int order = chance(g, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
      say(g->desc, "subarray%s(", order == MPI_ORDER_C ? "C" : "F");
      for (int i = 0; i < nd; i++) say(g->desc, "%d/%d+%d,", subs[i], sizes[i], starts[i]);
      child = build(g, k / m, depth - 1);
      MPI_Type_create_subarray(nd, sizes, subs, starts, order, child, &t);
      say(g->desc, ")");
      break;
    }
    case 9: { /* darray: every process of the grid gets the same number of elements */
      int nd = 1 + (int)below(g, 2), rest = divisor(g, k), m = rest;
      int gsizes[2], distribs[2], dargs[2], psizes[2], nprocs = 1;
      for (int i = 0; i < nd; i++) {
        int l = i == nd - 1 ? rest : divisor(g, rest);
        rest /= l;
        switch (below(g, 3)) {
          case 0:
            distribs[i] = MPI_DISTRIBUTE_BLOCK;
            psizes[i] = 1 + (int)below(g, 3);
            dargs[i] = chance(g, 50) ? MPI_DISTRIBUTE_DFLT_DARG : l;
            break;
          case 1:
            distribs[i] = MPI_DISTRIBUTE_CYCLIC;
            psizes[i] = 1 + (int)below(g, 3);
            dargs[i] = divisor(g, l);
            break;
          default:
            distribs[i] = MPI_DISTRIBUTE_NONE;
            psizes[i] = 1;
            dargs[i] = MPI_DISTRIBUTE_DFLT_DARG;
        }
        gsizes[i] = l * psizes[i];
        nprocs *= psizes[i];
      }
      int me = (int)below(g, (uint64_t)nprocs);
      int order = chance(g, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
      say(g->desc, "darray%s(p%d/%d,", order == MPI_ORDER_C ? "C" : "F", me, nprocs);
      for (int i = 0; i < nd; i++)
        say(g->desc, "%d:%c%d/%d,", gsizes[i], "BCN"[distribs[i]], dargs[i], psizes[i]);
      child = build(g, k / m, depth - 1);
      MPI_Type_create_darray(nprocs, me, nd, gsizes, distribs, dargs, psizes, order, child, &t);
      say(g->desc, ")");
      break;
    }
    default: { /* dup */
      say(g->desc, "dup(");
      child = build(g, k, depth - 1);
      MPI_Type_dup(child, &t);
      say(g->desc, ")");
      break;
    }
  }
  return commit(g, t);
}

/* ---- one case ---- */

static uint64_t mixin(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ULL);
  return tc_rand(&s);
}

typedef struct {
  MPI_Datatype type;
  int count;
  desc_t desc;
} side_t;

/* Rank r's datatype of case c: drawn from (seed, case, rank) alone, so that any rank can
 * rebuild any other's to describe it. */
static void make_side(uint64_t seed, long long c, int r, int unit_kind, int total, side_t *s,
                      pool_t *pool) {
  gen_t g = {mixin(mixin(seed, (uint64_t)c), (uint64_t)r + 1), pool, &s->desc, MPI_DATATYPE_NULL,
             unit_kind};
  s->desc.len = 0;
  s->desc.text[0] = 0;
  g.unit = make_unit(&g, unit_kind);
  int k = divisor(&g, total);
  s->count = total / k;
  say(&s->desc, " -> ");
  s->type = build(&g, k, 3);
  MPI_Count size;
  MPI_Type_size_x(s->type, &size);
  if (size != (MPI_Count)k * unit_bytes[unit_kind])
    tc_fail("generator: %s has %lld bytes, not %d elements", s->desc.text, (long long)size, k);
  say(&s->desc, " x %d", s->count);
}

static int totals[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 30, 36, 48, 60, 72, 96, 120, 180, 240,
                       360, 480, 720, 1080, 1440, 2520, 5040};

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank(), nranks = tc_world_size();
  long long cases = tc_arg_ll(argc, argv, "--cases", 2000);
  long long max_bytes = tc_arg_ll(argc, argv, "--max-bytes", 48 * 1024);
  long long first_case = tc_arg_ll(argc, argv, "--first", 0);
  uint64_t seed = (uint64_t)tc_arg_ll(argc, argv, "--seed", 0);
  if (seed == 0) {
    seed = (uint64_t)time(NULL) ^ 0x5eed0022ULL;
    PMPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  }
  if (rank == 0) {
    printf("int_dtype_diff: seed %" PRIu64 ", cases %lld..%lld, %d ranks\n", seed, first_case,
           first_case + cases - 1, nranks);
    fflush(stdout);
  }
  long long dense = 0, total_bytes = 0, host_off = 0;
  for (long long c = first_case; c < first_case + cases; c++) {
    uint64_t shared = mixin(seed, (uint64_t)c);
    int unit_kind = (int)(tc_rand(&shared) % U_KINDS);
    int total;
    do {
      total = totals[tc_rand(&shared) % (sizeof totals / sizeof totals[0])];
    } while ((long long)total * unit_bytes[unit_kind] > max_bytes);
    int root = (int)(tc_rand(&shared) % (uint64_t)nranks);
    int bytes = total * unit_bytes[unit_kind];

    pool_t pool = {.n = 0};
    side_t me;
    make_side(seed, c, rank, unit_kind, total, &me, &pool);

    /* The memory the type touches, with a margin each side; three copies of the same
     * initial contents: for mpicast, for the host's broadcast, for MPI's definition. */
    MPI_Aint lb, ext, tlb, text;
    bounds(me.type, &lb, &ext, &tlb, &text);
    MPI_Aint last = (MPI_Aint)(me.count - 1) * ext;
    MPI_Aint lo = tlb + (last < 0 ? last : 0), hi = tlb + text + (last > 0 ? last : 0);
    size_t margin = 16, span = (size_t)(hi - lo) + 2 * margin;
    uint8_t *mem[3];
    for (int w = 0; w < 3; w++)
      if (!(mem[w] = malloc(span))) tc_fail("out of memory (%zu bytes)", span);
    uint64_t fill = mixin(shared, (uint64_t)rank + 77);
    for (size_t i = 0; i < span; i++) mem[0][i] = (uint8_t)(tc_rand(&fill) >> 56);
    memcpy(mem[1], mem[0], span);
    memcpy(mem[2], mem[0], span);
    uint8_t *at[3];
    for (int w = 0; w < 3; w++) at[w] = mem[w] + margin - lo;

    /* One case in eight (per rank) passes MPI_BOTTOM and the same elements as one struct of
     * absolute addresses, as Fortran programs do. */
    uint64_t how = mixin(shared, (uint64_t)rank + 99);
    int rc;
    if (tc_rand(&how) % 8 == 0) {
      MPI_Datatype abs_type;
      MPI_Aint where;
      MPI_Get_address(at[0], &where);
      MPI_Type_create_struct(1, &me.count, &where, &me.type, &abs_type);
      MPI_Type_commit(&abs_type);
      rc = MPI_Bcast(MPI_BOTTOM, 1, abs_type, root, MPI_COMM_WORLD);
      MPI_Type_free(&abs_type);
      say(&me.desc, " (MPI_BOTTOM)");
    } else {
      rc = MPI_Bcast(at[0], me.count, me.type, root, MPI_COMM_WORLD);
    }
    if (rc != MPI_SUCCESS) tc_fail("case %lld: MPI_Bcast returned %d", c, rc);
    rc = PMPI_Bcast(at[1], me.count, me.type, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) tc_fail("case %lld: PMPI_Bcast returned %d", c, rc);
    /* MPI's definition of the result: the root's elements in type-map order (MPI_Pack),
     * stored by each receiver in its own type-map order (MPI_Unpack). */
    uint8_t *packed = malloc((size_t)bytes + 1);
    if (!packed) tc_fail("out of memory");
    int pos = 0;
    if (rank == root) MPI_Pack(at[2], me.count, me.type, packed, bytes, &pos, MPI_COMM_WORLD);
    PMPI_Bcast(packed, bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    pos = 0;
    if (rank != root) MPI_Unpack(packed, bytes, &pos, at[2], me.count, me.type, MPI_COMM_WORLD);
    free(packed);

    /* mpicast must give what MPI defines, always; the host's broadcast is counted where it
     * does not (a host bug, not ours: reported, not failed). */
    size_t diff[2] = {0, 0}, first[2] = {span, span};
    for (int w = 0; w < 2; w++)
      for (size_t i = 0; i < span; i++)
        if (mem[w][i] != mem[2][i]) {
          if (first[w] == span) first[w] = i;
          diff[w]++;
        }
    if (diff[0] || diff[1]) {
      pool_t other = {.n = 0};
      side_t r;
      make_side(seed, c, root, unit_kind, total, &r, &other);
      pool_free(&other);
      int w = diff[0] ? 0 : 1;
      char hex[3][3 * 16 + 1];
      for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < 16; i++)
          snprintf(hex[k] + 3 * i, 4, "%02x ", first[w] + i < span ? mem[k][first[w] + i] : 0);
      static char what[12288];
      snprintf(what, sizeof what,
               "seed %" PRIu64 " case %lld (replay: --seed %" PRIu64 " --first %lld --cases 1): "
               "root %d, %d elements: %s gives %zu of %zu bytes other than MPI's definition "
               "(the root's MPI_Pack unpacked here), first at offset %ld from the buffer\n"
               "  mpicast:    %s\n  host MPI:   %s\n  definition: %s\n  root's type: %s\n"
               "  my type:     %s",
               seed, c, seed, c, root, total, w ? "the host MPI's own MPI_Bcast" : "mpicast",
               diff[w], span, (long)((MPI_Aint)first[w] - (MPI_Aint)margin + lo), hex[0],
               hex[1], hex[2], r.desc.text, me.desc.text);
      if (w == 0) {
        fprintf(stderr, "[rank %d] %s\n", rank, what);
        tc_fail("mpicast's broadcast differs from MPI's definition (above)");
      }
      if (host_off++ == 0) fprintf(stderr, "[rank %d] note (not a failure): %s\n", rank, what);
    }
    if (hi - lo == (MPI_Aint)bytes) dense++;
    total_bytes += bytes;
    for (int w = 0; w < 3; w++) free(mem[w]);
    pool_free(&pool);
  }
  long long sums[3] = {dense, total_bytes, host_off}, all[3];
  MPI_Allreduce(sums, all, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("int_dtype_diff: %lld cases of %lld bytes on average (%lld of %lld rank-cases "
           "dense): mpicast gave MPI's result in every one; the host MPI's own broadcast "
           "in all but %lld\n",
           cases, cases ? all[1] / nranks / cases : 0, all[0], cases * nranks, all[2]);
    fflush(stdout);
  }
  tc_expect_check(cases > 0, 0);
  MPI_Finalize();
  return 0;
}
