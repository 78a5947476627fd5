# mpicast-doctor-run (tools/doctor_run.c), the ranks of `mpicast doctor -n N`, per MPI
# flavour: build/<flavour>/bin/mpicast-doctor-run, linked against build/<flavour>/lib and
# finding it at run time as mpicast-goal-run does (tools/goal.mk). Included from the top
# Makefile; `make lib` builds it.

.PHONY: doctor-tools

doctor-tools:
	@for f in $(FLAVOURS); do \
	  $(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) build/$$f/bin/mpicast-doctor-run; \
	done

build/%/bin/mpicast-doctor-run: tools/doctor_run.c include/mpicast.h build/%/lib/libmpicast.so
	@mkdir -p $(@D)
	$(mpicc_$*) $(GOAL_CFLAGS) -Iinclude $< -L$(abspath build/$*/lib) -lmpicast \
	  -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../lib64' -o $@
