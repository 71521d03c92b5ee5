package tool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// Regression: a call waiting on another call's in-flight Initialize inherits that call's context error and reports it
// as unrecoverable, although its own context is fine.
func TestRegressionInitWaiterGetsForeignCtxErrAsUnrecoverable(t *testing.T) {
	p := &probe{initDelay: 200 * time.Millisecond}
	task := newTask(t, loadProbe(t, p), tool.TaskConfig{})
	actx, acancel := context.WithCancel(context.Background())
	aDone := make(chan error, 1)
	go func() { _, err := task.Invoke(actx, "read", nil); aDone <- err }()
	time.Sleep(30 * time.Millisecond) // A is in Initialize
	bDone := make(chan error, 1)
	go func() { _, err := task.Invoke(context.Background(), "read", nil); bDone <- err }()
	time.Sleep(30 * time.Millisecond) // B waits on A's Initialize
	acancel()
	if err := <-aDone; !errors.Is(err, context.Canceled) {
		t.Errorf("A: %v, want context.Canceled", err)
	}
	if err := <-bDone; err != nil {
		t.Errorf("B (own ctx never cancelled): err = %v; unrecoverable=%v", err, errors.Is(err, tool.ErrUnrecoverable))
	}
}

// slowInit is a backend whose Initialize finishes its work regardless of ctx (a handshake in a blocking call).
type slowInit struct {
	probe
	delay time.Duration
}

func (s *slowInit) Initialize(ctx context.Context, in *runtime.Init) (runtime.Instance, error) {
	s.inits.Add(1)
	time.Sleep(s.delay)
	return &s.probe, nil
}

// Regression: Close whose ctx ends while an Initialize is in flight never tears the instance down.
func TestRegressionCloseDuringInitializeLeaksInstance(t *testing.T) {
	s := &slowInit{delay: 300 * time.Millisecond}
	reg := runtime.Default().Clone()
	if err := reg.Register(s); err != nil {
		t.Fatal(err)
	}
	tl := mustLoadSrc(t, probeManifest, tool.WithRuntimes(reg))
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	go task.Invoke(context.Background(), "read", nil)
	time.Sleep(30 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t.Logf("Close: %v", task.Close(ctx))
	time.Sleep(600 * time.Millisecond) // Initialize succeeded meanwhile
	if s.inits.Load() != 1 || s.teardowns.Load() != 1 {
		t.Errorf("inits %d, teardowns %d: a successful Initialize was never torn down", s.inits.Load(), s.teardowns.Load())
	}
}

// cancellingStore cancels the NewTask context while NewTask writes the allow list.
type cancellingStore struct {
	tool.Store
	cancel context.CancelFunc
}

func (s *cancellingStore) Put(ctx context.Context, k string, v []byte) error {
	s.cancel()
	time.Sleep(5 * time.Millisecond) // let the AfterFunc goroutine be scheduled
	return s.Store.Put(ctx, k, v)
}

// Regression: the NewTask context ending during NewTask races the write of task.stop (run with -race).
func TestRegressionNewTaskStopRace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := &cancellingStore{Store: tool.NewMemoryStore(), cancel: cancel}
	tl := loadProbe(t, &probe{}, tool.WithStore(st))
	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	_ = task.Close(context.Background())
}

// Regression: a failed session destroy leaves the session "recorded in the state" per the backend's contract, but
// Close then deletes all task state, so a resumed task can never destroy it.
func TestRegressionCloseDeletesStateOfUndestroyedSession(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/sessions":
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"session": {"id": "s-1", "connect_token": "ct"}}`)
		case r.Method == "GET":
			io.WriteString(w, `{"text": "x"}`)
		case r.Method == "DELETE":
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	store := tool.NewMemoryStore()
	task, err := browserTool(t, srv, tool.WithStore(store)).NewTask(context.Background(), tool.TaskConfig{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	mustInvoke(t, task, "read_text", nil)
	keys, _ := store.List(context.Background(), "tasks/")
	t.Logf("state before close: %v", keys)
	err = task.Close(context.Background())
	t.Logf("Close: %v", err)
	keys, _ = store.List(context.Background(), "tasks/")
	if err != nil && len(keys) == 0 {
		t.Errorf("destroy failed (%v) but the session record was deleted from the Store", err)
	}
}

// Regression: a format: password parameter value sent by the LLM reaches the Result's error and the tool.failed fact.
func TestRegressionSecretParameterLeaks(t *testing.T) {
	rec := &factRecorder{}
	tl := mustLoadSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: pin
description: x
actions:
  - name: check
    description: x
    parameters:
      properties:
        pin: {type: string, format: password}
    execute:
      cel:
        expression: "int(input.pin) > 0"
`, tool.WithObserver(rec))
	task := newTask(t, tl, tool.TaskConfig{})
	res := mustInvoke(t, task, "check", map[string]any{"pin": "hunter2-SECRET"})
	if strings.Contains(string(res.OutputJSON), "hunter2-SECRET") {
		t.Errorf("result leaks the secret parameter: %s", res.OutputJSON)
	}
	for _, f := range rec.all() {
		if s := fmtAny(f.Data); strings.Contains(s, "hunter2-SECRET") {
			t.Errorf("fact %s leaks the secret parameter: %s", f.Name, s)
		}
	}
}

// Regression: a format: password property nested in a settings object is not a secret.
func TestRegressionNestedSecretSettingLeaks(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "bad key "+r.URL.Query().Get("key"))
	})
	tl := mustLoadSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: nested
description: x
settings:
  properties:
    base: {type: string}
    github:
      type: object
      properties:
        token: {type: string, format: password}
actions:
  - name: get
    description: x
    execute:
      stateless_http:
        method: GET
        url: "{settings.base}/x?key={settings.github.token}"
`, tool.WithSettings(map[string]any{"base": srv.URL, "github": map[string]any{"token": "ghp-NESTED-SECRET"}}))
	task := newTask(t, tl, tool.TaskConfig{})
	res := mustInvoke(t, task, "get", nil)
	if strings.Contains(string(res.OutputJSON), "ghp-NESTED-SECRET") || strings.Contains(fmtAny(res.ServerData), "ghp-NESTED-SECRET") {
		t.Errorf("nested password setting leaks: %s / %v", res.OutputJSON, res.ServerData)
	}
}

// Regression: a call racing Close can be reported as unrecoverable (ErrClosed wrapped in ErrUnrecoverable).
func TestRegressionCloseRaceUnrecoverable(t *testing.T) {
	tl := loadProbe(t, &probe{})
	var bad atomic.Int32
	for i := 0; i < 3000 && bad.Load() == 0; i++ {
		task, _ := tl.NewTask(context.Background(), tool.TaskConfig{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := task.Invoke(context.Background(), "write", nil)
			if errors.Is(err, tool.ErrUnrecoverable) {
				bad.Add(1)
				t.Logf("iteration %d: %v (ErrClosed too: %v)", i, err, errors.Is(err, tool.ErrClosed))
			}
		}()
		_ = task.Close(context.Background())
		wg.Wait()
	}
	if bad.Load() > 0 {
		t.Errorf("a call racing Close was reported unrecoverable")
	}
}

func fmtAny(v any) string { return strings.TrimSpace(fmtSprint(v)) }

func fmtSprint(v any) string { return fmt.Sprintf("%+v", v) }
