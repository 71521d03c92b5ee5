package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The replica process of the webhook throughput harness (issue 41; webhook_throughput_test.go drives it): a Router
// in store mode serving testdata/ok/github-pr.yaml over one PostgreSQL, which counts what a delivery costs it —
// round trips on its connections, statements, Store operations, facts, CPU — and keeps every activation its Sink
// accepted, so that the driver can check each acknowledged delivery against them.

// webhookReplicaEnv marks the helper process; its value is "schema replica-id pool-size cache-size" (a cache size of
// 0: the Router's default).
const webhookReplicaEnv = "TOOL_WEBHOOK_REPLICA"

// webhookSecret signs the harness's webhooks (the github-pr manifest's settings.github_webhook_secret).
const webhookSecret = "bench-webhook-secret"

// githubPRManifest is the manifest the harness serves, from the repository's testdata.
const githubPRManifest = "../../testdata/ok/github-pr.yaml"

// TestWebhookReplicaProcess is the replica process of the webhook throughput harness, not a test.
func TestWebhookReplicaProcess(t *testing.T) {
	v := os.Getenv(webhookReplicaEnv)
	if v == "" {
		t.Skip("the replica process of the webhook throughput harness")
	}
	f := strings.Fields(v)
	pool, _ := strconv.Atoi(f[2])
	cache, _ := strconv.Atoi(f[3])
	if n, err := strconv.Atoi(os.Getenv("TOOL_BENCH_REPLICA_GOMAXPROCS")); err == nil && n > 0 {
		runtime.GOMAXPROCS(n) // the CPUs a replica has, as a container's CPU limit gives them to Go
	}
	if prefix := os.Getenv("TOOL_BENCH_CPUPROFILE"); prefix != "" { // a CPU profile per replica, written at shutdown
		out, err := os.Create(prefix + "." + f[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			t.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	if err := runWebhookReplica(dsn(t), f[0], f[1], pool, cache); err != nil {
		printLine(map[string]any{"error": err.Error()})
		t.FailNow()
	}
}

// replicaCounters is what a replica counts; replicaStats is its snapshot, printed on a "stats" line.
type replicaCounters struct {
	roundTrips atomic.Int64 // turns of the conversation on the Store's connections: a write after a read
	requests   atomic.Int64 // webhooks answered
	mu         sync.Mutex
	statements map[string]int64 // by kind (statementKind)
	ops        map[string]int64 // Store operations by method
	facts      map[string]int64 // by name
	// activations: task + " " + delivery id → the Activation.IDs the Sink accepted, one entry per acceptance.
	activations map[string][]string
	uncounted   bool // on "forget-activations": activations stay empty, so that a soak measures the Router's heap
	accepted    int64
}

type replicaStats struct {
	RoundTrips int64            `json:"round_trips"`
	Requests   int64            `json:"requests"`
	Accepted   int64            `json:"accepted"`
	Statements map[string]int64 `json:"statements"`
	Ops        map[string]int64 `json:"ops"`
	Facts      map[string]int64 `json:"facts"`
	CPUNanos   int64            `json:"cpu_ns"`
	HeapAlloc  uint64           `json:"heap_alloc"`
}

// heapStats is a replica's memory after a collection, printed on a "heap" line: the live heap, the heap's spans
// in use, what the runtime holds from the OS, and the goroutines.
type heapStats struct {
	Live       uint64 `json:"live"`
	InUse      uint64 `json:"in_use"`
	Sys        uint64 `json:"sys"`
	Goroutines int    `json:"goroutines"`
}

func (c *replicaCounters) add(m map[string]int64, k string) {
	c.mu.Lock()
	m[k]++
	c.mu.Unlock()
}

func (c *replicaCounters) snapshot() replicaStats {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	c.mu.Lock()
	defer c.mu.Unlock()
	clone := func(m map[string]int64) map[string]int64 {
		out := make(map[string]int64, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return replicaStats{RoundTrips: c.roundTrips.Load(), Requests: c.requests.Load(), Accepted: c.accepted,
		Statements: clone(c.statements), Ops: clone(c.ops), Facts: clone(c.facts),
		CPUNanos:  ru.Utime.Nano() + ru.Stime.Nano(),
		HeapAlloc: ms.HeapAlloc}
}

// statementKind names a statement of the Store by what it does.
func statementKind(sql string) string {
	switch {
	case strings.Contains(sql, "WITH ORDINALITY"):
		return "lookup"
	case strings.Contains(sql, "RETURNING value"):
		return "claim"
	case strings.Contains(sql, "unnest($1::bytea[], $2::bytea[]"):
		return "put_batch"
	case strings.Contains(sql, "expires_at = EXCLUDED.expires_at"):
		return "put_ttl"
	case strings.HasPrefix(sql, "SELECT key, value"):
		return "scan"
	case strings.HasPrefix(sql, "SELECT value"):
		return "get"
	case strings.HasPrefix(sql, "DELETE"):
		return "delete"
	}
	f := strings.Fields(sql)
	if len(f) == 0 {
		return "?"
	}
	return strings.ToLower(f[0])
}

// tracer counts the statements a pgx connection runs (pgx.QueryTracer).
type tracer struct{ c *replicaCounters }

func (t tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.c.add(t.c.statements, statementKind(d.SQL))
	return ctx
}

func (tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// turnConn counts the round trips of one connection: a write that follows a read (or opens the conversation)
// starts one. pgx writes a statement's messages (parse, bind, execute, sync) in one go, so a statement is one
// round trip, and so is a ping database/sql makes before reusing an idle connection, which no tracer sees.
type turnConn struct {
	net.Conn
	n       *atomic.Int64
	writing atomic.Bool
}

func (c *turnConn) Write(p []byte) (int, error) {
	if !c.writing.Swap(true) {
		c.n.Add(1)
	}
	return c.Conn.Write(p)
}

func (c *turnConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.writing.Store(false)
	}
	return n, err
}

// countedStore opens the Store on a pool whose connections count round trips and statements into c: the pool
// Open would make (pool connections), and the Store's operations counted by countingOps.
func countedStore(ctx context.Context, dsn, schema string, pool int, c *replicaCounters) (*postgres.Store, func(), error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	pc.Tracer = tracer{c}
	dialer := &net.Dialer{KeepAlive: 5 * time.Minute}
	pc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &turnConn{Conn: conn, n: &c.roundTrips}, nil
	}
	db := stdlib.OpenDB(*pc)
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	db.SetConnMaxIdleTime(5 * time.Minute)
	opts := []postgres.Option{postgres.WithSchema(schema)}
	if n, err := strconv.Atoi(os.Getenv("TOOL_BENCH_LANES")); err == nil {
		opts = append(opts, postgres.WithGroupCommit(n))
	}
	st, err := postgres.OpenDB(ctx, db, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return st, func() { st.Close(); db.Close() }, nil
}

// countingOps is the Store with every operation counted by method; it keeps every upgrade store mode uses.
type countingOps struct {
	*postgres.Store
	c *replicaCounters
}

func (s countingOps) n(op string) { s.c.add(s.c.ops, op) }

func (s countingOps) Get(ctx context.Context, k string) ([]byte, error) {
	s.n("Get")
	return s.Store.Get(ctx, k)
}
func (s countingOps) Put(ctx context.Context, k string, v []byte) error {
	s.n("Put")
	return s.Store.Put(ctx, k, v)
}
func (s countingOps) Delete(ctx context.Context, k string) error {
	s.n("Delete")
	return s.Store.Delete(ctx, k)
}
func (s countingOps) List(ctx context.Context, p string) ([]string, error) {
	s.n("List")
	return s.Store.List(ctx, p)
}
func (s countingOps) CompareAndSwap(ctx context.Context, k string, old, next []byte) (bool, error) {
	s.n("CompareAndSwap")
	return s.Store.CompareAndSwap(ctx, k, old, next)
}
func (s countingOps) Lease(ctx context.Context, k, owner string, ttl time.Duration) (bool, error) {
	s.n("Lease")
	return s.Store.Lease(ctx, k, owner, ttl)
}
func (s countingOps) Release(ctx context.Context, k, owner string) error {
	s.n("Release")
	return s.Store.Release(ctx, k, owner)
}
func (s countingOps) Claim(ctx context.Context, k string, v []byte, ttl time.Duration) (bool, []byte, error) {
	s.n("Claim")
	return s.Store.Claim(ctx, k, v, ttl)
}
func (s countingOps) PutTTL(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	s.n("PutTTL")
	return s.Store.PutTTL(ctx, k, v, ttl)
}
func (s countingOps) PutBatch(ctx context.Context, w []store.Write) error {
	s.n("PutBatch")
	return s.Store.PutBatch(ctx, w)
}
func (s countingOps) Scan(ctx context.Context, p string) ([]store.Entry, error) {
	s.n("Scan")
	return s.Store.Scan(ctx, p)
}
func (s countingOps) ScanExcept(ctx context.Context, p string, except []string) ([]store.Entry, error) {
	s.n("ScanExcept")
	return s.Store.ScanExcept(ctx, p, except)
}
func (s countingOps) PutRoutes(ctx context.Context, task string, routes [][]byte) error {
	s.n("PutRoutes")
	return s.Store.PutRoutes(ctx, task, routes)
}
func (s countingOps) DeleteRoutes(ctx context.Context, task string, routes [][]byte) error {
	s.n("DeleteRoutes")
	return s.Store.DeleteRoutes(ctx, task, routes)
}
func (s countingOps) BumpGeneration(ctx context.Context, task string) (uint64, error) {
	s.n("BumpGeneration")
	return s.Store.BumpGeneration(ctx, task)
}
func (s countingOps) Lookup(ctx context.Context, routes [][]byte, after string, limit int) ([]store.RouteHits, error) {
	s.n("Lookup")
	return s.Store.Lookup(ctx, routes, after, limit)
}
func (s countingOps) SetTaskExpiry(ctx context.Context, task string, at time.Time) error {
	s.n("SetTaskExpiry")
	return s.Store.SetTaskExpiry(ctx, task, at)
}
func (s countingOps) ExpiredTasks(ctx context.Context, prefix string, now time.Time, after store.TaskExpiry, limit int) ([]store.TaskExpiry, error) {
	s.n("ExpiredTasks")
	return s.Store.ExpiredTasks(ctx, prefix, now, after, limit)
}

var (
	_ store.SwapStore       = countingOps{}
	_ store.ClaimStore      = countingOps{}
	_ store.LeaseStore      = countingOps{}
	_ store.ExpiringStore   = countingOps{}
	_ store.ScanStore       = countingOps{}
	_ store.RouteStore      = countingOps{}
	_ store.TaskExpiryStore = countingOps{}
	_ store.BatchStore      = countingOps{}

	_ store.PartialScanStore = countingOps{}
)

// prBindings are the bindings of the harness's task id: t<i> watches repository o<i>/r<i>.
func prBindings(id string) map[string]any {
	n := strings.TrimPrefix(id, "t")
	return map[string]any{"owner": "o" + n, "repo": "r" + n}
}

// runWebhookReplica serves github-pr's webhooks in store mode on a port it prints ({"addr": ...}). On a "stats"
// line of its standard input it prints {"stats": replicaStats}; on "activations", {"activations": {task +
// " " + delivery: [Activation.ID, ...]}}. When its standard input ends it closes its Router and prints
// {"closed": "<Router.Close's error>"}. On "forget-activations", it stops keeping them (a soak's heap is the
// Router's). On "heap", it collects garbage and prints {"heap": heapStats}. Its Router
// caches at most cache tasks (0: the default).
func runWebhookReplica(dsn, schema, replica string, pool, cache int) error {
	ctx := context.Background()
	c := &replicaCounters{statements: map[string]int64{}, ops: map[string]int64{}, facts: map[string]int64{},
		activations: map[string][]string{}}
	st, closeStore, err := countedStore(ctx, dsn, schema, pool, c)
	if err != nil {
		return err
	}
	defer closeStore()
	manifest, err := os.ReadFile(githubPRManifest)
	if err != nil {
		return err
	}
	sink := tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		c.mu.Lock()
		if !c.uncounted {
			k := a.TaskID + " " + a.DeliveryID
			c.activations[k] = append(c.activations[k], a.ID)
		}
		c.accepted++
		c.mu.Unlock()
		return nil
	})
	obs := tool.ObserverFunc(func(_ context.Context, f tool.Fact) { c.add(c.facts, f.Name) })
	tl, err := tool.Load(ctx, manifest, tool.WithStore(countingOps{st, c}), tool.WithRouteIndex(), tool.WithReplicaID(replica),
		tool.WithObserver(obs), tool.WithSettings(map[string]any{"github_webhook_secret": webhookSecret}))
	if err != nil {
		return err
	}
	r := tool.NewRouter(tool.RouterOptions{TaskCacheSize: cache})
	err = r.Serve(ctx, tl, func(_ context.Context, id string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: prBindings(id)}, Sink: sink}, true
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	r.Register(mux)
	counted := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mux.ServeHTTP(w, req)
		c.requests.Add(1)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: counted}
	go srv.Serve(ln)
	printLine(map[string]any{"addr": ln.Addr().String()})
	sc := bufio.NewScanner(os.Stdin)
	heapProfiles := 0
	for sc.Scan() {
		switch sc.Text() {
		case "stats":
			printLine(map[string]any{"stats": c.snapshot()})
		case "heap":
			goruntime.GC()
			if prefix := os.Getenv("TOOL_BENCH_HEAPPROFILE"); prefix != "" { // PREFIX.<replica>.<n>, n from 1
				heapProfiles++
				if err := heapProfileTo(fmt.Sprintf("%s.%s.%d", prefix, replica, heapProfiles)); err != nil {
					return err
				}
			}
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			printLine(map[string]any{"heap": heapStats{Live: ms.HeapAlloc, InUse: ms.HeapInuse, Sys: ms.Sys,
				Goroutines: goruntime.NumGoroutine()}})
		case "forget-activations":
			c.mu.Lock()
			c.activations, c.uncounted = map[string][]string{}, true
			c.mu.Unlock()
			printLine(map[string]any{"forget-activations": true})
		case "activations":
			c.mu.Lock()
			printLine(map[string]any{"activations": c.activations})
			c.mu.Unlock()
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	printLine(map[string]any{"closed": fmt.Sprint(r.Close(sctx))})
	return nil
}

func heapProfileTo(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
