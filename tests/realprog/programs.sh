# tests/realprog/programs.sh — the table of real programs, sourced by run.sh.
# shellcheck shell=bash disable=SC2034
#
# Each program P is a Debian source package and defines, run in its unpacked
# source directory:
#   deps_P     Debian packages its build and suite need (beyond gcc/make)
#   build_P    build it as Debian does (-O2 -g); make is incremental, so a
#              second run rebuilds nothing
#   suite_P    run its own test suite, all output to stdout; its exit status
#              is the suite's
#   norm_P     stdin: the suite's output; stdout: what must not change between
#              the original and the instrumented run (timings, dates, temp
#              names stripped; lines sorted where tests run in parallel)
#   setup_P    (optional) system setup the suite needs, as root, once
#   logs_P     (optional) stdout: the suite's per-test logs, normalized
#   exes_P     the executables the suite runs (paths in the build tree),
#              the ones replaced by instrumented copies
#   one_P      one command of the suite (EXE ARGS, EXE as in exes_P), for the
#              callgrind oracle and --callgrind
#   no_oracle_P (optional) why P's block counts cannot equal callgrind's (they
#              change from run to run): its command is then only checked to
#              behave the same and to write profiles that merge
#   pass2_P    (optional) one command for pass 2 (`mtool run`), INPUT standing
#              for 4 MB of the package's own C sources; pass2_timed_P: the
#              procedures that must hold a timed m-object in its report
#   static_P   (optional) build a static copy (-O2 -g, -static: libc's
#              procedures are in the executable, so mtool sim traces them)
#              in the current directory, a second unpack of P's source
#              under $MTOOL_REALPROG_DIR/P/static; prints the executable's
#              path relative to it.  sim.sh compares mtool sim with
#              Cachegrind on it, running sim_P: its command (EXE ARGS),
#              compressing the text on its standard input
#   package_P, lib_P (a library's suite): P is a shared library, lib_P its
#              path in the build tree, of Debian source package package_P,
#              built in a second unpack of its source ($MTOOL_REALPROG_DIR/
#              PKG/shared); exes_P are the executables that load it (libtool
#              wrappers resolved to .libs/), each replaced by its counting
#              copy in the set of the library's copy (`mtool instrument
#              --libs`) and run with the environment that loads it; one_P's
#              library block counts are compared with callgrind's
#   minutes_P  (optional) how long fetching, building and both suite runs may
#              take on a fresh 2-core machine, at most (default 10): with a
#              deadline (MTOOL_REALPROG_DEADLINE), P is not started unless it
#              fits (figures measured on the Xeon family 6 model 207, 2 vCPUs,
#              under load, rounded up)
# $JOBS is the -j of run.sh (make jobs, default 2).
# Order of the default run (first to last).
PROGRAMS_DEFAULT=(bzip2 gzip xz-utils liblzma libbz2 gawk sed tcl8.6 git cppcheck)

# --- shared helpers ---------------------------------------------------------

# Debian's patches leave autotools inputs newer than their outputs: make them
# older, or make would want to rerun automake.
settle_autotools() {
    find . \( -name '*.am' -o -name '*.m4' -o -name configure.ac \) -print0 | xargs -0 -r touch -d '2000-01-01'
    find . \( -name Makefile.in -o -name configure -o -name config.h.in -o -name '*.in' \) -print0 | xargs -0 -r touch
}
configure_once() {
    [ -f Makefile ] && [ -f .mtool-configured ] && return 0
    settle_autotools
    ./configure -q CFLAGS="-O2 -g" "$@" > .mtool-configure.log 2>&1 || { tail -20 .mtool-configure.log >&2; return 1; }
    touch .mtool-configured
}
# Documentation is not built: makeinfo is not needed.
mk() { make -s MAKEINFO=true "$@"; }

# The result lines of an automake test harness, sorted (tests run in parallel).
norm_automake() {
    grep -aE '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR):|^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR)' | sort
}
# The per-test logs of an automake harness in DIR (the output of every test
# script; run with VERBOSE= so that gnulib's init.sh does not trace them with
# set -x, whose lines interleave at random), with temporary names, process
# ids, dates and timings replaced.
norm_logs() {
    local dir=$1 f
    for f in $(ls "$dir"/*.log 2>/dev/null | sort); do
        case $f in */test-suite.log) continue ;; esac
        echo "=== ${f##*/}"
        sed -E -e 's/(gt-[A-Za-z0-9_+-]*)\.[A-Za-z0-9]{4}/\1.XXXX/g' \
            -e 's/(tmp|Tmp|TMP)[._-]?[A-Za-z0-9]{6,}/\1XXXXXX/g' \
            -e 's/[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}(:[0-9]{2})?( [0-9]{4})?/DATE/g' \
            -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.]+( ?[+-][0-9]{4})?/DATE/g' \
            -e 's/[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)? ?(s|sec|seconds|ms)\b/TIME/g' \
            -e 's/[0-9.]+ [kMG]?B\/s/RATE/g' \
            -e 's/\b([a-z][a-z0-9]*)-[0-9]{4,7}\b/\1-PID/g' "$f"
    done
}

# --- bzip2: its Makefile's `make check` (compress and decompress the samples)
deps_bzip2() { :; }
build_bzip2() { make -s -j"$JOBS" CFLAGS="-O2 -g -D_FILE_OFFSET_BITS=64" bzip2 bzip2recover > /dev/null; }
suite_bzip2() { make -s check 2>&1; }
norm_bzip2() { cat; }
exes_bzip2() { echo bzip2 bzip2recover; }
one_bzip2() { echo "./bzip2 -9 -c sample1.ref"; }
# Debian links bzip2 with libbz2.so: the static copy links libbz2.a.
static_bzip2() {
    make -s -j"$JOBS" CFLAGS="-O2 -g -D_FILE_OFFSET_BITS=64" libbz2.a bzip2.o > /dev/null &&
        gcc -static -O2 -g -o bzip2 bzip2.o libbz2.a && echo bzip2
}
sim_bzip2() { echo "bzip2 -c"; }

# --- gzip: `make check`, 27 shell tests that run gzip (and gunzip, zcat,
# zgrep... scripts that exec it) some 350 times
deps_gzip() { :; }
build_gzip() { configure_once; mk -j"$JOBS" > /dev/null 2>&1; }
suite_gzip() { mk -j"$JOBS" check VERBOSE= 2>&1; }
norm_gzip() { norm_automake; }
logs_gzip() { norm_logs tests; }
exes_gzip() { echo gzip; }
one_gzip() { echo "./gzip -9 -c ChangeLog"; }
pass2_gzip() { echo "./gzip -9 -c INPUT"; }
pass2_timed_gzip() { echo "compress_block"; }
static_gzip() { LDFLAGS=-static build_gzip && echo gzip; }
sim_gzip() { echo "gzip -c"; }

# --- xz-utils: `make check`: the liblzma unit tests (linked statically, not
# replaced) and the scripts that run xz and xzdec on the test files
deps_xz-utils() { :; }
build_xz-utils() { configure_once --disable-shared --disable-doc; mk -j"$JOBS" > /dev/null 2>&1; }
suite_xz-utils() { mk -j"$JOBS" check 2>&1; }
norm_xz-utils() { norm_automake; }
logs_xz-utils() { norm_logs tests; }
exes_xz-utils() { echo src/xz/xz src/xzdec/xzdec src/xzdec/lzmadec src/lzmainfo/lzmainfo; }
one_xz-utils() { echo "src/xz/xz -6 -c -T1 ChangeLog"; }
# The encoder's loop calls the match finder through pointers: timed only
# through pass 1's dynamic call graph.
pass2_xz-utils() { echo "src/xz/xz -6 -c -T1 INPUT"; }
pass2_timed_xz-utils() { echo "lzma_lzma_encode lzma_mf_bt4_skip"; }

# --- liblzma: xz-utils built with liblzma shared (no static library: every
# program links the .so), its `make check` as xz-utils' above: the liblzma
# unit tests (tests/test_*) and the scripts running xz, xzdec, lzmadec on
# the test files, every one of these loading the counting liblzma.  The
# test programs are check_PROGRAMS: built here, `make check` with no TESTS.
package_liblzma() { echo xz-utils; }
lib_liblzma() { echo src/liblzma/.libs/liblzma.so.5; }
deps_liblzma() { :; }
build_liblzma() {
    configure_once --disable-static --disable-doc && mk -j"$JOBS" > /dev/null 2>&1 &&
        mk -j"$JOBS" -C tests check TESTS= > /dev/null 2>&1
}
suite_liblzma() { suite_xz-utils; }
norm_liblzma() { norm_automake; }
logs_liblzma() { norm_logs tests; }
exes_liblzma() {
    echo src/xz/xz src/xzdec/xzdec src/xzdec/lzmadec src/lzmainfo/lzmainfo
    ls tests/.libs/ | grep '^test_' | sed 's|^|tests/|'
}
one_liblzma() { echo "src/xz/xz -6 -c -T1 ChangeLog"; }
# A first run (second unpack, configure, build, both suites, oracle) took
# about 9.5 minutes on AMD EPYC Zen 3 (family 25 model 1), 2 vCPUs at load 16.
minutes_liblzma() { echo 12; }

# --- libbz2: bzip2's Makefile-libbz2_so (Debian's way to libbz2.so.1.0)
# links bzip2-shared against it; that is the ./bzip2 of the Makefile's
# `make check` (its 6 runs set LD_LIBRARY_PATH=. themselves), which make is
# told not to rebuild (-o bzip2: its rule would link libbz2.a in).
package_libbz2() { echo bzip2; }
lib_libbz2() { echo libbz2.so.1.0; }
deps_libbz2() { :; }
build_libbz2() {
    make -s -f Makefile-libbz2_so CFLAGS="-O2 -g -fpic -fPIC -Wall -Winline -D_FILE_OFFSET_BITS=64" > /dev/null &&
        { cmp -s bzip2-shared bzip2 || cp -p bzip2-shared bzip2; }
}
suite_libbz2() { make -s -o bzip2 check 2>&1; }
norm_libbz2() { cat; }
exes_libbz2() { echo bzip2; }
one_libbz2() { echo "./bzip2 -9 -c sample1.ref"; }

# --- gawk: test/Makefile's check, some 900 awk programs whose outputs the
# suite compares itself.  Debian's source lacks the GFDL manual: build and
# test the program only.  Locales: setup_gawk.
deps_gawk() { echo locales; }
# support/libsupport.a has no rule in the top Makefile: build it first.
build_gawk() {
    configure_once --without-readline --without-mpfr --disable-nls
    mk -j"$JOBS" -C support > /dev/null 2>&1 && mk -j"$JOBS" gawk > /dev/null 2>&1
}
suite_gawk() { mk -C test check 2>&1; }
norm_gawk() {
    grep -avE '^(make|Making|gmake)|[0-9]+\.[0-9]+ ?s|seconds' | grep -avE '^ *$' |
        sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ [+-][0-9]{4}/DATE/'
}
exes_gawk() { echo gawk; }
one_gawk() { echo "./gawk -f test/fnarydel.awk"; }

# --- sed: `make check` of testsuite/ (the sed binary on some 150 scripts;
# gnulib's own unit tests are not run: they do not exercise sed).
# panic-tests.sh fails when run as root (a read-only directory does not stop
# root), in both runs.
deps_sed() { echo perl; }
build_sed() { configure_once --without-selinux --disable-acl --disable-nls; mk -j"$JOBS" sed/sed > /dev/null 2>&1; }
suite_sed() { mk -j"$JOBS" check SUBDIRS=. VERBOSE= 2>&1; }
norm_sed() { norm_automake; }
logs_sed() { norm_logs testsuite; }
exes_sed() { echo sed/sed; }
one_sed() { echo "sed/sed -n -e s/a/b/gp -e /^[0-9]/d ChangeLog"; }
# --- tcl8.6: the interpreter (its bytecode engine is one big switch: jump
# tables) on some 20 files of tests/, each run by its own tcltest process
# (tcltest = tclsh + the test commands, libtcl linked in: --disable-shared),
# every test's result printed (-verbose bps).  Sockets, clocks, timers and
# file-system tests are left out: they depend on the machine and its load.
# Configured as Debian does, its script library in /usr/share/tcltk/tcl8.6
# (libtcl8.6, the same version): the suite sets TCL_LIBRARY to the source's
# library/, the oracle's command (whose copy of tcltest runs elsewhere) finds
# Debian's.
deps_tcl8.6() { echo zlib1g-dev libtcl8.6; }
build_tcl8.6() {
    (cd unix && TCL_LIBRARY=/usr/share/tcltk/tcl8.6 configure_once --prefix=/usr --disable-shared &&
        mk -j"$JOBS" tcltest > /dev/null 2>&1)
}
TCL_TESTS="basic.test compile.test execute.test expr.test string.test list.test lsort.test regexp.test
 dict.test format.test scan.test proc.test namespace.test info.test switch.test upvar.test binary.test
 coroutine.test nre.test oo.test"
suite_tcl8.6() { mk -C unix test-tcl TESTFLAGS="-verbose bps -file '${TCL_TESTS//$'\n'/}'" 2>&1; }
norm_tcl8.6() { grep -avE '^Tests (began|ended) at ' | grep -av 'TESTFLAGS'; }
exes_tcl8.6() { echo unix/tcltest; }
minutes_tcl8.6() { echo 12; }
one_tcl8.6() { echo "unix/tcltest tests/list.test"; }
# Tcl hashes pointers (one-word keys: chain walks depend on where malloc put
# things) and compares string buffers' addresses: two native runs of
# tcltest, even on a missing script, differ in 12 to 21 blocks of
# CreateHashEntry, Tcl_DeleteHashEntry, RebuildTable, AppendUtfToUtfRep.
no_oracle_tcl8.6() { echo "tcltest's block counts depend on addresses (pointer-keyed hash tables)"; }

# --- git: a few dozen of t/'s test scripts, each thousands of short git
# processes (the builtins are hard links to git: replacing git's content
# replaces them all) and test-tool helpers.  Built without curl, gettext,
# Tcl/Tk and Python (config.mak), which these scripts do not use.  Scripts
# run $JOBS at a time, each into its own file; their TAP lines are printed in
# the list's order.
deps_git() { echo zlib1g-dev perl; }
build_git() {
    [ -f config.mak ] || printf '%s\n' 'CFLAGS = -O2 -g' NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PYTHON=1 > config.mak
    make -s -j"$JOBS" all > /dev/null 2>&1
}
GIT_TESTS="t0000-basic t0001-init t0003-attributes t0008-ignores t1300-config t1400-update-ref
 t1500-rev-parse t2000-conflict-when-checking-files-out t3200-branch t3400-rebase t3903-stash
 t4001-diff-rename t4013-diff-various t5300-pack-object t6000-rev-list-misc t7001-mv t7004-tag t7600-merge"
suite_git() {
    local d=t/test-results/mtool s rc=0
    rm -rf "$d" && mkdir -p "$d"
    # shellcheck disable=SC2086
    printf '%s\n' $GIT_TESTS | xargs -P "$JOBS" -I{} sh -c \
        'cd t && sh ./{}.sh > test-results/mtool/{}.out 2>&1; echo $? > test-results/mtool/{}.status'
    for s in $GIT_TESTS; do
        echo "=== $s: exit $(cat "$d/$s.status")"
        cat "$d/$s.out"
        [ "$(cat "$d/$s.status")" = 0 ] || rc=1
    done
    return $rc
}
norm_git() { cat; }
exes_git() { echo git t/helper/test-tool; }
minutes_git() { echo 25; }
one_git() { echo "git diff --no-index --stat -p Documentation/RelNotes/2.38.0.txt Documentation/RelNotes/2.39.0.txt"; }

# --- cppcheck (C++): its unit tests (testrunner: some 4200 tests in one
# process, its forking executor's included), then its own cppcheck binary on
# the test files of its library configurations as test/cfg/runtests.sh runs
# it (each file's expected findings are inline suppressions: --error-exitcode
# fails on any other; its compiler syntax checks are left out) and on its
# samples.  Built with its plain Makefile, -O2 -g, without the _GLIBCXX_DEBUG
# checks it adds by default (Debian builds without them), and Debian's
# FILESDIR: the library configurations (cfg/) of Debian's cppcheck, the same
# version, are found by any copy of the binary (the oracle's too).
deps_cppcheck() { echo g++ cppcheck; }
build_cppcheck() {
    make -s -j"$JOBS" CXXFLAGS="-O2 -g -std=c++11 -pipe" FILESDIR=/usr/lib/x86_64-linux-gnu/cppcheck \
        testrunner cppcheck > /dev/null 2>&1
}
# test/cfg file: the options runtests.sh gives it.
CPPCHECK_CFG_TESTS="std.c:--inconclusive std.cpp:--inconclusive posix.c:--library=posix
 gnu.c:--library=posix,gnu bsd.c:--library=bsd"
suite_cppcheck() {
    local rc=0 t
    ./testrunner 2>&1 || rc=1
    for t in $CPPCHECK_CFG_TESTS; do
        echo "=== test/cfg/${t%%:*}"
        ./cppcheck --check-library --platform=unix64 --enable=style --error-exitcode=1 "${t#*:}" \
            --suppress=missingIncludeSystem --inline-suppr --template='{file}:{line}:{severity}:{id}:{message}' \
            "test/cfg/${t%%:*}" 2>&1 || rc=1
    done
    echo "=== samples"
    ./cppcheck -q --enable=all --inconclusive --suppress=missingIncludeSystem \
        --template='{file}:{line}:{severity}:{id}:{message}' samples 2>&1 | sort
    return $rc
}
norm_cppcheck() { cat; }
exes_cppcheck() { echo testrunner cppcheck; }
minutes_cppcheck() { echo 45; }
one_cppcheck() { echo "cppcheck -q --enable=all --inconclusive --template={file}:{line}:{id} samples"; }

# gawk's charset tests run only with these four locales, and three basic
# tests (commas, mbstr1, mbstr2) fail without en_US.UTF-8.
GAWK_LOCALES="en_US fr_FR ru_RU ja_JP"
setup_gawk() {
    local l missing=0
    for l in $GAWK_LOCALES; do
        locale -a 2>/dev/null | grep -qix "$l.utf8" || missing=1
    done
    [ $missing -eq 0 ] && return 0
    for l in $GAWK_LOCALES; do
        sed -i "s/^# *\($l.UTF-8 UTF-8\)/\1/" /etc/locale.gen
    done
    locale-gen > /dev/null 2>&1
}
