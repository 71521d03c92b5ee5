package statelesshttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/internal/httpspec/httpspectest"
	"github.com/commonagents-go/tool/runtime"
)

// prepare prepares an action block (and the top-level block, when shared is not nil).
func prepare(t testing.TB, block, shared map[string]any) *Action {
	t.Helper()
	b := &runtime.Block{Kind: Kind, Tool: "t", Action: "a", Value: block,
		Path: field.NewPath("actions").Index(0).Child("execute", Kind), Check: &httpspectest.Checker{}}
	if shared != nil {
		b.Shared, b.SharedPath = shared, field.NewPath(Kind)
	}
	a, err := Backend{}.Prepare(context.Background(), b)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return a.(*Action)
}

func initialize(t testing.TB, client *http.Client, limits runtime.Limits) runtime.Instance {
	t.Helper()
	inst, err := Backend{}.Initialize(context.Background(), &runtime.Init{TaskID: "task", Tool: "t",
		HTTPClient: httpspec.SameHostRedirects(client), Limits: limits,
		Observe: func(context.Context, string, map[string]any) {}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Teardown(context.Background()); err != nil {
			t.Errorf("Teardown: %v", err)
		}
	})
	return inst
}

func call(args map[string]any, settings map[string]any) *runtime.Call {
	return &runtime.Call{ID: "c1", Action: "a", Args: args,
		Values: httpspectest.Roots{"parameters": args, "settings": settings}}
}

func TestInvoke(t *testing.T) {
	t.Parallel()
	slowArrived := make(chan struct{}) // a /slow request reached the server while someone waited for it
	srv := httpspectest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/slow":
			select {
			case slowArrived <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/v1/missing":
			w.Header().Set("X-Trace", "tr")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"no such item"}`)
		default:
			httpspectest.JSON(`{"items":[{"id":1,"name":"a"},{"id":2,"name":"b"}]}`)(w, r)
		}
	})
	shared := map[string]any{"base_url": "{settings.base}", "headers": map[string]any{"Authorization": "Bearer {settings.token}"}}
	settings := map[string]any{"base": srv.URL + "/v1", "token": "tok"}
	inst := initialize(t, srv.Client(), runtime.Limits{CallTimeout: 5 * time.Second})

	list := prepare(t, map[string]any{"method": "GET", "url": "/items?q={parameters.q}", "response_path": "$.items[*].name"}, shared)
	res, err := inst.Invoke(context.Background(), list, call(map[string]any{"q": "x y"}, settings))
	if err != nil || res.Error != nil {
		t.Fatalf("list: %v %v", err, res.Error)
	}
	if out, ok := res.Output.([]any); !ok || len(out) != 2 || out[0] != "a" || out[1] != "b" {
		t.Errorf("list: Output = %#v", res.Output)
	}
	got := srv.All()[0]
	if got.Method != "GET" || got.EscapedPath != "/v1/items" || got.Query.Get("q") != "x y" ||
		got.Header.Get("Authorization") != "Bearer tok" {
		t.Errorf("list: server received %+v", got)
	}
	if res.ServerData["status"] != 200 || res.BytesIn == 0 {
		t.Errorf("list: ServerData = %v, BytesIn = %d", res.ServerData, res.BytesIn)
	}

	missing := prepare(t, map[string]any{"method": "GET", "url": "{settings.base}/missing"}, nil)
	res, err = inst.Invoke(context.Background(), missing, call(nil, settings))
	if err != nil || res.Error == nil || res.Error.Kind != runtime.KindInvalidRequest || res.Error.Status != 404 {
		t.Fatalf("missing: %v %+v", err, res)
	}
	if res.ServerData["status"] != 404 || res.ServerData["body"] != `{"message":"no such item"}` ||
		res.ServerData["headers"].(map[string][]string)["X-Trace"][0] != "tr" {
		t.Errorf("missing: ServerData = %v", res.ServerData)
	}

	slow := prepare(t, map[string]any{"method": "GET", "url": "{settings.base}/slow", "timeout": "50ms"}, nil)
	start := time.Now()
	res, err = inst.Invoke(context.Background(), slow, call(nil, settings))
	if err != nil || res.Error == nil || res.Error.Kind != runtime.KindTimeout {
		t.Fatalf("slow: %v %+v", err, res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("slow: the action's 50ms timeout took %v", d)
	}

	// Cancelled once the request is at the server, with no timeout of the action's that could fire first.
	patient := prepare(t, map[string]any{"method": "GET", "url": "{settings.base}/slow", "timeout": "1m"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-slowArrived
		cancel()
	}()
	_, err = inst.Invoke(ctx, patient, call(nil, settings))
	if !errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrUnrecoverable) {
		t.Errorf("cancelled: err = %v, want context.Canceled only", err)
	}

	if _, err := inst.Invoke(context.Background(), "not an action", call(nil, settings)); !errors.Is(err, runtime.ErrUnrecoverable) {
		t.Errorf("foreign action: err = %v, want unrecoverable", err)
	}
}

func TestInvokeLimitsAndUnreachable(t *testing.T) {
	t.Parallel()
	srv := httpspectest.NewRecorder(t, httpspectest.JSON(`"0123456789"`))
	settings := map[string]any{"base": srv.URL}
	a := prepare(t, map[string]any{"method": "POST", "url": "{settings.base}/x", "body": map[string]any{"n": 1}}, nil)

	small := initialize(t, srv.Client(), runtime.Limits{ResponseBytes: 5})
	res, err := small.Invoke(context.Background(), a, call(nil, settings))
	if err != nil || res.Error == nil || res.Error.Kind != runtime.KindResultTooLarge {
		t.Errorf("limit: %v %+v", err, res)
	}

	srv.Close()
	res, err = small.Invoke(context.Background(), a, call(nil, settings))
	if !errors.Is(err, runtime.ErrUnrecoverable) || res != nil {
		t.Errorf("unreachable: %v %+v, want unrecoverable", err, res)
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		own, host, want time.Duration
	}{
		{0, 0, DefaultTimeout},
		{0, time.Second, time.Second},
		{2 * time.Second, time.Second, 2 * time.Second},
	}
	for _, tc := range tests {
		if got := CallTimeout(tc.own, runtime.Limits{CallTimeout: tc.host}); got != tc.want {
			t.Errorf("CallTimeout(%v, %v) = %v, want %v", tc.own, tc.host, got, tc.want)
		}
	}
}
