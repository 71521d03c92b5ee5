#!/usr/bin/env bash
# The 1M run of store mode's benchmarks (issue 28; BENCHMARKS.md, "Store mode"), outside .ci/run: restart to the
# first accepted webhook, cold against hot first delivery, heap with no task touched and per touched task, over
# TOOL_BENCH_STORED tasks (default 1,000,000) seeded by SQL on a throwaway PostgreSQL.
#
#   scripts/storemode-1m.sh [STORED] [TOUCHED]     (defaults 1000000 and 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
stored=${1:-1000000}
touched=${2:-1000}
env_file=$(mktemp)
scripts/postgres.sh start "$env_file" >/dev/null
# shellcheck disable=SC1090
source "$env_file"
trap 'scripts/postgres.sh stop "$TOOL_TEST_POSTGRES_DIR"; rm -f "$env_file"' EXIT
TOOL_BENCH_STORED=$stored go test -run '^$' -bench 'BenchmarkStoreMode' -benchtime "${touched}x" -count 1 -timeout 60m \
  ./store/postgres
