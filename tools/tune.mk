# mpicast-tune-run (tools/tune_run.c), the runner of `mpicast tune`, per MPI flavour. Included
# from the top Makefile, which defines FLAVOURS and mpicc_<flavour> (and builds the runner in
# `make lib-<flavour>`); the defaults below let it run alone too:  make -f tools/tune.mk tune-tools
#
#   make tune-tools   build/<flavour>/bin/mpicast-tune-run for every flavour of FLAVOURS
#
# Linked against libmpicast of its flavour (build/<flavour>/lib; run `make lib` first) so that
# its MPI_Bcast, MPI_Barrier and MPI_Comm_set_info are mpicast's; it finds the library at run
# time through its RUNPATH, ../lib and ../lib64 beside its own directory, as mpicast-goal-run
# does (tools/goal.mk).

FLAVOURS ?= openmpi mpich
mpicc_openmpi ?= mpicc.openmpi
mpicc_mpich ?= mpicc.mpich
TUNE_CFLAGS ?= -O2 -Wall -Wextra -Werror

.PHONY: tune-tools

tune-tools:
	@for f in $(FLAVOURS); do \
	  $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) build/$$f/bin/mpicast-tune-run; \
	done

# $* is the flavour. The library is a prerequisite so that a rebuilt library relinks.
build/%/bin/mpicast-tune-run: tools/tune_run.c include/mpicast.h build/%/lib/libmpicast.so
	@mkdir -p $(@D)
	$(mpicc_$*) $(TUNE_CFLAGS) -Iinclude $< -L$(abspath build/$*/lib) -lmpicast \
	  -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../lib64' -o $@
