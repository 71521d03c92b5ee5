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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
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
	r := tool.NewRouter(tool.RouterOptions{})
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
	r := tool.NewRouter(tool.RouterOptions{})
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

// postInbound POSTs in to url and returns the status and body of the answer.
func postInbound(t *testing.T, url string, in *tool.Inbound) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(in.Body))
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

func TestRouterHTTP(t *testing.T) {
	t.Parallel()
	tl := repoTool(t, tool.WithLimits(tool.Limits{InboundBytes: 1024}))
	r := tool.NewRouter(tool.RouterOptions{Prefix: "/hooks/"})
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
		return postInbound(t, srv.URL+path, in)
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
	r := tool.NewRouter(tool.RouterOptions{})
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
	r.Remove("tests", "repo-events", "same")
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

// A Router keys its tasks as the Store does, by namespace, tool and ID: two tools whose tasks share an ID both
// route, both are lent by Router.Task (eager mode lends a task given to Add), and Remove names the one it removes.
func TestRouterKeysTasksByToolAndID(t *testing.T) {
	t.Parallel()
	const id = "conv-7f3a"
	r := tool.NewRouter(tool.RouterOptions{})
	bind := tool.Capability{Bindings: map[string]any{"repo": "o/r"}}
	names := []string{"repo-events", "repo-events-2"}
	tasks := map[string]*tool.Task{}
	sinks := map[string]*countingSink{}
	for _, name := range names {
		tl := mustLoadSrc(t, strings.Replace(repoEvents(""), "name: repo-events\n", "name: "+name+"\n", 1),
			tool.WithSettings(map[string]any{"secret": hookSecret}))
		sinks[name] = &countingSink{}
		tasks[name] = newTask(t, tl, tool.TaskConfig{ID: id, Capability: bind, Sink: sinks[name]})
		if err := r.Add(tasks[name]); err != nil {
			t.Fatalf("Add the task %s of %s: %v", id, name, err)
		}
	}
	for _, name := range names {
		ds, err := r.Dispatch(context.Background(), "tests", name, signed(hookSecret, "", pushFor("o/r")))
		if err != nil || len(ds) != 1 || len(ds[0].Activations) != 1 {
			t.Errorf("webhook for %s: %+v, %v; want its task activated", name, ds, err)
		}
		lent, release, err := r.Task(context.Background(), "tests", name, id)
		if err != nil || lent != tasks[name] {
			t.Errorf("Router.Task(%s, %s) = %p, %v; want the task given to Add (%p)", name, id, lent, err, tasks[name])
		} else {
			release()
			release() // later calls do nothing
		}
	}
	for _, name := range names {
		if got := sinks[name].accepted.Load(); got != 1 {
			t.Errorf("the sink of %s accepted %d, want 1", name, got)
		}
	}
	if _, _, err := r.Task(context.Background(), "tests", "repo-events-3", id); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Router.Task of a tool it does not hold = %v, want ErrNotFound", err)
	}
	r.Remove("tests", "repo-events", id)
	if _, _, err := r.Task(context.Background(), "tests", "repo-events", id); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Router.Task after Remove = %v, want ErrNotFound", err)
	}
	if lent, release, err := r.Task(context.Background(), "tests", "repo-events-2", id); err != nil || lent != tasks["repo-events-2"] {
		t.Errorf("the other tool's task after Remove: %p, %v; want it still held", lent, err)
	} else {
		release()
	}
}

// Concurrent calls, deliveries and closes keep the index consistent (run with -race).
func TestRouterConcurrent(t *testing.T) {
	t.Parallel()
	tl := issueTracker(t)
	r := tool.NewRouter(tool.RouterOptions{})
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
	r := tool.NewRouter(tool.RouterOptions{Prefix: "/"})
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

// routedEvents is a tool whose filters are `&&` terms with equality conjuncts: `both` needs repo and kind,
// `mixed` puts a term that can fail for real (int of a string) before the repo conjunct. watch grows kind.
func routedEvents(t *testing.T) *tool.Tool {
	t.Helper()
	return mustLoadSrc(t, manifestHeader("routed")+`settings:
  properties:
    secret: {type: string, format: password}
parameters:
  properties:
    repo: {type: string, require_binding: true}
actions:
  - name: watch
    description: Watches a kind.
    parameters:
      properties:
        kind: {type: string}
    execute:
      cel:
        expression: "'watching ' + input.kind"
events:
  - name: both
    description: Needs the repository and the kind.
    message: "both"
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: "event.payload.repo == parameters.repo && event.payload.kind == parameters.kind"
  - name: mixed
    description: A real error can come before the conjunct.
    message: "mixed"
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: "int(event.payload.n) > 0 && event.payload.repo == parameters.repo"
`, tool.WithSettings(map[string]any{"secret": hookSecret}))
}

// A key whose evaluation fails on a missing field rules every task out: the conjunct is an `&&` term, so no
// assignment can make the filter true. The index must agree with delivering to every task: for every payload,
// the same activations per task, and each visited task's Delivery the same as Deliver's. Tasks the index rules
// out may differ only in the reason of their discards (mixed: a filter_error of `int("x")` is never seen).
func TestRouterIndexAgreesWithVisitingEveryTask(t *testing.T) {
	t.Parallel()
	tl := routedEvents(t)
	r := tool.NewRouter(tool.RouterOptions{})
	var tasks []*tool.Task
	for i := range 24 {
		task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": fmt.Sprintf("r%d", i%4)}}})
		for k := range i % 3 { // no kind, k0, or k0 and k1
			mustInvoke(t, task, "watch", map[string]any{"kind": fmt.Sprintf("k%d", k)})
		}
		if err := r.Add(task); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	repos := []string{"", `"r0"`, `"r3"`, `"r9"`, "null", "5"}
	kinds := []string{"", `"k0"`, `"k1"`, `"k9"`}
	ns := []string{"", "1", "-1", `"x"`}
	ctx := context.Background()
	payloads, unkeyed, hidden := 0, 0, 0
	for _, repo := range repos {
		for _, kind := range kinds {
			for _, n := range ns {
				var fields []string
				for name, v := range map[string]string{"repo": repo, "kind": kind, "n": n} {
					if v != "" {
						fields = append(fields, fmt.Sprintf("%q:%s", name, v))
					}
				}
				body := "{" + strings.Join(fields, ",") + "}"
				payloads++
				all := map[string][]string{} // task → outcome, delivering to every task
				for _, task := range tasks {
					d, err := task.Deliver(ctx, signed(hookSecret, "", body))
					if err != nil {
						t.Fatalf("%s: Deliver: %v", body, err)
					}
					all[task.ID()] = outcome(d)
				}
				deliveries, err := r.Dispatch(ctx, "tests", "routed", signed(hookSecret, "", body))
				if err != nil {
					t.Fatalf("%s: Dispatch: %v", body, err)
				}
				visited := map[string][]string{}
				for _, d := range deliveries {
					if d.TaskID == "" {
						t.Fatalf("%s: a tool-wide delivery %+v", body, d)
					}
					visited[d.TaskID] = outcome(d)
				}
				if repo == "" && len(deliveries) != 0 {
					t.Errorf("%s: a payload without the repo field visited %d tasks, want 0", body, len(deliveries))
					unkeyed++
				}
				for id, want := range all {
					got, ok := visited[id]
					switch {
					case ok && !slices.Equal(got, want):
						t.Errorf("%s: task %s: routed %v, delivered %v", body, id, got, want)
					case !ok && slices.ContainsFunc(want, func(s string) bool { return strings.HasSuffix(s, ":activated") }):
						t.Errorf("%s: task %s was ruled out, but delivering activates it: %v", body, id, want)
					case !ok && slices.Contains(want, "mixed:filter_error"):
						hidden++
					}
				}
			}
		}
	}
	if hidden == 0 {
		t.Error("no payload ruled out a task whose delivery says filter_error: the mixed case was not exercised")
	}
	t.Logf("%d payloads; %d ruled-out task deliveries would have said mixed:filter_error", payloads, hidden)
}

// A Router told about a Tool before it holds any of its tasks serves its webhooks: 202, nothing activated, and
// not 404, which a sender such as GitHub does not retry. The tool stays served once its last task leaves.
func TestRouterServesToolWithoutTasks(t *testing.T) {
	t.Parallel()
	tl := repoTool(t)
	r := tool.NewRouter(tool.RouterOptions{})
	if err := r.Serve(context.Background(), nil, nil); err == nil {
		t.Error("Serve(nil) did not fail")
	}
	if err := r.Serve(context.Background(), tl, nil); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	r.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	post := func(path string) (int, string) {
		t.Helper()
		return postInbound(t, srv.URL+path, signed(hookSecret, "", pushFor("o/r")))
	}
	const path = "/v1/webhooks/events" + "/tests/repo-events"
	if code, body := post(path); code != http.StatusAccepted || !strings.Contains(body, `"activations":0`) {
		t.Errorf("served, no task: %d %s, want 202 with no activation", code, body)
	}
	if code, _ := post("/v1/webhooks/events" + "/tests/other"); code != http.StatusNotFound {
		t.Errorf("a tool never served: status %d, want 404", code)
	}
	sink := &countingSink{}
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	if code, body := post(path); code != http.StatusAccepted || !strings.Contains(body, `"activations":1`) {
		t.Errorf("with a task: %d %s, want 202 with one activation", code, body)
	}
	r.Remove("tests", "repo-events", task.ID())
	if code, body := post(path); code != http.StatusAccepted || !strings.Contains(body, `"activations":0`) {
		t.Errorf("after the last task left: %d %s, want 202 with no activation", code, body)
	}
}

// A tool whose last task left stays known (it was held once): its webhooks are answered 202, not refused as
// too large for a limit that no Tool value gives any more.
func TestRouterToolStaysKnownAfterItsLastTask(t *testing.T) {
	t.Parallel()
	r := tool.NewRouter(tool.RouterOptions{})
	task := newTask(t, repoTool(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	r.Remove("tests", "repo-events", task.ID())
	in := signed(hookSecret, "", pushFor("o/r"))
	req := httptest.NewRequest(http.MethodPost, "/v1/webhooks/events"+"/tests/repo-events", bytes.NewReader(in.Body))
	req.Header = in.Headers
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Errorf("status %d %s, want 202", rec.Code, rec.Body)
	}
}

// wantOncePerTask fails unless each of n tasks accepted exactly one activation.
func wantOncePerTask(t *testing.T, accepted map[string]int, n int) {
	t.Helper()
	if len(accepted) != n {
		t.Errorf("accepted per task = %v, want %d tasks once each", accepted, n)
	}
	for id, got := range accepted {
		if got != 1 {
			t.Errorf("task %s accepted %d activations, want 1", id, got)
		}
	}
}

// serveInbound serves in to r at path under the default prefix, with ctx as the request's context.
func serveInbound(ctx context.Context, r *tool.Router, path string, in *tool.Inbound) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/webhooks/events"+path, bytes.NewReader(in.Body))
	req.Header = in.Headers
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec
}

// A context that ends mid-dispatch is never a handled outcome: the first task's Sink accepts after the request's
// context ended, and the second task, whose filter can no longer run, makes the answer 503 (not a 202 with a
// filter_error), so the sender retries. The retry activates the second task; the first sees a duplicate.
func TestRouterContextEndingMidDispatchAnswers503(t *testing.T) {
	t.Parallel()
	tl := repoTool(t)
	r := tool.NewRouter(tool.RouterOptions{})
	var mu sync.Mutex
	var cancel context.CancelFunc
	accepted := map[string]int{}
	sink := tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		mu.Lock()
		defer mu.Unlock()
		if cancel != nil { // the request's deadline passes while the first Sink works
			cancel()
			cancel = nil
		}
		accepted[a.TaskID]++
		return nil
	})
	for range 2 {
		task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})
		if err := r.Add(task); err != nil {
			t.Fatal(err)
		}
	}
	serve := func(ctx context.Context) *httptest.ResponseRecorder {
		return serveInbound(ctx, r, "/tests/repo-events", signed(hookSecret, "d-1", pushFor("o/r")))
	}
	ctx, c := context.WithCancel(context.Background())
	mu.Lock()
	cancel = c
	mu.Unlock()
	if rec := serve(ctx); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("context ended mid-dispatch: %d %s, want 503 with Retry-After", rec.Code, rec.Body)
	}
	if rec := serve(context.Background()); rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"activations":1`) {
		t.Fatalf("retry: %d %s, want 202 with the second task's activation", rec.Code, rec.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	wantOncePerTask(t, accepted, 2)
}

// Deliver with a context that ended before the filter ran reports no outcome for the event: an error the
// sender is to retry on (ErrNotAccepted, and the context's error), not a filter_error.
func TestDeliverEndedContextIsNotAnOutcome(t *testing.T) {
	t.Parallel()
	task := newTask(t, repoTool(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := task.Deliver(ctx, signed(hookSecret, "", pushBody))
	if !errors.Is(err, tool.ErrNotAccepted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver = %+v, %v; want an error wrapping ErrNotAccepted and context.Canceled", d, err)
	}
	for _, x := range d.Discarded {
		if x.Event == "pushed" {
			t.Errorf("pushed was discarded (%s) though its filter never ran", x.Reason)
		}
	}
	// The deterministic verdicts stay: labeled has no label allow-listed.
	if !slices.ContainsFunc(d.Discarded, func(x tool.Discard) bool { return x.Event == "labeled" && x.Reason == tool.ReasonEmptyAllowList }) {
		t.Errorf("discards = %+v, want labeled:empty_allow_list", d.Discarded)
	}
	// Dispatch with an ended context answers no task as handled.
	r := tool.NewRouter(tool.RouterOptions{})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Dispatch(ctx, "tests", "repo-events", signed(hookSecret, "", pushBody)); !errors.Is(err, tool.ErrNotAccepted) {
		t.Errorf("Dispatch with an ended context: %v, want ErrNotAccepted", err)
	}
}

// Replicas that share a Store while their Routers hold the tasks in memory are warned: each records its
// presence on a webhook, and the one that finds another's record reports router.eager_replicas. One replica alone
// is not warned, and a record older than the presence window (a replica gone) no longer counts.
func TestRouterWarnsEagerReplicasSharingAStore(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: tool.NewMemoryStore()} // without PutTTL: records age out by their time
	clock := newManualClock()
	replica := func(id string) (*tool.Router, *factRecorder) {
		obs := &factRecorder{}
		tl := repoTool(t, tool.WithStore(store), tool.WithClock(clock), tool.WithReplicaID(id), tool.WithObserver(obs))
		r := tool.NewRouter(tool.RouterOptions{})
		if err := r.Serve(context.Background(), tl, nil); err != nil {
			t.Fatal(err)
		}
		return r, obs
	}
	warnings := func(obs *factRecorder) []tool.Fact {
		var out []tool.Fact
		for _, f := range obs.all() {
			if f.Name == facts.RouterEagerReplicas {
				out = append(out, f)
			}
		}
		return out
	}
	dispatch := func(r *tool.Router) {
		t.Helper()
		if _, err := r.Dispatch(context.Background(), "tests", "repo-events", signed(hookSecret, "", pushFor("o/r"))); err != nil {
			t.Fatal(err)
		}
	}
	a, obsA := replica("a")
	dispatch(a)
	if w := warnings(obsA); len(w) != 0 {
		t.Fatalf("one replica alone: %+v, want no warning", w)
	}
	b, obsB := replica("b")
	dispatch(b)
	w := warnings(obsB)
	if len(w) != 1 || !slices.Equal(w[0].Data["replicas"].([]string), []string{"a"}) || w[0].Data["replica"] != "b" {
		t.Fatalf("second replica: warnings %+v, want one naming replica a", w)
	}
	lists := store.lists.Load()
	dispatch(b) // within the refresh interval: no new round trip, no new fact
	if w := warnings(obsB); len(w) != 1 {
		t.Errorf("a second webhook within the interval: %d warnings, want 1", len(w))
	}
	if n := store.lists.Load() - lists; n != 0 {
		t.Errorf("a second webhook within the interval listed the Store %d times, want 0", n)
	}
	clock.Advance(6 * time.Minute) // a's refresh is due: it sees b
	dispatch(a)
	if w := warnings(obsA); len(w) != 1 || !slices.Equal(w[0].Data["replicas"].([]string), []string{"b"}) {
		t.Fatalf("first replica after its refresh: warnings %+v, want one naming replica b", w)
	}
	clock.Advance(time.Hour) // b stopped; its record is too old to count
	dispatch(a)
	if w := warnings(obsA); len(w) != 1 {
		t.Errorf("after b's record aged out: %d warnings, want still 1", len(w))
	}
}

// deadlineStore is a shared Store that honours its context as a database does. When block holds a request's
// context, the next claim of a delivery id lands only once that context's deadline has passed: the filter then
// cannot run.
type deadlineStore struct {
	store.SwapStore
	block atomic.Pointer[context.Context]
}

func (s *deadlineStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.SwapStore.Get(ctx, key)
}

func (s *deadlineStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.SwapStore.Delete(ctx, key)
}

func (s *deadlineStore) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	if !strings.Contains(key, "/deliveries/") {
		return s.SwapStore.CompareAndSwap(ctx, key, old, next)
	}
	if req := s.block.Swap(nil); req != nil {
		<-(*req).Done()
		<-ctx.Done() // the Store's context has the request's deadline
		return s.SwapStore.CompareAndSwap(context.WithoutCancel(ctx), key, old, next)
	}
	return s.SwapStore.CompareAndSwap(ctx, key, old, next)
}

// A request whose deadline passes while its delivery id is being claimed still activates: the filter ran before
// the claim (a task claims only what it activates), the claim counts as taken, and the Sink accepts. The webhook
// is answered 202, not 503, and the sender's retry activates nothing more.
func TestRouterDeadlineDuringTheClaimStillActivates(t *testing.T) {
	t.Parallel()
	store := &deadlineStore{SwapStore: tool.NewMemoryStore().(store.SwapStore)}
	tl := repoTool(t, tool.WithStore(store))
	sink := &countingSink{}
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})
	r := tool.NewRouter(tool.RouterOptions{})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	serve := func(ctx context.Context) *httptest.ResponseRecorder {
		return serveInbound(ctx, r, "/tests/repo-events", signed(hookSecret, "d-7", pushFor("o/r")))
	}
	// A deadline the request reaches its claim well within, on a busy machine too: the claim then waits it out.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	store.block.Store(&ctx)
	if rec := serve(ctx); rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"activations":1`) {
		t.Fatalf("deadline during the claim: %d %s, want 202 with one activation", rec.Code, rec.Body)
	}
	if store.block.Load() != nil {
		t.Fatal("the delivery made no claim: the test did not exercise the deadline")
	}
	if rec := serve(context.Background()); rec.Code == http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), `"activations":1`) {
		t.Fatalf("retry: %d %s, want it answered without a second activation", rec.Code, rec.Body)
	}
	if n := sink.accepted.Load(); n != 1 {
		t.Errorf("sink accepted %d, want 1", n)
	}
}

func (s *deadlineStore) Put(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.SwapStore.Put(ctx, key, value)
}

// A Sink that accepts after the request's deadline passed has the delivery id recorded all the same, so the
// sender's retry (the request is answered 503: the other task was not handled) does not activate it again.
func TestRouterSinkAcceptingAfterTheDeadlineIsRemembered(t *testing.T) {
	t.Parallel()
	store := &deadlineStore{SwapStore: tool.NewMemoryStore().(store.SwapStore)}
	tl := repoTool(t, tool.WithStore(store))
	var mu sync.Mutex
	accepted := map[string]int{}
	sink := tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
		mu.Lock()
		defer mu.Unlock()
		if len(accepted) == 0 {
			<-ctx.Done() // the first Sink works past the request's deadline, then accepts
		}
		accepted[a.TaskID]++
		return nil
	})
	r := tool.NewRouter(tool.RouterOptions{})
	for range 2 {
		if err := r.Add(newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})); err != nil {
			t.Fatal(err)
		}
	}
	in := func() *tool.Inbound { return signed(hookSecret, "d-9", pushFor("o/r")) }
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if rec := serveInbound(ctx, r, "/tests/repo-events", in()); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("deadline inside the first Sink: %d %s, want 503", rec.Code, rec.Body)
	}
	if rec := serveInbound(context.Background(), r, "/tests/repo-events", in()); rec.Code != http.StatusAccepted {
		t.Fatalf("retry: %d %s, want 202", rec.Code, rec.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	wantOncePerTask(t, accepted, 2)
}
