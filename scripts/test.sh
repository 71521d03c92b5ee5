#!/usr/bin/env bash
# The test command: the whole verdict on the library, and nothing else. gofmt, go vet, then go test -race ./...
# with a throwaway PostgreSQL server for store/postgres (scripts/postgres.sh installs it from the Debian packages
# when it is missing, as root), stopped on exit. .ci/run runs this, then its extras.
#
#   bash scripts/test.sh            the verdict
#   go test -short ./...            the quick loop while working: no PostgreSQL, the long suites cut short
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
pg_env=$(scripts/postgres.sh start) # an assignment, so that set -e stops here if the start fails
eval "$pg_env"
export CI=${CI:-true}          # the PostgreSQL tests fail rather than skip without their server
export TOOL_KILL_ITERATIONS=${TOOL_KILL_ITERATIONS:-10} # TestKillAtRandomPoints: 50 when run on its own
trap 'scripts/postgres.sh stop "$TOOL_TEST_POSTGRES_DIR"' EXIT
go test -race ./...
