package tool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

func TestResumeTaskUnknown(t *testing.T) {
	t.Parallel()
	tl := tooltest.Load(t, feedManifest(), tool.WithSettings(map[string]any{"base_url": "http://127.0.0.1:1"}))
	_, err := tl.RestoreTask(context.Background(), tool.TaskConfig{ID: "nope",
		Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})
	if !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("RestoreTask of an unknown task = %v, want ErrNotFound", err)
	}
	if _, err := tl.RestoreTask(context.Background(), tool.TaskConfig{}); err == nil {
		t.Error("RestoreTask without an ID succeeded")
	}
}

// TestDetachAndResume hands a task from one Tool to another over one Store, as a rolling restart does: the
// detached task takes no more calls, and the resumed one's poll continues from the stored watermark and seen
// items — no new baseline, nothing fired twice.
func TestDetachAndResume(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/feed/f1", items("a"), items("a", "b"), items("a", "b", "c"))
	store, clock := tool.NewMemoryStore(), tooltest.NewClock(time.Time{})
	load := func(replica string, obs *tooltest.Observer) *tool.Tool {
		return tooltest.Load(t, feedManifest(), tool.WithStore(store), tool.WithClock(clock), tool.WithObserver(obs),
			tool.WithReplicaID(replica), tool.WithSettings(map[string]any{"base_url": srv.URL}))
	}
	ctx := context.Background()
	obs1, sink1 := tooltest.NewObserver(), tooltest.NewSink()
	cfg := tool.TaskConfig{ID: "t1", Sink: sink1, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}}
	first, err := load("r1", obs1).NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs1.Wait(t, "poll.fetched", 1)
	clock.BlockUntil(t, 1)
	clock.Advance(time.Minute)
	sink1.Wait(t, 1) // b
	if _, err := first.Invoke(ctx, "noop", nil); err != nil {
		t.Fatal(err)
	}
	clock.BlockUntil(t, 1)
	if err := first.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Invoke(ctx, "noop", nil); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Invoke after Detach = %v, want ErrClosed", err)
	}
	if err := first.Close(ctx); err != nil {
		t.Errorf("Close after Detach = %v, want nothing more to do", err)
	}

	obs2, sink2 := tooltest.NewObserver(), tooltest.NewSink()
	cfg.Sink = sink2
	second, err := load("r2", obs2).RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	if f := obs2.Wait(t, "poll.fetched", 1)[0]; f.Data["baseline"] != false || f.Data["fired"] != 1 {
		t.Errorf("first poll after the resume = %v, want c fired and no new baseline", f.Data)
	}
	if a := sink2.Wait(t, 1); a[0].Message != "item c (c)" || len(sink1.Activations()) != 1 {
		t.Errorf("activations: first %v, resumed %v", sink1.Activations(), a)
	}
	if f := obs2.Facts("task.restored"); len(f) != 1 {
		t.Errorf("task.restored facts = %v", f)
	}
}

func TestResumeReplacesChangedBindings(t *testing.T) {
	t.Parallel()
	store := tool.NewMemoryStore()
	tl := tooltest.Load(t, repoEvents(""), tool.WithStore(store), tool.WithSettings(map[string]any{"secret": hookSecret}))
	ctx := context.Background()
	first, err := tl.NewTask(ctx, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Invoke(ctx, "watch_label", map[string]any{"label": "bug"}); err != nil {
		t.Fatal(err)
	}
	if err := first.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	obs := tooltest.NewObserver()
	tl2 := tooltest.Load(t, repoEvents(""), tool.WithStore(store), tool.WithObserver(obs), tool.WithSettings(map[string]any{"secret": hookSecret}))
	second, err := tl2.RestoreTask(ctx, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo": "o/other"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	if got := fmt.Sprint(second.AllowList()); got != "map[label:[bug] repo:[o/other]]" {
		t.Errorf("allow list = %s, want the stored label and today's binding", got)
	}
	dropped, _ := obs.Facts("task.restored")[0].Data["dropped_sealed"].([]string)
	if !slices.Equal(dropped, []string{"repo"}) {
		t.Errorf("dropped_sealed = %v", obs.Facts("task.restored")[0].Data)
	}
}

func TestNewTaskRefusesAStoredID(t *testing.T) {
	t.Parallel()
	store := tool.NewMemoryStore()
	tl := tooltest.Load(t, repoEvents(""), tool.WithStore(store), tool.WithSettings(map[string]any{"secret": hookSecret}))
	ctx := context.Background()
	cfg := tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
	first, err := tl.NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.NewTask(ctx, cfg); !errors.Is(err, tool.ErrTaskExists) {
		t.Errorf("NewTask over a stored task = %v, want ErrTaskExists", err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := tl.NewTask(ctx, cfg) // closed: its state is gone
	if err != nil {
		t.Fatalf("NewTask after Close: %v", err)
	}
	again.Close(ctx)
}

// TestResumeRetiresEventsItWillNotRun resumes a detached task whose capability no longer includes its
// subscription: the channel the earlier process registered is unsubscribed, nothing new is subscribed.
func TestResumeRetiresEventsItWillNotRun(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	srv.Handle("POST", "/watch/doc-1", tooltest.Response{Body: map[string]any{"resource_id": "res-1"}})
	srv.Handle("POST", "/stop", tooltest.Response{Status: 204})
	store, obs := tool.NewMemoryStore(), tooltest.NewObserver()
	load := func() *tool.Tool {
		return tooltest.Load(t, driveManifest(""), tool.WithStore(store), tool.WithObserver(obs),
			tool.WithSettings(map[string]any{"base_url": srv.URL}), tool.WithAuth(tokens{"google": "tok-g"}))
	}
	ctx := context.Background()
	cfg := tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"document_id": "doc-1"}}}
	first, err := load().NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs.Wait(t, "subscription.created", 1)
	if err := first.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.Capability.Include = []string{"noop"}
	second, err := load().RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	subs, unsubs := channels(srv)
	if len(subs) != 1 || !slices.Equal(unsubs, subs) {
		t.Errorf("subscribed %v, unsubscribed %v: the excluded event's channel must be removed at resume", subs, unsubs)
	}
}

// A task resumed after its event's timeout passed finds the event expired, also when it saw no activity after
// NewTask: the start is recorded.
func TestRestoredTaskCountsTheIdleTime(t *testing.T) {
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
