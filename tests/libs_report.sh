#!/bin/bash
# tests/libs_report.sh — library m-objects past the terminal report, on
# Debian's own programs (docs/REPORT.md "pass2.tsv", docs/HISTORY.md
# "Shared libraries"):
#   - `mtool run -- sqlite3 DB 'SELECT ... GROUP BY ... ORDER BY ...'` on a
#     table of 300,000 rows that sqlite3 itself made: the output is the
#     original's; report.json names libsqlite3's procedures
#     (libsqlite3.so.0:NAME), each NAME a symbol of the library's own
#     (readelf, the oracle) or sub_ADDR; pass2.tsv's library objects are
#     libsqlite3's, and the history's run holds exactly those, named
#     libsqlite3.so.0:..., in `history show`, `history export --json` and the
#     page `mtool report` builds from the history;
#   - a Python script that imports _bz2 (an extension module opened by
#     dlopen) under /usr/bin/python3, twice: the first (`mtool count`) says
#     the module is counted from the next count, the second (`mtool run`)
#     counts it and names its procedures in report.json (_bz2...so:NAME),
#     and times the objects of libbz2.so.1.0 (opened by dlopen too, for the
#     module), which pass2.tsv and the history carry.
# Skipped (ok with a reason) without sqlite3 or /usr/bin/python3's _bz2.
#
#   MTOOL=build/mtool bash tests/libs_report.sh
set -u
mtool=${MTOOL:-build/mtool}
work=$(mktemp -d "${TMPDIR:-/tmp}/mtool-libreport.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config MTOOL_HISTORY=$work/history.db
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }

# The library objects of a pass2.tsv: its object lines with a 7th column.
library_objects() { awk -F'\t' -v lib="$2" '$1 == "object" && $7 == lib' "$1" | wc -l; }

sqlite_checks() {
    local db=$work/t.db dir=$work/sq lib
    local query='SELECT b, count(*), sum(a) FROM t GROUP BY b ORDER BY 3 DESC LIMIT 5'
    sqlite3 "$db" "CREATE TABLE t(a INTEGER, b TEXT); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL
        SELECT x + 1 FROM c WHERE x < 300000) INSERT INTO t SELECT x * 7919 % 100003,
        'k' || (x % 977) FROM c;" || { not_ok "sqlite3 could not make the table"; return; }
    /usr/bin/sqlite3 "$db" "$query" > "$work/sq.orig"
    "$mtool" run -o "$dir" -- /usr/bin/sqlite3 "$db" "$query" > "$work/sq.out" 2> "$work/sq.err"
    local status=$?
    if [ $status = 0 ] && [ "$(sort -u "$work/sq.out" | grep -c '|')" = "$(wc -l < "$work/sq.orig")" ] &&
        [ "$(grep '|' "$work/sq.out" | sort -u)" = "$(sort -u "$work/sq.orig")" ]; then
        ok "mtool run -- sqlite3: the query's output identical to the original's"
    else
        not_ok "mtool run -- sqlite3: exit $status; $(tail -2 "$work/sq.err")"
    fi
    lib=$(ldd /usr/bin/sqlite3 | awk '/libsqlite3/ { print $3 }')
    readelf -Ws --dyn-syms "$lib" | awk '$4 == "FUNC" { sub(/@.*/, "", $8); print $8 }' |
        sort -u > "$work/sq.symbols"
    python3 - "$dir/report.json" "$work/sq.symbols" <<'PY' &&
import json, re, sys
doc = json.load(open(sys.argv[1]))
symbols = set(open(sys.argv[2]).read().split())
rows = [r for r in doc["objects"] + doc["not_timed"] if r.get("object") == "libsqlite3.so.0"]
named = {r["procedure"] for r in rows if not r["procedure"].startswith("sub_")}
bad = [r["name"] for r in rows if not r["name"].startswith("libsqlite3.so.0:" + r["procedure"]) or
       not (r["procedure"] in symbols or re.fullmatch(r"sub_[0-9a-f]+", r["procedure"]))]
print("# %d rows of libsqlite3.so.0, %d of them timed; named: %s" % (
    len(rows), sum(r["status"] == "timed" for r in doc["objects"]), " ".join(sorted(named)[:6])))
sys.exit(0 if rows and named and not bad and "sqlite3VdbeExec" in named else 1)
PY
        ok "report.json names libsqlite3's procedures (sqlite3VdbeExec among them), each a symbol of the library's" ||
        not_ok "report.json: libsqlite3's procedures not named by its symbols"
    # The shell's work is in libsqlite3, and in libc (memcmp, memcpy): with
    # libc counted by default, the shell's own procedures that call it are
    # estimable and may be timed too (the calls known work), and libc's
    # objects; no other library's (libreadline, libz: no work here).
    local timed others
    timed=$(library_objects "$dir/pass2.tsv" libsqlite3.so.0)
    others=$(awk -F'\t' '$1 == "object" && $7 != "" && $7 != "libsqlite3.so.0" && $7 != "libc.so.6"' "$dir/pass2.tsv" | wc -l)
    if [ "$timed" -ge 1 ] && [ "$others" = 0 ]; then
        ok "pass2.tsv: $timed objects timed in libsqlite3.so.0, the others ($(grep -c '^object' "$dir/pass2.tsv") in all) sqlite3's own or libc's"
    else
        not_ok "pass2.tsv: $timed libsqlite3 objects, $others of other libraries than libc; $(grep -c '^object' "$dir/pass2.tsv") objects"
    fi
    "$mtool" history show last > "$work/sq.show" 2>&1
    "$mtool" history export --json > "$work/sq.export.json" 2>&1
    local shown exported
    shown=$(grep -cE '^ +#[0-9]+ +libsqlite3\.so\.0:' "$work/sq.show")
    exported=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
runs = doc if isinstance(doc, list) else doc.get("runs", [])
def rows(x):
    if isinstance(x, dict):
        if str(x.get("procedure", "")).startswith("libsqlite3.so.0:"):
            yield x
        for v in x.values():
            yield from rows(v)
    elif isinstance(x, list):
        for v in x:
            yield from rows(v)
print(sum(1 for _ in rows(doc)))' "$work/sq.export.json")
    if [ "$shown" = "$timed" ] && [ "$exported" = "$timed" ]; then
        ok "the history holds the run's $timed libsqlite3 objects: history show and export name them libsqlite3.so.0:..."
    else
        not_ok "history: show $shown, export $exported rows of libsqlite3, pass2.tsv $timed"
    fi
    rm -rf "$dir" # the page from the history alone
    "$mtool" report -o "$work/sq.html" last > /dev/null 2> "$work/sq.report.err"
    if [ "$(grep -o '"procedure":"libsqlite3\.so\.0:[^"]*"' "$work/sq.html" | wc -l)" = "$timed" ]; then
        ok "mtool report last (from the history): the page has the $timed libsqlite3 objects"
    else
        not_ok "mtool report last: $(tail -1 "$work/sq.report.err")"
    fi
}

python_checks() {
    local py=/usr/bin/python3 module
    module=$("$py" -c 'import _bz2; print(_bz2.__file__)' 2>/dev/null) || {
        ok "# skip: $py has no _bz2 extension module"
        return
    }
    module=$(basename "$module")
    cat > "$work/bz.py" <<'EOF'
import _bz2
data = b"".join(b"line %d of some text to compress\n" % i for i in range(40000))
c = _bz2.BZ2Compressor(9)
print(len(data), len(c.compress(data) + c.flush()))
EOF
    "$py" "$work/bz.py" > "$work/py.orig"
    # The first only has to meet the module: a count (a pass 2 after it would check nothing).
    "$mtool" count -o "$work/py1" -- "$py" "$work/bz.py" > "$work/py1.out" 2> "$work/py1.err"
    local first=$?
    "$mtool" run --no-html -o "$work/py2" -- "$py" "$work/bz.py" > "$work/py2.out" 2> "$work/py2.err"
    local second=$?
    if [ $first = 0 ] && [ $second = 0 ] &&
        grep -qF "library $module (" "$work/py1.err" && grep -qF 'counted from the next count' "$work/py1.err" &&
        grep -qE "^library ${module//./\\.} \(.*opened by dlopen\): [0-9]+ of [0-9]+ procedures instrumented; executed [1-9]" "$work/py2.err" &&
        [ "$(grep -v '^ \|^[a-zA-Z]' "$work/py2.out" | grep -c "^$(cat "$work/py.orig")$")" -ge 2 ]; then
        ok "python3: $module (opened by dlopen) counted from the second run, output identical"
    else
        not_ok "python3: exit $first, $second; $(grep -F "$module" "$work/py2.err" | head -1)"
    fi
    python3 - "$work/py2/report.json" "$module" <<'PY' &&
import json, sys
doc = json.load(open(sys.argv[1]))
mod = sys.argv[2]
rows = [r for r in doc["objects"] + doc["not_timed"] if r.get("object") == mod]
print("# %d rows of %s: %s" % (len(rows), mod, " ".join(sorted({r["procedure"] for r in rows}))))
sys.exit(0 if rows and all(r["name"].startswith(mod + ":" + r["procedure"]) for r in rows) else 1)
PY
        ok "report.json names the extension module's procedures ($module:...)" ||
        not_ok "report.json: no procedure of $module"
    local timed shown
    timed=$(library_objects "$work/py2/pass2.tsv" libbz2.so.1.0)
    "$mtool" history show last > "$work/py.show" 2>&1
    shown=$(grep -cE '^ +#[0-9]+ +libbz2\.so\.1\.0:' "$work/py.show")
    if [ "$timed" -ge 1 ] && [ "$shown" = "$timed" ]; then
        ok "libbz2.so.1.0 (opened by dlopen for the module): $timed objects timed, in pass2.tsv and the history"
    else
        not_ok "libbz2.so.1.0: $timed objects in pass2.tsv, $shown in the history"
    fi
}

if command -v sqlite3 > /dev/null && [ -x /usr/bin/sqlite3 ]; then
    sqlite_checks
else
    ok "# skip: no sqlite3"
fi
python_checks
