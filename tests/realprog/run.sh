#!/bin/bash
# tests/realprog/run.sh — pass 1 on real programs built from Debian source
# packages (`make test-real`).  For each program of programs.sh:
#   1. fetch its source (apt-get source), build it as Debian does (-O2 -g),
#      run its own test suite with the original executables: the baseline
#      (exit status, normalized output and per-test logs);
#   2. replace its executables with `mtool instrument --counts` copies
#      (originals kept in $WORK/PROG/swap and put back afterwards, whatever
#      happens), run the suite again with MTOOL_OUT set: the same exit status
#      and the same normalized outputs are required, and every process of the
#      suite must have written a profile;
#   3. merge_profiles: merge the profiles of every process the suite ran, per
#      executable (mtool count --profiles); every profile must belong to one;
#   4. run one command of the program against the callgrind oracle
#      (tests/oracle/count_check.sh): identical output, exact block counts.
# A library's suite (lib_P in programs.sh: liblzma, libbz2) is built in a
# second unpack of its package's source, its executables replaced by
# launchers of `mtool instrument --libs` copies, its profiles merged with
# --libs and summed per library, its oracle on the library's counts
# (library_oracle); tests/realprog/README.md, "Libraries' own suites".
# Sources and builds are cached in $MTOOL_REALPROG_DIR (default
# /var/tmp/mtool-realprog); a second run downloads and rebuilds nothing.
#
# usage: tests/realprog/run.sh [--only PROG]... [--keep] [-j N] [--no-oracle]
#        tests/realprog/run.sh --callgrind PROG [-- EXE ARGS...]
#        tests/realprog/run.sh --list
#   --only PROG   run PROG only (repeatable; default: all of programs.sh)
#   --keep        keep profiles, instrumented copies and oracle files of
#                 passing programs too (failing ones are always kept)
#   -j N          make jobs for builds and parallel test suites (default 2)
#   --no-oracle   skip step 4
#   --callgrind   run one command of PROG (default: its one_PROG) under
#                 callgrind with the original executable, and the same command
#                 with the instrumented one, then merge its profiles: files to
#                 compare exact block counts (tests/oracle/check_counts), which
#                 is run too when $CHECKER exists
# Environment: MTOOL (default build/mtool), CHECKER (default
# build/tests/check_counts), MTOOL_REALPROG_DIR, MTOOL_INSTRUMENT_CMD: an
# instrumenter to use instead of `$MTOOL instrument --counts`, called as
# `$MTOOL_INSTRUMENT_CMD ORIG OUT` (for instance `cp`, to test the harness:
# then no profiles are expected, and merging and the oracle are skipped),
# and MTOOL_REALPROG_DEADLINE: a time (seconds since the epoch) by which the
# run must end; a program whose minutes_P would pass it is not started, and
# is listed as skipped (CI sets it from its 90 minutes: .ci/run).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MTOOL=${MTOOL:-$ROOT/build/mtool}
CHECKER=${CHECKER:-$ROOT/build/tests/check_counts}
WORK=${MTOOL_REALPROG_DIR:-/var/tmp/mtool-realprog}
# Every `mtool count` (merges, the oracle) stores its run: keep them with the work.
export MTOOL_HISTORY=${MTOOL_HISTORY:-$WORK/history.db}
INSTRUMENT_CMD=${MTOOL_INSTRUMENT_CMD:-}
# shellcheck source=programs.sh
. "$HERE/programs.sh"

usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
only=() keep=0 JOBS=2 oracle=1 mode=suite cg_prog="" cg_cmd=()
while [ $# -gt 0 ]; do
    case $1 in
    --only) [ $# -ge 2 ] || usage; only+=("$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -j) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
    -j[0-9]*) JOBS=${1#-j}; shift ;;
    --no-oracle) oracle=0; shift ;;
    --callgrind)
        [ $# -ge 2 ] || usage
        mode=callgrind cg_prog=$2; shift 2
        if [ $# -gt 0 ] && [ "$1" = -- ]; then shift; cg_cmd=("$@"); shift $#; fi ;;
    --list) printf '%s\n' "${PROGRAMS_DEFAULT[@]}"; exit 0 ;;
    -h | --help) usage ;;
    *) echo "run.sh: unknown argument: $1" >&2; usage ;;
    esac
done
case $JOBS in '' | *[!0-9]* | 0) echo "run.sh: -j wants a positive number" >&2; exit 2 ;; esac
PROGRAMS=("${PROGRAMS_DEFAULT[@]}")
[ ${#only[@]} -gt 0 ] && PROGRAMS=("${only[@]}")
for p in "${PROGRAMS[@]}" ${cg_prog:+"$cg_prog"}; do
    declare -F "build_$p" > /dev/null || { echo "run.sh: unknown program $p (see --list)" >&2; exit 2; }
done
if [ -z "$INSTRUMENT_CMD" ] && [ ! -x "$MTOOL" ]; then
    echo "run.sh: no mtool at $MTOOL (make build/mtool, or set MTOOL)" >&2
    exit 2
fi
mkdir -p "$WORK"

# log, ensure_packages, fetch
# shellcheck source=packages.sh
. "$HERE/packages.sh"

prepare() { # PROG: packages and setup, as root
    local prog=$1
    # shellcheck disable=SC2046
    ensure_packages make gcc dpkg-dev $( [ $oracle -eq 1 ] && echo valgrind ) $("deps_$prog")
    if declare -F "setup_$prog" > /dev/null; then "setup_$prog"; fi
}

# --- executables: instrument, swap in, swap out -----------------------------

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# real_exe EXE: the ELF file behind EXE (libtool puts the real binary of a
# wrapper script in .libs/).
real_exe() {
    local e=$1 d b
    is_elf "$e" && { echo "$e"; return 0; }
    d=$(dirname "$e") b=$(basename "$e")
    for c in "$d/.libs/$b" "$d/.libs/lt-$b"; do
        is_elf "$c" && { echo "$c"; return 0; }
    done
    echo "run.sh: $e is not an ELF executable, nor a libtool wrapper of one" >&2
    return 1
}

# --- a library's suite (lib_P) ------------------------------------------------
# Every executable that loads the library is replaced by a launcher that runs
# its counting copy (`mtool instrument --libs`: the executable's copy in the
# set of the library's copy, OUT.elf) with the environment that loads the
# library's copy (OUT.elf.env: LD_AUDIT, MTOOL_LIBS, MTOOL_ORIGIN).  The
# environment is the executable's own (each executable's set has its own
# copy of the library, whose counter and call-site ranges follow from the
# executable's), so it cannot be the suite's: the launcher gives it to that
# executable only (bash's exec -a keeps argv[0]), and the suite's other
# processes (shells, make, cmp) run as in the baseline.

is_library_suite() { declare -F "lib_$prog" > /dev/null; }
# The Debian source package of program P.
package_of() { if declare -F "package_$1" > /dev/null; then "package_$1"; else echo "$1"; fi; }
# The library's file name, and its directory in the build tree: the loader's
# LD_LIBRARY_PATH when mtool lists, instruments and merges (as the suite's
# libtool wrappers set it).
library_name() { basename "$("lib_$prog")"; }
library_dir() { dirname "$src/$("lib_$prog")"; }

# write_launcher ELF ENV_FILE OUT: a script running ELF with ENV_FILE's
# entries (NUL-terminated NAME=VALUE) exported.
write_launcher() {
    local v vars=()
    [ -s "$2" ] && mapfile -d '' -t vars < "$2"
    {
        echo '#!/bin/bash'
        echo "# tests/realprog/run.sh: the counting copy with the environment that loads its libraries' copies"
        for v in "${vars[@]}"; do printf 'export %q\n' "$v"; done
        # shellcheck disable=SC2016 # the launcher's own $0 and $@
        printf 'exec -a "$0" %q "$@"\n' "$1"
    } > "$3"
    chmod 755 "$3"
}

instrument() { # ORIG OUT LOG
    if is_library_suite; then
        rm -f "$2.elf" "$2.elf.env"
        if [ -n "$INSTRUMENT_CMD" ]; then
            # shellcheck disable=SC2086
            $INSTRUMENT_CMD "$1" "$2.elf" > "$3" 2>&1 && : > "$2.elf.env"
        else
            LD_LIBRARY_PATH=$(library_dir) XDG_CACHE_HOME=$WORK/cache "$MTOOL" instrument --counts \
                --libs "$(library_name)" "$1" -o "$2.elf" > "$3" 2>&1
        fi && write_launcher "$2.elf" "$2.elf.env" "$2"
    elif [ -n "$INSTRUMENT_CMD" ]; then
        # shellcheck disable=SC2086
        $INSTRUMENT_CMD "$1" "$2" > "$3" 2>&1
    else
        "$MTOOL" instrument --counts "$1" -o "$2" > "$3" 2>&1
    fi
}
instrument_cmd_text() { # ORIG OUT
    if is_library_suite; then
        echo "LD_LIBRARY_PATH=$(library_dir) XDG_CACHE_HOME=$WORK/cache" \
            "${INSTRUMENT_CMD:-$MTOOL instrument --counts --libs $(library_name)} $1 -o $2.elf  # $2: its launcher"
    elif [ -n "$INSTRUMENT_CMD" ]; then echo "$INSTRUMENT_CMD $1 $2"; else echo "$MTOOL instrument --counts $1 -o $2"; fi
}

EXES=()
resolve_exes() {
    EXES=()
    local e r
    for e in $("exes_$prog"); do
        r=$(real_exe "$e") || return 1
        EXES+=("$r")
    done
    if is_library_suite; then
        r=$(library_users_left_out)
        [ -z "$r" ] || { echo "run.sh: executables that load $(library_name) left out of exes_$prog:$r" >&2; return 1; }
    fi
    return 0
}

# The executables of the build tree that load the library (DT_NEEDED) but
# are not in EXES nor a copy of one: the suite could run them uncounted.
library_users_left_out() {
    local f e mine
    while IFS= read -r -d '' f; do
        if ! is_elf "$f" || ! readelf -d "$f" 2>/dev/null | grep -q "(NEEDED).*\[$(library_name)\]"; then
            continue
        fi
        mine=0
        for e in "${EXES[@]}"; do cmp -s "$f" "$e" && mine=1; done
        [ $mine -eq 1 ] || printf ' %s' "${f#./}"
    done < <(find . -type f -perm -u+x ! -name '*.so*' -print0)
}

# Originals and instrumented copies wait in $WORK/PROG/swap/{orig,inst}/EXE,
# outside the source tree: suites that list their directories (gawk's
# readdir) must see the same files in both runs.
stash() { # KIND EXE: the path of EXE's copy of that kind
    local p="$WORK/$prog/swap/$1/${2#/}"
    mkdir -p "$(dirname "$p")"
    echo "$p"
}

# Puts the originals back (kept with their mode and times, so make sees
# nothing to rebuild).  Safe to call any time, from the source directory.
swap_out() {
    local dir="$WORK/$prog/swap/orig" f
    [ -d "$dir" ] || return 0
    while IFS= read -r -d '' f; do
        cp -p "$f" "${f#"$dir"/}" && rm -f "$f"
    done < <(find "$dir" -type f -print0)
    return 0
}

# Instruments every executable into its inst copy; prints FAIL and returns 1
# on the first that fails.
instrument_all() {
    local e inst
    for e in "${EXES[@]}"; do
        inst=$(stash inst "$e")
        rm -f "$inst"
        if ! instrument "$e" "$inst" "$out/instrument-$(basename "$e").log" || [ ! -s "$inst" ]; then
            echo "FAIL $label: instrumenting $e failed: $(tail -1 "$out/instrument-$(basename "$e").log")" \
                "(reproduce: cd $src && $(instrument_cmd_text "$e" /tmp/x))"
            return 1
        fi
    done
}
swap_in() {
    local e orig
    for e in "${EXES[@]}"; do
        orig=$(stash orig "$e")
        cp -p "$e" "$orig"
        cp "$(stash inst "$e")" "$e"
        chmod --reference="$orig" "$e"
    done
}
# The suite must have run the instrumented copies: make rebuilt none.
check_swapped() {
    local e
    for e in "${EXES[@]}"; do
        cmp -s "$e" "$(stash inst "$e")" || { echo "$e was rebuilt during the suite"; return 1; }
    done
}

# --- the suite ----------------------------------------------------------------

# run_suite TAG PROFILE_DIR: runs the suite with MTOOL_OUT=PROFILE_DIR (set in
# both runs, so that the environment is the same), writes $out/TAG/{suite.log,
# status,norm.txt}; never fails.
run_suite() {
    local tag=$1 pdir=$2 rc
    mkdir -p "$out/$tag"
    rm -rf "$pdir"
    mkdir -p "$pdir"
    set +e
    MTOOL_OUT=$pdir "suite_$prog" > "$out/$tag/suite.log" 2>&1
    rc=$?
    set -e
    echo $rc > "$out/$tag/status"
    {
        "norm_$prog" < "$out/$tag/suite.log" || true
        if declare -F "logs_$prog" > /dev/null; then "logs_$prog" || true; fi
    } > "$out/$tag/norm.txt"
    return 0
}

write_reproduce() {
    local e
    {
        echo "#!/bin/bash"
        echo "# Reruns the $prog suite with the instrumented executables (as run.sh did)."
        echo "set -u; cd $src"
        for e in "${EXES[@]}"; do
            local orig inst
            orig=$(stash orig "$e") inst=$(stash inst "$e")
            echo "$(instrument_cmd_text "$e" "$inst")"
            echo "cp -p $e $orig && cp $inst $e && chmod --reference=$orig $e"
        done
        echo "rm -rf $out/prof-inst; mkdir -p $out/prof-inst"
        echo "(. $HERE/programs.sh; JOBS=$JOBS; MTOOL_OUT=$out/prof-inst suite_$prog) > $out/reproduce.log 2>&1; echo \"suite status \$?\""
        for e in "${EXES[@]}"; do echo "cp -p $(stash orig "$e") $e && rm -f $(stash orig "$e")"; done
    } > "$out/reproduce.sh"
    chmod +x "$out/reproduce.sh"
}

# --- merging ------------------------------------------------------------------

# merge_profiles: merges the profiles in $out/prof-inst per executable (the
# original, back in place: profiles name it by its content hash; mtool count
# --profiles, RUNDIR $out/merge-NAME with counts.tsv), and checks
# that every profile belongs to one of them.  Sets MERGE_TEXT; returns 1 with
# MERGE_TEXT the reason on failure.  The place for further checks of the
# merged counts (coverage, an oracle over the whole suite).
MERGE_TEXT=""
merge_profiles() {
    local e name n total=0 parts=() txt
    for e in "${EXES[@]}"; do
        name=$(basename "$e")
        rm -rf "$out/merge-$name"
        # a library's suite: its counts too, found as the suite's loader found it
        local -a loader=() libs=()
        is_library_suite && loader=(LD_LIBRARY_PATH="$(library_dir)") libs=(--libs "$(library_name)")
        if env "${loader[@]}" XDG_CACHE_HOME="$WORK/cache" "$MTOOL" count --profiles "$out/prof-inst" \
            "${libs[@]}" -o "$out/merge-$name" -- "$e" > "$out/merge-$name.txt" 2>&1; then
            # Its summary line (the first on a machine already calibrated;
            # on a new one, the calibration's lines come first).
            txt=$(grep -m1 '^mtool count: ' "$out/merge-$name.txt" || head -1 "$out/merge-$name.txt")
            n=$(echo "$txt" | sed -nE 's/.*: ([0-9]+) process(es)?,.*/\1/p')
            if [ -z "$n" ]; then
                MERGE_TEXT="cannot read the merge of $name: $txt ($out/merge-$name.txt)"
                return 1
            fi
            total=$((total + n))
            parts+=("$name $n")
        elif grep -q 'no profile of this binary' "$out/merge-$name.txt"; then
            parts+=("$name not run")
        else
            MERGE_TEXT="merging the profiles of $name failed: $(tail -1 "$out/merge-$name.txt")"
            return 1
        fi
    done
    local nfiles
    nfiles=$(find "$out/prof-inst" -name '*.mtp' | wc -l)
    local incomplete
    incomplete=$(cat "$out"/merge-*.txt 2>/dev/null | sed -nE 's/.* ([0-9]+) incomplete.*/\1/p' | head -1)
    if [ "$total" -ne "$nfiles" ]; then
        MERGE_TEXT="$nfiles profiles but $total merged (${parts[*]}${incomplete:+; $incomplete incomplete})"
        return 1
    fi
    MERGE_TEXT="merged: $(IFS=,; echo "${parts[*]}" | sed 's/,/, /g')"
    is_library_suite && { library_totals || return 1; }
    # Hook: coverage and whole-suite count checks of $out/merge-*/counts.tsv
    # go here.
    return 0
}

# library_totals: the library's block counts of every executable's merge
# summed per block into $out/LIB.counts.tsv (each executable's set has its
# own copy of the library, at the same blocks: its original's); appends
# what ran to MERGE_TEXT.  Fails when the library ran nowhere.
library_totals() {
    local lib f files=()
    lib=$(library_name)
    for f in "$out"/merge-*/libs/"$lib".counts.tsv; do [ -s "$f" ] && files+=("$f"); done
    if [ ${#files[@]} -eq 0 ]; then
        MERGE_TEXT="no merge has $lib's counts (libs/$lib.counts.tsv in $out/merge-*)"
        return 1
    fi
    awk -F'\t' '/^#/ { next } { n[$1] += $2; if (!($1 in p)) { p[$1] = $3; order[++k] = $1 } }
        END { print "# block\tcount\tprocedure"; for (i = 1; i <= k; i++) print order[i] "\t" n[order[i]] "\t" p[order[i]] }' \
        "${files[@]}" > "$out/$lib.counts.tsv"
    local ran
    ran=$(awk -F'\t' '!/^#/ { t++; if ($2 > 0) { r++; s += $2 } } END { printf "%d of %d blocks ran, %d executions", r, t, s }' \
        "$out/$lib.counts.tsv")
    MERGE_TEXT+="; $lib over ${#files[@]} executables: $ran"
    case $ran in 0\ of*) MERGE_TEXT="$lib: no block ran in the suite ($out/$lib.counts.tsv)"; return 1 ;; esac
}

# --- one program --------------------------------------------------------------

# run_one PROG (in a subshell): prints PASS/FAIL lines; returns 1 on failure.
run_one() {
    prog=$1
    label=$prog
    is_library_suite && label="$prog ($(package_of "$prog"))"
    out=$WORK/$prog/results
    rm -rf "$out"
    mkdir -p "$out"
    prepare "$prog" || { echo "FAIL $label: installing its packages failed"; return 1; }
    local pkg
    pkg=$(package_of "$prog")
    src=$(fetch "$pkg") || { echo "FAIL $label: apt-get source failed ($WORK/$pkg/apt-get-source.log)"; return 1; }
    if is_library_suite; then
        src=$(unpack_second "$pkg" "$src" shared) || { echo "FAIL $label: unpacking a second copy of $pkg's source"; return 1; }
    fi
    cd "$src"
    swap_out
    trap swap_out EXIT
    log "$prog: building in $src"
    if ! "build_$prog" > "$out/build.log" 2>&1; then
        echo "FAIL $label: build failed ($out/build.log; cd $src)"
        return 1
    fi
    resolve_exes 2> "$out/exes.log" || { echo "FAIL $label: executables: $(tail -1 "$out/exes.log")"; return 1; }

    log "$prog: test suite, original"
    local t0=$SECONDS
    run_suite orig "$out/prof-orig"
    local t_orig=$((SECONDS - t0))
    local rc_orig rc_inst
    rc_orig=$(cat "$out/orig/status")
    if [ -n "$(ls -A "$out/prof-orig")" ]; then
        echo "FAIL $label: the original executables wrote profiles: instrumented copies left in the tree? ($out/prof-orig)"
        return 1
    fi

    instrument_all || return 1
    write_reproduce
    swap_in
    log "$prog: test suite, instrumented"
    t0=$SECONDS
    run_suite inst "$out/prof-inst"
    local t_inst=$((SECONDS - t0))
    local swapped
    swapped=$(check_swapped) && swapped=ok
    swap_out
    trap - EXIT
    rc_inst=$(cat "$out/inst/status")
    local nprof size
    nprof=$(find "$out/prof-inst" -name '*.mtp' | wc -l)
    size=$(du -sh "$out/prof-inst" | cut -f1)
    echo "$rc_orig $rc_inst $nprof $size $t_orig $t_inst" > "$out/summary"
    for e in "${EXES[@]}"; do
        grep -h '^instrumented' "$out/instrument-$(basename "$e").log" 2>/dev/null | sed "s|^|   $prog $(basename "$e"): |" || true
    done

    local status_text="suite exit status: original $rc_orig, instrumented $rc_inst"
    if [ "$swapped" != ok ]; then
        echo "FAIL $label: $swapped: the suite did not run the instrumented copy"
        return 1
    fi
    if [ "$rc_orig" != "$rc_inst" ]; then
        diff -u "$out/orig/norm.txt" "$out/inst/norm.txt" > "$out/suite.diff" || true
        echo "FAIL $label: $status_text (logs $out/{orig,inst}/suite.log, diff $out/suite.diff; rerun: $out/reproduce.sh)"
        return 1
    fi
    if ! diff -u "$out/orig/norm.txt" "$out/inst/norm.txt" > "$out/suite.diff"; then
        echo "FAIL $label: outputs differ ($(($(grep -c '^[-+]' "$out/suite.diff") - 2)) lines): $out/suite.diff (rerun: $out/reproduce.sh)"
        return 1
    fi
    local lines
    lines=$(wc -l < "$out/orig/norm.txt")
    echo "   $prog: suite ${t_orig}s original, ${t_inst}s instrumented; $nprof profiles, $size"

    local merge="merge skipped (no-op instrumenter)" oracle_text=""
    if [ -z "$INSTRUMENT_CMD" ]; then
        if [ "$nprof" -eq 0 ]; then
            echo "FAIL $label: the instrumented suite wrote no profile ($out/prof-inst)"
            return 1
        fi
        if ! merge_profiles; then
            echo "FAIL $label: $MERGE_TEXT"
            return 1
        fi
        merge=$MERGE_TEXT
        if [ $oracle -eq 1 ]; then
            local -a cmd
            read -r -a cmd <<< "$(one_$prog)"
            local exe
            exe=$(real_exe "${cmd[0]}")
            local line
            # A program whose block counts change from run to run (they
            # depend on addresses) has no exact oracle: its command is only
            # checked to behave the same and to write profiles that merge.
            local no_oracle=""
            if declare -F "no_oracle_$prog" > /dev/null; then no_oracle=$("no_oracle_$prog"); fi
            if is_library_suite; then
                line=$(library_oracle "$exe" "${cmd[@]:1}" 2>&1 | grep -E '^(not ok|ok|# coverage)' | tr '\n' ' ') || true
            else
                line=$(NO_ORACLE=$no_oracle bash "$ROOT/tests/oracle/count_check.sh" "$MTOOL" "$CHECKER" "$out/oracle" \
                    "$src/$exe" "${cmd[@]:1}" 2>&1 | grep -E '^(not ok|ok|# coverage)' | tr '\n' ' ') || true
            fi
            echo "   $prog oracle (${cmd[*]}): $line"
            if [ -z "$line" ] || echo "$line" | grep -q 'not ok'; then
                echo "FAIL $label: callgrind oracle on '${cmd[*]}': $line ($out/oracle)"
                return 1
            fi
            oracle_text=", oracle ok$(echo "$line" | sed -nE 's/.*# coverage: .*\(([0-9.]+%)\).*/ (coverage \1)/p')"
            [ -z "$no_oracle" ] || oracle_text=", one command identical, no callgrind oracle: $no_oracle"
        fi
    fi
    local pass2_text=""
    if [ -z "$INSTRUMENT_CMD" ] && declare -F "pass2_$prog" > /dev/null; then
        if ! pass2_run; then
            echo "FAIL $label: $PASS2_TEXT"
            return 1
        fi
        pass2_text=", $PASS2_TEXT"
    fi
    local suite_text="suite ok (orig 0, inst 0)"
    [ "$rc_orig" = 0 ] || suite_text="suite status as the original's (orig $rc_orig, inst $rc_inst: baseline failures in $out/orig/norm.txt)"
    echo "PASS $label: $suite_text, outputs identical ($lines lines), $nprof profiles, $merge$oracle_text$pass2_text"
    if [ $keep -eq 0 ]; then
        rm -rf "$out/prof-inst" "$out/prof-orig" "$out"/merge-*/profiles
        rm -rf "$WORK/$prog/swap/inst"
    fi
    return 0
}

# library_oracle EXE ARGS...: one command of a library's suite, the original
# EXE under callgrind and its launcher (the suite's counting copy and
# environment), in $src with the library's directory as LD_LIBRARY_PATH:
# identical output and exit status, and the library's block counts of the
# merged profiles equal to callgrind's (check_counts on the library), and
# its calls through pointers.  What runs before the executable's runtime
# activates the copy runs the original bytes, uncounted (docs/ARCHITECTURE.md,
# "Init order"): the library's constructors (its .init_array: frame_dummy,
# liblzma's crc32_set_func and crc64_set_func) and frame_dummy's callee
# register_tm_clones; their blocks are left out.  Prints ok/not ok.
# constructors LIB: the entries of LIB's .init_array (0x..., as counts.tsv
# writes block addresses): the targets of its relative relocations there.
constructors() {
    local off size lo hi o type t
    read -r off size < <(readelf -SW "$1" |
        sed -nE 's/.*\.init_array +INIT_ARRAY +([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+).*/\1 \2/p') || return 0
    lo=$((16#$off)) hi=$((16#$off + 16#$size))
    while read -r o _ type t _; do
        [ "$type" = R_X86_64_RELATIVE ] && ((16#$o >= lo && 16#$o < hi)) && printf '0x%x ' $((16#$t))
    done < <(readelf -rW "$1")
    return 0
}
library_oracle() {
    local exe=$1 d=$out/oracle lib rc_orig=0 rc_inst=0
    shift
    lib=$(library_name)
    rm -rf "$d" && mkdir -p "$d/profiles"
    LD_LIBRARY_PATH=$(library_dir) valgrind --tool=callgrind --dump-instr=yes --compress-pos=no \
        --compress-strings=no --skip-plt=no --callgrind-out-file="$d/cg.%p" "$exe" "$@" \
        > "$d/orig.out" 2> "$d/vg.log" || rc_orig=$?
    LD_LIBRARY_PATH=$(library_dir) MTOOL_OUT=$d/profiles "$(stash inst "$exe")" "$@" > "$d/inst.out" 2> "$d/inst.err" ||
        rc_inst=$?
    if [ $rc_orig -ne $rc_inst ] || ! cmp -s "$d/orig.out" "$d/inst.out"; then
        echo "not ok - $lib: the counting copy's run differs (exit $rc_orig under callgrind, $rc_inst; $d)"
        return 0
    fi
    echo "ok - $lib: the counting copy's output identical (exit $rc_inst)"
    if ! LD_LIBRARY_PATH=$(library_dir) XDG_CACHE_HOME=$WORK/cache "$MTOOL" count --no-store --profiles "$d/profiles" \
        --libs "$lib" -o "$d/run" -- "$exe" > "$d/count.log" 2>&1; then
        echo "not ok - $lib: merging profiles failed: $(tail -1 "$d/count.log")"
        return 0
    fi
    awk -F'\t' -v ctors="$(constructors "$(library_dir)/$lib")" '
        BEGIN { n = split(ctors, a, " "); for (i = 1; i <= n; i++) entry[a[i]] = 1 }
        !/^#/ && ($1 in entry || $3 == "register_tm_clones") { skip[$3] = 1 }
        { line[NR] = $0; proc[NR] = $3 }
        END { for (i = 1; i <= NR; i++) if (!(proc[i] in skip)) print line[i] }' \
        "$d/run/libs/$lib.counts.tsv" > "$d/lib.counts.tsv"
    cp "$d/run/libs/$lib.call_targets.tsv" "$d/lib.call_targets.tsv" 2> /dev/null || true
    "$CHECKER" "$(readlink -f "$(library_dir)/$lib")" "$d/lib.counts.tsv" "$d"/cg.* 2>&1 | tee "$d/check"
    grep -qE '^(ok|not ok)' "$d/check" || echo "not ok - $lib: check_counts gave no verdict ($d/check)"
}

# Pass 2 end to end on one command of $prog (pass2_P, in its source tree):
# `mtool run` exits with the original's status and its report times an
# m-object in each procedure pass2_timed_P names.  Sets PASS2_TEXT.
pass2_run() {
    local d=$WORK/$prog/results/pass2
    rm -rf "$d" && mkdir -p "$d"
    find . -name '*.[ch]' -type f | LC_ALL=C sort | xargs cat | head -c 4000000 > "$d/input"
    local -a cmd
    read -r -a cmd <<< "$(pass2_$prog | sed "s|INPUT|$d/input|")"
    cmd[0]=$src/$(real_exe "${cmd[0]}")
    local want=0 got=0
    "${cmd[@]}" > /dev/null 2>&1 || want=$?
    XDG_CACHE_HOME=$d/cache "$MTOOL" run --no-store --runs 3 -o "$d/run" -- "${cmd[@]}" \
        > /dev/null 2> "$d/run.err" || got=$?
    if [ "$got" != "$want" ] || [ ! -s "$d/run/report.json" ]; then
        PASS2_TEXT="pass 2 on '${cmd[*]##*/}': exit $got (original $want), no report? ($d/run.err)"
        return 1
    fi
    PASS2_TEXT=$(python3 - "$d/run/report.json" $(pass2_timed_$prog) <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
timed = {o["procedure"] for o in r["objects"]}
missing = [p for p in sys.argv[2:] if p not in timed]
p = r["program"]
inside = 100 * p["memory_ops_in_objects"] / p["memory_ops"] if p["memory_ops"] else 0
rows = "; ".join(f"{o['name'].split(' (')[0]} {o['overhead_percent']:+.0f}%" for o in r["objects"][:3])
print(("MISSING " + " ".join(missing) + ": " if missing else "") +
      f"pass 2: {len(r['objects'])} m-objects timed, {inside:.0f}% of memory operations inside ({rows})")
PY
)
    case $PASS2_TEXT in MISSING*) PASS2_TEXT="pass 2 timed nothing in ${PASS2_TEXT#MISSING } ($d/run/report.txt)"; return 1 ;; esac
    return 0
}

# --- --callgrind: one command, original under callgrind, instrumented plain --

callgrind_one() {
    prog=$1
    shift
    if is_library_suite; then
        echo "run.sh: --callgrind takes a program; a library's one command is its oracle: run.sh --only $prog --keep ($WORK/$prog/results/oracle)" >&2
        return 2
    fi
    local d=$WORK/$prog/callgrind
    prepare "$prog"
    ensure_packages valgrind
    src=$(fetch "$prog")
    cd "$src"
    swap_out
    log "$prog: building in $src"
    "build_$prog" > "$WORK/$prog/build.log" 2>&1 || { echo "build failed: $WORK/$prog/build.log" >&2; return 1; }
    local -a cmd=("$@")
    [ ${#cmd[@]} -gt 0 ] || read -r -a cmd <<< "$(one_$prog)"
    local exe name
    exe=$(real_exe "${cmd[0]}")
    name=$(basename "$exe")
    rm -rf "$d"
    mkdir -p "$d/orig" "$d/inst" "$d/profiles"
    # Both copies under paths of the same length and name (argv[0]).
    cp -p "$exe" "$d/orig/$name"
    instrument "$d/orig/$name" "$d/inst/$name" "$d/instrument.log" ||
        { echo "instrumenting failed: $(tail -1 "$d/instrument.log") ($(instrument_cmd_text "$d/orig/$name" "$d/inst/$name"))" >&2; return 1; }
    # The instrumented run gets exactly the environment valgrind gives its
    # client, MTOOL_OUT included: programs that read their environment do
    # the same work in both runs.
    MTOOL_OUT=$d/profiles valgrind -q --tool=callgrind --callgrind-out-file=/dev/null /usr/bin/env -0 > "$d/env" 2> /dev/null
    local -a vars
    mapfile -d '' -t vars < "$d/env"
    local rc_orig=0 rc_inst=0
    log "$prog: callgrind: ${cmd[*]}"
    MTOOL_OUT=$d/profiles valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
        --skip-plt=no --trace-children=yes --log-file="$d/valgrind.log" \
        --callgrind-out-file="$d/callgrind.out.%p" "$d/orig/$name" "${cmd[@]:1}" > "$d/orig.out" 2> "$d/orig.err" || rc_orig=$?
    log "$prog: instrumented: ${cmd[*]}"
    env -i "${vars[@]}" "$d/inst/$name" "${cmd[@]:1}" > "$d/inst.out" 2> "$d/inst.err" || rc_inst=$?
    echo "command:      (cd $src && ${cmd[*]})"
    echo "exit status:  original under callgrind $rc_orig, instrumented $rc_inst"
    if cmp -s "$d/orig.out" "$d/inst.out" && cmp -s "$d/orig.err" "$d/inst.err"; then
        echo "output:       identical"
    else
        echo "output:       DIFFERS ($d/{orig,inst}.{out,err})"
    fi
    echo "callgrind:    $(ls "$d"/callgrind.out.* | tr '\n' ' ')"
    echo "profiles:     $(find "$d/profiles" -name '*.mtp' | wc -l) in $d/profiles"
    if [ -n "$INSTRUMENT_CMD" ]; then
        echo "(no-op instrumenter $INSTRUMENT_CMD: nothing to merge)"
        return 0
    fi
    if XDG_CACHE_HOME=$WORK/cache "$MTOOL" count --profiles "$d/profiles" -o "$d/run" -- "$d/orig/$name" > "$d/merge.txt" 2>&1; then
        echo "counts:       $d/run/counts.tsv"
    else
        echo "merging failed: $(tail -1 "$d/merge.txt")"
        return 1
    fi
    local check
    check="$CHECKER $d/orig/$name $d/run/counts.tsv $(ls "$d"/callgrind.out.* | tr '\n' ' ')"
    echo "compare:      $check"
    if [ -x "$CHECKER" ]; then
        # shellcheck disable=SC2086
        $check
    fi
}

if [ $mode = callgrind ]; then
    callgrind_one "$cg_prog" "${cg_cmd[@]}"
    exit $?
fi

failures=0 passed=()
start=$SECONDS
{
    echo "# $(date -u +%FT%TZ) run.sh ${only[*]:+--only ${only[*]}}" \
        "instrumenter: ${INSTRUMENT_CMD:-$MTOOL instrument --counts}"
} > "$WORK/summary.txt"
skipped=()
# Whether program $1 can still finish before the deadline, if there is one.
fits_deadline() {
    local minutes=10
    [ -n "${MTOOL_REALPROG_DEADLINE:-}" ] || return 0
    declare -F "minutes_$1" > /dev/null && minutes=$("minutes_$1")
    [ $(($(date +%s) + 60 * minutes)) -le "$MTOOL_REALPROG_DEADLINE" ]
}
for p in "${PROGRAMS[@]}"; do
    if ! fits_deadline "$p"; then
        echo "SKIP $p: it may take $(declare -F "minutes_$p" > /dev/null && "minutes_$p" || echo 10) minutes, more than is left before MTOOL_REALPROG_DEADLINE" |
            tee -a "$WORK/summary.txt"
        skipped+=("$p")
        continue
    fi
    if (run_one "$p") | tee -a "$WORK/summary.txt"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
        passed+=("$p")
    else
        failures=$((failures + 1))
    fi
done
echo "${#passed[@]} passed, $failures failed, ${#skipped[@]} skipped for time${skipped[*]:+ (${skipped[*]})} (real programs: ${PROGRAMS[*]}; $((SECONDS - start))s; $WORK/summary.txt)"
[ $failures -eq 0 ]
