#!/usr/bin/env bash
# Times the quick loop, `go test -short -count=1 ./...`, on a warm build cache (issue 39; BENCHMARKS.md, "The quick
# loop"): RUNS runs (default 3) after one warm-up, the wall time of each and its median, then each package's test
# time (what `go test` prints) as the median over the runs, slowest first, and the floor: the same command with
# -run '^$', which builds, links and starts every test binary and runs no test.
#
#   scripts/short-times.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go test -short -count=1 ./... >/dev/null # warm the build cache
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
walls=()
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  go test -short -count=1 ./... >"$out/run$i.txt"
  walls+=("$(echo "$(date +%s.%N) - $start" | bc)")
done
floor_start=$(date +%s.%N)
go test -short -count=1 -run '^$' ./... >/dev/null
floor=$(echo "$(date +%s.%N) - $floor_start" | bc)
printf 'wall, s: %s; median %.1f\n' "${walls[*]}" "$(printf '%s\n' "${walls[@]}" | median)"
printf 'floor (-run ^$: build, link, start), s: %.1f\n' "$floor"
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
echo '| package | test time, s (median) |'
echo '|---|---|'
cat "$out"/run*.txt | awk '$1 == "ok" {sub(/s$/, "", $3); print $2, $3}' | sort |
  awk '{t[$1] = t[$1] " " $2} END {for (p in t) print p, t[p]}' |
  while read -r pkg times; do
    echo "$(echo "$times" | tr ' ' '\n' | grep . | median) $pkg"
  done | sort -rn | awk '$1 >= 0.1 {sub("github.com/commonagents-go/tool", ".", $2); printf "| %s | %.2f |\n", $2, $1}'
