package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// countingSink counts accepted activations and refuses while refuse is set.
type countingSink struct {
	accepted atomic.Int64
	refuse   atomic.Bool
}

func (s *countingSink) Accept(context.Context, tool.Activation) error {
	if s.refuse.Load() {
		return errors.New("sink is full")
	}
	s.accepted.Add(1)
	return nil
}

func pushFor(repo string) string {
	return fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"full_name":%q}}`, repo)
}

func TestRouterFansOutToMatchingTasksOnly(t *testing.T) {
	t.Parallel()
	tl := repoTool(t)
	r := tool.NewRouter()
	sinks := map[string]*countingSink{}
	ids := map[string]string{}
	for i := range 5 {
		repo := fmt.Sprintf("o/r%d", i)
		sinks[repo] = &countingSink{}
		task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": repo}}, Sink: sinks[repo]})
		ids[repo] = task.ID()
		if err := r.Add(task); err != nil {
			t.Fatal(err)
		}
	}
	deliveries, err := r.Dispatch(context.Background(), "tests", "repo-events", signed(hookSecret, "", pushFor("o/r2")))
	if err != nil {
		t.Fatal(err)
	}
	if len(deliveries) != 1 || deliveries[0].TaskID != ids["o/r2"] {
		t.Fatalf("deliveries = %+v, want exactly task of o/r2 visited", deliveries)
	}
	wantOutcome(t, deliveries[0], "pushed:activated", "labeled:empty_allow_list")
	for repo, s := range sinks {
		if want := map[bool]int64{true: 1}[repo == "o/r2"]; s.accepted.Load() != want {
			t.Errorf("sink of %s accepted %d, want %d", repo, s.accepted.Load(), want)
		}
	}
	// A payload for no task's repository visits none.
	if deliveries, _ := r.Dispatch(context.Background(), "tests", "repo-events", signed(hookSecret, "", pushFor("o/zz"))); len(deliveries) != 0 {
		t.Errorf("deliveries for an unknown repository = %+v, want none", deliveries)
	}
}

// Values a call adds to the allow list reach the index before the backend runs.
func TestRouterIndexFollowsAllowListGrowth(t *testing.T) {
	t.Parallel()
	tl := issueTracker(t)
	r := tool.NewRouter()
	sink := &countingSink{}
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: sink})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	dispatch := func(login string) []*tool.Delivery {
		t.Helper()
		d, err := r.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, "", assigned(4242, login)))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := dispatch("alice"); len(d) != 0 {
		t.Fatalf("before any call: deliveries = %+v, want the task ruled out by the empty assignee entry", d)
	}
	mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice"})
	if d := dispatch("alice"); len(d) != 1 || len(d[0].Activations) != 1 {
		t.Fatalf("after create_issue(alice): deliveries = %+v, want one activation", d)
	}
	if d := dispatch("bob"); len(d) != 0 {
		t.Fatalf("bob: deliveries = %+v, want none", d)
	}
	if sink.accepted.Load() != 1 {
		t.Errorf("sink accepted %d, want 1", sink.accepted.Load())
	}
}

func TestRouterHTTP(t *testing.T) {
	t.Parallel()
	tl := repoTool(t, tool.WithLimits(tool.Limits{InboundBytes: 1024}))
	r := tool.NewRouter(tool.WithPrefix("/hooks/"))
	mux := http.NewServeMux()
	r.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	sink := &countingSink{}
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	post := func(path string, in *tool.Inbound) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(in.Body))
		for k, v := range in.Headers {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const path = "/hooks/tests/repo-events"

	sink.refuse.Store(true)
	if code, _ := post(path, signed(hookSecret, "d-1", pushFor("o/r"))); code != http.StatusServiceUnavailable {
		t.Errorf("refusing sink: status %d, want 503", code)
	}
	sink.refuse.Store(false)
	code, body := post(path, signed(hookSecret, "d-1", pushFor("o/r")))
	var answer struct{ Activations int }
	_ = json.Unmarshal([]byte(body), &answer)
	if code != http.StatusAccepted || answer.Activations != 1 {
		t.Errorf("retry: %d %s, want 202 with 1 activation", code, body)
	}
	if code, body := post(path, signed(hookSecret, "d-1", pushFor("o/r"))); code != http.StatusAccepted || !strings.Contains(body, `"activations":0`) {
		t.Errorf("replay: %d %s, want 202 with no activation", code, body)
	}
	if code, _ := post(path, signed("wrong", "", pushFor("o/r"))); code != http.StatusUnauthorized {
		t.Errorf("bad signature: status %d, want 401", code)
	}
	big := signed(hookSecret, "", `{"pad":"`+strings.Repeat("x", 2000)+`"}`)
	if code, _ := post(path, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized: status %d, want 413", code)
	}
	if code, _ := post("/hooks/tests/nope", signed(hookSecret, "", pushFor("o/r"))); code != http.StatusNotFound {
		t.Errorf("unknown tool: status %d, want 404", code)
	}
	if code, _ := post("/hooks/tests", signed(hookSecret, "", pushFor("o/r"))); code != http.StatusNotFound {
		t.Errorf("short path: status %d, want 404", code)
	}
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Errorf("GET: status %d Allow %q, want 405 POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if got := sink.accepted.Load(); got != 1 {
		t.Errorf("sink accepted %d activations, want 1", got)
	}
}

func TestRouterTaskMembership(t *testing.T) {
	t.Parallel()
	tl := repoTool(t)
	r := tool.NewRouter()
	bind := tool.Capability{Bindings: map[string]any{"repo": "o/r"}}
	a := newTask(t, tl, tool.TaskConfig{ID: "same", Capability: bind})
	b := newTask(t, repoTool(t), tool.TaskConfig{ID: "same", Capability: bind}) // its own Store
	if err := r.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(a); err != nil {
		t.Errorf("adding the same task again: %v", err)
	}
	if err := r.Add(b); err == nil {
		t.Error("a second task with the same ID was added")
	}
	visited := func() int {
		d, err := r.Dispatch(context.Background(), "tests", "repo-events", signed(hookSecret, "", pushFor("o/r")))
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	if n := visited(); n != 1 {
		t.Fatalf("visited %d tasks, want 1", n)
	}
	r.Remove("same")
	if n := visited(); n != 0 {
		t.Errorf("after Remove: visited %d tasks, want 0", n)
	}
	// A closing task leaves the router by itself.
	if err := r.Add(b); err != nil {
		t.Fatal(err)
	}
	_ = b.Close(context.Background())
	if n := visited(); n != 0 {
		t.Errorf("after Close: visited %d tasks, want 0", n)
	}
	if err := r.Add(b); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Add(closed) = %v, want ErrClosed", err)
	}
}

// Concurrent calls, deliveries and closes keep the index consistent (run with -race).
func TestRouterConcurrent(t *testing.T) {
	t.Parallel()
	tl := issueTracker(t)
	r := tool.NewRouter()
	var wg sync.WaitGroup
	for i := range 4 {
		task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
		if err := r.Add(task); err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 5 {
				mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": fmt.Sprintf("u%d-%d", i, j)})
			}
		}()
		go func() {
			defer wg.Done()
			for j := range 5 {
				if _, err := r.Dispatch(context.Background(), "engineering", "issue-tracker",
					signed(hookSecret, "", assigned(4242, fmt.Sprintf("u%d-%d", i, j)))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for i := range 4 {
		d, err := r.Dispatch(context.Background(), "engineering", "issue-tracker", signed(hookSecret, "", assigned(4242, fmt.Sprintf("u%d-4", i))))
		if err != nil || len(d) != 1 || len(d[0].Activations) != 1 {
			t.Errorf("u%d-4: %+v, %v; want one activation", i, d, err)
		}
	}
}

// A root prefix works, and a missing secret setting answers 500 rather than dropping payloads with 202.
func TestRouterRootPrefixAndMissingSecret(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, repoEvents("")) // no settings: the secret renders empty
	r := tool.NewRouter(tool.WithPrefix("/"))
	mux := http.NewServeMux()
	r.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(srv.URL+"/tests/repo-events", "application/json", strings.NewReader(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, want 500 for a misconfigured secret", resp.StatusCode)
	}
}
