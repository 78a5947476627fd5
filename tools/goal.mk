# mpicast-goal-run (tools/goal_run.c) and the GOAL benchmark (bench/goal_bench.c), per MPI
# flavour. Included from the top Makefile, which defines FLAVOURS and mpicc_<flavour>; the
# defaults below let it run alone too:  make -f tools/goal.mk goal-tools
#
#   make goal-tools   build/<flavour>/bin/mpicast-goal-run for every flavour of FLAVOURS
#   make goal-bench   build/<flavour>/bench/goal_bench for every flavour (bench/goal.sh runs it)
#
# Both link libmpicast of their flavour (build/<flavour>/lib, run `make lib` first) and find it
# at run time without LD_LIBRARY_PATH. The runner looks in ../lib (and ../lib64) relative to
# its own directory: build/<flavour>/lib in the source tree, PREFIX/lib once `make install`
# has put it in PREFIX/bin. The benchmark has an absolute rpath to build/<flavour>/lib.

FLAVOURS ?= openmpi mpich
mpicc_openmpi ?= mpicc.openmpi
mpicc_mpich ?= mpicc.mpich
GOAL_CFLAGS ?= -O2 -Wall -Wextra -Werror

.PHONY: goal-tools goal-bench

goal-tools:
	@for f in $(FLAVOURS); do \
	  $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) build/$$f/bin/mpicast-goal-run; \
	done

goal-bench:
	@for f in $(FLAVOURS); do \
	  $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) build/$$f/bench/goal_bench; \
	done

# $* is the flavour. The library is a prerequisite so that a rebuilt library relinks.
build/%/bin/mpicast-goal-run: tools/goal_run.c include/mpicast.h build/%/lib/libmpicast.so
	@mkdir -p $(@D)
	$(mpicc_$*) $(GOAL_CFLAGS) -Iinclude $< -L$(abspath build/$*/lib) -lmpicast \
	  -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../lib64' -o $@

build/%/bench/goal_bench: bench/goal_bench.c include/mpicast.h build/%/lib/libmpicast.so
	@mkdir -p $(@D)
	$(mpicc_$*) $(GOAL_CFLAGS) -Iinclude $< -L$(abspath build/$*/lib) -lmpicast \
	  -Wl,-rpath,$(abspath build/$*/lib) -o $@
