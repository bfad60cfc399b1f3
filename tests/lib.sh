# tests/lib.sh — what the test scripts share, sourced by sh and bash scripts
# alike (`. "$(dirname "$0")/lib.sh"`): one "ok - WHAT" or "not ok - WHAT"
# line per assertion (the lines tests/run.sh counts), and the closing
# "N passed, M failed" line that gives the script its status.  A script that
# prints only its failures sets quiet_ok=1 before sourcing it.
passed=0 failed=0
# The machine profile tests/run.sh calibrated once, installed in a script's
# private configuration (exported before sourcing this) unless it has one.
if [ -n "${MTOOL_TEST_MACHINE:-}" ] && [ -n "${XDG_CONFIG_HOME:-}" ] &&
    [ ! -e "$XDG_CONFIG_HOME/mtool/$(basename "$MTOOL_TEST_MACHINE")" ]; then
    mkdir -p "$XDG_CONFIG_HOME/mtool" && cp "$MTOOL_TEST_MACHINE" "$XDG_CONFIG_HOME/mtool/"
fi
# have_machine_profile: a machine profile is in $XDG_CONFIG_HOME (the one
# installed above): a suite that needs one but is not about calibration
# calibrates only without it.
have_machine_profile() { ls "$XDG_CONFIG_HOME"/mtool/machine-*.txt > /dev/null 2>&1; }
ok() {
    passed=$((passed + 1))
    [ -n "${quiet_ok:-}" ] || echo "ok - $*"
}
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
# frames_sent ERR: "RECORDS FRAMES AFTER RINGED" from a traced run's summary
# line on stderr (mtool sim -- BIN): its records, the frames sent while the
# program ran, the records read from its profile after it ended, and how
# many of the frames came through the threads' trace rings.
frames_sent() {
    sed -n 's/.* \([0-9]*\) records (\([0-9]*\) frames sent while it ran, \([0-9]*\) records after the program ended); \([0-9]*\) frames through the trace rings$/\1 \2 \3 \4/p' "$1"
}
# check WHAT CMD: the assertion WHAT holds when CMD (eval'd) succeeds.
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }
# tally FILE: counts in the ok / not ok lines another checker wrote to FILE.
tally() {
    passed=$((passed + $(grep -c '^ok' "$1")))
    failed=$((failed + $(grep -c '^not ok' "$1")))
}
# refused WHAT PATTERN OUTPUT CMD...: CMD must fail without crashing, with
# exactly one stderr line matching PATTERN, and leave OUTPUT unwritten (a
# bad option or input gets one clear line and no partial output).
refused() {
    r_what=$1 r_want=$2 r_out=$3
    shift 3
    r_err=$(mktemp "${TMPDIR:-/tmp}/mtool-refused.XXXXXX")
    rm -f "$r_out"
    "$@" > /dev/null 2> "$r_err"
    r_rc=$?
    if [ "$r_rc" -eq 0 ] || [ -e "$r_out" ]; then
        not_ok "$r_what accepted"
    elif [ "$r_rc" -lt 128 ] && [ "$(wc -l < "$r_err")" -eq 1 ] && grep -q -- "$r_want" "$r_err"; then
        ok "$r_what refused ($(head -1 "$r_err"))"
    else
        not_ok "$r_what: exit $r_rc: $(head -1 "$r_err")"
    fi
    rm -f "$r_err"
}
# starts_with COUNT_JSON LIBRARY: what count.json says the library can start
# itself unwrapped (its `starts_with`), "null" when nothing.
starts_with() {
    python3 -c 'import json, sys
libs = {l["name"]: l for l in json.load(open(sys.argv[1]))["libraries"]}
print(json.dumps(libs[sys.argv[2]]["starts_with"]))' "$1" "$2"
}
# print_totals: the closing line; fails when an assertion did.
print_totals() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
# browser_test SCRIPT ARGS...: node SCRIPT ARGS (a tests/browser/*.mjs) in
# Debian's chromium ($CHROMIUM), its ok / not ok lines printed and tallied;
# skipped with a message without chromium or tests/browser/node_modules,
# a failure in CI (.ci/install-deps.sh installs both).
browser_test() {
    bt_chromium=${CHROMIUM:-/usr/bin/chromium}
    if [ -x "$bt_chromium" ] && [ -d "$(dirname "$1")/node_modules/playwright-core" ] &&
        command -v node > /dev/null; then
        bt_out=$(mktemp "${TMPDIR:-/tmp}/mtool-browser.XXXXXX")
        CHROMIUM=$bt_chromium node "$@" > "$bt_out" 2>&1 || grep -q '^not ok' "$bt_out" ||
            echo "not ok - $1 failed: $(tail -3 "$bt_out" | tr '\n' ' ')" >> "$bt_out"
        cat "$bt_out"
        tally "$bt_out"
        rm -f "$bt_out"
    elif [ -n "${CI:-}" ]; then
        not_ok "browser tests: chromium ($bt_chromium) or tests/browser/node_modules missing in CI (.ci/install-deps.sh installs both)"
    else
        echo "# skip browser tests: needs $bt_chromium and tests/browser/node_modules (sh .ci/install-deps.sh)"
    fi
}
