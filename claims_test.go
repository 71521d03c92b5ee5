package tool_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// Deliveries across replicas sharing one Store (README, Guarantees): a delivery id another replica holds is
// answered 503 until its Sink accepted, a refused claim is released, a dead replica's claim expires.

// replicaPair runs task t1 on two replicas (r1 started it, r2 resumed it) over one Store, each behind its own
// Router, on one manual clock. sinks[0] and sinks[1] are the replicas' Sinks.
func replicaPair(t *testing.T, store tool.Store, clock *manualClock, sinks [2]tool.Sink) [2]*tool.Router {
	t.Helper()
	ctx := context.Background()
	var routers [2]*tool.Router
	for i, replica := range []string{"r1", "r2"} {
		tl := mustLoadSrc(t, repoEvents(""), tool.WithStore(store), tool.WithReplicaID(replica), tool.WithClock(clock),
			tool.WithSettings(map[string]any{"secret": hookSecret}))
		cfg := tool.TaskConfig{ID: "t1", Sink: sinks[i], Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
		start := tl.NewTask
		if i == 1 {
			start = tl.RestoreTask
		}
		task, err := start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { task.Detach(context.Background()) })
		routers[i] = tool.NewRouter(tool.RouterOptions{})
		if err := routers[i].Add(task); err != nil {
			t.Fatal(err)
		}
	}
	return routers
}

// post sends in to r's webhook endpoint as a sender would and returns the status.
func post(r *tool.Router, in *tool.Inbound) int {
	code, _ := postHeader(r, in)
	return code
}

// postHeader is post that also returns the response's Retry-After.
func postHeader(r *tool.Router, in *tool.Inbound) (int, string) {
	req := httptest.NewRequest("POST", "/v1/webhooks/events/tests/repo-events", bytes.NewReader(in.Body))
	for k, v := range in.Headers {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w.Code, w.Header().Get("Retry-After")
}

// blockingSink holds the first activation until release is closed; it counts what it accepted.
type blockingSink struct {
	entered, release chan struct{}
	first            atomic.Bool
	accepted         atomic.Int32
}

func newBlockingSink() *blockingSink {
	return &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
}

func (s *blockingSink) Accept(ctx context.Context, a tool.Activation) error {
	if s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	s.accepted.Add(1)
	return nil
}

func TestRetryAtAnotherReplicaIsAnswered503UntilTheSinkAccepts(t *testing.T) {
	t.Parallel()
	a, b := newBlockingSink(), &countingSink{}
	routers := replicaPair(t, tool.NewMemoryStore(), newManualClock(), [2]tool.Sink{a, b})
	first := make(chan int)
	go func() { first <- post(routers[0], signed(hookSecret, "d-1", pushBody)) }()
	<-a.entered
	if code, after := postHeader(routers[1], signed(hookSecret, "d-1", pushBody)); code != http.StatusServiceUnavailable || after == "" {
		t.Errorf("retry at r2 while r1's Sink works: %d (Retry-After %q), want 503 with Retry-After (a 2xx would end the sender's retries)", code, after)
	}
	close(a.release)
	if code := <-first; code != http.StatusAccepted {
		t.Errorf("first attempt at r1: %d, want 202", code)
	}
	if code := post(routers[1], signed(hookSecret, "d-1", pushBody)); code != http.StatusAccepted {
		t.Errorf("retry at r2 after r1's Sink accepted: %d, want 202 (duplicate)", code)
	}
	if n := a.accepted.Load() + int32(b.accepted.Load()); n != 1 {
		t.Errorf("delivery d-1 accepted %d times across the replicas, want once", n)
	}
}

func TestRefusedClaimIsReleasedForAnotherReplica(t *testing.T) {
	t.Parallel()
	a, b := &countingSink{}, &countingSink{}
	a.refuse.Store(true)
	routers := replicaPair(t, tool.NewMemoryStore(), newManualClock(), [2]tool.Sink{a, b})
	if code := post(routers[0], signed(hookSecret, "d-1", pushBody)); code != http.StatusServiceUnavailable {
		t.Fatalf("r1's Sink refused: %d, want 503", code)
	}
	if code := post(routers[1], signed(hookSecret, "d-1", pushBody)); code != http.StatusAccepted || b.accepted.Load() != 1 {
		t.Errorf("retry at r2 after r1's refusal: %d with %d activations, want 202 with one", code, b.accepted.Load())
	}
}

func TestDeadReplicasClaimExpires(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	a, b := newBlockingSink(), &countingSink{}
	routers := replicaPair(t, tool.NewMemoryStore(), clock, [2]tool.Sink{a, b})
	done := make(chan struct{})
	go func() { defer close(done); post(routers[0], signed(hookSecret, "d-1", pushBody)) }()
	defer func() { close(a.release); <-done }()
	<-a.entered // r1 holds the claim and never returns: as good as dead
	if code := post(routers[1], signed(hookSecret, "d-1", pushBody)); code != http.StatusServiceUnavailable {
		t.Fatalf("retry within the claim timeout: %d, want 503", code)
	}
	clock.Advance(tool.DefaultLimits().ClaimTimeout)
	if code := post(routers[1], signed(hookSecret, "d-1", pushBody)); code != http.StatusAccepted || b.accepted.Load() != 1 {
		t.Errorf("retry past the claim timeout: %d with %d activations at r2, want 202 with one", code, b.accepted.Load())
	}
}

func TestActivationIDIsStablePerDeliveryOrBody(t *testing.T) {
	t.Parallel()
	var ids []string
	sink := tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		ids = append(ids, a.ID)
		return errors.New("refused, so that the retry activates again")
	})
	task := newTask(t, repoTool(t), tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	other := newTask(t, repoTool(t), tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	for _, in := range []*tool.Inbound{
		signed(hookSecret, "d-1", pushBody), signed(hookSecret, "d-1", pushBody), // a retry: the same id
		signed(hookSecret, "", pushBody), signed(hookSecret, "", pushBody), // no delivery id: the body's
		signed(hookSecret, "d-2", pushBody), // another delivery
	} {
		task.Deliver(context.Background(), in)
	}
	other.Deliver(context.Background(), signed(hookSecret, "d-1", pushBody)) // another task
	if len(ids) != 6 || ids[0] != ids[1] || ids[2] != ids[3] || ids[0] == ids[2] || ids[4] == ids[0] || ids[5] == ids[0] || ids[0] == "" {
		t.Errorf("activation ids %q: want retries equal, other deliveries and tasks distinct", ids)
	}
}

// A delivery retried at another replica while the first replica's Sink still works activates once, also when
// the retry comes later than a call's bound.
func TestClaimHoldsWhileTheSinkWorks(t *testing.T) {
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
