package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// Review findings on durable state and replicas, each fixed; these keep them fixed.

// plainStore hides the memory store's optional interfaces.
type plainStore struct{ tool.Store }

// An allow list at its cap keeps the value a call just added (SPEC §6 evicts the oldest), with or without
// compare-and-swap merging.
func TestRegressionAllowListCapKeepsNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{"memory (SwapStore)", "plain"} {
		t.Run(name, func(t *testing.T) {
			var store tool.Store = tool.NewMemoryStore()
			if name == "plain" {
				store = plainStore{store}
			}
			tl := tooltest.Load(t, repoEvents(""), tool.WithStore(store), tool.WithSettings(map[string]any{"secret": hookSecret}),
				tool.WithLimits(tool.Limits{AllowListValues: 2}))
			task := tooltest.NewTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
			for _, l := range []string{"a", "b", "c"} {
				if _, err := task.Invoke(ctx, "watch_label", map[string]any{"label": l}); err != nil {
					t.Fatal(err)
				}
			}
			if got := fmt.Sprint(task.AllowList()["label"]); got != "[b c]" {
				t.Errorf("label allow list after a, b, c with cap 2 = %s, want [b c]", got)
			}
		})
	}
}

// Two replicas share one poll through the lease: an item fires once, even when the holder's Sink takes longer
// than the lease's ttl (the holder's heartbeat keeps the lease).
func TestRegressionPollLeaseSurvivesASlowSink(t *testing.T) {
	var mu sync.Mutex
	fetches := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetches["all"]++
		n := fetches["all"]
		mu.Unlock()
		out := []any{}
		if n > 1 {
			out = append(out, item("x"))
		}
		json.NewEncoder(w).Encode(map[string]any{"items": out})
	}))
	defer srv.Close()
	store := tool.NewMemoryStore()
	load := func(replica string, obs *tooltest.Observer) *tool.Tool {
		return tooltest.Load(t, feedManifest(), tool.WithStore(store), tool.WithReplicaID(replica), tool.WithObserver(obs),
			tool.WithSettings(map[string]any{"base_url": srv.URL}),
			tool.WithLimits(tool.Limits{PollInterval: 100 * time.Millisecond, CallTimeout: 100 * time.Millisecond}))
	}
	var fired atomic.Int32
	inSink, release := make(chan struct{}), make(chan struct{})
	slow := tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
		fired.Add(1)
		close(inSink)
		<-release // held well past the 300ms lease ttl
		return nil
	})
	ctx := context.Background()
	obs1, obs2 := tooltest.NewObserver(), tooltest.NewObserver()
	cfg := tool.TaskConfig{ID: "t1", Sink: slow, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}}
	first, err := load("r1", obs1).NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	obs1.Wait(t, "poll.fetched", 1) // r1 holds the lease and baselined
	cfg.Sink = tool.SinkFunc(func(ctx context.Context, a tool.Activation) error { fired.Add(1); return nil })
	second, err := load("r2", obs2).RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Detach(ctx)
	<-inSink
	// While r1's Sink holds x, r2 keeps trying: its steps find the lease held (no fetch, no fact) for as long as
	// the heartbeat renews it. Hold the Sink over several ttls, measured by r1's heartbeat on the wall clock.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if len(obs2.Facts("poll.fetched")) > 0 {
			t.Fatal("r2 polled while r1 held the lease in a slow Sink")
		}
		time.Sleep(10 * time.Millisecond) // polling r2's facts over the span, not waiting for an event
	}
	close(release)
	obs1.Wait(t, "poll.fetched", 2) // r1 records x as seen
	if n := fired.Load(); n != 1 {
		t.Errorf("item x fired %d times across two replicas, want once", n)
	}
}

// A delivery retried at another replica while the first replica's Sink still works activates once, also when
// the retry comes later than a call's bound.
func TestRegressionClaimHoldsWhileTheSinkWorks(t *testing.T) {
	t.Parallel()
	store, clock := tool.NewMemoryStore(), newManualClock()
	load := func(replica string) *tool.Tool {
		return tooltest.Load(t, repoEvents(""), tool.WithStore(store), tool.WithReplicaID(replica), tool.WithClock(clock),
			tool.WithSettings(map[string]any{"secret": hookSecret}), tool.WithLimits(tool.Limits{CallTimeout: 200 * time.Millisecond}))
	}
	ctx := context.Background()
	var fired atomic.Int32
	inSink, release := make(chan struct{}), make(chan struct{})
	cfg := tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}},
		Sink: tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
			if fired.Add(1) == 1 {
				close(inSink)
				<-release
			}
			return nil
		})}
	a, err := load("r1").NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := load("r2").RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Detach(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.Deliver(ctx, signed(hookSecret, "d-1", pushBody)) }()
	<-inSink
	clock.Advance(time.Minute) // the sender gave up long past the call bound and retries at the other replica
	d, err := b.Deliver(ctx, signed(hookSecret, "d-1", pushBody))
	close(release)
	<-done
	if n := fired.Load(); n != 1 || err != nil {
		t.Errorf("delivery d-1 activated %d times across two replicas (retry: %+v, %v), want once", n, d, err)
	}
	wantOutcome(t, d, "pushed:in_flight", "labeled:empty_allow_list")
}

// A task resumed after its event's timeout passed finds the event expired, also when it saw no activity after
// NewTask: the start is recorded.
func TestRegressionResumeCountsTheIdleTime(t *testing.T) {
	t.Parallel()
	clock, store := newManualClock(), tool.NewMemoryStore()
	load := func() *tool.Tool { return repoTool(t, tool.WithClock(clock), tool.WithStore(store)) }
	ctx := context.Background()
	cfg := tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
	first, err := load().NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	first.Detach(ctx) // or the process dies
	clock.Advance(2 * time.Hour)
	second, err := load().RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	wantOutcome(t, deliver(t, second, signed(hookSecret, "d-1", pushBody)), "pushed:activated", "labeled:expired")
}
