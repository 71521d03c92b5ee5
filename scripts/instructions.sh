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
#   CHILDREN=1 scripts/instructions.sh ./runtime/mcp 'BenchmarkCall/stdio' 3000
#
# CHILDREN=1 also counts the processes the benchmark starts (a stdio MCP server: the work on the other side of
# the pipe, which the benchmark's wall time includes), except the Go toolchain's and the C compiler's (a TestMain
# that builds a helper), and prints the test process's share and theirs. A child that does not exit by itself
# (one that is killed) has no count: its command is named on stderr, and it is left out of the sum.
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
count() { # benchmark, iterations → instructions of the test process, then of its children (0 without CHILDREN)
	local log=$dir/valgrind.log children=()
	rm -f "$dir"/vg.*
	[[ -n ${CHILDREN:-} ]] && children=(--trace-children=yes "--log-file=$dir/vg.%p")
	if ! (cd "$pkgdir" && GOMAXPROCS=1 GODEBUG=cpu.rdtscp=off,asyncpreemptoff=1 valgrind --tool=cachegrind \
		--cache-sim=no --cachegrind-out-file=/dev/null "${children[@]}" "$dir/bench.test" -test.run '^$' \
		-test.bench "^$1\$" -test.benchtime "${2}x" >"$log" 2>&1); then
		grep -v '^==' "$log" >&2
		echo "$1 failed under valgrind" >&2
		exit 1
	fi
	local self=0 kids=0 f cmd refs goroot
	goroot=$(go env GOROOT)
	for f in "$log" "$dir"/vg.*; do
		[[ -f $f ]] || continue
		cmd=$(grep -m1 'Command:' "$f" | sed 's/.*Command: //')
		refs=$(awk '/I +refs:/ {gsub(/,/, "", $4); print $4}' "$f")
		case $cmd in
		"$goroot"/* | *gcc*) ;;
		"$dir/bench.test"*) self=${refs:-0} ;;
		*) if [[ -n $refs ]]; then kids=$((kids + refs)); else echo "uncounted (killed): ${cmd:-an unnamed process}" >&2; fi ;;
		esac
	done
	echo "$self $kids"
}
if [[ -n ${CHILDREN:-} ]]; then
	printf '%-60s %12s %12s %12s\n' benchmark total/op process/op children/op
else
	printf '%-60s %s\n' benchmark instructions/op
fi
for name in $names; do
	one=$(count "$name" "$n")
	two=$(count "$name" "$((2 * n))")
	read -r s1 k1 <<<"$one"
	read -r s2 k2 <<<"$two"
	self=$(((s2 - s1) / n)) kids=$(((k2 - k1) / n))
	if [[ -n ${CHILDREN:-} ]]; then
		printf '%-60s %12d %12d %12d\n' "$name" $((self + kids)) "$self" "$kids"
	else
		printf '%-60s %d\n' "$name" "$self"
	fi
done
