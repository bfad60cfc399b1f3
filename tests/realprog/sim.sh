#!/bin/bash
# tests/realprog/sim.sh — `mtool sim` against Cachegrind on real programs
# (issue 15; run by `make test-real` after run.sh; docs/SIMULATOR.md,
# "Against Cachegrind on real programs").  For each program of programs.sh
# with a static_P (gzip, bzip2):
#   1. a static copy (libc's procedures traced too), built from a second
#      unpack of its Debian source in $MTOOL_REALPROG_DIR/PROG/static (the
#      source fetched as run.sh does, cached);
#   2. the layout controls (below), measured and set;
#   3. its command sim_P compressing INPUT (3 MB of gzip's C sources and
#      texts) under `mtool sim --cachegrind --json` and under `valgrind
#      --tool=cachegrind --cache-sim=yes` with the same geometry: both
#      outputs are the program's own, and D1 and LL data misses agree within
#      1% in total and in every procedure with at least 2000 misses (LEAST,
#      below; tests/cachegrind_check.py --data --totals --min).
#
# Layout controls (docs/SIMULATOR.md says why each is legitimate): both
# runs get the same arguments and environment (env -i, a fixed list; Debian's
# valgrind wrapper script bypassed), ASLR off (setarch -R), and
# GLIBC_TUNABLES giving glibc the same code paths under Valgrind's CPU
# (AVX-512 masked, the copy thresholds pinned to what glibc computes under
# Valgrind, every malloc'd block from the brk heap).  Misses depend on
# addresses only modulo the span of a level's sets (size / ways: 4 KiB for
# D1, 512 KiB for LL here), and Valgrind puts the client's stack and brk
# heap elsewhere: each run's initial stack pointer, brk base and the bytes
# glibc's start-up allocates before the program's first block (a heap
# probe) are measured, and the runs shifted until both agree modulo the
# largest span: the stack by padding one run's environment (MTOOL_PAD1..4),
# the heap by glibc's rtld.optional_static_tls (the static TLS block comes
# first from the brk; 64-byte steps) and the length of the directory
# Valgrind runs the executable from (glibc keeps a copy of its name; 16-byte
# steps).  The reference stream is the same; its addresses the same modulo
# every span.
#
#   MTOOL=build/mtool bash tests/realprog/sim.sh [--only PROG]... [-j N]
# Environment: MTOOL (default build/mtool), MTOOL_REALPROG_DIR.
# Prints "ok - ..." / "not ok - ..." lines and "N passed, M failed"; exits
# 0 with a SKIP line when valgrind, setarch or the sources are missing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MTOOL=${MTOOL:-$ROOT/build/mtool}
WORK=${MTOOL_REALPROG_DIR:-/var/tmp/mtool-realprog}
# shellcheck source=programs.sh
. "$HERE/programs.sh"
# shellcheck source=packages.sh
. "$HERE/packages.sh"
# shellcheck source=../lib.sh
. "$ROOT/tests/lib.sh"

only=()
JOBS=2 # the make jobs of programs.sh's builds
export JOBS
while [ $# -gt 0 ]; do
    case $1 in
    --only) [ $# -ge 2 ] || { echo "sim.sh: --only wants a program" >&2; exit 2; }; only+=("$2"); shift 2 ;;
    -j) [ $# -ge 2 ] || { echo "sim.sh: -j wants a number" >&2; exit 2; }; JOBS=$2; shift 2 ;;
    *) echo "sim.sh: unknown argument: $1 (usage: sim.sh [--only PROG]... [-j N])" >&2; exit 2 ;;
    esac
done
PROGRAMS=()
for p in "${PROGRAMS_DEFAULT[@]}"; do
    if declare -F "static_$p" > /dev/null; then PROGRAMS+=("$p"); fi
done
[ ${#only[@]} -eq 0 ] || PROGRAMS=("${only[@]}")
for p in "${PROGRAMS[@]}"; do
    declare -F "static_$p" > /dev/null || { echo "sim.sh: $p has no static_$p in programs.sh" >&2; exit 2; }
done
[ -x "$MTOOL" ] || { echo "sim.sh: no mtool at $MTOOL (make build/mtool, or set MTOOL)" >&2; exit 2; }
for tool in valgrind setarch python3; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "SKIP mtool sim against Cachegrind on real programs: $tool is not installed"
        exit 0
    fi
done

# Debian's valgrind is a shell script that adds variables and reorders the
# environment; valgrind.bin, its launcher, passes ours on as it is (adding
# LD_PRELOAD at the end).
VALGRIND=$(command -v valgrind.bin || command -v valgrind)
# shellcheck disable=SC2054 # commas inside each option
GEOMETRY=(--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64)
# The largest span of a level's sets (size / ways); every level's divides it
# (powers of two).
SPAN=0
for g in "${GEOMETRY[@]}"; do
    IFS=, read -r size ways _ <<< "${g#*=}"
    [ $((size / ways)) -le $SPAN ] || SPAN=$((size / ways))
done
PAD_VARS=4 PAD_MAX=120000 # below the kernel's 128 KiB a string
[ $((SPAN / 2)) -le $((PAD_VARS * PAD_MAX)) ] || { echo "sim.sh: a span of $SPAN bytes is more than padding can shift" >&2; exit 2; }
# Procedures compared: those with at least LEAST misses at a level.  1% of
# it must exceed what the start-up work only one run does costs a
# procedure: the native run has a vDSO (Valgrind gives its client none),
# and glibc's link map for it, 1225 bytes zeroed by calloc, is 19-20 misses
# in memset.
LEAST=2000
# The same glibc code paths under Valgrind's CPU and this one; the
# thresholds are those glibc computes under Valgrind 3.19 (ld.so
# --list-tunables run under it).
# glibc 2.36's hwcaps parser reads on past the end of its value, through
# the environment strings that follow GLIBC_TUNABLES, to the first empty
# one: hwcaps comes last in it, and GLIBC_TUNABLES last in the environment,
# or it reads the padding (kilobytes, in one run only).
TUNABLES="glibc.cpu.x86_data_cache_size=32768:glibc.cpu.x86_shared_cache_size=8388608"
TUNABLES+=":glibc.cpu.x86_non_temporal_threshold=2097152:glibc.cpu.x86_rep_movsb_threshold=8192"
TUNABLES+=":glibc.cpu.x86_rep_stosb_threshold=2048:glibc.malloc.mmap_threshold=33554432"
HWCAPS="glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"

# make_input FILE: 3 MB of gzip's C sources and texts, in name order.
make_input() {
    local src
    src=$(fetch gzip) || return 1
    (cd "$src" && { find . -name '*.[ch]' -type f; ls ChangeLog* NEWS doc/*.texi; } | LC_ALL=C sort |
        xargs cat) > "$1.all"
    head -c 3000000 "$1.all" > "$1.tmp" && rm -f "$1.all"
    [ "$(wc -c < "$1.tmp")" -eq 3000000 ] && mv "$1.tmp" "$1"
}

# The environment of both runs (mtool's own directories included: the
# program sees them in both), then the per-run part: GLIBC_TUNABLES with
# its static TLS size and the padding.
base_env() {
    echo "PATH=/usr/bin:/bin" "LC_ALL=C" "TMPDIR=$D/tmp" "XDG_CACHE_HOME=$D/cache" \
        "XDG_CONFIG_HOME=$D/config" "MTOOL_HISTORY=$D/history.db"
}
run_env() { # TLS PAD: prints the variables, one a line
    local tls=$1 pad=$2 i n
    for ((i = 1; i <= PAD_VARS; i++)); do
        n=$((pad > PAD_MAX ? PAD_MAX : pad))
        pad=$((pad - n))
        printf 'MTOOL_PAD%d=%*s\n' "$i" "$n" ''
    done
    base_env | tr ' ' '\n'
    echo "GLIBC_TUNABLES=$TUNABLES:glibc.rtld.optional_static_tls=$tls:$HWCAPS"
}

# The two runs' commands, in the environment given as a file of lines.
# Valgrind runs a copy of the executable from $(vg_dir) (see align_layouts).
vg_dir() { printf '%s/vg%*s' "$D" "$VG_DIR_EXTRA" '' | tr ' ' x; }
sim_cmd() { # ENVFILE OUT_JSON [EXE]: the traced run of CMD (or of EXE alone)
    local -a vars
    mapfile -t vars < "$1"
    SIM=(env -i "${vars[@]}" setarch -R "$MTOOL" sim --cachegrind "${GEOMETRY[@]}" --json --no-store
        -o "$2" -- "${3:-${CMD[0]}}")
    [ $# -gt 2 ] || SIM+=("${CMD[@]:1}")
}
cg_cmd() { # ENVFILE CG_OUT [VALGRIND OPTIONS]
    local -a vars
    mapfile -t vars < "$1"
    CG=(env -i "${vars[@]}" setarch -R "$VALGRIND" "${@:3}" --tool=cachegrind --cache-sim=yes "${GEOMETRY[@]}"
        --cachegrind-out-file="$2" "$(vg_dir)/${CMD[0]##*/}" "${CMD[@]:1}")
}

# measure_native ENVFILE: "SP BRK HEAP" of the traced copy: SP and BRK read
# from /proc while it waits on an empty pipe (its startstack is the stack
# pointer its entry point receives, start_brk its brk base), HEAP what the
# heap probe prints, traced the same way.
measure_native() {
    local fifo=$D/probe.fifo pid c exe st="" i heap
    rm -f "$fifo" && mkfifo "$fifo"
    exec 8<> "$fifo"
    sim_cmd "$1" "$D/probe.json"
    "${SIM[@]}" < "$fifo" > /dev/null 2> "$D/probe.err" 8>&- &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        for c in $(cat /proc/$pid/task/*/children 2> /dev/null); do
            exe=$(readlink "/proc/$c/exe" 2> /dev/null) || continue
            [ "${exe##*/}" = "${CMD[0]##*/}" ] || continue
            st=$(cat "/proc/$c/stat" 2> /dev/null) || st=""
            [ -z "$st" ] || break
        done
        [ -z "$st" ] || break
        sleep 0.1
    done
    exec 8>&-
    wait $pid || true
    rm -f "$fifo"
    [ -n "$st" ] || { echo "the traced copy was not seen running ($D/probe.err)" >&2; return 1; }
    sim_cmd "$1" "$D/probe-heap.json" "$D/heapprobe"
    heap=$("${SIM[@]}" 2> "$D/probe-heap.err") || { echo "the heap probe failed ($D/probe-heap.err)" >&2; return 1; }
    local -a f
    read -r -a f <<< "${st##*) }" # fields from the 3rd: startstack is the 28th, start_brk the 47th
    echo "${f[25]} ${f[44]} $heap"
}
# measure_valgrind ENVFILE: "SP BRK HEAP" of the client under Valgrind: SP
# from its debug log, BRK from its trace of the client's first brk(0), HEAP
# what the heap probe prints under it.
measure_valgrind() {
    cg_cmd "$1" /dev/null -d -d --trace-syscalls=yes
    "${CG[@]}" < /dev/null > /dev/null 2> "$D/probe-vg.log" || true
    local sp brk heap
    sp=$(sed -nE 's/.*Client info: initial_SP=(0x[0-9A-Fa-f]+).*/\1/p' "$D/probe-vg.log" | head -1)
    brk=$(sed -nE 's/.*sys_brk \( 0x0 \) --> \[pre-success\] Success\((0x[0-9A-Fa-f]+)\).*/\1/p' "$D/probe-vg.log" | head -1)
    [ -n "$sp" ] && [ -n "$brk" ] || { echo "no initial_SP or brk in $D/probe-vg.log" >&2; return 1; }
    local -a vars
    mapfile -t vars < "$1"
    heap=$(env -i "${vars[@]}" setarch -R "$VALGRIND" -q --tool=cachegrind --cache-sim=yes "${GEOMETRY[@]}" \
        --cachegrind-out-file=/dev/null "$(vg_dir)/heapprobe" 2> "$D/probe-heap-vg.err") ||
        { echo "the heap probe failed under Valgrind ($D/probe-heap-vg.err)" >&2; return 1; }
    echo "$((sp)) $((brk)) $heap"
}

# align_layouts: sets TLS_N TLS_V PAD_N PAD_V (the native run's and
# Valgrind's static TLS size and padding) and VG_DIR_EXTRA so that both
# runs' stack pointers at entry, and the program's heap blocks, agree modulo
# SPAN; each shift goes to the run that needs the smaller one.  The heap
# blocks lie at brk + static TLS + what glibc's start-up allocated (the
# probe's difference between the runs); the TLS size moves them by
# multiples of 64 bytes, the length of the name of the directory Valgrind
# runs the executable from (glibc's start-up keeps a copy of it: its
# "origin") by multiples of 16.  Sets LAYOUT (the figures, for the report).
align_layouts() {
    TLS_N=512 TLS_V=512 PAD_N=0 PAD_V=0 VG_DIR_EXTRA=0
    local m sp_n brk_n heap_n sp_v brk_v heap_v dh ds
    cc -O2 -static -o "$D/heapprobe" "$HERE/heapprobe.c" || return 1
    for _ in 1 2 3 4 5 6; do
        mkdir -p "$(vg_dir)"
        cp -p "${CMD[0]}" "$D/heapprobe" "$(vg_dir)/"
        run_env $TLS_N $PAD_N > "$D/env.native"
        run_env $TLS_V $PAD_V > "$D/env.valgrind"
        m=$(measure_native "$D/env.native") || return 1
        read -r sp_n brk_n heap_n <<< "$m"
        m=$(measure_valgrind "$D/env.valgrind") || return 1
        read -r sp_v brk_v heap_v <<< "$m"
        dh=$((((brk_v + TLS_V - brk_n - TLS_N - (heap_n - heap_v)) % SPAN + SPAN) % SPAN))
        ds=$((((sp_n - sp_v) % SPAN + SPAN) % SPAN))
        LAYOUT=$(printf 'stack 0x%x (padding %d) and 0x%x under Valgrind (padding %d); brk 0x%x (static TLS %d) and 0x%x (%d), start-up allocations %+d bytes natively (Valgrind'"'"'s directory +%d)' \
            "$sp_n" "$PAD_N" "$sp_v" "$PAD_V" "$brk_n" "$TLS_N" "$brk_v" "$TLS_V" $((heap_n - heap_v)) "$VG_DIR_EXTRA")
        [ $dh -ne 0 ] || [ $ds -ne 0 ] || return 0
        if [ $((dh % 64)) -ne 0 ]; then
            VG_DIR_EXTRA=$((VG_DIR_EXTRA + 64 - dh % 64))
            dh=$(((dh + 64 - dh % 64) % SPAN))
        fi
        if [ $dh -le $((SPAN / 2)) ]; then TLS_N=$((TLS_N + dh)); else TLS_V=$((TLS_V + SPAN - dh)); fi
        # The run whose stack is higher (modulo SPAN) goes down.
        if [ $ds -le $((SPAN / 2)) ]; then PAD_N=$((PAD_N + ds)); else PAD_V=$((PAD_V + SPAN - ds)); fi
    done
    echo "the layouts do not converge: $LAYOUT" >&2
    return 1
}

# one PROG: static build, controls, both runs, comparison.
one() {
    local prog=$1 src static exe
    D=$WORK/$prog/sim
    rm -rf "$D" && mkdir -p "$D/tmp" "$D/cache" "$D/config"
    if ! src=$(fetch "$prog" 2> "$D/fetch.log"); then
        echo "SKIP $prog: no source ($(tail -1 "$D/fetch.log"))"
        return 0
    fi
    static=$(unpack_second "$prog" "$src" static) || { not_ok "sim $prog: unpacking its source"; return 0; }
    if ! exe=$(cd "$static" && "static_$prog" 2> "$D/build.log" | tail -1) || [ ! -x "$static/$exe" ]; then
        not_ok "sim $prog: static build ($D/build.log; cd $static)"
        return 0
    fi
    [ -s "$WORK/sim-input.txt" ] || make_input "$WORK/sim-input.txt" ||
        { not_ok "sim $prog: cannot make the input from gzip's source"; return 0; }
    read -r -a CMD <<< "$("sim_$prog")"
    CMD[0]=$static/$exe
    log "$prog: aligning the layouts ($static/$exe)"
    if ! align_layouts 2> "$D/align.err"; then
        not_ok "sim $prog: layout controls: $(tail -1 "$D/align.err")"
        return 0
    fi
    echo "# $prog: $LAYOUT"
    log "$prog: mtool sim"
    local rc_sim=0 rc_cg=0 rc=0
    "${CMD[@]}" < "$WORK/sim-input.txt" > "$D/native.out" 2> /dev/null || rc=$?
    sim_cmd "$D/env.native" "$D/sim.json"
    "${SIM[@]}" < "$WORK/sim-input.txt" > "$D/sim.out" 2> "$D/sim.err" || rc_sim=$?
    log "$prog: cachegrind"
    cg_cmd "$D/env.valgrind" "$D/cachegrind.out"
    "${CG[@]}" < "$WORK/sim-input.txt" > "$D/cg.out" 2> "$D/cg.err" || rc_cg=$?
    check "sim $prog: exit status $rc under mtool sim and Cachegrind ($rc_sim, $rc_cg)" \
        "[ $rc_sim -eq $rc ] && [ $rc_cg -eq $rc ]"
    check "sim $prog: the same output in the three runs" \
        "cmp -s '$D/native.out' '$D/sim.out' && cmp -s '$D/native.out' '$D/cg.out'"
    if [ ! -s "$D/sim.json" ] || [ ! -s "$D/cachegrind.out" ]; then
        not_ok "sim $prog: no report ($D/sim.err, $D/cg.err)"
        return 0
    fi
    python3 "$ROOT/tests/cachegrind_check.py" --data --totals --min $LEAST "sim $prog (${CMD[*]##*/})" \
        "$D/cachegrind.out" "$D/sim.json" > "$D/check.txt" || true
    cat "$D/check.txt"
    tally "$D/check.txt" || true # (grep -c finds no "ok" line: a status of 1)
}

for p in "${PROGRAMS[@]}"; do
    one "$p"
done
print_totals
