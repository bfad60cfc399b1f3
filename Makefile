# mtool — memory-bottleneck profiler.  `make help` lists the targets.
CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
OPT     ?= -O2
SAN     ?=

CFLAGS_ALL = -std=c11 -Wall -Wextra -Werror -g $(OPT) -I. -I/usr/include/libdwarf \
             -DMTOOL_VERSION=\"$(VERSION)\" $(CFLAGS)
LDLIBS_ALL = -lcapstone -lZydis -ldwarf -lnettle -lsqlite3 -lz -lm $(LDLIBS)
ifeq ($(SAN),1)
  CFLAGS_ALL += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDFLAGS    += -fsanitize=address,undefined
endif

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

LIB_SRCS := $(wildcard common/*.c) $(wildcard analyzer/*.c) $(wildcard rewriter/*.c) \
            $(wildcard costmodel/*.c) $(wildcard correlate/*.c) \
            $(wildcard profile/*.c) $(wildcard dataobj/*.c) $(wildcard sim/*.c) \
            $(wildcard store/*.c) \
            $(wildcard run/*.c) $(wildcard report/*.c)
UI_SRCS  := $(wildcard ui/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
UI_OBJS  := $(UI_SRCS:%.c=$(BUILD)/%.o)
DEPS     := $(LIB_OBJS:.o=.d) $(UI_OBJS:.o=.d)

.PHONY: all help test-build test test-full test-real bench fuzz install deps demo samples clean

all: $(BUILD)/mtool

help:
	@echo "make            build build/mtool"
	@echo "make deps       install the Debian packages mtool needs (root)"
	@echo "make demo       build, calibrate this machine, then profile a bundled sample (mtool run)"
	@echo "make test       unit and end-to-end tests (also under ASan+UBSan)"
	@echo "make test-full  longer suites: distribution binaries, bounded fuzzing"
	@echo "make test-real  pass 1 on real programs built from Debian sources, with their test suites;"
	@echo "                mtool sim against Cachegrind on two of them"
	@echo "make bench      benchmarks, printed as ratios against baselines"
	@echo "make fuzz       build the libFuzzer target (clang)"
	@echo "make install PREFIX=/usr/local"

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# The report's page is built in from its own files (report/assets.c).
$(BUILD)/report/assets.o: report/page.css report/page.js

# The runtime that lives inside instrumented programs is built freestanding
# into a flat blob (timer/Makefile) and linked into mtool as data.
RUNTIME_BLOB_OBJ := $(BUILD)/timer/runtime_blob.o
$(RUNTIME_BLOB_OBJ): FORCE
	@$(MAKE) -s -C timer OUT=$(abspath $(BUILD)/timer)
FORCE:

$(BUILD)/libmtool.a: $(LIB_OBJS) $(RUNTIME_BLOB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The kernels the cost model checks itself on at calibration (selfcheck/),
# compiled with the system cc at fixed flags and linked into mtool as data.
SELFCHECK_BLOB_OBJ := $(BUILD)/selfcheck/kernels_blob.o
$(SELFCHECK_BLOB_OBJ): FORCE
	@$(MAKE) -s -C selfcheck OUT=$(abspath $(BUILD)/selfcheck)

$(BUILD)/mtool: $(UI_OBJS) $(BUILD)/libmtool.a $(SELFCHECK_BLOB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $(UI_OBJS) $(SELFCHECK_BLOB_OBJ) $(BUILD)/libmtool.a $(LDLIBS_ALL)

deps:
	@sh .ci/install-deps.sh

# run calibrates this machine by itself when it has no profile (a few
# seconds, kept; refused on a machine too busy to measure, it predicts with
# the shipped profile of this CPU), where calibrate would stop the demo.
demo: all samples
	./$(BUILD)/mtool analyze --loops $(BUILD)/samples/matmul-gcc-O2
	./$(BUILD)/mtool run --runs 3 -o $(BUILD)/demo-run -- $(BUILD)/samples-pass2/memory-gcc-O2

samples:
	@$(MAKE) -s -C samples OUT=$(abspath $(BUILD)/samples) OUT_PASS2=$(abspath $(BUILD)/samples-pass2) \
	    OUT_SIM=$(abspath $(BUILD)/samples-sim) OUT_LIBS=$(abspath $(BUILD)/samples-libs) \
	    OUT_MPI=$(abspath $(BUILD)/samples-mpi)

# The tests run against an ASan+UBSan build of everything, in $(BUILD)/asan.
TEST_ENV = BUILD=$(BUILD) ASAN_BUILD=$(BUILD)/asan SAMPLES=$(BUILD)/samples \
           SAMPLES2=$(BUILD)/samples-pass2 SAMPLES_SIM=$(BUILD)/samples-sim \
           SAMPLES_LIBS=$(BUILD)/samples-libs SAMPLES_MPI=$(BUILD)/samples-mpi

test-build: all samples
	@$(MAKE) -s BUILD=$(BUILD)/asan SAN=1 OPT=-O1 $(BUILD)/asan/mtool
	@$(MAKE) -s -C tests BUILD=$(abspath $(BUILD)) ASAN_BUILD=$(abspath $(BUILD)/asan)

test: test-build
	@$(TEST_ENV) sh tests/run.sh

# Not a superset of `test` (CI runs both, one after the other).
test-full: test-build
	@$(TEST_ENV) sh tests/run-full.sh

# Pass 1 on real programs from Debian source packages (tests/realprog).
test-real: all
	@$(MAKE) -s -C tests BUILD=$(abspath $(BUILD)) ASAN_BUILD=$(abspath $(BUILD)/asan) normal
	@MTOOL=$(abspath $(BUILD)/mtool) CHECKER=$(abspath $(BUILD)/tests/check_counts) bash tests/realprog/run.sh
	@MTOOL=$(abspath $(BUILD)/mtool) bash tests/realprog/sim.sh

bench: all samples
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench sh bench/run.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench sh bench/counting.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench sh bench/startup.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench sh bench/history.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench sh bench/sim.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench SAMPLES2=$(BUILD)/samples-pass2 SAMPLES_SIM=$(BUILD)/samples-sim sh bench/trace.sh
	@$(MAKE) -s -C tests BUILD=$(abspath $(BUILD)) $(abspath $(BUILD))/tests/dump_timers
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench DUMP_TIMERS=$(BUILD)/tests/dump_timers sh bench/timers.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench python3 bench/costmodel/run.py
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench SAMPLES2=$(BUILD)/samples-pass2 sh bench/perturbation.sh
	@MTOOL=$(BUILD)/mtool BENCH_DIR=$(BUILD)/bench bash bench/libs.sh

fuzz:
	@$(MAKE) -s -C tests/fuzz

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/mtool $(DESTDIR)$(PREFIX)/bin/mtool

clean:
	rm -rf build

-include $(DEPS)
