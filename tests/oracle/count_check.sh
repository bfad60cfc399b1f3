#!/bin/bash
# tests/oracle/count_check.sh MTOOL CHECKER WORKDIR BINARY [ARGS...] (bash) — pass 1
# end to end on one program:
#   1. the instrumented copy behaves exactly like the original: same stdout,
#      stderr and exit status (or fatal signal);
#   2. its profiles (one per process) merge into block counts equal to
#      callgrind's execution counts of the original (CHECKER = check_counts),
#      every process included (--trace-children=yes; fork children are
#      always followed).
# With NO_ORACLE=reason, step 2 is replaced by checking that every process
# wrote a profile that merges (callgrind has no per-process counts after a
# fork, whose child inherits the parent's, nor before an exec, which drops
# them).  Prints "ok"/"not ok" lines.
set -u
mtool=$1 checker=$2 work=$3 bin=$4
shift 4
name=$(basename "$bin")${1:+ $*}
d=$work/$(basename "$bin")${1:+-$(echo "$*" | tr -c 'a-zA-Z0-9_\n' -)}
rm -rf "$d"
mkdir -p "$d/profiles" "$d/orig" "$d/inst"
# Both copies run under paths of the same length and name: programs that
# look at argv[0] take the same paths.
cp -p "$bin" "$d/orig/"
bin=$d/orig/$(basename "$bin")
inst=$d/inst/$(basename "$bin")

# The plain runs get exactly the environment valgrind gives its client
# (LD_PRELOAD of its core, GLIBCXX_FORCE_NEW...), in its order: programs that
# look at their environment, such as gawk filling ENVIRON, then do the same
# work in every run.  MTOOL_OUT and XDG_CACHE_HOME (each check's own) are in
# all of them, at the same place.  Asking valgrind for that environment costs
# as much as a sample's callgrind run, and it is the same for every check
# made from the same environment: it is asked once per WORKDIR and
# environment (named by their hash; written to a temporary file and renamed,
# as checks run in parallel).
export XDG_CACHE_HOME=/
client_env=$work/valgrind-client.$(env -0 | sha256sum | cut -c1-16).env
if [ ! -s "$client_env" ]; then
    tmp=$(mktemp "$client_env.XXXXXX")
    MTOOL_OUT=/ valgrind -q --tool=callgrind --callgrind-out-file=/dev/null /usr/bin/env -0 > "$tmp" 2> /dev/null
    mv -f "$tmp" "$client_env"
fi
export XDG_CACHE_HOME="$d/cache"
like_valgrind() { # OUT ERR PROFILE_DIR CMD...
    local vars out=$1 err=$2 dir=$3 i
    shift 3
    mapfile -d '' -t vars < "$client_env"
    for i in "${!vars[@]}"; do
        [[ ${vars[$i]} == MTOOL_OUT=* ]] && vars[$i]=MTOOL_OUT=$dir
        [[ ${vars[$i]} == XDG_CACHE_HOME=* ]] && vars[$i]=XDG_CACHE_HOME=$XDG_CACHE_HOME
    done
    env -i "${vars[@]}" "$@" > "$out" 2> "$err"
}

like_valgrind "$d/orig.out" "$d/orig.err" "$d/profiles" "$bin" "$@" 2> /dev/null
orig=$?
if ! "$mtool" instrument --counts "$bin" -o "$inst" > "$d/instrument.log" 2>&1; then
    echo "not ok - $name: instrument failed: $(tail -1 "$d/instrument.log")"
    exit 0
fi
like_valgrind "$d/inst.out" "$d/inst.err" "$d/profiles" "$inst" "$@" 2> /dev/null
status=$?
if [ $orig -ne $status ] || ! cmp -s "$d/orig.out" "$d/inst.out" || ! cmp -s "$d/orig.err" "$d/inst.err"; then
    echo "not ok - $name: instrumented run differs (exit $orig vs $status; diff in $d)"
    exit 0
fi
echo "ok - $name: instrumented run identical (exit $status, $(ls "$d/profiles" | wc -l) profiles)"

if ! "$mtool" count --no-store --profiles "$d/profiles" -o "$d/run" -- "$bin" > "$d/count.log" 2>&1; then
    echo "not ok - $name: merging profiles failed: $(tail -1 "$d/count.log")"
    exit 0
fi
if [ -n "${NO_ORACLE:-}" ]; then
    echo "# $name: no callgrind oracle: $NO_ORACLE"
    rm -rf "$d"
    exit 0
fi
MTOOL_OUT="$d/profiles" valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
    --skip-plt=no --trace-children=yes --callgrind-out-file="$d/cg.%p.%n" "$bin" "$@" > /dev/null 2> "$d/vg.log"
"$checker" "$bin" "$d/run/counts.tsv" "$d"/cg.* > "$d/check" 2>&1
rc=$?
cat "$d/check"
if [ $rc -ne 0 ] && ! grep -q '^not ok' "$d/check"; then
    echo "not ok - $name: check_counts exited with status $rc"
elif ! grep -qE '^(ok|not ok)' "$d/check"; then
    echo "not ok - $name: check_counts gave no verdict (callgrind: $(tail -1 "$d/vg.log"); kept in $d)"
    rc=1
fi
[ $rc -eq 0 ] && rm -rf "$d"
exit 0
