#!/usr/bin/env bash
# Pushes the load average to about N (default 8) with N busy-looping node processes, to check
# that the test suite holds on a loaded machine. Stops them on exit, Ctrl-C included.
#   bench/load.sh [N]                  until Ctrl-C
#   bench/load.sh [N] -- npm test      runs the command under load; exits with its status
set -euo pipefail
n=8
if [[ $# -gt 0 && $1 != "--" ]]; then n=$1; shift; fi
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then echo "bench/load.sh: N must be a positive whole number, got '$n'" >&2; exit 2; fi
if [[ $# -gt 0 ]]; then
  if [[ $1 != "--" ]]; then echo "bench/load.sh: expected -- before the command, got '$1'" >&2; exit 2; fi
  shift
fi

pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM

for ((i = 0; i < n; i++)); do
  node -e 'for (;;) {}' &
  pids+=("$!")
done
echo "bench/load.sh: $n busy node processes (pids ${pids[*]}); load average now $(cut -d' ' -f1-3 /proc/loadavg)" >&2

if [[ $# -gt 0 ]]; then
  # The 1-minute load average every 10 s while the command runs, summed up at the end, so a run
  # says what load it passed (or failed) at: the busy loops plus the command's own processes.
  samples=$(mktemp)
  (while sleep 10; do cut -d' ' -f1 /proc/loadavg >>"$samples"; done) &
  pids+=("$!")
  status=0
  "$@" || status=$?
  sort -n "$samples" | awk -v n="$n" '{ v[NR] = $1; s += $1 } END { if (NR) printf "bench/load.sh: %d busy processes; load average while it ran: min %s, median %s, max %s, mean %.1f (%d samples)\n", n, v[1], v[int((NR + 1) / 2)], v[NR], s / NR, NR }' >&2
  rm -f "$samples"
  exit "$status"
else
  while :; do sleep 60; echo "bench/load.sh: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2; done
fi
