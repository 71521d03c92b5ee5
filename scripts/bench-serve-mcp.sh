#!/usr/bin/env bash
# Calls per second of `tool serve-mcp`, and the server CPU time per call, over stdio and streamable HTTP, one call at a time and 8 in flight, against
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
# Each measurement prints calls/s and the server's CPU microseconds per call (mcpbench reads /proc).
measure() { "$dir/mcpbench" -n "$calls" "$@" | awk '{print $2 "\t" $4}'; }
{
	printf "run\tvariant\tstdio c=1\tcpu\tstdio c=8\tcpu\thttp c=1\tcpu\thttp c=8\tcpu\n"
	for run in $(seq "$runs"); do
		for variant in base head; do
			if [[ $variant == base ]]; then url=http://127.0.0.1:18711/mcp pid=${pids[0]}; else url=http://127.0.0.1:18712/mcp pid=${pids[1]}; fi
			s1=$(measure -c 1 -- "$dir/tool-$variant" serve-mcp "$manifest")
			s8=$(measure -c 8 -- "$dir/tool-$variant" serve-mcp "$manifest")
			h1=$(measure -c 1 -url "$url" -pid "$pid")
			h8=$(measure -c 8 -url "$url" -pid "$pid")
			printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$run" "$variant" "$s1" "$s8" "$h1" "$h8"
		done
	done
} | tee "$dir/runs.tsv"
# Medians per mode, and head / base: calls/s (higher is better) and the server's CPU per call (lower is better).
awk -F'\t' '
function median(list, n,   a, i, j, t) {
	split(list, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
NR == 1 { for (c = 3; c <= NF; c++) name[c] = $c; cols = NF; next }
{ n[$2]++; for (c = 3; c <= cols; c++) v[$2, c] = v[$2, c] " " $c }
END {
	printf "\nmedians\tbase\thead\thead/base\n"
	for (c = 3; c <= cols; c += 2) {
		b = median(v["base", c], n["base"]); h = median(v["head", c], n["head"])
		bc = median(v["base", c+1], n["base"]); hc = median(v["head", c+1], n["head"])
		printf "%s calls/s\t%.0f\t%.0f\t%.2f\n", name[c], b, h, h / b
		printf "%s server cpu us/call\t%.1f\t%.1f\t%.2f\n", name[c], bc, hc, hc / bc
	}
}' "$dir/runs.tsv"
