#!/bin/bash
# bench/libs.sh — counting through shared libraries on Debian's own programs
# (docs/ARCHITECTURE.md, "Shared libraries"): for each workload
#   - coverage: the share of the instructions callgrind saw executed (Ir of
#     the original program, per object) that fall in code mtool counts,
#     before (the executable alone) and after (with the libraries `mtool
#     count` counts by default, glibc's included, then with the same but
#     glibc's: --libs NAME,...); and the instructions mtool itself counted
#     against callgrind's in those objects (the check that "counted" is
#     true);
#   - slowdown: the counting run against the original, each the least
#     user+system time of 3 `mtool count` runs (each runs both, in turn, so
#     load on the machine hits both alike).  Geomean over the workloads,
#     goal 1.25x.
# A program opened by dlopen is counted from its second count (docs), so
# every workload is counted once before it is measured.
#
#   MTOOL=build/mtool BENCH_DIR=build/bench bash bench/libs.sh
set -eu
cd "$(dirname "$0")/.."
MTOOL=$(realpath "${MTOOL:-build/mtool}")
B=$(realpath -m "${BENCH_DIR:-build/bench}")/libs
rm -rf "$B"
mkdir -p "$B"
export XDG_CACHE_HOME=$B/cache MTOOL_HISTORY=$B/history.db

# Inputs: text that compresses like text, a table, a script.
python3 -c '
import random
random.seed(7)
words = [("w%d" % i) * (1 + i % 3) for i in range(3000)]
print("\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(12000)))' > "$B/input.txt"
sqlite3 "$B/t.db" "CREATE TABLE t(a INTEGER, b TEXT); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL
    SELECT x + 1 FROM c WHERE x < 100000) INSERT INTO t SELECT x * 7919 % 100003, 'k' || (x % 977)
    FROM c;"
cat > "$B/script.py" <<'EOF'
import _bz2, _json, sys
data = open(sys.argv[1], "rb").read()
c = _bz2.BZ2Compressor(9)
out = c.compress(data) + c.flush()
text = _json.encode_basestring_ascii(data[:200000].decode())
print(len(data), len(out), len(text))
EOF

# name|command: the workloads (absolute paths: callgrind and mtool run the same file).
workloads() {
    echo "xz -9|/usr/bin/xz -9 -T1 -c $B/input.txt"
    echo "bzip2|/usr/bin/bzip2 -c $B/input.txt"
    echo "zstd -19|/usr/bin/zstd -19 -T1 -c $B/input.txt"
    echo "sqlite3 group by|/usr/bin/sqlite3 $B/t.db SELECT_QUERY"
    echo "python3 _bz2, _json|/usr/bin/python3 $B/script.py $B/input.txt"
}
query='SELECT b, count(*), sum(a) FROM t GROUP BY b ORDER BY 3 DESC LIMIT 5'
run_words() { # COMMAND: its words, the query one word
    for w in $1; do
        [ "$w" = SELECT_QUERY ] && printf '%s\n' "$query" || printf '%s\n' "$w"
    done
}

# ir_per_object CALLGRIND_OUT: "Ir OBJECT" lines, the program's own cost
# (not the inclusive cost lines after calls=).
ir_per_object() {
    python3 - "$1" <<'PY'
import re, sys
names, costs, ob, skip = {}, {}, None, False
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    # an object's name is given once, at its first ob= or cob= (name compression)
    m = re.match(r"(c?)ob=\((\d+)\)(?: (.*))?$", line) or re.match(r"(c?)ob=()(.+)$", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3)
        if not m.group(1):
            ob = names.get(m.group(2), m.group(3))
        continue
    if line.startswith("calls="):
        skip = True
        continue
    if line and (line[0].isdigit() or line[0] in "+-*"):
        if not skip:
            costs[ob] = costs.get(ob, 0) + int(line.split()[-1])
        skip = False
for o, c in sorted(costs.items(), key=lambda x: -x[1]):
    print(c, o)
PY
}

printf '%-28s %14s %10s %10s %14s %9s %9s %9s  %s\n' workload "Ir (callgrind)" before after \
    "counted/Ir" original counting slowdown "objects counted"
# glibc's libraries (the loader stays original either way).
GLIBC='^(libc|libm|libpthread|libdl|librt|libmvec|libresolv|libutil|libanl|libBrokenLocale)\.so'
# Twice: the libraries `mtool count` counts by default (every one the
# program loads, glibc's included), then the same but glibc's (--libs
# naming the others the default counted: the former default).
for libs in default but-glibc; do
: > "$B/slowdowns"
workloads | while IFS='|' read -r name cmd; do
    mapfile -t argv < <(run_words "$cmd")
    tag=$(echo "$name" | tr -c 'a-z0-9\n' _)
    libs_opt=()
    if [ "$libs" = but-glibc ]; then
        name="$name, no glibc"
        libs_opt=(--libs "$(cat "$B/$tag.others")")
    fi
    if [ "$libs" = default ]; then
        "${argv[@]}" > "$B/$tag.orig" 2> /dev/null < /dev/null
        cat "$B/$tag.orig" "$B/$tag.orig" > "$B/$tag.twice" # count runs it uninstrumented, then counting
        valgrind --tool=callgrind --callgrind-out-file="$B/$tag.callgrind" "${argv[@]}" \
            > /dev/null 2>&1 < /dev/null
        ir_per_object "$B/$tag.callgrind" > "$B/$tag.ir"
    fi
    # libraries opened by dlopen are counted from the second count
    "$MTOOL" count --no-store "${libs_opt[@]}" -o "$B/$tag.learn" -- "${argv[@]}" > /dev/null 2>&1 < /dev/null
    for k in 1 2 3; do
        rm -rf "$B/$tag.$k"
        "$MTOOL" count --no-store "${libs_opt[@]}" -o "$B/$tag.$k" -- "${argv[@]}" > "$B/$tag.$k.out" \
            2> "$B/$tag.$k.err" < /dev/null
        cmp -s "$B/$tag.$k.out" "$B/$tag.twice" || echo "bench: $name: output differs from the original's" >&2
    done
    if [ "$libs" = default ]; then # the libraries it counted, but glibc's (or none)
        python3 -c 'import json, sys; print(",".join(l["name"] for l in json.load(open(sys.argv[1]))["libraries"] if l["copy"]))' \
            "$B/$tag.1/count.json" | tr ',' '\n' | grep -Ev "$GLIBC" | paste -sd, | sed 's/^$/none/' > "$B/$tag.others"
    fi
    python3 - "$B/$tag" "${argv[0]}" "$name" >> "$B/slowdowns" <<'PY'
import json, os, sys
base, exe, name = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
ir = {}
for line in open(base + ".ir"):
    c, o = line.rstrip("\n").split(" ", 1)
    ir[os.path.realpath(o)] = ir.get(os.path.realpath(o), 0) + int(c)
total = sum(ir.values())
docs = [json.load(open("%s.%d/count.json" % (base, k))) for k in (1, 2, 3)]
libs = [l for l in docs[0]["libraries"] if l["copy"] and l["instructions"]]
counted_objects = {exe} | {os.path.realpath(l["path"]) for l in libs}
before = ir.get(exe, 0) / total
after = sum(ir.get(o, 0) for o in counted_objects) / total
counted = docs[0]["executed"]["instructions"] + sum(l["instructions"] for l in libs)
in_counted = sum(ir.get(o, 0) for o in counted_objects)
orig = min(d["uninstrumented_run"]["user_seconds"] + d["uninstrumented_run"]["system_seconds"] for d in docs)
inst = min(d["instrumented_run"]["user_seconds"] + d["instrumented_run"]["system_seconds"] for d in docs)
names = ", ".join(l["name"] for l in libs) or "-"
sys.stderr.write("%-28s %14d %9.3f%% %9.2f%% %14.6f %8.3fs %8.3fs %8.2fx  %s\n" % (
    name, total, 100 * before, 100 * after, counted / in_counted if in_counted else 0, orig, inst,
    inst / orig, names))
print(inst / orig)
PY
done 2>&1
awk -v libs="$libs" '{ s += log($1); n++ } END {
    g = exp(s / n)
    printf "counting slowdown with libraries (%s), geomean of %d: %.2fx (goal <= 1.25x): %s\n", libs, n, g, (g <= 1.25 ? "PASS" : "MISS")
}' "$B/slowdowns"
done
echo "(before: the executable's share of callgrind's Ir; after: with the libraries mtool counted; counted/Ir: instructions mtool counted over callgrind's Ir in those objects)"
