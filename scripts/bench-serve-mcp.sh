#!/usr/bin/env bash
# Calls per second of `tool serve-mcp` over stdio and streamable HTTP, one call at a time and 8 in flight, against
# a baseline commit (default: main), interleaved run by run (BENCHMARKS.md, issue 30). Over HTTP both are
# `serve-mcp --http` (a task per session); a baseline whose serve-mcp speaks stdio only is measured through the
# library's server instead (mcpserve.New + Server.Handler, one task). Usage: scripts/bench-serve-mcp.sh [BASELINE] [RUNS] [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-main}
runs=${2:-5}
calls=${3:-3000}
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
manifest=$PWD/scripts/shout.yaml
mkdir -p "$dir/base"
git archive "$base" | tar -x -C "$dir/base"
mkdir -p "$dir/base/internal/cmd/httphost"
cat >"$dir/base/internal/cmd/httphost/main.go" <<'GO'
package main

import (
	"context"
	"net/http"
	"os"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
)

func main() {
	ctx := context.Background()
	tl, err := tool.LoadFile(ctx, os.Args[1])
	if err != nil {
		panic(err)
	}
	s, err := mcpserve.New(ctx, tl, tool.TaskConfig{})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler())
	panic(http.ListenAndServe(os.Args[2], mux))
}
GO
(cd "$dir/base" && go build -o "$dir/tool-base" ./cmd/tool && go build -o "$dir/httphost-base" ./internal/cmd/httphost)
go build -o "$dir/tool-head" ./cmd/tool
go build -o "$dir/mcpbench" ./internal/cmd/mcpbench
if "$dir/tool-base" serve-mcp -h 2>&1 | grep -q -- '-http'; then
	# A base whose serve-mcp speaks streamable HTTP is measured as such, like head.
	"$dir/tool-base" serve-mcp "$manifest" --http 127.0.0.1:18711 2>/dev/null & pids+=($!)
else
	"$dir/httphost-base" "$manifest" 127.0.0.1:18711 & pids+=($!)
fi
"$dir/tool-head" serve-mcp "$manifest" --http 127.0.0.1:18712 2>/dev/null & pids+=($!)
sleep 1
measure() { "$dir/mcpbench" -n "$calls" "$@" | awk '{print $2}'; }
printf "run\tvariant\tstdio c=1\tstdio c=8\thttp c=1\thttp c=8\n"
for run in $(seq "$runs"); do
	for variant in base head; do
		if [[ $variant == base ]]; then url=http://127.0.0.1:18711/mcp; else url=http://127.0.0.1:18712/mcp; fi
		s1=$(measure -c 1 -- "$dir/tool-$variant" serve-mcp "$manifest")
		s8=$(measure -c 8 -- "$dir/tool-$variant" serve-mcp "$manifest")
		h1=$(measure -c 1 -url "$url")
		h8=$(measure -c 8 -url "$url")
		printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$run" "$variant" "$s1" "$s8" "$h1" "$h8"
	done
done
