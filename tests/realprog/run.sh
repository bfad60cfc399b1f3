#!/bin/bash
# tests/realprog/run.sh — pass 1 on real programs built from Debian source
# packages (`make test-real`).  For each program:
#   1. fetch its source (apt-get source), build it as Debian does (-O2 -g),
#      run its own test suite with the original executables: the baseline;
#   2. replace the executables with `mtool instrument --counts` copies, run
#      the suite again with MTOOL_OUT set: same exit status and the same
#      test results (normalized logs) are required;
#   3. merge the profiles of every process the suite ran (mtool count
#      --profiles) and show the summary;
#   4. run one command of the program under the callgrind oracle
#      (tests/oracle/count_check.sh): identical output, exact block counts,
#      and the coverage of executed blocks.
# Sources and builds are cached in $MTOOL_REALPROG_DIR (default
# /var/tmp/mtool-realprog); a second run rebuilds nothing.
#
#   tests/realprog/run.sh [--only PROG]...
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
MTOOL=${MTOOL:-$ROOT/build/mtool}
CHECKER=${CHECKER:-$ROOT/build/tests/check_counts}
WORK=${MTOOL_REALPROG_DIR:-/var/tmp/mtool-realprog}
PROGRAMS=(bzip2 gzip xz-utils gawk)
only=()
while [ $# -gt 0 ]; do
    case $1 in
    --only) only+=("$2"); shift 2 ;;
    *) echo "usage: $0 [--only PROG]..." >&2; exit 2 ;;
    esac
done
[ ${#only[@]} -gt 0 ] && PROGRAMS=("${only[@]}")
mkdir -p "$WORK"
failures=0

log() { echo "== $*" >&2; }

ensure_deb_src() {
    if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
        log "adding deb-src entries"
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            > /etc/apt/sources.list.d/mtool-deb-src.sources
        apt-get update -qq
    fi
    command -v dpkg-source > /dev/null || apt-get install -y -qq dpkg-dev
}

# fetch PKG: the unpacked source directory of PKG, cached.
fetch() {
    local pkg=$1 dir
    dir=$(ls -d "$WORK/$pkg/src/"*/ 2>/dev/null | head -1 || true)
    if [ -z "$dir" ]; then
        ensure_deb_src
        mkdir -p "$WORK/$pkg/src"
        (cd "$WORK/$pkg/src" && apt-get source -qq "$pkg" > /dev/null 2>&1)
        dir=$(ls -d "$WORK/$pkg/src/"*/ | head -1)
    fi
    echo "${dir%/}"
}

# Per program: build, the test command, the executables it tests, and how to
# normalize the suite's output into what must not change.
build_bzip2() { make -s -j2 CFLAGS="-O2 -g -D_FILE_OFFSET_BITS=64" bzip2 bzip2recover > /dev/null; }
check_bzip2() { make -s check 2>&1; }
exes_bzip2() { echo bzip2 bzip2recover; }
one_bzip2() { echo "./bzip2 -9 -c sample1.ref"; }

# Debian's patches leave autotools inputs newer than their outputs: make
# them older, or make would want to rerun automake.
settle_autotools() {
    find . -name '*.am' -o -name '*.m4' -o -name configure.ac | xargs touch -d '2000-01-01'
    find . -name Makefile.in -o -name configure -o -name config.h.in -o -name '*.in' | xargs touch
}
configure_once() { [ -f Makefile ] || { settle_autotools; ./configure -q CFLAGS="-O2 -g" "$@" > /dev/null; }; }

# Documentation is not built: makeinfo is not needed.
mk() { make -s MAKEINFO=true "$@"; }

build_gzip() { configure_once; mk -j2 > /dev/null 2>&1; }
check_gzip() { mk check 2>&1 | grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR|# )'; }
exes_gzip() { echo gzip; }
one_gzip() { echo "./gzip -9 -c ChangeLog"; }

build_xz-utils() { configure_once --disable-shared --disable-doc; mk -j2 > /dev/null 2>&1; }
check_xz-utils() { mk check 2>&1 | grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR|# )'; }
exes_xz-utils() { echo src/xz/xz src/xzdec/xzdec src/xzdec/lzmadec src/lzmainfo/lzmainfo; }
one_xz-utils() { echo "src/xz/xz -6 -c -T1 ChangeLog"; }

# Debian's source lacks the GFDL manual: build and test the program only.
build_gawk() { configure_once --without-readline --without-mpfr --disable-nls; mk -j2 gawk > /dev/null 2>&1; }
check_gawk() {
    mk -C test check 2>&1 | grep -vE '^(make|Making|gmake)|[0-9]+\.[0-9]+ ?s|seconds' | grep -vE '^ *$' |
        sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ [+-][0-9]{4}/DATE/'
}
exes_gawk() { echo gawk; }
one_gawk() { echo "./gawk -f test/fnarydel.awk"; }

# swap_in SRC: replace each executable by its instrumented copy (original
# kept as NAME.mtool-orig); swap_out restores them.
swap_in() {
    local e
    for e in $(exes_$prog); do
        [ -f "$e.mtool-orig" ] || cp -p "$e" "$e.mtool-orig"
        "$MTOOL" instrument --counts "$e.mtool-orig" -o "$e.mtool-inst" > "$out/instrument-$(basename "$e").log" 2>&1
        cp -p "$e.mtool-inst" "$e"
    done
}
swap_out() {
    local e
    for e in $(exes_$prog); do
        [ -f "$e.mtool-orig" ] && cp -p "$e.mtool-orig" "$e"
    done
    return 0
}

run_one() {
    prog=$1
    out=$WORK/$prog/results
    rm -rf "$out"
    mkdir -p "$out/profiles"
    local src
    src=$(fetch "$prog")
    cd "$src"
    swap_out
    log "$prog: building in $src"
    if ! "build_$prog"; then echo "FAIL $prog: build failed"; return 1; fi
    log "$prog: test suite, original"
    set +e
    "check_$prog" > "$out/check-orig.txt"; local rc_orig=$?
    swap_in
    log "$prog: test suite, instrumented"
    MTOOL_OUT=$out/profiles "check_$prog" > "$out/check-inst.txt"; local rc_inst=$?
    swap_out
    set -e
    local nprof
    nprof=$(ls "$out/profiles" | wc -l)
    if [ $rc_orig -ne $rc_inst ] || ! diff -u "$out/check-orig.txt" "$out/check-inst.txt" > "$out/check.diff"; then
        echo "FAIL $prog: test suite differs (status $rc_orig vs $rc_inst; $out/check.diff)"
        return 1
    fi
    cat "$out"/instrument-*.log | grep -E '^instrumented' | sed "s/^/   $prog: /"
    # The merge of every process of the suite, per executable.
    local e merged=""
    for e in $(exes_$prog); do
        XDG_CACHE_HOME=$WORK/cache "$MTOOL" count --profiles "$out/profiles" -o "$out/run-$(basename "$e")" \
            -- "$e.mtool-orig" > "$out/merge-$(basename "$e").txt" 2>&1 || true
        merged="$merged $(head -1 "$out/merge-$(basename "$e").txt" | sed 's/.*: \([0-9]* process[es]*, [0-9]* threads*\).*/\1/') ($(basename "$e"))"
    done
    echo "   $prog: suite ran with $nprof profiles;$merged"
    # One command of the program against the callgrind oracle.
    local line
    line=$(bash "$ROOT/tests/oracle/count_check.sh" "$MTOOL" "$CHECKER" "$out/oracle" \
        $(one_$prog | sed "s|^\([^ ]*\)|$src/\1.mtool-orig|") 2>&1 | grep -E '^(not ok|ok|# coverage)' | tr '\n' ' ')
    echo "   $prog oracle: $line"
    if echo "$line" | grep -q 'not ok'; then
        echo "FAIL $prog: oracle"
        return 1
    fi
    echo "PASS $prog: suite status $rc_inst as the original's, identical results"
}

for p in "${PROGRAMS[@]}"; do
    if ! (run_one "$p"); then
        failures=$((failures + 1))
    fi
done
echo "$(( ${#PROGRAMS[@]} - failures )) of ${#PROGRAMS[@]} real programs passed"
[ $failures -eq 0 ]
