package tool_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/tooltest"
)

// memStore is what the memory store implements, for wrappers that keep its upgrades.
type memStore interface {
	store.SwapStore
	store.LeaseStore
	store.ExpiringStore
	store.ScanStore
	store.RouteStore
	store.TaskExpiryStore
}

// readCounter counts the reads of task state (Get, List, Scan under "tasks/") and the route lookups of a
// memory store it wraps.
type readCounter struct {
	memStore
	taskReads, scans, lookups atomic.Int64
	lookupDown                atomic.Bool           // Lookup fails
	eventsDown                atomic.Bool           // Put of a task's event state fails
	scanErr                   atomic.Pointer[error] // when set, each task Scan fails with it
	scanGate                  func()                // when set (before the Store is used concurrently), each task Scan runs it first
	trace                     func(op, key string)  // likewise: each Put and task Scan reports itself
}

func (s *readCounter) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.HasPrefix(key, "tasks/") {
		s.taskReads.Add(1)
	}
	return s.memStore.Get(ctx, key)
}

func (s *readCounter) List(ctx context.Context, prefix string) ([]string, error) {
	if strings.HasPrefix(prefix, "tasks/") {
		s.taskReads.Add(1)
	}
	return s.memStore.List(ctx, prefix)
}

func (s *readCounter) Scan(ctx context.Context, prefix string) ([]store.Entry, error) {
	if strings.HasPrefix(prefix, "tasks/") {
		s.taskReads.Add(1)
		s.scans.Add(1)
		if s.trace != nil {
			s.trace("scan", prefix)
		}
		if s.scanGate != nil {
			s.scanGate()
		}
		if err := s.scanErr.Load(); err != nil {
			return nil, *err
		}
	}
	return s.memStore.Scan(ctx, prefix)
}

func (s *readCounter) Put(ctx context.Context, key string, value []byte) error {
	if s.trace != nil {
		s.trace("put", key)
	}
	if s.eventsDown.Load() && strings.HasPrefix(key, "tasks/") && strings.HasSuffix(key, "/events") {
		return errStoreDown
	}
	return s.memStore.Put(ctx, key, value)
}

func (s *readCounter) Lookup(ctx context.Context, routes [][]byte, after string, limit int) ([]store.RouteHits, error) {
	s.lookups.Add(1)
	if s.lookupDown.Load() {
		return nil, errStoreDown
	}
	return s.memStore.Lookup(ctx, routes, after, limit)
}

// replicas is an issue tracker served by two replicas over one memory store: a, where the tasks run their calls,
// and b, a Router in store mode whose Store counts its reads.
type replicas struct {
	a, b   *tool.Tool
	store  *readCounter
	mem    memStore // the store itself
	router *tool.Router
	sink   *countingSink
}

func newReplicas(t *testing.T, ropts tool.RouterOptions, bopts ...tool.Option) *replicas {
	t.Helper()
	ms := tool.NewMemoryStore().(memStore)
	rp := &replicas{store: &readCounter{memStore: ms}, sink: &countingSink{}, mem: ms}
	rp.a = issueTracker(t, tool.WithStore(ms), tool.WithRouteIndex(), tool.WithReplicaID("a"))
	if _, err := rp.a.ReindexRoutes(context.Background()); err != nil {
		t.Fatal(err)
	}
	rp.b = issueTracker(t, append([]tool.Option{tool.WithStore(rp.store), tool.WithRouteIndex(), tool.WithReplicaID("b")},
		bopts...)...)
	rp.router = tool.NewRouter(ropts)
	hydrate := func(_ context.Context, id string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: rp.sink}, true
	}
	if err := rp.router.Serve(context.Background(), rp.b, hydrate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rp.router.Close(context.Background()); err != nil {
			t.Errorf("Router.Close: %v", err)
		}
	})
	return rp
}

// send sends b a signed issue_assigned webhook for login and returns the Deliveries and Dispatch's error.
func (rp *replicas) send(id, login string) ([]*tool.Delivery, error) {
	return rp.router.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, id, assigned(4242, login)))
}

// dispatch sends b a signed issue_assigned webhook for login and returns how many tasks activated.
func (rp *replicas) dispatch(t *testing.T, id, login string) int {
	t.Helper()
	ds, err := rp.send(id, login)
	if err != nil {
		t.Fatalf("Dispatch(%s): %v", login, err)
	}
	n := 0
	for _, d := range ds {
		n += len(d.Activations)
	}
	return n
}

// Finding 1 of issue 28, fixed in store mode: a webhook for a value that another replica added to a task's
// allow list activates the task at a replica that holds an older copy of it (in eager mode it was answered 202
// with no delivery). The index's generation tells the copy is stale, with no extra round trip; a restarted
// replica reads no task state until a webhook needs a task, and then one Scan.
func TestStoreModeSeesAnotherReplicasGrowth(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	if n := rp.store.taskReads.Load(); n != 0 {
		t.Fatalf("task-state reads at start-up (Load, NewRouter, Serve) = %d, want 0", n)
	}
	task := newTask(t, rp.a, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "bob"})
	if n := rp.dispatch(t, "d1", "bob"); n != 1 {
		t.Fatalf("webhook for bob at b: %d activations, want 1", n)
	}
	if s, l := rp.store.scans.Load(), rp.store.lookups.Load(); s != 1 || l != 1 {
		t.Fatalf("first webhook: %d scans, %d lookups, want 1 and 1", s, l)
	}
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"}) // at a: b's copy is stale
	if n := rp.dispatch(t, "d2", "alice"); n != 1 {
		t.Fatalf("webhook for alice, whom a added, at b: %d activations, want 1 (finding 1: lost)", n)
	}
	if s, l := rp.store.scans.Load(), rp.store.lookups.Load(); s != 1 || l != 2 {
		t.Errorf("after the second webhook: %d scans, %d lookups, want 1 and 2", s, l)
	}
	if n := rp.dispatch(t, "d3", "carol"); n != 0 {
		t.Errorf("webhook for carol, in no allow list: %d activations, want 0", n)
	}
	if got := rp.sink.accepted.Load(); got != 2 {
		t.Errorf("sink accepted %d, want 2", got)
	}
}

// Concurrent webhooks for a task not in memory load it once.
func TestStoreModeHydratesATaskOnce(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	task := newTask(t, rp.a, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "bob"})
	const n = 8
	var wg sync.WaitGroup
	var activated atomic.Int64
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			activated.Add(int64(rp.dispatch(t, fmt.Sprintf("d%d", i), "bob")))
		})
	}
	close(start)
	wg.Wait()
	if activated.Load() != n {
		t.Errorf("%d activations, want %d", activated.Load(), n)
	}
	if s := rp.store.scans.Load(); s != 1 {
		t.Errorf("%d concurrent webhooks for a cold task made %d scans, want 1", n, s)
	}
}

// The cache holds at most its bound of idle tasks: an evicted task keeps its state and comes back on its next
// webhook, with one more Scan.
func TestStoreModeEvictsIdleTasksAndBringsThemBack(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{TaskCacheSize: 2, TaskCacheIdle: 0})
	const n = 5
	for i := range n {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("t%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": fmt.Sprintf("user%d", i)})
	}
	for i := range n {
		if got := rp.dispatch(t, fmt.Sprintf("a%d", i), fmt.Sprintf("user%d", i)); got != 1 {
			t.Fatalf("user%d: %d activations, want 1", i, got)
		}
	}
	if s := rp.store.scans.Load(); s != n {
		t.Fatalf("%d scans for %d cold tasks", s, n)
	}
	// t4 and t3 are the two most recent: in memory. t0 was evicted and comes back.
	if got := rp.dispatch(t, "b4", "user4"); got != 1 || rp.store.scans.Load() != n {
		t.Errorf("user4 again: %d activations, %d scans; want 1 and %d (still cached)", got, rp.store.scans.Load(), n)
	}
	if got := rp.dispatch(t, "b0", "user0"); got != 1 || rp.store.scans.Load() != n+1 {
		t.Errorf("user0 again: %d activations, %d scans; want 1 and %d (evicted, hydrated again)", got, rp.store.scans.Load(), n+1)
	}
}

// Store mode needs the marker of ReindexRoutes, and a Tool that writes routes.
func TestStoreModeNeedsTheReindexMarker(t *testing.T) {
	t.Parallel()
	ms := tool.NewMemoryStore()
	hydrate := func(context.Context, string) (tool.TaskConfig, bool) { return tool.TaskConfig{}, false }
	plain := issueTracker(t, tool.WithStore(ms))
	if err := tool.NewRouter(tool.RouterOptions{}).Serve(context.Background(), plain, hydrate); err == nil {
		t.Error("Serve with a Hydrator of a Tool without WithRouteIndex: nil error")
	}
	tl := issueTracker(t, tool.WithStore(ms), tool.WithRouteIndex())
	if err := tool.NewRouter(tool.RouterOptions{}).Serve(context.Background(), tl, hydrate); !errors.Is(err, tool.ErrNotReindexed) {
		t.Errorf("Serve with a Hydrator before ReindexRoutes = %v, want ErrNotReindexed", err)
	}
	if _, err := tl.ReindexRoutes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tool.NewRouter(tool.RouterOptions{}).Serve(context.Background(), tl, hydrate); err != nil {
		t.Errorf("Serve with a Hydrator after ReindexRoutes: %v", err)
	}
}

// taskIDsOf returns the task IDs of the facts named name.
func taskIDsOf(r *factRecorder, name string) []string {
	var out []string
	for _, f := range r.all() {
		if f.Name == name {
			out = append(out, f.TaskID)
		}
	}
	return out
}

// twoTasksForAlice starts tasks "good" and "bad" at a, each with alice in its allow list, garbles bad's stored
// allow list, and returns what it held.
func twoTasksForAlice(t *testing.T, rp *replicas) []byte {
	t.Helper()
	for _, id := range []string{"good", "bad"} {
		task := newTask(t, rp.a, tool.TaskConfig{ID: id, Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	}
	key := "tasks/engineering/issue-tracker/bad/allowlist"
	was, err := rp.mem.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.mem.Put(context.Background(), key, []byte("{garbage")); err != nil {
		t.Fatal(err)
	}
	return was
}

// A task whose stored state does not decode loses no webhook: it is named in a fact, the webhook's other tasks
// activate, and the answer is 503 so that the sender retries; the task is quarantined (its retries do not read
// it again) until a back-off passes, and once repaired the retry activates it.
func TestCorruptStoredTaskIsNotLost(t *testing.T) {
	t.Parallel()
	clock := tooltest.NewClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	log := &factRecorder{}
	rp := newReplicas(t, tool.RouterOptions{}, tool.WithClock(clock), tool.WithObserver(log))
	was := twoTasksForAlice(t, rp)
	mux := http.NewServeMux()
	rp.router.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	post := func() int {
		status, _ := postInbound(t, srv.URL+"/v1/webhooks/events"+"/engineering/issue-tracker", signed(hookSecret, "d1", assigned(4242, "alice")))
		return status
	}
	if status := post(); status != http.StatusServiceUnavailable {
		t.Fatalf("webhook with a corrupt task: status %d, want 503", status)
	}
	if got := rp.sink.accepted.Load(); got != 1 {
		t.Fatalf("the good task's sink accepted %d, want 1: the webhook's other tasks activate", got)
	}
	if got := taskIDsOf(log, facts.TaskHydrationFailed); !slices.Equal(got, []string{"bad"}) {
		t.Fatalf("task.hydration_failed facts for tasks %v, want [bad]", got)
	}
	scans := rp.store.scans.Load()
	if status := post(); status != http.StatusServiceUnavailable || rp.store.scans.Load() != scans {
		t.Fatalf("retry within the back-off: status %d, %d more scans; want 503 and none (quarantined)", status,
			rp.store.scans.Load()-scans)
	}
	if err := rp.mem.Put(context.Background(), "tasks/engineering/issue-tracker/bad/allowlist", was); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if status := post(); status != http.StatusAccepted {
		t.Fatalf("retry after the repair and the back-off: status %d, want 202", status)
	}
	if got := rp.sink.accepted.Load(); got != 2 {
		t.Errorf("sinks accepted %d in all, want 2 (the good task once, the repaired one once)", got)
	}
}

// With a DeadLetter that keeps the payload, a corrupt task counts as handled: the webhook is answered 2xx.
func TestCorruptStoredTaskGoesToTheDeadLetter(t *testing.T) {
	t.Parallel()
	var kept []string
	var mu sync.Mutex
	dead := func(_ context.Context, id string, in *tool.Inbound, err error) error {
		mu.Lock()
		defer mu.Unlock()
		if err == nil || len(in.Body) == 0 {
			return errors.New("no error or no payload")
		}
		kept = append(kept, id)
		return nil
	}
	rp := newReplicas(t, tool.RouterOptions{DeadLetter: dead})
	twoTasksForAlice(t, rp)
	if _, err := rp.send("d1", "alice"); err != nil {
		t.Fatalf("Dispatch with a DeadLetter that kept the payload: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(kept, []string{"bad"}) || rp.sink.accepted.Load() != 1 {
		t.Errorf("dead letter kept %v, sink accepted %d; want [bad] and 1", kept, rp.sink.accepted.Load())
	}
}

// A Store that fails on the webhook path makes the answer 503 and a store.failed fact, never 202.
func TestStoreOutageOnTheWebhookPathIs503(t *testing.T) {
	t.Parallel()
	log := &factRecorder{}
	rp := newReplicas(t, tool.RouterOptions{}, tool.WithObserver(log))
	task := newTask(t, rp.a, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	rp.store.lookupDown.Store(true)
	_, err := rp.send("d1", "alice")
	if !errors.Is(err, tool.ErrNotAccepted) {
		t.Fatalf("Dispatch with the routing index down = %v, want ErrNotAccepted (503)", err)
	}
	if len(taskIDsOf(log, facts.StoreFailed)) == 0 {
		t.Error("no store.failed fact")
	}
	rp.store.lookupDown.Store(false)
	if n := rp.dispatch(t, "d1", "alice"); n != 1 {
		t.Errorf("the retry once the Store is back: %d activations, want 1", n)
	}
}

// VerifyStored names the tasks whose stored state does not decode.
func TestVerifyStoredNamesCorruptTasks(t *testing.T) {
	t.Parallel()
	log := &factRecorder{}
	rp := newReplicas(t, tool.RouterOptions{}, tool.WithObserver(log))
	twoTasksForAlice(t, rp)
	err := rp.b.VerifyStored(context.Background())
	if err == nil || !strings.Contains(err.Error(), "task bad:") || strings.Contains(err.Error(), "task good") {
		t.Errorf("VerifyStored = %v, want an error naming task bad only", err)
	}
	if got := taskIDsOf(log, facts.TaskHydrationFailed); !slices.Equal(got, []string{"bad"}) {
		t.Errorf("facts for %v, want [bad]", got)
	}
}

// A task that no replica holds in memory is closed by ID: its state and its routes leave the Store, and its
// webhooks no longer reach it.
func TestCloseTaskNotInMemory(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	task, err := rp.a.NewTask(context.Background(), tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	if err != nil {
		t.Fatal(err)
	}
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	if err := task.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rp.router.CloseTask(context.Background(), "engineering", "issue-tracker", "t1"); err != nil {
		t.Fatalf("CloseTask: %v", err)
	}
	prefix := "tasks/engineering/issue-tracker/t1/"
	if entries, err := rp.mem.Scan(context.Background(), prefix); err != nil || len(entries) != 0 {
		t.Errorf("state after CloseTask: %d keys (%v), want none", len(entries), err)
	}
	if got := routedValues(t, rp.mem, prefix, "assignee", []string{"alice"}); len(got) != 0 {
		t.Errorf("routes after CloseTask: %v, want none", got)
	}
	if n := rp.dispatch(t, "d1", "alice"); n != 0 {
		t.Errorf("webhook after CloseTask: %d activations, want 0", n)
	}
	if err := rp.router.CloseTask(context.Background(), "engineering", "issue-tracker", "t1"); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("CloseTask of a closed task = %v, want ErrNotFound", err)
	}
}

// A growth whose writer stored the list but not the generation (it died, or the bump failed) is not lost: a
// cached copy that the index found by a value it does not hold re-reads its list.
func TestStoreModeSeesGrowthWithoutItsGeneration(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	fs := &routeFaultStore{RouteStore: rp.mem}
	a := issueTracker(t, tool.WithStore(fs), tool.WithRouteIndex(), tool.WithReplicaID("a2"))
	task := newTask(t, a, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "bob"})
	if n := rp.dispatch(t, "d1", "bob"); n != 1 { // b caches the task
		t.Fatalf("bob: %d activations, want 1", n)
	}
	fs.bumpDown.Store(true)
	if res := mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"}); !res.IsError {
		t.Fatal("create_issue with the generation's bump failing succeeded; want a recoverable error")
	}
	if n := rp.dispatch(t, "d2", "alice"); n != 1 {
		t.Fatalf("alice, stored without a new generation: %d activations at b, want 1", n)
	}
}

// A route with more tasks than the fan-out bound is read in pages: one lookup per page, every task visited.
// A payload without the fields of the equality conjuncts looks nothing up and visits no task.
func TestStoreModePagesPastTheFanOutBound(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{MaxFanOut: 2})
	for i := range 5 {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("t%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	}
	if n := rp.dispatch(t, "d1", "alice"); n != 5 {
		t.Fatalf("alice, followed by 5 tasks: %d activations, want 5", n)
	}
	if l := rp.store.lookups.Load(); l != 3 {
		t.Errorf("%d lookups for 5 tasks in pages of 2, want 3", l)
	}
	ds, err := rp.router.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, "p1", `{"zen":"Keep it simple.","hook_id":1}`))
	if err != nil || len(ds) != 0 {
		t.Errorf("a ping: %+v, %v; want no task visited", ds, err)
	}
	if l, s := rp.store.lookups.Load(), rp.store.scans.Load(); l != 3 || s != 5 {
		t.Errorf("after a ping: %d lookups, %d scans; want 3 and 5 (none for the ping)", l, s)
	}
}

// A webhook's cold tasks are brought into memory several at a time: their Scans overlap (the first waits, for up
// to 5 s, for a second to start), and every task is still visited once.
func TestStoreModeHydratesAhead(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{MaxFanOut: 2})
	for i := range 5 {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("t%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	}
	var mu sync.Mutex
	var once sync.Once
	inflight, most := 0, 0
	overlap := make(chan struct{})
	rp.store.scanGate = func() {
		mu.Lock()
		inflight++
		if most = max(most, inflight); inflight >= 2 {
			once.Do(func() { close(overlap) })
		}
		mu.Unlock()
		select {
		case <-overlap:
		case <-time.After(5 * time.Second): // only when the Scans do not overlap
		}
		mu.Lock()
		inflight--
		mu.Unlock()
	}
	if n := rp.dispatch(t, "d1", "alice"); n != 5 {
		t.Fatalf("alice, followed by 5 tasks: %d activations, want 5", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if most < 2 {
		t.Errorf("at most %d Scans at once, want several", most)
	}
	if s := rp.store.scans.Load(); s != 5 {
		t.Errorf("%d scans for 5 cold tasks, want 5", s)
	}
	if n := tool.LentTasks(rp.router); n != 0 {
		t.Errorf("%d tasks still lent after the dispatch, want 0", n)
	}
	// A request that ends while tasks are being brought in ahead gives every one of them back.
	for i := range 5 {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("b%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "bob"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var scans atomic.Int64
	rp.store.scanGate = func() {
		if scans.Add(1) == 2 {
			cancel()
		}
	}
	_, err := rp.router.Dispatch(ctx, "engineering", "issue-tracker", signed(hookSecret, "d2", assigned(4242, "bob")))
	if !errors.Is(err, tool.ErrNotAccepted) {
		t.Errorf("dispatch whose context ended mid-way = %v, want ErrNotAccepted", err)
	}
	if n := tool.LentTasks(rp.router); n != 0 {
		t.Errorf("%d tasks still lent after a dispatch whose context ended, want 0", n)
	}
}

// Tasks idle past the cache's idle age leave it at the next sweep; a task given to Router.Add stays, and is the
// one webhooks reach.
func TestStoreModeEvictsByIdleAgeButNotPinnedTasks(t *testing.T) {
	t.Parallel()
	clock := tooltest.NewClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	rp := newReplicas(t, tool.RouterOptions{TaskCacheSize: 100, TaskCacheIdle: time.Minute}, tool.WithClock(clock))
	for i := range 2 {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("t%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": fmt.Sprintf("user%d", i)})
	}
	pinnedSink := &countingSink{}
	pinned, err := rp.b.RestoreTask(context.Background(), tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: pinnedSink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pinned.Detach(context.Background()) })
	if err := rp.router.Add(pinned); err != nil {
		t.Fatal(err)
	}
	scans := rp.store.scans.Load()
	if n := rp.dispatch(t, "a0", "user0"); n != 1 || rp.store.scans.Load() != scans+1 {
		t.Fatalf("user0: %d activations, %d scans; want 1 and 1", n, rp.store.scans.Load()-scans)
	}
	clock.Advance(2 * time.Minute)
	if n := rp.dispatch(t, "a1", "user1"); n != 1 || pinnedSink.accepted.Load() != 1 {
		t.Fatalf("user1: %d activations, the pinned task's sink %d; want 1 and 1", n, pinnedSink.accepted.Load())
	}
	clock.Advance(2 * time.Minute)
	if n := rp.dispatch(t, "b0", "user0"); n != 1 || rp.store.scans.Load() != scans+2 {
		t.Errorf("user0 after 4 idle minutes: %d activations, %d scans; want 1 and 2 (evicted, hydrated again)", n, rp.store.scans.Load()-scans)
	}
	if n := rp.dispatch(t, "b1", "user1"); n != 1 || pinnedSink.accepted.Load() != 2 {
		t.Errorf("user1 after 2 idle minutes: %d activations, pinned sink %d; want 1 and 2 (still pinned)", n, pinnedSink.accepted.Load())
	}
}

// putCounter counts the Puts of task state into a memory store.
type putCounter struct {
	memStore
	puts atomic.Int64
}

func (s *putCounter) Put(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, "tasks/") {
		s.puts.Add(1)
	}
	return s.memStore.Put(ctx, key, value)
}

// aliceFollowers stores two issue-tracker tasks, t0 and t1, on repository 4242, each with alice in its allow list,
// through replica a of rp.
func aliceFollowers(t *testing.T, rp *replicas) {
	t.Helper()
	for i := range 2 {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("t%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	}
}

// repoHydrator brings any task into memory on repository 4242, counting them in n when n is not nil.
func repoHydrator(n *atomic.Int64) tool.Hydrator {
	return func(_ context.Context, id string) (tool.TaskConfig, bool) {
		if n != nil {
			n.Add(1)
		}
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}}, true
	}
}

// A task that a webhook visited without activating leaves the cache without a write: its state did not change.
func TestStoreModeEvictionOfAnUnchangedTaskWritesNothing(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	aliceFollowers(t, rp)
	pc := &putCounter{memStore: rp.mem}
	obs := tooltest.NewObserver()
	b := issueTracker(t, tool.WithStore(pc), tool.WithRouteIndex(), tool.WithReplicaID("b2"), tool.WithObserver(obs))
	r := tool.NewRouter(tool.RouterOptions{TaskCacheSize: 1, TaskCacheIdle: 0})
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	if err := r.Serve(context.Background(), b, repoHydrator(nil)); err != nil {
		t.Fatal(err)
	}
	// Both tasks follow alice, but the payload's action is null, not "assigned": both are visited (a string other
	// than "assigned" would refuse the payload before any task: allowlist.Delivery.Refuted), neither activates, and
	// the cache of one evicts the first.
	body := strings.Replace(assigned(4242, "alice"), `"assigned"`, `null`, 1)
	ds, err := r.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, "d1", body))
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries %+v, %v; want both tasks visited", ds, err)
	}
	obs.Wait(t, facts.TaskDetached, 1) // in the Router's goroutine
	if n := pc.puts.Load(); n != 0 {
		t.Errorf("%d writes of task state for two visits and an eviction, want 0", n)
	}
}

// A payload that a filter's opening test refuses (`event.payload.action == 'assigned'`, and the action is
// another string) reaches no task in store mode: the Router neither looks tasks up nor brings them into memory.
func TestStoreModeRefutedPayloadVisitsNoTask(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	aliceFollowers(t, rp)
	b := issueTracker(t, tool.WithStore(rp.mem), tool.WithRouteIndex(), tool.WithReplicaID("b2"))
	r := tool.NewRouter(tool.RouterOptions{})
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	var hydrated atomic.Int64
	if err := r.Serve(context.Background(), b, repoHydrator(&hydrated)); err != nil {
		t.Fatal(err)
	}
	for i, action := range []string{`"unassigned"`, `"assigned"`} {
		body := strings.Replace(assigned(4242, "alice"), `"assigned"`, action, 1)
		ds, err := r.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, fmt.Sprint("d", i), body))
		want := 0
		if action == `"assigned"` {
			want = 2 // the same tasks, when the action is the one the filter takes
		}
		if err != nil || len(ds) != want {
			t.Fatalf("action %s: deliveries %+v, %v; want %d", action, ds, err, want)
		}
		if n := hydrated.Load(); n != int64(want) {
			t.Errorf("action %s: %d tasks brought into memory, want %d", action, n, want)
		}
	}
}

// Two tools whose tasks share an ID both route and are both lent in store mode, whether the Router brings them
// into memory or holds them through Add.
func TestStoreModeKeysTasksByToolAndID(t *testing.T) {
	t.Parallel()
	const id = "conv-7f3a"
	ms := tool.NewMemoryStore()
	names := []string{"issue-tracker", "issue-tracker-2"}
	sinks := map[string]*countingSink{}
	r := tool.NewRouter(tool.RouterOptions{})
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	served := map[string]*tool.Tool{}
	for _, name := range names {
		a := issueTrackerNamed(t, name, tool.WithStore(ms), tool.WithRouteIndex(), tool.WithReplicaID("a"))
		if _, err := a.ReindexRoutes(context.Background()); err != nil {
			t.Fatal(err)
		}
		task := newTask(t, a, tool.TaskConfig{ID: id, Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
		sinks[name] = &countingSink{}
		b := issueTrackerNamed(t, name, tool.WithStore(ms), tool.WithRouteIndex(), tool.WithReplicaID("b"))
		hydrate := func(_ context.Context, _ string) (tool.TaskConfig, bool) {
			return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: sinks[name]}, true
		}
		if err := r.Serve(context.Background(), b, hydrate); err != nil {
			t.Fatal(err)
		}
		served[name] = b
	}
	lends := func(when string) {
		t.Helper()
		for _, name := range names {
			lent, release, err := r.Task(context.Background(), "engineering", name, id)
			if err != nil || lent.Tool().Name() != name || lent.ID() != id {
				t.Fatalf("%s: Router.Task(%s, %s) = %v, %v; want the task of %s", when, name, id, lent, err, name)
			}
			release()
		}
	}
	for i, name := range names {
		ds, err := r.Dispatch(context.Background(), "engineering", name, signed(hookSecret, fmt.Sprint("d", i), assigned(4242, "alice")))
		if err != nil || len(ds) != 1 || len(ds[0].Activations) != 1 {
			t.Fatalf("webhook for %s: %+v, %v; want its task activated", name, ds, err)
		}
	}
	lends("hydrated")
	for _, name := range names {
		task, err := served[name].RestoreTask(context.Background(), tool.TaskConfig{ID: id,
			Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: sinks[name]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = task.Detach(context.Background()) })
		if err := r.Add(task); err != nil {
			t.Fatalf("Add the task %s of %s in store mode: %v", id, name, err)
		}
	}
	lends("given to Add")
	for i, name := range names {
		ds, err := r.Dispatch(context.Background(), "engineering", name, signed(hookSecret, fmt.Sprint("e", i), assigned(4242, "alice")))
		if err != nil || len(ds) != 1 || len(ds[0].Activations) != 1 {
			t.Fatalf("webhook for %s once its task was given to Add: %+v, %v", name, ds, err)
		}
		if got := sinks[name].accepted.Load(); got != 2 {
			t.Errorf("the sink of %s accepted %d, want 2", name, got)
		}
	}
}

// detachGate is an Observer that holds the first task.detached fact of one task until release is closed: a
// Detach of that task that does not return, as a slow Store write or teardown would not.
type detachGate struct {
	id      string
	once    sync.Once
	entered chan struct{} // closed once that Detach reached its fact
	release chan struct{}
}

// newDetachGate returns a gate for the task id; register its open as a cleanup after the Router's Close (cleanups
// run last first), so that a failing test does not leave Close waiting on it.
func newDetachGate(id string) *detachGate {
	return &detachGate{id: id, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *detachGate) Observe(_ context.Context, f tool.Fact) {
	if f.Name != facts.TaskDetached || f.TaskID != g.id {
		return
	}
	first := false
	g.once.Do(func() { first = true; close(g.entered) })
	if first {
		<-g.release
	}
}

func (g *detachGate) open() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// followers starts, at a, a task for each login, IDs t0, t1, ..., with that login in its allow list.
func followers(t *testing.T, rp *replicas, logins ...string) {
	t.Helper()
	for i, login := range logins {
		task := newTask(t, rp.a, tool.TaskConfig{ID: fmt.Sprintf("t%d", i), Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": login})
	}
}

// The webhook whose end evicts another task from the cache does not wait on that task's Detach: the Router's own
// goroutine detaches it.
func TestStoreModeEvictionDoesNotDetachOnTheWebhook(t *testing.T) {
	t.Parallel()
	gate := newDetachGate("t0")
	rp := newReplicas(t, tool.RouterOptions{TaskCacheSize: 1}, tool.WithObserver(gate))
	t.Cleanup(gate.open)
	followers(t, rp, "alice", "bob")
	if n := rp.dispatch(t, "d1", "alice"); n != 1 {
		t.Fatalf("alice: %d activations, want 1", n)
	}
	returned := make(chan int, 1)
	go func() { returned <- rp.dispatch(t, "d2", "bob") }() // t1 comes in, t0 goes out
	if n := await(t, returned, "the webhook that evicted t0 while t0's Detach is held"); n != 1 {
		t.Errorf("bob: %d activations, want 1", n)
	}
	await(t, gate.entered, "t0's Detach")
}

// A Detach that fails after an eviction is reported as a fact naming the task, not dropped.
func TestStoreModeDetachFailureIsAFact(t *testing.T) {
	t.Parallel()
	obs := tooltest.NewObserver()
	rp := newReplicas(t, tool.RouterOptions{TaskCacheSize: 1}, tool.WithObserver(obs))
	followers(t, rp, "alice", "bob")
	if n := rp.dispatch(t, "d1", "alice"); n != 1 { // t0's last activity changes: its Detach writes it
		t.Fatalf("alice: %d activations, want 1", n)
	}
	rp.store.eventsDown.Store(true)
	if n := rp.dispatch(t, "d2", "bob"); n != 1 { // evicts t0
		t.Fatalf("bob: %d activations, want 1", n)
	}
	f := obs.Wait(t, facts.TaskDetachFailed, 1)[0]
	if f.TaskID != "t0" || f.Data["reason"] != "evicted" || f.Data["expired"] != false ||
		!strings.Contains(fmt.Sprint(f.Data["error"]), errStoreDown.Error()) {
		t.Errorf("fact %+v, want task t0, reason evicted, expired false and the Store's error", f)
	}
	rp.store.eventsDown.Store(false)
}

// Router.Add does not hold the Router's lock while the copy it replaces is detached: webhooks for other tasks go
// on meanwhile, and Add returns.
func TestRouterAddDoesNotHoldTheLockWhileDetaching(t *testing.T) {
	t.Parallel()
	gate := newDetachGate("t0")
	rp := newReplicas(t, tool.RouterOptions{}, tool.WithObserver(gate))
	followers(t, rp, "alice", "bob")
	if n := rp.dispatch(t, "d1", "alice"); n != 1 { // t0 in the cache
		t.Fatalf("alice: %d activations, want 1", n)
	}
	pinned, err := rp.b.RestoreTask(context.Background(), tool.TaskConfig{ID: "t0",
		Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: rp.sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pinned.Detach(context.Background()) })
	t.Cleanup(gate.open) // first of all: the Detach it holds may hold the Router's lock (it did)
	added := make(chan error, 1)
	go func() { added <- rp.router.Add(pinned) }()
	await(t, gate.entered, "the Detach of the copy Add replaced")
	returned := make(chan int, 1)
	go func() { returned <- rp.dispatch(t, "d2", "bob") }()
	if n := await(t, returned, "a webhook for another task while the replaced copy's Detach is held"); n != 1 {
		t.Errorf("bob: %d activations, want 1", n)
	}
	if err := await(t, added, "Add while the replaced copy's Detach is held"); err != nil {
		t.Errorf("Add: %v", err)
	}
}

// Router.Close detaches every task the Router brought into memory, lent ones and evicted ones not yet detached
// included, leaves the tasks given to Add to the host, stops its goroutine, and refuses what comes after.
func TestRouterCloseDetachesWhatItBroughtIntoMemory(t *testing.T) {
	tooltest.NoLeaks(t)
	obs := tooltest.NewObserver()
	gate := newDetachGate("t0")
	ctx := context.Background()
	rp := newReplicas(t, tool.RouterOptions{TaskCacheSize: 2}, tool.WithObserver(tool.ObserverFunc(func(ctx context.Context, f tool.Fact) {
		obs.Observe(ctx, f)
		gate.Observe(ctx, f)
	})))
	t.Cleanup(gate.open)
	followers(t, rp, "alice", "bob", "carol", "dave")
	for i, login := range []string{"alice", "bob", "carol"} { // t0 is evicted: its Detach is held
		if n := rp.dispatch(t, fmt.Sprint("d", i), login); n != 1 {
			t.Fatalf("%s: %d activations, want 1", login, n)
		}
	}
	await(t, gate.entered, "the Detach of the evicted t0")
	if n := rp.dispatch(t, "d3", "dave"); n != 1 { // evicts t1, queued behind t0
		t.Fatalf("dave: %d activations, want 1", n)
	}
	lent, release, err := rp.router.Task(ctx, "engineering", "issue-tracker", "t2")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	pinned, err := rp.b.NewTask(ctx, tool.TaskConfig{ID: "pinned", Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close(ctx)
	if err := rp.router.Add(pinned); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- rp.router.Close(ctx) }()
	gate.open()
	if err := await(t, closed, "Router.Close"); err != nil {
		t.Fatalf("Router.Close: %v", err)
	}
	detached := map[string]int{}
	for _, f := range obs.Facts(facts.TaskDetached) {
		detached[f.TaskID]++
	}
	if want := map[string]int{"t0": 1, "t1": 1, "t2": 1, "t3": 1}; !maps.Equal(detached, want) {
		t.Errorf("tasks detached by the time Close returned: %v, want %v (the pinned task is the host's)", detached, want)
	}
	if _, err := lent.Invoke(ctx, "create_issue", map[string]any{"title": "x", "assignee": "erin"}); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("a call on a task lent before Close = %v, want ErrClosed (detached)", err)
	}
	if _, err := pinned.Invoke(ctx, "create_issue", map[string]any{"title": "x", "assignee": "erin"}); err != nil {
		t.Errorf("a call on the task given to Add, after Close: %v", err)
	}
	if _, err := rp.send("d9", "alice"); !errors.Is(err, tool.ErrNotAccepted) || !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Dispatch after Close = %v, want ErrNotAccepted and ErrClosed (503)", err)
	}
	if _, _, err := rp.router.Task(ctx, "engineering", "issue-tracker", "t2"); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Router.Task after Close = %v, want ErrClosed", err)
	}
	if err := rp.router.CloseTask(ctx, "engineering", "issue-tracker", "t2"); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Router.CloseTask after Close = %v, want ErrClosed", err)
	}
	if _, err := rp.router.SweepExpired(ctx); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Router.SweepExpired after Close = %v, want ErrClosed", err)
	}
	if err := rp.router.Add(pinned); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Router.Add after Close = %v, want ErrClosed", err)
	}
	if err := rp.router.Serve(ctx, rp.b, nil); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Router.Serve after Close = %v, want ErrClosed", err)
	}
}

// blockingGet is a memory store whose Get blocks until its context ends once block is set.
type blockingGet struct {
	memStore
	block   atomic.Bool
	entered chan struct{}
}

func (s *blockingGet) Get(ctx context.Context, key string) ([]byte, error) {
	if s.block.Load() {
		close(s.entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.memStore.Get(ctx, key)
}

// Serve's ctx bounds its Store read (the marker of ReindexRoutes).
func TestServeStoreReadEndsWithItsContext(t *testing.T) {
	t.Parallel()
	st := &blockingGet{memStore: tool.NewMemoryStore().(memStore), entered: make(chan struct{})}
	tl := issueTracker(t, tool.WithStore(st), tool.WithRouteIndex())
	if _, err := tl.ReindexRoutes(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.block.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- tool.NewRouter(tool.RouterOptions{}).Serve(ctx, tl, func(context.Context, string) (tool.TaskConfig, bool) {
			return tool.TaskConfig{}, false
		})
	}()
	await(t, st.entered, "Serve's read of the marker")
	cancel()
	if err := await(t, served, "Serve once its ctx ended"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
}

// A task brought into memory again while its evicted copy still waits to be detached reads what that copy writes:
// the webhook that needs the task detaches the copy first (it is the same task, not another's).
func TestStoreModeRehydrationWaitsForTheEvictedCopy(t *testing.T) {
	t.Parallel()
	gate := newDetachGate("t0")
	rp := newReplicas(t, tool.RouterOptions{TaskCacheSize: 1}, tool.WithObserver(gate))
	t.Cleanup(gate.open)
	followers(t, rp, "alice", "bob", "carol")
	var mu sync.Mutex
	var ops []string
	rp.store.trace = func(op, key string) {
		mu.Lock()
		ops = append(ops, op+" "+key)
		mu.Unlock()
	}
	for i, login := range []string{"alice", "bob", "carol", "bob"} {
		// t0 evicted by bob (its Detach held), t1 by carol (queued behind t0), then bob needs t1 again
		if n := rp.dispatch(t, fmt.Sprint("d", i), login); n != 1 {
			t.Fatalf("%s: %d activations, want 1", login, n)
		}
		if i == 1 {
			await(t, gate.entered, "the Detach of the evicted t0")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	put := slices.Index(ops, "put tasks/engineering/issue-tracker/t1/events")
	scan := -1 // the second hydration's
	for i, op := range ops {
		if op == "scan tasks/engineering/issue-tracker/t1/" {
			scan = i
		}
	}
	if put < 0 || put > scan {
		t.Errorf("t1's evicted copy wrote its state at %d, its second hydration read it at %d; want the write first: %v", put, scan, ops)
	}
}

// A Store error that quotes a secret of the tool, encoded as a driver may print a connection string, reaches the
// store.failed fact of a Router loading a task, and the error Dispatch returns, masked in every encoding.
func TestRouterStoreFailureFactMasksEncodedSecrets(t *testing.T) {
	t.Parallel()
	log := &factRecorder{}
	rp := newReplicas(t, tool.RouterOptions{}, tool.WithObserver(log))
	task := newTask(t, rp.a, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	err := fmt.Errorf("scan: dial postgres://tool:%s@db/?sslkey=%s: refused", url.PathEscape(hookSecret),
		base64.StdEncoding.EncodeToString([]byte(hookSecret)))
	rp.store.scanErr.Store(&err)
	_, derr := rp.send("d1", "alice")
	if derr == nil {
		t.Fatal("Dispatch succeeded with a Store that cannot load the task")
	}
	for _, form := range []string{hookSecret, url.PathEscape(hookSecret), base64.StdEncoding.EncodeToString([]byte(hookSecret))} {
		if strings.Contains(fmt.Sprintf("%v %+v", derr, derr), form) {
			t.Errorf("Dispatch's error holds the secret as %q: %v", form, derr)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	seen := false
	for _, f := range log.facts {
		if f.Name != facts.StoreFailed {
			continue
		}
		seen = true
		b, _ := json.Marshal(f)
		for _, form := range []string{hookSecret, url.PathEscape(hookSecret), base64.StdEncoding.EncodeToString([]byte(hookSecret))} {
			if strings.Contains(string(b), form) {
				t.Errorf("store.failed fact holds the secret as %q: %s", form, b)
			}
		}
	}
	if !seen {
		t.Fatal("no store.failed fact for the failed Scan")
	}
}

// A lend that fails because the Store does (Router.Task in a Store outage) says it is a lend that failed, not
// that a sink refused an activation, masks the secrets the Store's error quotes, and keeps the Store's error and
// ErrNotAccepted in its chain.
func TestRouterTaskLendFailureSaysLend(t *testing.T) {
	t.Parallel()
	rp := newReplicas(t, tool.RouterOptions{})
	task := newTask(t, rp.a, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	outage := fmt.Errorf("scan: dial postgres://tool:%s@db/: refused", url.PathEscape(hookSecret))
	rp.store.scanErr.Store(&outage)
	_, _, err := rp.router.Task(context.Background(), "engineering", "issue-tracker", "t1")
	msg := fmt.Sprint(err)
	if err == nil || !strings.HasPrefix(msg, "tool: router: lend task t1 of engineering/issue-tracker: ") ||
		strings.Contains(msg, "sink") || !errors.Is(err, tool.ErrNotAccepted) {
		t.Errorf("Router.Task in a Store outage = %q, want a lend's failure that wraps ErrNotAccepted", msg)
	}
	if strings.Contains(msg, url.PathEscape(hookSecret)) || !strings.Contains(msg, "refused") {
		t.Errorf("the lend's error %q: want the Store's error, its secret masked", msg)
	}
}

// scanRecorder is a memory store whose task scans (Scan, ScanExcept) record the keys they return.
type scanRecorder struct {
	memStore
	mu   sync.Mutex
	read []string
}

func (s *scanRecorder) record(entries []store.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		s.read = append(s.read, e.Key)
	}
}

func (s *scanRecorder) Scan(ctx context.Context, prefix string) ([]store.Entry, error) {
	entries, err := s.memStore.Scan(ctx, prefix)
	s.record(entries)
	return entries, err
}

func (s *scanRecorder) ScanExcept(ctx context.Context, prefix string, except []string) ([]store.Entry, error) {
	entries, err := s.memStore.(store.PartialScanStore).ScanExcept(ctx, prefix, except)
	s.record(entries)
	return entries, err
}

var _ store.PartialScanStore = (*scanRecorder)(nil)

// Bringing a task into memory does not read its delivery ids' records (issue 41: no Store read that the claim
// answers): the hydration's Scan leaves them out, and a retry of a delivery the task activated elsewhere is still
// discarded as a duplicate, by its claim.
func TestStoreModeHydrationReadsNoDeliveryRecords(t *testing.T) {
	t.Parallel()
	ms := tool.NewMemoryStore().(memStore)
	a := issueTracker(t, tool.WithStore(ms), tool.WithRouteIndex(), tool.WithReplicaID("a"))
	if _, err := a.ReindexRoutes(context.Background()); err != nil {
		t.Fatal(err)
	}
	task := newTask(t, a, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "bob"})
	for _, id := range []string{"d1", "d2", "d3"} { // three delivery records in t1's state
		if d, err := task.Deliver(context.Background(), signed(hookSecret, id, assigned(4242, "bob"))); err != nil || len(d.Activations) != 1 {
			t.Fatalf("delivery %s at a: %+v, %v", id, d, err)
		}
	}
	if keys, _ := ms.List(context.Background(), "tasks/engineering/issue-tracker/t1/deliveries/"); len(keys) != 3 {
		t.Fatalf("t1 holds %d delivery records, want 3", len(keys))
	}
	rec := &scanRecorder{memStore: ms}
	b := issueTracker(t, tool.WithStore(rec), tool.WithRouteIndex(), tool.WithReplicaID("b"))
	r := tool.NewRouter(tool.RouterOptions{})
	t.Cleanup(func() { r.Close(context.Background()) })
	sink := &countingSink{}
	if err := r.Serve(context.Background(), b, func(context.Context, string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: sink}, true
	}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		id        string
		activated int
	}{{"d4", 1}, {"d1", 0}} { // a new delivery hydrates t1; a retry of one a activated is a duplicate
		ds, err := r.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, step.id, assigned(4242, "bob")))
		if err != nil || len(ds) != 1 || len(ds[0].Activations) != step.activated {
			t.Fatalf("webhook %s at b: %+v, %v; want %d activations", step.id, ds, err, step.activated)
		}
		if step.activated == 0 && (len(ds[0].Discarded) != 1 || ds[0].Discarded[0].Reason != tool.ReasonDuplicate) {
			t.Errorf("retry of %s at b: discarded %+v, want duplicate", step.id, ds[0].Discarded)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.read, "tasks/engineering/issue-tracker/t1/allowlist") {
		t.Fatalf("hydration read %q: not t1's allow list", rec.read)
	}
	for _, k := range rec.read {
		if strings.Contains(k, "/deliveries/") {
			t.Errorf("hydration read %q, a delivery record", k)
		}
	}
}
