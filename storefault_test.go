package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/tooltest"
)

// Store faults (README, Guarantees): a Store that fails is reported as store.failed facts, and a poll neither
// fires an item twice across the outage nor stays silent.

var errStoreDown = errors.New("store down")

// faultyStore is a memory store whose writes (or every operation) fail while set. It is a LeaseStore when
// leased.
type faultyStore struct {
	tool.Store
	writes, all atomic.Bool
}

func (s *faultyStore) Get(ctx context.Context, key string) ([]byte, error) {
	if s.all.Load() {
		return nil, errStoreDown
	}
	return s.Store.Get(ctx, key)
}

func (s *faultyStore) Put(ctx context.Context, key string, value []byte) error {
	if s.all.Load() || s.writes.Load() {
		return errStoreDown
	}
	return s.Store.Put(ctx, key, value)
}

// leasedStore adds the memory store's leases to a faultyStore; they fail with every operation.
type leasedStore struct{ *faultyStore }

func (s leasedStore) Lease(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if s.all.Load() {
		return false, errStoreDown
	}
	return s.Store.(store.LeaseStore).Lease(ctx, key, owner, ttl)
}

func (s leasedStore) Release(ctx context.Context, key, owner string) error {
	return s.Store.(store.LeaseStore).Release(ctx, key, owner)
}

// feed serves the items published so far at /feed/{feed}.
type feed struct {
	mu    sync.Mutex
	items []any
}

func newFeed(t *testing.T) (*feed, *httptest.Server) {
	f := &feed{items: []any{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"items": f.items})
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *feed) publish(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.items = append(f.items, item(id))
	}
}

func TestPollNoDuplicateAcrossAStoreOutage(t *testing.T) {
	for _, leased := range []bool{false, true} {
		name := "plain"
		if leased {
			name = "leased"
		}
		t.Run(name, func(t *testing.T) {
			tooltest.NoLeaks(t)
			fs := &faultyStore{Store: tool.NewMemoryStore()}
			var store tool.Store = fs
			if leased {
				store = leasedStore{fs}
			}
			f, srv := newFeed(t)
			f.publish("a")
			clock, obs, sink := tooltest.NewClock(time.Time{}), tooltest.NewObserver(), tooltest.NewSink()
			tl := tooltest.Load(t, feedManifest(), tool.WithClock(clock), tool.WithObserver(obs), tool.WithStore(store),
				tool.WithSettings(map[string]any{"base_url": srv.URL}))
			tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})
			obs.Wait(t, "poll.fetched", 1) // the baseline: a
			step := func() {
				t.Helper()
				clock.BlockUntil(t, 1)
				clock.Advance(time.Minute)
			}

			// Writes fail: b fires, but its record cannot be written. The step says so at once.
			f.publish("b")
			fs.writes.Store(true)
			step()
			failed := obs.Wait(t, "poll.failed", 1)[0]
			if failed.Data["reason"] != "store" {
				t.Errorf("poll.failed = %v, want reason store", failed.Data)
			}
			// The next steps write the state first and fetch nothing until that succeeds.
			step()
			obs.Wait(t, "poll.failed", 2)
			// Everything fails, the lease too: still reported within the interval.
			fs.all.Store(true)
			step()
			obs.Wait(t, "poll.failed", 3)
			fs.all.Store(false)
			fs.writes.Store(false)
			f.publish("c")
			step()
			obs.Wait(t, "poll.fetched", 2)
			step()
			obs.Wait(t, "poll.fetched", 3)

			var got []string
			for _, a := range sink.Activations() {
				got = append(got, a.Payload.(map[string]any)["id"].(string))
			}
			if !slices.Equal(got, []string{"b", "c"}) {
				t.Errorf("items fired across the outage: %v, want [b c] (once each)", got)
			}
			wantStoreFailed(t, obs, "write", "receiver")
		})
	}
}

// wantStoreFailed fails unless a store.failed fact names op and record, and no fact carries a stored value.
func wantStoreFailed(t *testing.T, obs *tooltest.Observer, op, record string) {
	t.Helper()
	facts := obs.Facts("store.failed")
	if !slices.ContainsFunc(facts, func(f tool.Fact) bool {
		return f.Data["operation"] == op && f.Data["record"] == record && strings.Contains(f.Data["error"].(string), "store down")
	}) {
		t.Errorf("store.failed facts %v, want one for %s of %s", facts, op, record)
	}
	for _, f := range facts {
		for k := range f.Data {
			if k != "operation" && k != "record" && k != "error" {
				t.Errorf("store.failed carries %s: %v", k, f.Data)
			}
		}
	}
}

func TestStoreFailuresAreFacts(t *testing.T) {
	t.Parallel()
	fs := &faultyStore{Store: tool.NewMemoryStore()}
	obs := tooltest.NewObserver()
	task := newTask(t, repoTool(t, tool.WithStore(fs), tool.WithObserver(obs)),
		tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	fs.writes.Store(true)
	if _, err := task.Invoke(context.Background(), "watch_label", map[string]any{"label": "needs-secret-value"}); err != nil {
		t.Fatal(err)
	}
	wantStoreFailed(t, obs, "write", "allow_list")
	fs.all.Store(true)
	deliver(t, task, signed(hookSecret, "d-1", pushBody))
	wantStoreFailed(t, obs, "read", "delivery_id")
	for _, f := range obs.Facts("store.failed") {
		if strings.Contains(f.Data["error"].(string), "needs-secret-value") {
			t.Errorf("store.failed carries a value: %v", f.Data)
		}
	}
}

// A subscribe whose outcome a crash hid is recorded before it was sent (pending): the resumed task unsubscribes
// it at Close, and the platform answering that it never knew the channel is a fact, not a failure.
func TestPendingSubscribeIsRemovedAfterACrash(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	srv.Handle("POST", "/watch/doc-1", tooltest.Response{Body: map[string]any{"resource_id": "res-1"}})
	srv.Handle("POST", "/stop", tooltest.Response{Status: 404, Body: "no such channel"}, tooltest.Response{Status: 204})
	store, clock, obs := tool.NewMemoryStore(), tooltest.NewClock(time.Time{}), tooltest.NewObserver()
	cfg := driveConfig
	cfg.ID = "t1"
	ctx := context.Background()
	first, err := driveTool(t, "", srv.URL, clock, obs, tool.WithStore(store)).NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs.Wait(t, "subscription.created", 1)
	first.Detach(ctx) // the process dies here, as far as the platform and the Store know
	// ... in the middle of a renewal: its subscribe was recorded, and never answered.
	key := "tasks/tests/drive/t1/receivers/edit"
	b, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	json.Unmarshal(b, &state)
	state["pending"] = map[string]any{"id": "ghost", "expires_at_ms": clock.Now().Add(time.Hour).UnixMilli(), "unconfirmed": true}
	b, _ = json.Marshal(state)
	if err := store.Put(ctx, key, b); err != nil {
		t.Fatal(err)
	}
	second, err := driveTool(t, "", srv.URL, clock, obs, tool.WithStore(store)).RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	subs, unsubs := channels(srv)
	if !slices.Contains(unsubs, "ghost") || !slices.Contains(unsubs, subs[0]) {
		t.Errorf("unsubscribed %v, want the pending channel and %s", unsubs, subs[0])
	}
	var ghost []tool.Fact
	for _, f := range obs.Facts("subscription.removed") {
		if f.Data["subscription_id"] == "ghost" {
			ghost = append(ghost, f)
		}
	}
	if len(ghost) != 1 || ghost[0].Data["unknown_to_platform"] != true {
		t.Errorf("facts for the pending channel: %v, want one subscription.removed, unknown to the platform", ghost)
	}
	if f := obs.Facts("subscription.unsubscribe_failed"); len(f) != 0 {
		t.Errorf("unsubscribe_failed facts: %v", f)
	}
}

// hangingStore's Put blocks until its ctx ends (a stuck database connection), after the first Put (NewTask).
type hangingStore struct {
	tool.Store
	puts atomic.Int32
}

func (s *hangingStore) Put(ctx context.Context, k string, v []byte) error {
	if s.puts.Add(1) > 1 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * time.Second):
		}
	}
	return s.Store.Put(ctx, k, v)
}

// Once a bug: persisting the allow list ignores the caller's deadline: Invoke with a 50ms ctx blocks on the Store.
func TestAllowListPersistenceHonoursTheCallDeadline(t *testing.T) {
	st := &hangingStore{Store: tool.NewMemoryStore()}
	task := newTask(t, loadProbe(t, &probe{}, tool.WithStore(st)), tool.TaskConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := task.Invoke(ctx, "read", map[string]any{"count": 7})
	if d := time.Since(start); d > time.Second {
		t.Errorf("Invoke with a 50ms deadline took %v (err %v): the Store write ignores ctx", d, err)
	}
}
