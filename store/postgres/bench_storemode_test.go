package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/commonagents-go/tool/tooltest"
	"github.com/jackc/pgx/v5"
)

// Benchmarks of store mode (issue 28, docs/scaling.md) on PostgreSQL: tasks of fanManifest seeded by SQL (t1..tN,
// team t<i>, following u<i>, with their routes), N from TOOL_BENCH_STORED (default 1,000; the 1M run is
// scripts/storemode-1m.sh, outside .ci/run).

// storedCount is TOOL_BENCH_STORED, else 1,000.
func storedCount(b *testing.B) int {
	n, err := strconv.Atoi(os.Getenv("TOOL_BENCH_STORED"))
	if err != nil || n < 1 {
		return 1000
	}
	return n
}

// seedFanin stores t0 through the library (and the marker of ReindexRoutes), then t1..tn by SQL as copies of
// t0's state and routes.
func seedFanin(b *testing.B, schema string, st *postgres.Store, n int) {
	b.Helper()
	ctx := context.Background()
	tl, err := tool.Load(ctx, []byte(fanManifest), tool.WithStore(st), tool.WithRouteIndex())
	if err != nil {
		b.Fatal(err)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{ID: "t0", Capability: tool.Capability{Bindings: map[string]any{"team": "t0"}}})
	if err != nil {
		b.Fatal(err)
	}
	if res, err := task.Invoke(ctx, "follow", map[string]any{"login": "u0"}); err != nil || res.IsError {
		b.Fatal(err, res)
	}
	if err := task.Detach(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := tl.ReindexRoutes(ctx); err != nil {
		b.Fatal(err)
	}
	kv, routes := pgx.Identifier{schema}.Sanitize()+".tool_kv", pgx.Identifier{schema}.Sanitize()+".tool_routes"
	copyState := `INSERT INTO ` + kv + ` (key, value) SELECT convert_to('tasks/tests/fanin/t' || i || '/' || $3, 'UTF8'),
		convert_to(replace(replace(convert_from(value, 'UTF8'), '"t0"', '"t' || i || '"'), '"u0"', '"u' || i || '"'), 'UTF8')
		FROM ` + kv + `, generate_series(1, $1) i WHERE key = convert_to($2, 'UTF8')`
	route := func(param, prefix string) string {
		return `INSERT INTO ` + routes + ` (route, task) SELECT substring(sha256('tests/fanin'::bytea || '\x00'::bytea ||
			'mentioned'::bytea || '\x00'::bytea || '` + param + `'::bytea || '\x00'::bytea || convert_to('` + prefix + `' || i, 'UTF8')) from 1 for 16),
			convert_to('tasks/tests/fanin/t' || i || '/', 'UTF8') FROM generate_series(1, $1) i`
	}
	db := admin(b)
	for _, part := range []string{"allowlist", "events"} {
		if _, err := db.Exec(copyState, n, "tasks/tests/fanin/t0/"+part, part); err != nil {
			b.Fatalf("seed %s: %v", part, err)
		}
	}
	for _, stmt := range []string{route("team", "t"), route("login", "u")} {
		if _, err := db.Exec(stmt, n); err != nil {
			b.Fatalf("seed routes: %v", err)
		}
	}
	for _, table := range []string{kv, routes} {
		if _, err := db.Exec(`ANALYZE ` + table); err != nil {
			b.Fatal(err)
		}
	}
}

// storeModeRouter opens the schema again, as a restarted replica does, and serves fanManifest in store mode;
// closing st ends it.
func storeModeRouter(b *testing.B, schema string, sink tool.Sink) (r *tool.Router, st *postgres.Store) {
	b.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn(b), postgres.WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	tl, err := tool.Load(ctx, []byte(fanManifest), tool.WithStore(st), tool.WithRouteIndex(), tool.WithReplicaID("bench"))
	if err != nil {
		b.Fatal(err)
	}
	r = tool.NewRouter(tool.RouterOptions{})
	err = r.Serve(ctx, tl, func(_ context.Context, id string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"team": id}}, Sink: sink}, true
	})
	if err != nil {
		b.Fatal(err)
	}
	return r, st
}

// deliverTo dispatches a webhook for task i (team t<i>, login u<i>) with delivery id and checks that it
// activated the task once.
func deliverTo(b *testing.B, r *tool.Router, i int, id string) {
	body, _ := json.Marshal(map[string]string{"team": "t" + strconv.Itoa(i), "login": "u" + strconv.Itoa(i)})
	ds, err := r.Dispatch(context.Background(), "tests", "fanin", &tool.Inbound{Body: body, DeliveryID: id})
	if err != nil || len(ds) != 1 || len(ds[0].Activations) != 1 {
		b.Fatalf("delivery %s to t%d: %+v %v", id, i, func() any {
			if len(ds) > 0 {
				return *ds[0]
			}
			return nil
		}(), err)
	}
}

// BenchmarkStoreMode measures, over N stored tasks:
//   - restart: opening the Store, Load, NewRouter and Serve, then the first webhook accepted (reads no task state
//     before it: TestStoreModeSeesAnotherReplicasGrowth);
//   - cold-hot: the p50 of a first delivery to a task not in memory (lookup, one Scan, hydration, delivery)
//     against a delivery to a task in memory (lookup, delivery), interleaved, each with a new delivery id;
//   - heap: HeapAlloc after GC with no task touched, and per task touched (b.N tasks).
//
// Run with -benchtime Nx, N ≤ TOOL_BENCH_STORED.
func BenchmarkStoreMode(b *testing.B) {
	n := storedCount(b)
	schema := newSchema(b)
	seedFanin(b, schema, open(b, schema), n)
	sink := tool.SinkFunc(func(context.Context, tool.Activation) error { return nil })
	b.Run("restart", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			r, st := storeModeRouter(b, schema, sink)
			deliverTo(b, r, 1+i%n, "restart-"+strconv.FormatInt(time.Now().UnixNano(), 36))
			st.Close()
		}
	})
	b.Run("cold-hot", func(b *testing.B) {
		if b.N > n {
			b.Fatalf("-benchtime %dx is more than the %d stored tasks", b.N, n)
		}
		r, st := storeModeRouter(b, schema, sink)
		defer st.Close()
		run := strconv.FormatInt(time.Now().UnixNano(), 36) // the framework runs this more than once
		deliverTo(b, r, 0, "warm-"+run)                     // t0 is the hot task
		cold, hot := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			deliverTo(b, r, 1+i, fmt.Sprint("cold-", run, i))
			cold = append(cold, time.Since(start))
			start = time.Now()
			deliverTo(b, r, 0, fmt.Sprint("hot-", run, i))
			hot = append(hot, time.Since(start))
		}
		b.StopTimer()
		c, h := p50(cold), p50(hot)
		b.ReportMetric(float64(c.Microseconds()), "cold-p50-µs")
		b.ReportMetric(float64(h.Microseconds()), "hot-p50-µs")
		b.ReportMetric(float64(c)/float64(h), "cold/hot")
	})
	b.Run("heap", func(b *testing.B) {
		if b.N > n {
			b.Fatalf("-benchtime %dx is more than the %d stored tasks", b.N, n)
		}
		r, st := storeModeRouter(b, schema, sink)
		defer st.Close()
		run := strconv.FormatInt(time.Now().UnixNano(), 36)
		base := heapAfterGC()
		writeHeapProfile(b, "base")
		b.ResetTimer()
		for i := range b.N {
			deliverTo(b, r, 1+i, fmt.Sprint("heap-", run, i))
		}
		b.StopTimer()
		touched := heapAfterGC()
		writeHeapProfile(b, "touched")
		b.ReportMetric(float64(base)/(1<<20), "base-heap-MiB")
		b.ReportMetric(float64(touched-base)/float64(b.N), "B/touched-task")
		goruntime.KeepAlive(r)
	})
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// writeHeapProfile writes the heap profile to $TOOL_BENCH_HEAPPROFILE.<suffix> when that is set (run with
// -memprofilerate 1 for exact bytes; compare with go tool pprof -diff_base FILE.base FILE.touched).
func writeHeapProfile(b *testing.B, suffix string) {
	b.Helper()
	prefix := os.Getenv("TOOL_BENCH_HEAPPROFILE")
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + "." + suffix)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	goruntime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

func heapAfterGC() uint64 {
	var m goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStoreModeReplicasRSS starts three replica processes (TestStoreModeReplicaProcess, the default cache
// bound of 100,000) over N stored tasks (TOOL_BENCH_STORED) and sends each b.N webhooks for distinct tasks; it
// reports each replica's resident set at start and its peak (VmHWM) after. Run with -benchtime Kx, 3K ≤ N.
func BenchmarkStoreModeReplicasRSS(b *testing.B) {
	n := storedCount(b)
	if 3*b.N > n {
		b.Skipf("-benchtime %dx needs %d stored tasks, have %d", b.N, 3*b.N, n)
	}
	schema := newSchema(b)
	seedFanin(b, schema, open(b, schema), n)
	var startKB, peakKB []float64
	for r := range 3 {
		p := startStoreProc(b, schema, "rss"+strconv.Itoa(r))
		startKB = append(startKB, procStatusKB(b, p.cmd.Process.Pid, "VmRSS"))
		for i := range b.N {
			task := 1 + r*b.N + i
			body, _ := json.Marshal(map[string]string{"team": "t" + strconv.Itoa(task), "login": "u" + strconv.Itoa(task)})
			if status := post(p.addr, fmt.Sprint("rss-", task), body); status != 202 {
				b.Fatalf("webhook for t%d at replica %d: status %d", task, r, status)
			}
		}
		peakKB = append(peakKB, procStatusKB(b, p.cmd.Process.Pid, "VmHWM"))
	}
	for r := range 3 {
		b.ReportMetric(startKB[r]/1024, fmt.Sprintf("r%d-start-RSS-MiB", r))
		b.ReportMetric(peakKB[r]/1024, fmt.Sprintf("r%d-peak-RSS-MiB", r))
	}
}

// procStatusKB reads a kB field of /proc/<pid>/status.
func procStatusKB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkSweepExpired measures Router.SweepExpired over N stored tasks (TOOL_BENCH_STORED), each with an expiry
// record 30 days ahead, none expired: the sweep's cost when there is nothing to close (one query on the expiry
// index), against a Scan of every stored task's state (what a sweep without the index would read).
func BenchmarkSweepExpired(b *testing.B) {
	n := storedCount(b)
	schema := newSchema(b)
	seedFanin(b, schema, open(b, schema), n)
	expiry := pgx.Identifier{schema}.Sanitize() + ".tool_task_expiry"
	if _, err := admin(b).Exec(`INSERT INTO `+expiry+` (task, at) SELECT convert_to('tasks/tests/fanin/t' || i || '/', 'UTF8'),
		now() + interval '30 days' FROM generate_series(0, $1) i`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := admin(b).Exec(`ANALYZE ` + expiry); err != nil {
		b.Fatal(err)
	}
	r, st := storeModeRouter(b, schema, tool.SinkFunc(func(context.Context, tool.Activation) error { return nil }))
	defer st.Close()
	ctx := context.Background()
	b.Run("sweep", func(b *testing.B) {
		for b.Loop() {
			if n, err := r.SweepExpired(ctx); n != 0 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("scan-all", func(b *testing.B) {
		for b.Loop() {
			entries, err := st.Scan(ctx, "tasks/tests/fanin/")
			if err != nil || len(entries) < 2*n {
				b.Fatal(len(entries), err)
			}
		}
	})
}

// evictees is how many cached tasks one webhook of BenchmarkStoreModeEviction sends out of the cache.
const evictees = 100

// BenchmarkStoreModeEviction measures what the eviction of cached tasks costs the webhook that triggers it
// (issue 42): each round brings t1..t100 into memory (a delivery each, which activates them, so each has a last
// activity to write back), then times a webhook for the hot task t0 with no eviction due ("none") and one that,
// once the Tool's Clock has moved past the cache's idle age, sends the 100 idle tasks out of the cache
// ("evict"), in turn first and second. After the evict sample it waits, untimed, until the 100 tasks are
// detached. It reports the p50 and p99 of both, and the ratio of the p99s. Run with -benchtime Nx: N rounds, N
// samples of each.
func BenchmarkStoreModeEviction(b *testing.B) {
	schema := newSchema(b)
	seedFanin(b, schema, open(b, schema), max(storedCount(b), evictees))
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn(b), postgres.WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	clock := tooltest.NewClock(time.Now())
	detached := make(chan struct{}, evictees)
	obs := tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
		if f.Name == facts.TaskDetached {
			detached <- struct{}{}
		}
	})
	tl, err := tool.Load(ctx, []byte(fanManifest), tool.WithStore(st), tool.WithRouteIndex(), tool.WithReplicaID("bench"),
		tool.WithClock(clock), tool.WithObserver(obs))
	if err != nil {
		b.Fatal(err)
	}
	const idle = time.Minute
	r := tool.NewRouter(tool.RouterOptions{TaskCacheIdle: idle})
	sink := tool.SinkFunc(func(context.Context, tool.Activation) error { return nil })
	err = r.Serve(ctx, tl, func(_ context.Context, id string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"team": id}}, Sink: sink}, true
	})
	if err != nil {
		b.Fatal(err)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // the framework runs this more than once
	deliverTo(b, r, 0, "warm-"+run)                     // t0 is the hot task; the cache's first sweep is done
	none, evict := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		for i := 1; i <= evictees; i++ {
			deliverTo(b, r, i, fmt.Sprint("cold-", run, "-", round, "-", i))
		}
		b.StartTimer()
		if round%2 == 0 {
			none = append(none, timeNone(b, r, detached, fmt.Sprint("none-", run, "-", round)))
		}
		clock.Advance(2 * idle)
		start := time.Now()
		deliverTo(b, r, 0, fmt.Sprint("evict-", run, "-", round))
		evict = append(evict, time.Since(start))
		b.StopTimer()
		for range evictees { // detached by the webhook (before) or in the background (after): not timed
			select {
			case <-detached:
			case <-time.After(time.Minute):
				b.Fatalf("round %d: the idle tasks were not detached within a minute", round)
			}
		}
		b.StartTimer()
		if round%2 == 1 {
			none = append(none, timeNone(b, r, detached, fmt.Sprint("none-", run, "-", round)))
		}
	}
	b.StopTimer()
	pn, pe := percentile(none, 99), percentile(evict, 99)
	b.ReportMetric(float64(percentile(none, 50).Microseconds()), "none-p50-µs")
	b.ReportMetric(float64(pn.Microseconds()), "none-p99-µs")
	b.ReportMetric(float64(percentile(evict, 50).Microseconds()), "evict-p50-µs")
	b.ReportMetric(float64(pe.Microseconds()), "evict-p99-µs")
	b.ReportMetric(float64(pe)/float64(pn), "evict/none-p99")
}

// timeNone times a webhook for t0 that evicts nothing.
func timeNone(b *testing.B, r *tool.Router, detached chan struct{}, delivery string) time.Duration {
	start := time.Now()
	deliverTo(b, r, 0, delivery)
	d := time.Since(start)
	if n := len(detached); n != 0 {
		b.Fatalf("%s: %d tasks detached by a webhook with no eviction due", delivery, n)
	}
	return d
}

// percentile is the p-th percentile of d (nearest rank).
func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}
