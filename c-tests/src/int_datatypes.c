/* Broadcasts of non-contiguous derived datatypes from every root. The bytes a
 * type covers must arrive; the holes between them must be left untouched on
 * the receivers. Which bytes are covered is learnt from the host MPI itself
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
  MPI_Type_free(&vec);
  MPI_Type_free(&hvec);
  MPI_Type_free(&idx);
  MPI_Type_free(&subarr);
  MPI_Type_free(&rec);
  tc_expect_check(1, 0);
  MPI_Finalize();
  return 0;
}
