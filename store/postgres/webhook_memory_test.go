package postgres_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// BenchmarkWebhookMemory is the throughput harness's soak (issue 41's memory goal; scripts/bench-webhooks.sh with
// TOOL_BENCH_MINUTES): TOOL_BENCH_REPLICAS replica processes (default 3) whose Routers cache at most
// TOOL_BENCH_CACHE tasks each (default 2,500) take webhooks at TOOL_BENCH_CONCURRENCY (default 32), 10 % of them
// to tasks never touched before, for TOOL_BENCH_MINUTES minutes (default 10). Each replica first caches
// TOOL_BENCH_HOT tasks (default 2,000), so the cold tasks fill its cache within the first minute and from then on
// every cold task evicts one. At the end of each minute every replica collects garbage and reports its live heap;
// the benchmark logs them and reports the largest ratio of a replica's live heap at the last minute to its live
// heap at minute 2 ("heap-ratio"). -benchtime 1x.
func BenchmarkWebhookMemory(b *testing.B) {
	stored := storedCount(b)
	hot := envInts(b, "TOOL_BENCH_HOT", []int{2000})[0]
	cache := envInts(b, "TOOL_BENCH_CACHE", []int{2500})[0]
	minutes := envInts(b, "TOOL_BENCH_MINUTES", []int{10})[0]
	pool := envInts(b, "TOOL_BENCH_POOL", []int{16})[0]
	n := envInts(b, "TOOL_BENCH_REPLICAS", []int{3})[0]
	conc := envInts(b, "TOOL_BENCH_CONCURRENCY", []int{32})[0]
	if minutes < 3 {
		b.Fatalf("TOOL_BENCH_MINUTES=%d: the soak compares the last minute with minute 2; run at least 3", minutes)
	}
	if n*hot >= stored {
		b.Fatalf("%d replicas × %d hot tasks need more than the %d stored", n, hot, stored)
	}
	schema := newSchema(b)
	seedPR(b, schema, stored)
	rs := startReplicas(b, schema, n, pool, cache)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newPlan(n, hot, stored)
	warm(b, rs, p, run)
	for r := range n {
		var ok bool
		rs.ask(b, r, "forget-activations", &ok)
	}
	live := make([][]uint64, n) // by replica, by minute
	var acked, failed int
	start := time.Now()
	for m := 1; m <= minutes; m++ {
		res, elapsed := runLevel(b, rs, p, conc, 0, time.Minute, 0.1, fmt.Sprint(run, "-m", m))
		var rate float64
		for _, lr := range res {
			rate += float64(lr.acked) / elapsed.Seconds()
			acked += lr.acked
			failed += lr.failed
		}
		line := fmt.Sprintf("minute %2d: %.0f deliveries/s; live heap, MB:", m, rate)
		for r := range n {
			var h heapStats
			rs.ask(b, r, "heap", &h)
			live[r] = append(live[r], h.Live)
			line += fmt.Sprintf(" %.1f (in use %.1f, sys %.1f, %d goroutines)",
				float64(h.Live)/1e6, float64(h.InUse)/1e6, float64(h.Sys)/1e6, h.Goroutines)
		}
		b.Log(line)
	}
	if acked == 0 {
		b.Fatalf("no webhook answered 202 (%d failed)", failed)
	}
	var ratio, at2, last float64
	for r := range n {
		q := float64(live[r][minutes-1]) / float64(live[r][1])
		if q > ratio {
			ratio, at2, last = q, float64(live[r][1])/1e6, float64(live[r][minutes-1])/1e6
		}
	}
	b.ReportMetric(ratio, "heap-ratio")
	b.ReportMetric(at2, "heap-MB-minute-2")
	b.ReportMetric(last, "heap-MB-last-minute")
	b.ReportMetric(float64(failed), "not-202")
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(acked), "ns/op")
	for _, proc := range rs.procs {
		proc.shutdown(b)
	}
}
