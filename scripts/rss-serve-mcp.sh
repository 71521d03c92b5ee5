#!/bin/sh
# Resident memory of `tool serve-mcp` against the smallest library host (internal/cmd/mcphost) serving the same
# manifest over stdio, after 200 calls (BENCHMARKS.md, issue 22). Usage: scripts/rss-serve-mcp.sh [MANIFEST]
# (default: one cel action; a MANIFEST of yours needs a first tool that accepts {"name":"x"})
set -eu
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
manifest=${1:-scripts/shout.yaml}
go build -o "$dir/tool" ./cmd/tool
go build -o "$dir/mcphost" ./internal/cmd/mcphost
go build -o "$dir/mcprss" ./internal/cmd/mcprss
for run in 1 2 3; do
	"$dir/mcprss" -args '{"name":"x"}' -- "$dir/tool" serve-mcp "$manifest"
	"$dir/mcprss" -args '{"name":"x"}' -- "$dir/mcphost" "$manifest"
done
