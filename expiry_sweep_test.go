package tool_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/tooltest"
)

// expiringReplicas is newReplicas with both replicas on one fake clock, b observed.
func expiringReplicas(t *testing.T, ropts tool.RouterOptions) (*replicas, *tooltest.Clock, *factRecorder) {
	t.Helper()
	clock := tooltest.NewClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	log := &factRecorder{}
	ms := tool.NewMemoryStore().(memStore)
	rp := &replicas{store: &readCounter{memStore: ms}, sink: &countingSink{}, mem: ms}
	rp.a = issueTracker(t, tool.WithStore(ms), tool.WithRouteIndex(), tool.WithClock(clock))
	if _, err := rp.a.ReindexRoutes(context.Background()); err != nil {
		t.Fatal(err)
	}
	rp.b = issueTracker(t, tool.WithStore(rp.store), tool.WithRouteIndex(), tool.WithClock(clock), tool.WithObserver(log))
	rp.router = tool.NewRouter(ropts)
	hydrate := func(_ context.Context, id string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: rp.sink}, true
	}
	if err := rp.router.Serve(context.Background(), rp.b, hydrate); err != nil {
		t.Fatal(err)
	}
	return rp, clock, log
}

// storedTask starts task id at a with alice in its allow list and the given expiry (zero: none), and detaches
// it: it is stored, and no process holds it.
func storedTask(t *testing.T, rp *replicas, id string, expires time.Time) {
	t.Helper()
	task := newTask(t, rp.a, tool.TaskConfig{ID: id, ExpiresAt: expires,
		Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	if err := task.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// gone fails unless the Store holds nothing of task id: no state, no route, no expiry record.
func gone(t *testing.T, rp *replicas, id string, at time.Time) {
	t.Helper()
	prefix := "tasks/engineering/issue-tracker/" + id + "/"
	if entries, err := rp.mem.Scan(context.Background(), prefix); err != nil || len(entries) != 0 {
		t.Errorf("state of %s: %d keys (%v), want none", id, len(entries), err)
	}
	if got := routedValues(t, rp.mem, prefix, "assignee", []string{"alice"}); len(got) != 0 {
		t.Errorf("routes of %s: %v, want none", id, got)
	}
	recs, err := rp.mem.ExpiredTasks(context.Background(), prefix, at, store.TaskExpiry{}, 10)
	if err != nil || len(recs) != 0 {
		t.Errorf("expiry records of %s: %v (%v), want none", id, recs, err)
	}
}

// A stored task whose expiry passed while no process held it is closed when a webhook brings it into memory:
// its state, routes and expiry record go, it gets nothing, and the webhook's other tasks activate (202, not 503).
func TestStoreModeClosesAnExpiredTaskAWebhookReaches(t *testing.T) {
	t.Parallel()
	rp, clock, log := expiringReplicas(t, tool.RouterOptions{})
	storedTask(t, rp, "old", clock.Now().Add(time.Hour))
	storedTask(t, rp, "live", time.Time{})
	clock.Advance(2 * time.Hour)
	mux := http.NewServeMux()
	rp.router.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url := srv.URL + "/v1/webhooks/events" + "/engineering/issue-tracker"
	if status, body := postInbound(t, url, signed(hookSecret, "d1", assigned(4242, "alice"))); status != http.StatusAccepted {
		t.Fatalf("webhook for alice: status %d (%s), want 202", status, body)
	}
	if got := rp.sink.accepted.Load(); got != 1 {
		t.Fatalf("sinks accepted %d, want 1 (live only)", got)
	}
	if got := taskIDsOf(log, facts.TaskExpired); !slices.Equal(got, []string{"old"}) {
		t.Errorf("task.expired facts for %v, want [old]", got)
	}
	if got := taskIDsOf(log, facts.TaskHydrationFailed); len(got) != 0 {
		t.Errorf("task.hydration_failed for %v: an expired task is not a failure", got)
	}
	gone(t, rp, "old", clock.Now())
	scans := rp.store.scans.Load()
	if status, _ := postInbound(t, url, signed(hookSecret, "d2", assigned(4242, "alice"))); status != http.StatusAccepted {
		t.Fatalf("second webhook: status %d, want 202", status)
	}
	if got := rp.sink.accepted.Load(); got != 2 || rp.store.scans.Load() != scans {
		t.Errorf("second webhook: %d accepted in all, %d scans; want 2 and none (old is gone, live cached)",
			got, rp.store.scans.Load()-scans)
	}
	if err := rp.router.CloseTask(context.Background(), "engineering", "issue-tracker", "live"); err != nil {
		t.Fatal(err)
	}
}

// Router.SweepExpired closes the stored tasks whose expiry passed, page by page, reading the state of those
// alone; the others stay, and a record whose task is gone is dropped.
func TestRouterSweepExpired(t *testing.T) {
	t.Parallel()
	rp, clock, log := expiringReplicas(t, tool.RouterOptions{MaxFanOut: 1}) // a page per task
	t0 := clock.Now()
	storedTask(t, rp, "e1", t0.Add(time.Hour))
	storedTask(t, rp, "e2", t0.Add(2*time.Hour))
	storedTask(t, rp, "later", t0.Add(10*time.Hour))
	storedTask(t, rp, "never", time.Time{})
	if n, err := rp.router.SweepExpired(context.Background()); n != 0 || err != nil {
		t.Fatalf("sweep before any expiry = %d, %v; want 0, nil", n, err)
	}
	clock.Advance(3 * time.Hour)
	scans := rp.store.scans.Load()
	n, err := rp.router.SweepExpired(context.Background())
	if n != 2 || err != nil {
		t.Fatalf("sweep at +3h = %d, %v; want 2, nil", n, err)
	}
	if got := rp.store.scans.Load() - scans; got != 2 {
		t.Errorf("the sweep scanned %d tasks, want 2: only the expired ones are read", got)
	}
	got := taskIDsOf(log, facts.TaskExpired)
	slices.Sort(got)
	if !slices.Equal(got, []string{"e1", "e2"}) {
		t.Errorf("task.expired facts for %v, want [e1 e2]", got)
	}
	gone(t, rp, "e1", clock.Now())
	gone(t, rp, "e2", clock.Now())
	if n := rp.dispatch(t, "d1", "alice"); n != 2 {
		t.Errorf("webhook after the sweep: %d activations, want 2 (later, never)", n)
	}
	if n, err := rp.router.SweepExpired(context.Background()); n != 0 || err != nil {
		t.Errorf("sweep again = %d, %v; want 0, nil", n, err)
	}
	// A record whose task is gone (its close failed after deleting the state) is dropped, not counted.
	stale := "tasks/engineering/issue-tracker/stale/"
	if err := rp.mem.SetTaskExpiry(context.Background(), stale, t0); err != nil {
		t.Fatal(err)
	}
	if n, err := rp.router.SweepExpired(context.Background()); n != 0 || err != nil {
		t.Errorf("sweep of a stale record = %d, %v; want 0, nil", n, err)
	}
	if recs, _ := rp.mem.ExpiredTasks(context.Background(), stale, clock.Now(), store.TaskExpiry{}, 10); len(recs) != 0 {
		t.Errorf("the stale record stays: %v", recs)
	}
	// "later" is in memory here (the webhook brought it): past its expiry, its timer or the sweep closes it.
	clock.Advance(8 * time.Hour)
	if _, err := rp.router.SweepExpired(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		entries, _ := rp.mem.Scan(context.Background(), "tasks/engineering/issue-tracker/later/")
		return len(entries) == 0
	})
	gone(t, rp, "later", clock.Now())
	if n := rp.dispatch(t, "d2", "alice"); n != 1 {
		t.Errorf("webhook at the end: %d activations, want 1 (never)", n)
	}
}

// Router.Task lends the host a stored task for its calls on any replica: brought into memory like a webhook
// brings it, pinned while lent (the cache's bound does not evict it), evictable again once released.
func TestRouterTaskLendsAStoredTask(t *testing.T) {
	t.Parallel()
	rp, clock, _ := expiringReplicas(t, tool.RouterOptions{TaskCacheSize: 1, TaskCacheIdle: time.Hour})
	storedTask(t, rp, "t1", time.Time{})
	storedTask(t, rp, "t2", time.Time{})
	storedTask(t, rp, "old", clock.Now().Add(time.Minute))
	ctx := context.Background()
	task, release, err := rp.router.Task(ctx, "engineering", "issue-tracker", "t1")
	if err != nil {
		t.Fatal(err)
	}
	mustInvoke(t, task, "create_issue", map[string]any{"title": "y", "assignee": "carol"})
	if n := rp.dispatch(t, "d1", "alice"); n != 3 {
		t.Fatalf("webhook for alice: %d activations, want 3", n)
	}
	// Three tasks visited with a cache of one: the lent task stayed.
	if _, err := task.Invoke(ctx, "create_issue", map[string]any{"title": "z", "assignee": "dave"}); err != nil {
		t.Fatalf("Invoke on the lent task after the cache's bound was passed: %v", err)
	}
	if n := rp.dispatch(t, "d2", "carol"); n != 1 {
		t.Errorf("webhook for carol, whom the lent task added: %d activations, want 1", n)
	}
	release()
	release() // once only
	if n := rp.dispatch(t, "d3", "alice"); n != 3 {
		t.Fatalf("webhook for alice after the release: %d activations, want 3", n)
	}
	again, release2, err := rp.router.Task(ctx, "engineering", "issue-tracker", "t1")
	if err != nil {
		t.Fatal(err)
	}
	// The evicted copy is detached by the Router's goroutine, and at the latest before t1 is brought back.
	if _, err := task.Invoke(ctx, "create_issue", map[string]any{"title": "w"}); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Invoke on the released task after the cache's bound was passed = %v, want ErrClosed (evicted)", err)
	}
	if got := again.AllowList()["assignee"]; !slices.Equal(got, []string{"alice", "carol", "dave"}) {
		t.Errorf("t1 lent again holds assignees %v, want [alice carol dave]", got)
	}
	release2()
	if _, _, err := rp.router.Task(ctx, "engineering", "issue-tracker", "nope"); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Task of an unknown ID = %v, want ErrNotFound", err)
	}
	tool.WaitDetached(rp.router) // "old" left the cache before it expired: detached, not closed
	clock.Advance(time.Hour)
	if _, _, err := rp.router.Task(ctx, "engineering", "issue-tracker", "old"); !errors.Is(err, tool.ErrTaskExpired) {
		t.Errorf("Task of an expired task = %v, want ErrTaskExpired", err)
	}
}
