package tool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/store"
)

// routedValues returns the values of param that the routing index of rs routes to task (its key prefix) for the
// issue tracker's issue_assigned event, among candidates.
func routedValues(t *testing.T, rs store.RouteStore, task, param string, candidates []string) []string {
	t.Helper()
	routes := make([][]byte, len(candidates))
	for i, c := range candidates {
		routes[i] = tool.RouteKey("engineering", "issue-tracker", "issue_assigned", param, c)
	}
	hits, err := rs.Lookup(context.Background(), routes, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, h := range hits {
		if slices.ContainsFunc(h.Hits, func(x store.RouteHit) bool { return x.Task == task }) {
			out = append(out, candidates[i])
		}
	}
	return out
}

// storedList reads a task's stored allow list.
func storedList(t *testing.T, s tool.Store, task string) map[string][]string {
	t.Helper()
	b, err := s.Get(context.Background(), task+"allowlist")
	if err != nil {
		t.Fatal(err)
	}
	var l allowlist.List
	if err := l.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return l.Snapshot()
}

// In store mode a task's routes follow its stored allow list through random growth and cap eviction: every
// stored value has its route (the index may name too many tasks, never too few), and an evicted value's route
// goes.
func TestRoutesFollowAllowList(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	ms := tool.NewMemoryStore()
	rs := ms.(store.RouteStore)
	tl := issueTracker(t, tool.WithStore(ms), tool.WithRouteIndex(), tool.WithLimits(tool.Limits{AllowListValues: 4}))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	prefix := "tasks/engineering/issue-tracker/" + task.ID() + "/"
	logins := make([]string, 12)
	for i := range logins {
		logins[i] = fmt.Sprintf("user%d", i)
	}
	if got := routedValues(t, rs, prefix, "repo_id", []string{"4242", "1"}); !slices.Equal(got, []string{"4242"}) {
		t.Fatalf("routed repo_id values after NewTask = %v, want the binding [4242]", got)
	}
	for step := range 60 {
		login := logins[rng.IntN(len(logins))]
		if res := mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": login}); res.IsError {
			t.Fatalf("step %d: create_issue(%s): %+v", step, login, res.Error)
		}
		stored := storedList(t, ms, prefix)["assignee"]
		routed := routedValues(t, rs, prefix, "assignee", logins)
		slices.Sort(routed)
		if !slices.Equal(stored, routed) {
			t.Fatalf("step %d (create_issue %s): stored assignees %v, routed %v: want the same", step, login, stored, routed)
		}
	}
}

// routeFaultStore is a memory store whose routing index fails while down (or, for the generation, bumpDown) is
// set.
type routeFaultStore struct {
	store.RouteStore
	down     atomic.Bool // every route write fails
	bumpDown atomic.Bool // BumpGeneration fails
}

var errRoutesDown = errors.New("routing index down")

func (s *routeFaultStore) PutRoutes(ctx context.Context, task string, routes [][]byte) error {
	if s.down.Load() {
		return errRoutesDown
	}
	return s.RouteStore.PutRoutes(ctx, task, routes)
}

func (s *routeFaultStore) BumpGeneration(ctx context.Context, task string) (uint64, error) {
	if s.down.Load() || s.bumpDown.Load() {
		return 0, errRoutesDown
	}
	return s.RouteStore.BumpGeneration(ctx, task)
}

// A call whose new value's route cannot be written fails, recoverably, before its backend runs, and the value
// does not join the allow list; the retry after the index is back grows it and runs.
func TestRouteWriteFailureFailsTheCallBeforeTheBackend(t *testing.T) {
	t.Parallel()
	fs := &routeFaultStore{RouteStore: tool.NewMemoryStore().(store.RouteStore)}
	tl := issueTracker(t, tool.WithStore(fs), tool.WithRouteIndex())
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	fs.down.Store(true)
	res := mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	if !res.IsError || res.Error.Kind != runtime.KindUnavailable {
		t.Fatalf("create_issue with the index down = %+v, want a recoverable unavailable result", res)
	}
	if got := task.AllowList()["assignee"]; len(got) != 0 {
		t.Fatalf("assignees after the failed call = %v, want none", got)
	}
	fs.down.Store(false)
	if res := mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"}); res.IsError {
		t.Fatalf("retry: %+v", res.Error)
	}
	prefix := "tasks/engineering/issue-tracker/" + task.ID() + "/"
	if got := routedValues(t, fs, prefix, "assignee", []string{"alice"}); len(got) != 1 {
		t.Fatalf("routed after the retry = %v, want [alice]", got)
	}
}

// WithRouteIndex needs a RouteStore.
func TestRouteIndexNeedsARouteStore(t *testing.T) {
	t.Parallel()
	_, err := tool.Load(context.Background(), []byte(calcManifest), tool.WithStore(&faultyStore{Store: tool.NewMemoryStore()}),
		tool.WithRouteIndex())
	if err == nil {
		t.Fatal("Load WithRouteIndex over a Store without RouteStore: nil error")
	}
}
