#!/usr/bin/env bash
# Runs bench/scans/explain.sql without (before) and with (after) the history reads' own indexes, ROUNDS
# times alternating, and prints each query's execution times (ms) side by side with the load average.
# Usage: bench/scans/compare.sh <database url or name> [rounds=3]
set -euo pipefail
db=${1:?usage: bench/scans/compare.sh <database> [rounds]}
rounds=${2:-3}
here=$(dirname "$0")
times() { psql -X -q "$db" -v before="$1" -f "$here/explain.sql" | awk '/^== /{name=substr($0,4)} /Execution Time/{print name "\t" $3}'; }
out=$(mktemp -d)
for r in $(seq 1 "$rounds"); do
  times 1 >"$out/before.$r"
  times 0 >"$out/after.$r"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)  rounds: $rounds  (ms: before runs | after runs)"
paste "$out"/before.* | awk -F'\t' '{ line=$1; for (i = 2; i <= NF; i += 2) line = line " " $i; print line }' >"$out/b"
paste "$out"/after.* | awk -F'\t' '{ line=""; for (i = 2; i <= NF; i += 2) line = line " " $i; print line }' >"$out/a"
paste -d'|' "$out/b" "$out/a"
rm -r "$out"
