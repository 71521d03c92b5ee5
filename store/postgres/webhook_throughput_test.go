package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The webhook throughput harness of issue 41 (BENCHMARKS.md, "Webhook throughput"; scripts/bench-webhooks.sh):
// replica processes (webhook_replica_test.go) serve github-pr in store mode over one PostgreSQL holding N stored
// tasks; a load generator posts signed GitHub comment webhooks for distinct tasks at a fixed concurrency, mostly
// to tasks the replica has cached and 10 % to tasks no replica has touched; the replicas count what each
// delivery cost them. The raw baseline does, at the same concurrency on the same server, what the guarantee
// needs per delivery with pgx and nothing else.

// prComment is a GitHub issue_comment payload of about 1 KB on a pull request of owner/repo.
func prComment(owner, repo string) []byte {
	p := fmt.Sprintf(`{"action":"created","issue":{"number":42,"title":"Fix the flaky router test","pull_request":`+
		`{"url":"https://api.github.com/repos/%[1]s/%[2]s/pulls/42"},"user":{"login":"alice","id":1001}},`+
		`"comment":{"id":99001,"body":"Looks good; could you add a test for the empty allow list?","user":{"login":"bob","id":1002},`+
		`"created_at":"2026-11-22T10:00:00Z"},"repository":{"id":123456,"name":%[2]q,"full_name":"%[1]s/%[2]s","private":false,`+
		`"owner":{"login":%[1]q,"id":5000,"type":"Organization"},"html_url":"https://github.com/%[1]s/%[2]s","default_branch":"main"},`+
		`"sender":{"login":"bob","id":1002,"type":"User","site_admin":false},"installation":{"id":777},`+
		`"labels":[{"name":"bug"},{"name":"ci"}],"padding":"`, owner, repo)
	return []byte(p + strings.Repeat("x", max(0, 1020-len(p))) + `"}`)
}

// seedPR stores t0 (o0/r0) through the library, then t1..tn by SQL as copies of t0's state, with their routes
// (two events, two equality-compared parameters: four routes a task).
func seedPR(t testing.TB, schema string, n int) {
	t.Helper()
	ctx := context.Background()
	st := open(t, schema)
	manifest, err := os.ReadFile(githubPRManifest)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tool.Load(ctx, manifest, tool.WithStore(st), tool.WithRouteIndex(),
		tool.WithSettings(map[string]any{"github_webhook_secret": webhookSecret}))
	if err != nil {
		t.Fatal(err)
	}
	storeTask(t, tl, tool.TaskConfig{ID: "t0", Capability: tool.Capability{Bindings: prBindings("t0")}})
	if _, err := tl.ReindexRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	kv, routes := pgx.Identifier{schema}.Sanitize()+".tool_kv", pgx.Identifier{schema}.Sanitize()+".tool_routes"
	db := admin(t)
	var keys []string
	rows, err := db.Query(`SELECT convert_from(key, 'UTF8') FROM ` + kv + ` WHERE key >= 'tasks/tools/github-pr/t0/' AND key < 'tasks/tools/github-pr/t00'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, strings.TrimPrefix(k, "tasks/tools/github-pr/t0/"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(keys, "allowlist") {
		t.Fatalf("t0's stored keys %v: no allowlist", keys)
	}
	copyState := `INSERT INTO ` + kv + ` (key, value, expires_at) SELECT convert_to('tasks/tools/github-pr/t' || i || '/' || $3, 'UTF8'),
		convert_to(replace(replace(convert_from(value, 'UTF8'), '"o0"', '"o' || i || '"'), '"r0"', '"r' || i || '"'), 'UTF8'), expires_at
		FROM ` + kv + `, generate_series(1, $1) i WHERE key = convert_to($2, 'UTF8')`
	for _, part := range keys {
		if _, err := db.Exec(copyState, n, "tasks/tools/github-pr/t0/"+part, part); err != nil {
			t.Fatalf("seed %s: %v", part, err)
		}
	}
	for _, event := range []string{"comment", "review"} {
		for param, prefix := range map[string]string{"owner": "o", "repo": "r"} {
			stmt := `INSERT INTO ` + routes + ` (route, task) SELECT substring(sha256('tools/github-pr'::bytea || '\x00'::bytea ||
				'` + event + `'::bytea || '\x00'::bytea || '` + param + `'::bytea || '\x00'::bytea || convert_to('` + prefix + `' || i, 'UTF8')) from 1 for 16),
				convert_to('tasks/tools/github-pr/t' || i || '/', 'UTF8') FROM generate_series(1, $1) i`
			if _, err := db.Exec(stmt, n); err != nil {
				t.Fatalf("seed routes: %v", err)
			}
		}
	}
	for _, table := range []string{kv, routes} {
		if _, err := db.Exec(`ANALYZE ` + table); err != nil {
			t.Fatal(err)
		}
	}
}

// replicaSet is the running replica processes of a harness.
type replicaSet struct {
	procs  []*storeProc
	client *http.Client
}

// startReplicas starts n replica processes, each with a pool of pool connections and a task cache of cache tasks
// (0: the Router's default).
func startReplicas(t testing.TB, schema string, n, pool, cache int) *replicaSet {
	t.Helper()
	rs := &replicaSet{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}}
	for i := range n {
		r := "w" + strconv.Itoa(i)
		rs.procs = append(rs.procs, startReplicaProc(t, "TestWebhookReplicaProcess",
			fmt.Sprintf("%s=%s %s %d %d", webhookReplicaEnv, schema, r, pool, cache), r))
	}
	return rs
}

// ask sends cmd to replica i and returns the value of the line it answers with, decoded into v.
func (rs *replicaSet) ask(t testing.TB, i int, cmd string, v any) {
	t.Helper()
	p := rs.procs[i]
	if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
		t.Fatalf("replica %d: %v", i, err)
	}
	select {
	case line := <-p.lines:
		b, _ := json.Marshal(line[cmd])
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("replica %d: %s: %v", i, cmd, err)
		}
	case <-p.done:
		t.Fatalf("replica %d ended", i)
	case <-time.After(time.Minute):
		t.Fatalf("replica %d: no answer to %s within a minute", i, cmd)
	}
}

func (rs *replicaSet) stats(t testing.TB, i int) replicaStats {
	var s replicaStats
	rs.ask(t, i, "stats", &s)
	return s
}

// post sends one signed comment webhook for task id with a delivery id to replica i; its status, 0 on a
// transport error.
func (rs *replicaSet) post(i int, id, delivery string) int {
	b := prBindings(id)
	body := prComment(b["owner"].(string), b["repo"].(string))
	req, _ := http.NewRequest(http.MethodPost, "http://"+rs.procs[i].addr+"/v1/webhooks/events/tools/github-pr", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", webhook.SignGitHub([]byte(webhookSecret), body))
	resp, err := rs.client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// plan says which tasks a level's webhooks go to: replica r's hot tasks are t[1+r*hot, (r+1)*hot], brought into
// its cache by warm; cold tasks come from next, after every replica's hot ones, never touched before.
type plan struct {
	hot      int
	replicas int
	stored   int
	hotNext  []atomic.Int64 // by replica: a cursor over its hot tasks
	coldNext atomic.Int64
}

func newPlan(replicas, hot, stored int) *plan {
	p := &plan{hot: hot, replicas: replicas, stored: stored, hotNext: make([]atomic.Int64, replicas)}
	p.coldNext.Store(int64(replicas*hot) + 1)
	return p
}

// task picks the task of a webhook to replica r: cold with probability coldShare, else the next hot task of r,
// in turn, so that concurrent webhooks of a level go to distinct tasks. false when no cold task is left.
func (p *plan) task(r int, cold bool) (string, bool) {
	if cold {
		i := p.coldNext.Add(1) - 1
		if i > int64(p.stored) {
			return "", false
		}
		return "t" + strconv.FormatInt(i, 10), true
	}
	i := (p.hotNext[r].Add(1) - 1) % int64(p.hot)
	return "t" + strconv.FormatInt(1+int64(r*p.hot)+i, 10), true
}

// warm brings every replica's hot tasks into its cache, 8 webhooks at a time; it returns the deliveries it
// made, by replica: delivery id → task.
func warm(t testing.TB, rs *replicaSet, p *plan, run string) []map[string]string {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	delivered := make([]map[string]string, p.replicas)
	var mu sync.Mutex
	for r := range p.replicas {
		delivered[r] = map[string]string{}
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < p.hot; i += 8 {
					id := "t" + strconv.Itoa(1+r*p.hot+i)
					d := fmt.Sprint(run, "-warm-", id)
					if rs.post(r, id, d) != http.StatusAccepted {
						failed.Add(1)
						continue
					}
					mu.Lock()
					delivered[r][d] = id
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("warming: %d webhooks not answered 202", n)
	}
	return delivered
}

// levelResult is one replica's share of a level.
type levelResult struct {
	acked, failed int
	latencies     []time.Duration
	before, after replicaStats
	delivered     map[string]string // delivery id → task, acknowledged
}

// runLevel posts webhooks from conc workers to replicas 0..p.replicas-1 in turn, until count webhooks were sent
// (count > 0) or d passed, coldShare of them to cold tasks; it returns each replica's share and the elapsed time.
func runLevel(t testing.TB, rs *replicaSet, p *plan, conc, count int, d time.Duration, coldShare float64, run string) ([]*levelResult, time.Duration) {
	t.Helper()
	res := make([]*levelResult, p.replicas)
	for r := range res {
		res[r] = &levelResult{before: rs.stats(t, r), delivered: map[string]string{}}
	}
	var mu sync.Mutex
	var seq atomic.Int64
	var exhausted atomic.Bool
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for {
				n := seq.Add(1) - 1
				if count > 0 && n >= int64(count) || count == 0 && time.Now().After(deadline) {
					return
				}
				r := int(n % int64(p.replicas))
				id, ok := p.task(r, rng.Float64() < coldShare)
				if !ok {
					exhausted.Store(true)
					return
				}
				delivery := fmt.Sprint(run, "-", n)
				t0 := time.Now()
				status := rs.post(r, id, delivery)
				lat := time.Since(t0)
				mu.Lock()
				lr := res[r]
				if status == http.StatusAccepted {
					lr.acked++
					lr.latencies = append(lr.latencies, lat)
					lr.delivered[delivery] = id
				} else {
					lr.failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if exhausted.Load() {
		t.Fatalf("level at concurrency %d ran out of cold tasks: store more (TOOL_BENCH_STORED)", conc)
	}
	for r := range res {
		res[r].after = rs.stats(t, r)
	}
	return res, elapsed
}

// perDelivery is a counter's growth over a level, per delivery its replica's Sink accepted.
func perDelivery(before, after, accepted int64) float64 {
	if accepted == 0 {
		return 0
	}
	return float64(after-before) / float64(accepted)
}

func sumMap(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// mapDelta is after − before, key by key, without the keys that did not grow.
func mapDelta(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// summary is one replica's figures for a level.
type summary struct {
	rate, p50, p99, roundTrips, statements, ops, facts, cpu float64 // per second; µs; per delivery; µs per delivery
	activity                                                float64 // activity writes per delivery: Puts, or PutBatches with the record
	opsBy, factsBy                                          map[string]int64
}

func summarize(lr *levelResult, elapsed time.Duration) summary {
	acc := lr.after.Accepted - lr.before.Accepted
	s := summary{rate: float64(lr.acked) / elapsed.Seconds(),
		roundTrips: perDelivery(lr.before.RoundTrips, lr.after.RoundTrips, acc),
		statements: perDelivery(sumMap(lr.before.Statements), sumMap(lr.after.Statements), acc),
		ops:        perDelivery(sumMap(lr.before.Ops), sumMap(lr.after.Ops), acc),
		facts:      perDelivery(sumMap(lr.before.Facts), sumMap(lr.after.Facts), acc),
		cpu:        perDelivery(lr.before.CPUNanos, lr.after.CPUNanos, acc) / 1e3,
		opsBy:      mapDelta(lr.before.Ops, lr.after.Ops), factsBy: mapDelta(lr.before.Facts, lr.after.Facts)}
	if len(lr.latencies) > 0 {
		s.p50 = float64(percentile(lr.latencies, 50).Microseconds())
		s.p99 = float64(percentile(lr.latencies, 99).Microseconds())
	}
	return s
}

// rawBaseline is what the guarantee needs per delivery, hand-written with pgx: one lookup of the payload's route,
// one claim of the delivery id before the (no-op) Sink, one record after it; each its own transaction (so each a
// commit, synchronous if the server says so), on a pool of conc connections, nothing batched. It runs count
// deliveries (count > 0) or for d, over the stored tasks t1..tn, and returns the latencies and elapsed time.
func rawBaseline(t testing.TB, schema string, n, conc, count int, d time.Duration, run string) ([]time.Duration, time.Duration) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = int32(conc), int32(conc)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	kv, routes := pgx.Identifier{schema}.Sanitize()+".tool_kv", pgx.Identifier{schema}.Sanitize()+".tool_routes"
	lookup := `SELECT x.task, coalesce(g.gen, 0) FROM ` + routes + ` x LEFT JOIN ` + routes + ` g ON g.route = ''::bytea AND g.task = x.task
		WHERE x.route = $1 ORDER BY x.task LIMIT 2`
	claim := `INSERT INTO ` + kv + ` AS t (key, value, expires_at) VALUES ($1, $2, now() + interval '5 minutes')
		ON CONFLICT (key) DO UPDATE SET value = CASE WHEN t.expires_at <= now() THEN EXCLUDED.value ELSE t.value END,
		expires_at = CASE WHEN t.expires_at <= now() THEN EXCLUDED.expires_at ELSE t.expires_at END RETURNING value`
	record := `INSERT INTO ` + kv + ` (key, value, expires_at) VALUES ($1, $2, now() + interval '24 hours')
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`
	claimed := []byte("claim " + run)
	var seq atomic.Int64
	var mu sync.Mutex
	var lats []time.Duration
	var failure atomic.Value
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := seq.Add(1) - 1
				if count > 0 && i >= int64(count) || count == 0 && time.Now().After(deadline) {
					return
				}
				task := 1 + int(i)%n
				t0 := time.Now()
				route := routeOf("comment", "repo", "r"+strconv.Itoa(task))
				var hit []byte
				var gen int64
				if err := pool.QueryRow(ctx, lookup, route).Scan(&hit, &gen); err != nil {
					failure.Store(fmt.Errorf("lookup: %w", err))
					return
				}
				key := []byte(string(hit) + "deliveries/" + run + "-" + strconv.FormatInt(i, 10))
				var current []byte
				if err := pool.QueryRow(ctx, claim, key, claimed).Scan(&current); err != nil || !bytes.Equal(current, claimed) {
					failure.Store(fmt.Errorf("claim: %v", err))
					return
				}
				// the Sink: nothing
				if _, err := pool.Exec(ctx, record, key, []byte("done")); err != nil {
					failure.Store(fmt.Errorf("record: %w", err))
					return
				}
				lat := time.Since(t0)
				mu.Lock()
				lats = append(lats, lat)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failure.Load().(error); err != nil {
		t.Fatal(err)
	}
	return lats, elapsed
}

// routeOf is the route of a value of github-pr's tasks, as the library builds it (router_route_writes.go's
// routeKey): the first 16 bytes of the SHA-256 of tool, event, parameter and value, 0-separated.
func routeOf(event, param, value string) []byte {
	sum := sha256.Sum256([]byte("tools/github-pr\x00" + event + "\x00" + param + "\x00" + value))
	return sum[:16]
}

// envInts reads a comma-separated list of positive integers from the environment, else def.
func envInts(t testing.TB, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: not a list of positive integers", name, v)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkWebhookThroughput measures store mode's webhook throughput (issue 41, items 1 and 2), per number of
// replicas (TOOL_BENCH_REPLICAS, default 1,3) and concurrency (TOOL_BENCH_CONCURRENCY, default 1,8,32,128), each
// level for TOOL_BENCH_SECONDS (default 5), over TOOL_BENCH_STORED stored github-pr tasks (default 1,000;
// scripts/bench-webhooks.sh stores 100,000), TOOL_BENCH_HOT of them cached by each replica (default 200),
// 10 % of the webhooks to tasks not cached; replica pools of TOOL_BENCH_POOL connections (default 16, Open's).
// At each concurrency the raw baseline runs first, then each replica count: one session, interleaved. Run with
// -benchtime 1x; ns/op is the time per delivery of the whole level (1/throughput). Each replica's figures are
// logged.
func BenchmarkWebhookThroughput(b *testing.B) {
	stored := storedCount(b)
	hot := envInts(b, "TOOL_BENCH_HOT", []int{200})[0]
	secs := envInts(b, "TOOL_BENCH_SECONDS", []int{5})[0]
	pool := envInts(b, "TOOL_BENCH_POOL", []int{16})[0]
	replicas := envInts(b, "TOOL_BENCH_REPLICAS", []int{1, 3})
	concs := envInts(b, "TOOL_BENCH_CONCURRENCY", []int{1, 8, 32, 128})
	most := slices.Max(replicas)
	if most*hot >= stored {
		b.Fatalf("%d replicas × %d hot tasks need more than the %d stored", most, hot, stored)
	}
	schema := newSchema(b)
	seedPR(b, schema, stored)
	rs := startReplicas(b, schema, most, pool, 0)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newPlan(most, hot, stored)
	warm(b, rs, p, run)
	d := time.Duration(secs) * time.Second
	level := 0
	// Each phase starts from a checkpoint: after one, the first write of each page also logs the whole page
	// (full_page_writes), a cost that would otherwise fall on whichever phase came first.
	checkpoint := func(b *testing.B) {
		if _, err := admin(b).Exec(`CHECKPOINT`); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range concs {
		b.Run(fmt.Sprintf("raw/c=%d", c), func(b *testing.B) {
			level++
			checkpoint(b)
			cpu0 := phaseCPU()
			lats, elapsed := rawBaseline(b, schema, stored, c, 0, d, fmt.Sprint(run, "-raw", level))
			cpu0.report(b, len(lats), "client")
			b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(percentile(lats, 50).Microseconds()), "p50-µs")
			b.ReportMetric(float64(percentile(lats, 99).Microseconds()), "p99-µs")
			b.ReportMetric(3, "round-trips/delivery")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(len(lats)), "ns/op")
		})
		for _, n := range replicas {
			b.Run(fmt.Sprintf("replicas=%d/c=%d", n, c), func(b *testing.B) {
				level++
				lp := &plan{hot: p.hot, replicas: n, stored: p.stored, hotNext: p.hotNext[:n]}
				lp.coldNext.Store(p.coldNext.Load())
				checkpoint(b)
				cpu0 := phaseCPU()
				res, elapsed := runLevel(b, rs, lp, c, 0, d, 0.1, fmt.Sprint(run, "-", level))
				p.coldNext.Store(lp.coldNext.Load())
				var total summary
				var acked, failed int
				var all []time.Duration
				for r, lr := range res {
					s := summarize(lr, elapsed)
					b.Logf("replica %d: %.0f deliveries/s, p50 %.0f µs, p99 %.0f µs, %.2f round trips, %.2f statements, "+
						"%.2f Store ops %v, %.2f facts %v, %.0f µs CPU per delivery; %d not 202",
						r, s.rate, s.p50, s.p99, s.roundTrips, s.statements, s.ops, s.opsBy, s.facts, s.factsBy, s.cpu, lr.failed)
					total.rate += s.rate
					total.roundTrips += s.roundTrips / float64(n)
					total.ops += s.ops / float64(n)
					total.facts += s.facts / float64(n)
					total.activity += float64(s.opsBy["Put"]+s.opsBy["PutBatch"]) / float64(max(1, lr.after.Accepted-lr.before.Accepted)) / float64(n)
					total.cpu += s.cpu / float64(n)
					acked += lr.acked
					failed += lr.failed
					all = append(all, lr.latencies...)
				}
				if acked == 0 {
					b.Fatalf("no webhook answered 202 (%d failed)", failed)
				}
				cpu0.report(b, acked+failed, "loadgen")
				b.ReportMetric(total.rate, "deliveries/s")
				b.ReportMetric(float64(percentile(all, 50).Microseconds()), "p50-µs")
				b.ReportMetric(float64(percentile(all, 99).Microseconds()), "p99-µs")
				b.ReportMetric(total.roundTrips, "round-trips/delivery")
				b.ReportMetric(total.ops, "store-ops/delivery")
				b.ReportMetric(total.facts, "facts/delivery")
				b.ReportMetric(total.activity, "activity-writes/delivery")
				b.ReportMetric(total.cpu, "cpu-µs/delivery")
				b.ReportMetric(float64(failed), "not-202")
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(acked), "ns/op")
			})
		}
	}
	for _, proc := range rs.procs {
		proc.shutdown(b)
	}
}

// cpuMark is the CPU time the PostgreSQL server's processes and this process (the raw baseline's client, or the
// load generator) have used, at the start of a phase.
type cpuMark struct{ server, self time.Duration }

// phaseCPU reads the CPU time of the server's processes (the postmaster of TOOL_TEST_POSTGRES_DIR and its
// children, from /proc; 0 where that is not there) and of this process.
func phaseCPU() cpuMark {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	m := cpuMark{self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	pidFile, err := os.ReadFile(filepath.Join(os.Getenv("TOOL_TEST_POSTGRES_DIR"), "data", "postmaster.pid"))
	if err != nil {
		return m
	}
	postmaster, _, _ := strings.Cut(string(pidFile), "\n")
	dirs, _ := os.ReadDir("/proc")
	tick := time.Second / 100 // USER_HZ, 100 on Linux
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, ok := bytes.Cut(stat, []byte(") ")) // after the command's name, which may hold spaces
		f := strings.Fields(string(rest))
		if !ok || len(f) < 13 || d.Name() != postmaster && f[1] != postmaster {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		m.server += time.Duration(ut+st) * tick
	}
	return m
}

// report reports the CPU the server and this process (named self) used per delivery since m.
func (m cpuMark) report(b *testing.B, deliveries int, self string) {
	now := phaseCPU()
	if deliveries == 0 {
		return
	}
	if m.server > 0 {
		b.ReportMetric(float64((now.server-m.server).Microseconds())/float64(deliveries), "server-cpu-µs/delivery")
	}
	b.ReportMetric(float64((now.self-m.self).Microseconds())/float64(deliveries), self+"-cpu-µs/delivery")
}

// TestWebhookThroughputSample runs a small fixed sample of the throughput harness's path in the test command
// (the benchmark's own code: one replica process, a few hundred stored tasks, concurrency 8) and checks
// correctness, not speed: every webhook is answered 202 and its delivery reached its task's Sink exactly once,
// a delivery to a cached task costs Lookup, Claim and one write, 3 database round trips, counted on the replica's
// connections, and one that writes its task's last activity too writes it with the record.
func TestWebhookThroughputSample(t *testing.T) {
	dsn(t)
	const stored, hot, conc = 300, 100, 8
	schema := newSchema(t)
	seedPR(t, schema, stored)
	// Every stored task was last active an hour ago (its events' timeout is 72 h): the first delivery to each
	// writes its activity (activitySaveInterval is a minute), as deliveries to dormant tasks do.
	kv := pgx.Identifier{schema}.Sanitize() + ".tool_kv"
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	res0, err := admin(t).Exec(`UPDATE `+kv+` SET value = convert_to(regexp_replace(convert_from(value, 'UTF8'),
		'"last_activity_at":"[^"]*"', '"last_activity_at":"' || $1 || '"'), 'UTF8') WHERE convert_from(key, 'UTF8') LIKE '%/events'`, old)
	if n, _ := res0.RowsAffected(); err != nil || n != stored+1 {
		t.Fatalf("backdating the stored activity: %d rows, %v; want %d", n, err, stored+1)
	}
	rs := startReplicas(t, schema, 1, 16, 0)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newPlan(1, hot, stored)
	acked := warm(t, rs, p, run)[0]
	// Cached tasks only: the round trips of a delivery to a task in memory. Its activity was written at warming,
	// unless a minute passed since (a machine slow enough): then it goes with the record, a PutBatch for a PutTTL.
	// Each connection of the pool (16) may add a round trip or a few, once: the ping database/sql sends on a
	// connection idle for over a second, and the prepare of a statement's first use on a connection; so the bound
	// is 3.25, while the Store operations are counted exactly.
	res, _ := runLevel(t, rs, p, conc, 200, 0, 0, run+"-hot")
	s := summarize(res[0], time.Second)
	t.Logf("a delivery to a cached task: %.2f round trips, %.2f statements, Store operations %v, facts %v",
		s.roundTrips, s.statements, s.opsBy, s.factsBy)
	batched := s.opsBy["PutBatch"]
	want := map[string]int64{"Lookup": 200, "Claim": 200, "PutTTL": 200 - batched, "PutBatch": batched}
	maps.DeleteFunc(want, func(_ string, n int64) bool { return n == 0 })
	if got := s.opsBy; !mapsEqual(got, want) {
		t.Errorf("Store operations of 200 deliveries to cached tasks: %v, want %v (the activity, when due, with the record)", got, want)
	}
	// Grouped (WithGroupCommit), a statement carries at most one call of each of the conc deliveries under way.
	if rt := s.roundTrips; rt < 3.0/conc || rt > 3.25 {
		t.Errorf("%.2f round trips per delivery to a cached task, want at most 3 (lookup, claim, record; 3.25 with the pool's pings), "+
			"at least 3/%d (grouped)", rt, conc)
	}
	// Mixed: 10 % to tasks not cached, each hydrated (a ScanExcept: its state without its delivery records) and writing its hour-old activity with the record.
	mixed, _ := runLevel(t, rs, p, conc, 200, 0, 0.1, run+"-mixed")
	m := summarize(mixed[0], time.Second)
	t.Logf("10 %% cold: %.2f round trips, %.2f statements, Store operations %v", m.roundTrips, m.statements, m.opsBy)
	cold := m.opsBy["ScanExcept"]
	if got := m.opsBy; got["Put"] != 0 || got["PutBatch"] < cold || got["PutBatch"]+got["PutTTL"] != 200 || got["Claim"] != 200 ||
		got["Lookup"] != 200 || len(got) > 5 {
		t.Errorf("Store operations of 200 deliveries, %d to cold tasks: %v; want Lookup and Claim each, a ScanExcept and "+
			"a PutBatch (record and activity) for each cold one, else PutTTL, and no Put or Scan", cold, got)
	}
	if rt, want := m.roundTrips, 3+float64(cold)/200; cold == 0 || rt < want/conc || rt > want+0.25 {
		t.Errorf("%.2f round trips per delivery with %d cold, want at most %.2f (3, and a scan per cold task; +0.25), at least a %dth of it",
			rt, cold, want, conc)
	}
	for _, lr := range append(res, mixed...) {
		if lr.failed > 0 {
			t.Errorf("%d webhooks not answered 202", lr.failed)
		}
		for d, id := range lr.delivered {
			acked[d] = id
		}
	}
	var activations map[string][]string
	rs.ask(t, 0, "activations", &activations)
	for d, id := range acked {
		if ids := activations[id+" "+d]; len(ids) != 1 {
			t.Errorf("delivery %s to %s: accepted by its Sink %d times (%v), want once", d, id, len(ids), ids)
		}
	}
	if len(acked) != hot+400 {
		t.Errorf("%d deliveries acknowledged, want %d", len(acked), hot+400)
	}
	rs.procs[0].shutdown(t)
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
