#!/usr/bin/env bash
# Webhook throughput of store mode against the raw pgx baseline, in one run (issue 41; BENCHMARKS.md, "Webhook
# throughput"), outside .ci/run: a throwaway PostgreSQL with synchronous commit and fsync on, STORED github-pr
# tasks seeded by SQL, replica processes of the store/postgres test binary, and a load generator posting signed
# GitHub webhooks (90 % to tasks the replica has cached, 10 % to tasks none has touched) at each concurrency for
# SECONDS. At each concurrency the raw baseline runs first, then each replica count, each from a CHECKPOINT.
#
#   scripts/bench-webhooks.sh [STORED] [SECONDS]       (defaults 100000 and 10)
#
# Environment: TOOL_BENCH_REPLICAS (default 1,3), TOOL_BENCH_CONCURRENCY (default 1,8,32,128), TOOL_BENCH_HOT
# (tasks each replica caches first, default 2000), TOOL_BENCH_POOL (each replica's connections, default 16),
# TOOL_BENCH_CPUPROFILE=PREFIX (a CPU profile per replica: PREFIX.w0, PREFIX.w1, ...), TOOL_BENCH_STATEMENTS=N (the
# server's N costliest statements at the end, from pg_stat_statements: the raw baseline's and the replicas'),
# TOOL_BENCH_LANES (the replicas' WithGroupCommit; default the Store's), TOOL_BENCH_REPLICA_GOMAXPROCS (the CPUs each
# replica's Go runtime uses, as a container's CPU limit sets them; default all), TOOL_BENCH_TEST_BINARY (a
# store/postgres test binary to run instead of building one: to interleave two versions in one session).
# With TOOL_BENCH_MINUTES=M it runs the soak instead (BenchmarkWebhookMemory: 3 replicas whose caches hold
# TOOL_BENCH_CACHE tasks, default 2,500, at concurrency 32 for M minutes; each replica's live heap every minute, and
# with TOOL_BENCH_HEAPPROFILE=PREFIX a heap profile too: PREFIX.w0.1, PREFIX.w0.2, ...).
# A replica's hot tasks are visited in turn, each every HOT / (its rate × 0.9) seconds: when that is over a minute,
# each of those deliveries also writes its task's last activity ("activity-writes/delivery"), in the statement that
# records its delivery id (a PutBatch; a fourth statement before issue 41's store.BatchStore).
set -euo pipefail
cd "$(dirname "$0")/.."
stored=${1:-100000}
seconds=${2:-10}
env_file=$(mktemp)
statements=${TOOL_BENCH_STATEMENTS:-}
options=""
if [ -n "$statements" ]; then options="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"; fi
TOOL_POSTGRES_OPTIONS=$options TOOL_POSTGRES_SYNCHRONOUS_COMMIT=on TOOL_POSTGRES_FSYNC=on scripts/postgres.sh start "$env_file" >/dev/null
# shellcheck disable=SC1090
source "$env_file"
psql_bin="$(cat "$TOOL_TEST_POSTGRES_DIR/bindir")/psql"
if [ -n "$statements" ]; then "$psql_bin" -q "$TOOL_TEST_POSTGRES_DSN" -c 'CREATE EXTENSION pg_stat_statements'; fi
bin=$(mktemp -d)
trap 'scripts/postgres.sh stop "$TOOL_TEST_POSTGRES_DIR"; rm -rf "$env_file" "$bin"' EXIT
if [ -n "${TOOL_BENCH_TEST_BINARY:-}" ]; then cp "$TOOL_BENCH_TEST_BINARY" "$bin/postgres.test"; else go test -c -o "$bin/postgres.test" ./store/postgres; fi
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD)${TOOL_BENCH_TEST_BINARY:+ (binary $TOOL_BENCH_TEST_BINARY)} $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
bench='^BenchmarkWebhookThroughput$'
if [ -n "${TOOL_BENCH_MINUTES:-}" ]; then bench='^BenchmarkWebhookMemory$'; fi
(cd store/postgres && TOOL_BENCH_STORED=$stored TOOL_BENCH_SECONDS=$seconds TOOL_BENCH_HOT=${TOOL_BENCH_HOT:-2000} \
  "$bin/postgres.test" -test.run '^$' -test.bench "$bench" -test.benchtime 1x -test.timeout 2h)
echo "# $(date -u +%FT%TZ) load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$statements" ]; then
  "$psql_bin" -q "$TOOL_TEST_POSTGRES_DSN" -c "SELECT calls, round(total_exec_time) AS total_ms,
    round((total_exec_time / greatest(calls, 1))::numeric, 3) AS mean_ms, plans, round(total_plan_time) AS plan_ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
    FROM pg_stat_statements ORDER BY ${TOOL_BENCH_STATEMENTS_ORDER:-total_exec_time} DESC LIMIT $statements"
fi
