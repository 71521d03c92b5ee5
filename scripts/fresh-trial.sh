#!/usr/bin/env bash
# Times the README's commands as a new user meets them (issue 32's trial): a fresh clone of this checkout with
# empty module and build caches (a temporary GOPATH, GOMODCACHE and GOCACHE), the Go toolchain as installed.
# PostgreSQL should be installed already (scripts/postgres.sh installs it otherwise, and that time counts).
#
#   bash scripts/fresh-trial.sh [OUT]   OUT: where the timings go (default: stdout only)
#
# It runs the test command cold, then warm, and the quick loop warm; quickstart cold on empty caches; .ci/run cold on
# empty caches. Each line gives the command, its wall time and the load average before it. Run it on an idle
# machine: the first line records the load it started with.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/dev/null}
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

fresh() { # empty caches under $work/$1
  export GOPATH=$work/$1/gopath GOMODCACHE=$work/$1/gopath/pkg/mod GOCACHE=$work/$1/gocache
}
timed() { # timed NAME COMMAND...: run, print and record "NAME: N s (load L before)"
  local name=$1; shift
  local load start log
  log=$work/$(echo "$name" | tr -c 'A-Za-z0-9.\n' _).log
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s)
  "$@" >"$log" 2>&1 || { echo "$name failed: see the log below"; tail -50 "$log"; exit 1; }
  echo "$name: $(( $(date +%s) - start )) s (load $load before)" | tee -a "$out"
}

echo "fresh trial of $(git -C "$root" rev-parse --short HEAD) on $(nproc) cores, $(date -u +%FT%TZ)" | tee -a "$out"
git clone -q "$root" "$work/repo"
cd "$work/repo"
fresh a
timed "bash scripts/test.sh (cold)" bash scripts/test.sh
timed "bash scripts/test.sh (warm)" bash scripts/test.sh
timed "go test -short ./... (warm)" go test -short -count=1 ./...
fresh b
timed "go run ./examples/quickstart (cold)" go run ./examples/quickstart
fresh c
timed "bash .ci/run (cold)" bash .ci/run
