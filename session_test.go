package tool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
)

func browserTool(t *testing.T, srv *recorder, opts ...tool.Option) *tool.Tool {
	t.Helper()
	tl, err := tool.LoadFile(context.Background(), "testdata/ok/session.yaml", append([]tool.Option{
		tool.WithSettings(map[string]any{"browser_api": srv.URL, "api_key": "sk-BROWSER-KEY"}),
		tool.WithRuntimeInfo(tool.RuntimeInfo{Version: "9.9"})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func browserServer(t *testing.T, createStatus int) *recorder {
	return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/sessions":
			w.WriteHeader(createStatus)
			io.WriteString(w, `{"session": {"id": "s-1", "connect_token": "ct-SESSION-TOKEN"}}`)
		case r.Method == "POST" && r.URL.Path == "/sessions/s-1/navigate":
			io.WriteString(w, `{"page": {"title": "Example", "url": "https://example.com/"}}`)
		case r.Method == "GET" && r.URL.Path == "/sessions/s-1/text":
			fmt.Fprintf(w, `{"text": "text of %s"}`, r.URL.Query().Get("selector"))
		case r.Method == "DELETE" && r.URL.Path == "/sessions/s-1":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
}

func TestStatefulSessionLifecycle(t *testing.T) {
	leakcheck.Check(t)
	srv := browserServer(t, http.StatusCreated)
	store := tool.NewMemoryStore()
	rec := &factRecorder{}
	task, err := browserTool(t, srv, tool.WithStore(store), tool.WithObserver(rec)).NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := task.Invoke(context.Background(), "open_page", map[string]any{"url": "https://example.com/"})
			if err != nil || res.IsError {
				t.Errorf("open_page = %+v, %v", res, err)
				return
			}
			if want := map[string]any{"title": "Example", "url": "https://example.com/"}; !reflect.DeepEqual(res.Output, want) {
				t.Errorf("open_page output = %v", res.Output)
			}
		}()
	}
	wg.Wait()
	res := mustInvoke(t, task, "read_text", map[string]any{"selector": "h1"})
	if res.Output != "text of h1" {
		t.Errorf("read_text = %v (%v)", res.Output, res.Error)
	}
	key := "tasks/web/browser/" + task.ID() + "/runtime/stateful_session"
	if b, err := store.Get(context.Background(), key); err != nil || !strings.Contains(string(b), "s-1") {
		t.Errorf("session state in the store = %s, %v; want the session to destroy", b, err)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	var calls []string
	for _, r := range srv.requests() {
		calls = append(calls, r.Method+" "+r.URL())
	}
	want := []string{"POST /sessions", "POST /sessions/s-1/navigate", "POST /sessions/s-1/navigate",
		"POST /sessions/s-1/navigate", "POST /sessions/s-1/navigate", "GET /sessions/s-1/text?selector=h1",
		"DELETE /sessions/s-1"}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("requests =\n%s\nwant\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	reqs := srv.requests()
	if got := reqs[1].Header.Get("X-Session-Token"); got != "ct-SESSION-TOKEN" {
		t.Errorf("execute X-Session-Token = %q", got)
	}
	if got := string(reqs[0].Body); !strings.Contains(got, `"user_agent":"commonagents/9.9"`) || !strings.Contains(got, `"block_ads":true`) {
		t.Errorf("create body = %s", got)
	}
	if keys, _ := store.List(context.Background(), "tasks/"); len(keys) != 0 {
		t.Errorf("task state left in the store after Close: %v", keys)
	}
	for _, f := range rec.all() {
		for _, secret := range []string{"ct-SESSION-TOKEN", "sk-BROWSER-KEY"} {
			if strings.Contains(fmt.Sprint(f.Data), secret) {
				t.Errorf("fact %s carries a secret: %v", f.Name, f.Data)
			}
		}
	}
}

func TestStatefulSessionCreateFailure(t *testing.T) {
	t.Parallel()
	srv := browserServer(t, http.StatusInternalServerError)
	task := newTask(t, browserTool(t, srv), tool.TaskConfig{})
	_, err := task.Invoke(context.Background(), "open_page", map[string]any{"url": "https://example.com/"})
	if !errors.Is(err, tool.ErrUnrecoverable) {
		t.Fatalf("create failure: err = %v, want ErrUnrecoverable", err)
	}
	if strings.Contains(err.Error(), "sk-BROWSER-KEY") {
		t.Errorf("the error carries the api key: %v", err)
	}
}

// Once a bug: a failed session destroy leaves the session "recorded in the state" per the backend's contract, but
// Close then deletes all task state, so a resumed task can never destroy it.
func TestCloseKeepsTheStateOfAnUndestroyedSession(t *testing.T) {
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

// Once a bug: Close with a context that has already ended: the teardown gets a dead context (no DELETE is sent), and the
// session record that would let a resumed task destroy it is deleted anyway.
func TestCloseWithAnEndedContextKeepsTheSessionRecord(t *testing.T) {
	srv := browserServer(t, http.StatusCreated)
	store := tool.NewMemoryStore()
	task, err := browserTool(t, srv, tool.WithStore(store)).NewTask(context.Background(), tool.TaskConfig{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	mustInvoke(t, task, "read_text", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t.Logf("Close: %v", task.Close(ctx))
	deletes := 0
	for _, r := range srv.requests() {
		if r.Method == "DELETE" {
			deletes++
		}
	}
	keys, _ := store.List(context.Background(), "tasks/")
	if deletes == 0 && len(keys) == 0 {
		t.Errorf("no DELETE sent and the session record is gone: the session leaks for good")
	}
}
