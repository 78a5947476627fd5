/* Broadcasts of non-contiguous derived datatypes from every root. The bytes a
 * type covers must arrive; the holes between them must be left untouched on
 * the receivers. Then dense types listed out of memory order, against MPI_INT. Which bytes are covered is learnt from the host MPI itself
 * (MPI_Unpack of an all-ones packed buffer), so the oracle does not depend on
 * the library under test. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define HOLE 0xEE

struct rec {
  char c;
  double d;
  int i[3];
  short s;
};

typedef struct {
  const char *name;
  MPI_Datatype type;
  int count;
} case_t;

static MPI_Datatype commit(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

static MPI_Datatype make_rec_type(void) {
  int lens[4] = {1, 1, 3, 1};
  MPI_Aint disp[4] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i),
                      offsetof(struct rec, s)};
  MPI_Datatype types[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
  MPI_Datatype raw, rec;
  MPI_Type_create_struct(4, lens, disp, types, &raw);
  /* Resized so that count > 1 steps by sizeof(struct rec), trailing padding included. */
  MPI_Type_create_resized(raw, 0, (MPI_Aint)sizeof(struct rec), &rec);
  MPI_Type_free(&raw);
  return commit(rec);
}

/* mask[i] = 1 where `count` elements of `type` cover byte i. */
static void coverage(MPI_Datatype type, int count, uint8_t *mask, size_t span) {
  int packed = 0, pos = 0;
  MPI_Pack_size(count, type, MPI_COMM_WORLD, &packed);
  uint8_t *ones = malloc((size_t)packed + 1);
  if (!ones) tc_fail("out of memory");
  memset(ones, 0xFF, (size_t)packed + 1);
  memset(mask, 0, span);
  MPI_Unpack(ones, packed, &pos, mask, count, type, MPI_COMM_WORLD);
  for (size_t i = 0; i < span; i++) mask[i] = mask[i] != 0;
  free(ones);
}

/* Three ints listed at displacements 8, 4, 0 (`backwards`) or 0, 4, 8: dense either way. */
static MPI_Datatype three_ints(int backwards) {
  int lens[3] = {1, 1, 1};
  MPI_Aint disp[3] = {0, 4, 8};
  MPI_Datatype types[3] = {MPI_INT, MPI_INT, MPI_INT}, t;
  if (backwards) disp[0] = 8, disp[2] = 0;
  MPI_Type_create_struct(3, lens, disp, types, &t);
  return commit(t);
}

/* Dense types whose type map is out of memory order, against plain MPI_INT on the other
 * side, both ways round, one fragment and many; the types are freed and made again between
 * rounds, so that a handle the host hands out again for another type is met with a stale
 * cached answer if mpicast kept one. The expected values are written out by hand. */
static void out_of_order(int rank, int nranks) {
  enum { N = 3 * 20000 }; /* 240 KB: many datagrams */
  int *buf = malloc(N * sizeof(int));
  if (!buf) tc_fail("out of memory");
  for (int round = 0; round < 6; round++) {
    /* Odd rounds make the in-order struct first, so handles swap roles between rounds. */
    MPI_Datatype fwd, back;
    if (round % 2) {
      fwd = three_ints(0);
      back = three_ints(1);
    } else {
      back = three_ints(1);
      fwd = three_ints(0);
    }
    int blens[2] = {2, 3}, bdisp[2] = {3, 0}; /* ints 3,4 then 0,1,2 */
    MPI_Datatype idx;
    MPI_Type_indexed(2, blens, bdisp, MPI_INT, &idx);
    idx = commit(idx);
    struct {
      const char *name;
      MPI_Datatype type;
      int per; /* ints per element */
      int map[5]; /* type-map order: memory index of the k-th int */
    } t[3] = {{"struct{8,4,0}", back, 3, {2, 1, 0}},
              {"struct{0,4,8}", fwd, 3, {0, 1, 2}},
              {"indexed{2@3,3@0}", idx, 5, {3, 4, 0, 1, 2}}};
    for (int k = 0; k < 3; k++) {
      for (int many = 0; many < 2; many++) {
        int elems = many ? N / 15 * 15 / t[k].per : 1, ints = elems * t[k].per;
        for (int root = 0; root < nranks; root++) {
          for (int typed_root = 0; typed_root < 2; typed_root++) {
            /* The root sends value v at memory index v; the typed side lists them in its
             * type-map order, so the plain side holds the map, element by element. */
            int typed = rank == root ? typed_root : !typed_root;
            for (int i = 0; i < ints; i++) buf[i] = rank == root ? i : -1;
            int rc = typed ? MPI_Bcast(buf, elems, t[k].type, root, MPI_COMM_WORLD)
                           : MPI_Bcast(buf, ints, MPI_INT, root, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) tc_fail("%s: MPI_Bcast failed", t[k].name);
            for (int i = 0; i < ints && rank != root; i++) {
              int e = i / t[k].per, j = i % t[k].per;
              /* Root typed: plain receiver's int i is the root's int at map[j].
               * Root plain: typed receiver's int at map[j] is the root's int i. */
              int want = typed_root ? e * t[k].per + t[k].map[j] : -2;
              int got = buf[i];
              if (!typed_root) {
                want = i;
                got = buf[e * t[k].per + t[k].map[j]];
              }
              if (got != want)
                tc_fail("%s x%d, root %d %s: int %d is %d, MPI requires %d", t[k].name, elems,
                        root, typed_root ? "typed, receivers MPI_INT" : "MPI_INT, receivers typed",
                        i, got, want);
            }
          }
        }
      }
    }
    MPI_Type_free(&fwd);
    MPI_Type_free(&back);
    MPI_Type_free(&idx);
  }
  free(buf);
  if (rank == 0) printf("int_datatypes: out-of-order dense types ok\n");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = tc_world_rank(), nranks = tc_world_size();
  long long iters = tc_arg_ll(argc, argv, "--iters", 2);

  MPI_Datatype vec;
  MPI_Type_vector(1000, 3, 5, MPI_INT, &vec);
  vec = commit(vec);
  MPI_Datatype block, hvec;
  MPI_Type_contiguous(1500, MPI_BYTE, &block);
  MPI_Type_create_hvector(700, 1, 4001, block, &hvec);
  hvec = commit(hvec);
  MPI_Type_free(&block);
  int idx_lens[5] = {1, 7, 300, 2, 4000};
  int idx_disp[5] = {0, 3, 20, 1000, 1010};
  MPI_Datatype idx;
  MPI_Type_indexed(5, idx_lens, idx_disp, MPI_DOUBLE, &idx);
  idx = commit(idx);
  int full[2] = {256, 256}, sub[2] = {100, 37}, start[2] = {13, 50};
  MPI_Datatype subarr;
  MPI_Type_create_subarray(2, full, sub, start, MPI_ORDER_C, MPI_DOUBLE, &subarr);
  subarr = commit(subarr);
  MPI_Datatype rec = make_rec_type();

  case_t cases[] = {
      {"vector(1000,3,5,int)", vec, 1},
      {"vector(1000,3,5,int) x3", vec, 3},
      {"hvector(700,1,4001,contig1500)", hvec, 1},
      {"indexed(doubles)", idx, 2},
      {"subarray(256x256 -> 100x37 @13,50)", subarr, 1},
      {"struct rec with holes x1", rec, 1},
      {"struct rec with holes x7", rec, 7},
      {"struct rec with holes x40000", rec, 40000},
  };
  size_t ncases = sizeof cases / sizeof cases[0];

  for (long long it = 0; it < iters; it++) {
    for (size_t c = 0; c < ncases; c++) {
      MPI_Aint lb, extent, tlb, textent;
      MPI_Type_get_extent(cases[c].type, &lb, &extent);
      MPI_Type_get_true_extent(cases[c].type, &tlb, &textent);
      if (lb != 0 || tlb < 0) tc_fail("%s: test assumes lb 0", cases[c].name);
      size_t span = (size_t)(extent * (cases[c].count - 1) + tlb + textent);
      uint8_t *buf = malloc(span), *mask = malloc(span);
      if (!buf || !mask) tc_fail("out of memory for %zu bytes", span);
      coverage(cases[c].type, cases[c].count, mask, span);
      for (int root = 0; root < nranks; root++) {
        uint64_t seed = tc_pattern_seed(root, (uint64_t)(it * 100 + (long long)c), span);
        if (rank == root)
          tc_fill(buf, span, seed);
        else
          memset(buf, HOLE, span);
        if (MPI_Bcast(buf, cases[c].count, cases[c].type, root, MPI_COMM_WORLD) != MPI_SUCCESS)
          tc_fail("%s: MPI_Bcast failed", cases[c].name);
        if (rank == root) {
          tc_check(buf, span, seed, cases[c].name, root, (uint64_t)it);
          continue;
        }
        for (size_t i = 0; i < span; i++) {
          uint8_t want = mask[i] ? tc_pattern_byte(seed, i) : HOLE;
          if (buf[i] != want)
            tc_fail("%s: root %d iter %lld: byte %zu of %zu (%s) expected 0x%02x got 0x%02x",
                    cases[c].name, root, it, i, span, mask[i] ? "data" : "hole", want, buf[i]);
        }
      }
      free(buf);
      free(mask);
    }
  }
  if (rank == 0) printf("int_datatypes: %zu types x %d roots x %lld iters ok\n", ncases, nranks, iters);
  out_of_order(rank, nranks);
  MPI_Type_free(&vec);
  MPI_Type_free(&hvec);
  MPI_Type_free(&idx);
  MPI_Type_free(&subarr);
  MPI_Type_free(&rec);
  tc_expect_check(1, 0);
  MPI_Finalize();
  return 0;
}
