#!/usr/bin/env bash
# Instructions per operation of Go benchmarks, counted by valgrind (cachegrind, without cache simulation): they
# do not depend on the machine's load, where wall times on a shared machine do. Runs of the same benchmark agree
# within about 3 % (the runtime's own threads, sysmon and the GC, still vary). The whole process counts, on one
# thread (GOMAXPROCS=1), so an in-process server's handler counts as it does in the benchmark's wall time. Each
# benchmark runs with N and 2N iterations and the difference is divided by N, so setup (Load, servers, the
# warm-up run) cancels out.
#
#   scripts/instructions.sh PKG BENCH-REGEX [N]
#   scripts/instructions.sh . 'BenchmarkInvokeHTTP/(invoke|baseline-net-http-timeout)$' 1000
#
# Go 1.26's runtime reads the clock with RDTSCP, which valgrind 3.19 cannot run (SIGILL), and preempts
# goroutines with signals: GODEBUG turns both off for the counted runs. (callgrind 3.19 also asserts on the
# signals of a child process, hence cachegrind.) Only the test process counts, not the processes it starts (a
# stdio MCP server): valgrind counts a child only when it exits by itself, and Task.Close kills. A process
# started into a cgroup (clone3) fails under valgrind 3.19: benchmarks that count start theirs in a process group.
set -euo pipefail
pkg=${1:?package} re=${2:?benchmark regex} n=${3:-1000}
command -v valgrind >/dev/null || { echo "valgrind is needed (Debian package valgrind)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" "$pkg"
pkgdir=$(go list -f '{{.Dir}}' "$pkg")
names=$(cd "$pkgdir" && "$dir/bench.test" -test.run '^$' -test.bench "$re" -test.benchtime 1x 2>/dev/null |
	awk '/^Benchmark/ {sub(/-[0-9]+$/, "", $1); print $1}')
count() { # benchmark, iterations → instructions of the whole process
	local log=$dir/valgrind.log
	if ! (cd "$pkgdir" && GOMAXPROCS=1 GODEBUG=cpu.rdtscp=off,asyncpreemptoff=1 valgrind --tool=cachegrind \
		--cache-sim=no --cachegrind-out-file=/dev/null "$dir/bench.test" -test.run '^$' -test.bench "^$1\$" \
		-test.benchtime "${2}x" >"$log" 2>&1); then
		grep -v '^==' "$log" >&2
		echo "$1 failed under valgrind" >&2
		exit 1
	fi
	awk '/I +refs:/ {gsub(/,/, "", $4); print $4}' "$log"
}
printf '%-60s %s\n' benchmark instructions/op
for name in $names; do
	one=$(count "$name" "$n")
	two=$(count "$name" "$((2 * n))")
	printf '%-60s %d\n' "$name" $(((two - one) / n))
done
