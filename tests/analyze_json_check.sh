#!/bin/bash
# tests/analyze_json_check.sh MTOOL SAMPLE: `mtool analyze --json` of one
# sample exits 0 and writes JSON that python3 parses; one ok / not ok line.
# tests/run.sh runs it over every sample, $JOBS at a time.
set -u
mtool=$1 bin=$2
name=$(basename "$bin")
work=$(mktemp -d "${TMPDIR:-/tmp}/mtool-analyze-json.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
if "$mtool" analyze --json "$bin" -o "$work/a.json" 2> "$work/err" &&
    python3 -m json.tool "$work/a.json" > /dev/null 2>> "$work/err"; then
    echo "ok - $name: valid JSON"
else
    echo "not ok - $name: analyze --json failed or invalid: $(grep -v warning: "$work/err" | head -1)"
fi
