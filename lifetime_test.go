package tool_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/tooltest"
)

// A task made inside an HTTP handler, with the request's context, outlives the request: NewTask's ctx bounds
// NewTask only. The task and its stored state are there for the next request.
func TestTaskOutlivesTheRequestThatMadeIt(t *testing.T) {
	leakcheck.Check(t)
	st := tool.NewMemoryStore()
	tl := mustLoadSrc(t, calcManifest, tool.WithStore(st))
	tasks := make(chan *tool.Task, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute) // as timeout middleware does
		defer cancel()
		task, err := tl.NewTask(ctx, tool.TaskConfig{Context: calcContext, ID: "conversation-1",
			Capability: tool.Capability{Bindings: map[string]any{"owner": "octo"}}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		tasks <- task
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("handler answered %d", resp.StatusCode)
	}
	task := <-tasks
	srv.Close() // every request context has ended now

	res := mustInvoke(t, task, "add", map[string]any{"a": 1})
	if got := res.Text(); !strings.Contains(got, "11") {
		t.Errorf("Invoke after the request ended = %q, want 11", got)
	}
	keys, err := st.List(context.Background(), "tasks/tests/calc/conversation-1/")
	if err != nil || len(keys) == 0 {
		t.Errorf("stored state after the request ended: %v, %v; want it kept", keys, err)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if keys, _ := st.List(context.Background(), "tasks/tests/calc/conversation-1/"); len(keys) != 0 {
		t.Errorf("stored state after Close: %v, want none", keys)
	}
}

// TaskConfig.ExpiresAt ends the task by the Tool's clock, as Close does, and says so in a fact.
func TestTaskExpiresAt(t *testing.T) {
	leakcheck.Check(t)
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := tooltest.NewClock(start)
	obs := tooltest.NewObserver()
	st := tool.NewMemoryStore()
	tl := mustLoadSrc(t, calcManifest, tool.WithClock(clock), tool.WithObserver(obs), tool.WithStore(st))
	cfg := tool.TaskConfig{Context: calcContext, ID: "t1", ExpiresAt: start.Add(time.Hour),
		Capability: tool.Capability{Bindings: map[string]any{"owner": "octo"}}}
	task, err := tl.NewTask(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	mustInvoke(t, task, "add", map[string]any{"a": 1})
	clock.Advance(time.Minute)
	got := obs.Wait(t, facts.TaskExpired, 1)
	if got[0].TaskID != "t1" || got[0].Data["expires_at"] != "2026-11-26T13:00:00Z" {
		t.Errorf("task.expired fact = %+v", got[0])
	}
	obs.Wait(t, facts.TaskClosed, 1)
	if _, err := task.Invoke(context.Background(), "add", map[string]any{"a": 1}); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Invoke after the expiry = %v, want ErrClosed", err)
	}
	if keys, _ := st.List(context.Background(), "tasks/tests/calc/t1/"); len(keys) != 0 {
		t.Errorf("stored state after the expiry: %v, want none", keys)
	}
}

// The expiry is stored: a task restored with no ExpiresAt keeps it, and one restored after it is closed instead.
func TestTaskExpiryIsStored(t *testing.T) {
	leakcheck.Check(t)
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := tooltest.NewClock(start)
	st := tool.NewMemoryStore()
	obs := tooltest.NewObserver()
	tl := mustLoadSrc(t, calcManifest, tool.WithClock(clock), tool.WithStore(st), tool.WithObserver(obs))
	bindings := tool.Capability{Bindings: map[string]any{"owner": "octo"}}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Context: calcContext, ID: "t2", Capability: bindings,
		ExpiresAt: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Restored before the expiry, by a host that does not repeat it: the stored expiry holds.
	again, err := tl.RestoreTask(context.Background(), tool.TaskConfig{Context: calcContext, ID: "t2", Capability: bindings})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	obs.Wait(t, facts.TaskExpired, 1)
	obs.Wait(t, facts.TaskClosed, 1)
	if _, err := again.Invoke(context.Background(), "add", map[string]any{"a": 1}); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Invoke after the stored expiry = %v, want ErrClosed", err)
	}

	// Detached before its expiry and restored after it: RestoreTask closes it and says so.
	late, err := tl.NewTask(context.Background(), tool.TaskConfig{Context: calcContext, ID: "t3", Capability: bindings,
		ExpiresAt: clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := late.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := tl.RestoreTask(context.Background(), tool.TaskConfig{Context: calcContext, ID: "t3", Capability: bindings}); !errors.Is(err, tool.ErrTaskExpired) {
		t.Fatalf("RestoreTask after the expiry = %v, want ErrTaskExpired", err)
	}
	if keys, _ := st.List(context.Background(), "tasks/tests/calc/t3/"); len(keys) != 0 {
		t.Errorf("stored state of the task restored after its expiry: %v, want none", keys)
	}

	// A host may move the expiry when it restores the task.
	moved, err := tl.NewTask(context.Background(), tool.TaskConfig{Context: calcContext, ID: "t4", Capability: bindings,
		ExpiresAt: clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	_ = moved.Detach(context.Background())
	moved, err = tl.RestoreTask(context.Background(), tool.TaskConfig{Context: calcContext, ID: "t4", Capability: bindings,
		ExpiresAt: clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	mustInvoke(t, moved, "add", map[string]any{"a": 1})
	_ = moved.Close(context.Background())
}

// An expiry that has already passed is a configuration mistake NewTask names.
func TestNewTaskRefusesAPastExpiry(t *testing.T) {
	tl := mustLoadSrc(t, calcManifest)
	_, err := tl.NewTask(context.Background(), tool.TaskConfig{Context: calcContext, ExpiresAt: time.Now().Add(-time.Second),
		Capability: tool.Capability{Bindings: map[string]any{"owner": "octo"}}})
	var ve *tool.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Path != "expires_at" {
		t.Fatalf("NewTask with a past ExpiresAt = %v, want one problem at expires_at", err)
	}
}

// A task ID that cannot name one task's Store keys (a '/' would let task "a" list the keys of task "a/b", and
// Router.Task never find it) is refused by NewTask and RestoreTask at the path id; an ID of any other printable
// characters works.
func TestNewTaskRefusesAnUnusableID(t *testing.T) {
	tl := mustLoadSrc(t, calcManifest, tool.WithStore(tool.NewMemoryStore()))
	cfg := tool.TaskConfig{Context: calcContext, Capability: tool.Capability{Bindings: map[string]any{"owner": "octo"}}}
	for _, id := range []string{"a/b", "tab\there", "\xff", strings.Repeat("x", 257)} {
		cfg.ID = id
		for name, start := range map[string]func(context.Context, tool.TaskConfig) (*tool.Task, error){
			"NewTask": tl.NewTask, "RestoreTask": tl.RestoreTask} {
			_, err := start(context.Background(), cfg)
			var ve *tool.ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Path != "id" {
				t.Errorf("%s with ID %q = %v, want one problem at id", name, id, err)
			}
		}
	}
	cfg.ID = "ticket #42 · naïve: ok"
	task, err := tl.NewTask(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewTask with a printable ID: %v", err)
	}
	_ = task.Close(context.Background())
}
