package tool_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/commonagents-go/tool"
)

// nested is a JSON body of n bytes that nests n/2 arrays deep: parsed, it costs about 50 times its size.
func nested(n int) []byte {
	return append(bytes.Repeat([]byte("["), n/2), bytes.Repeat([]byte("]"), n/2)...)
}

// allocated returns the bytes the process allocated while f ran, averaged over runs calls.
func allocated(runs int, f func()) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

// openTool has one webhook event without a secret: every payload is parsed for it.
func openTool(t testing.TB, opts ...tool.Option) *tool.Tool {
	t.Helper()
	src := manifestHeader("open-events") + `events:
  - name: ping
    description: Anything posted.
    message: "ping {event.payload.kind}"
    receive:
      webhook: {}
`
	tl, err := tool.Load(context.Background(), []byte(src), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

const mib = 1 << 20

// A payload whose signature fails for every event is refused on its raw bytes, never parsed (SPEC §12.6): a
// deeply nested 1 MiB body costs almost nothing to refuse, where parsing it would cost about 50 MiB.
func TestForgedPayloadIsNotParsed(t *testing.T) {
	tl := repoTool(t)
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	body := nested(mib)
	forged := signed("wrong", "", string(body))
	unsigned := &tool.Inbound{Headers: http.Header{}, Body: body}
	for _, in := range []*tool.Inbound{forged, unsigned} {
		wantOutcome(t, deliver(t, task, in), "labeled:bad_signature", "pushed:bad_signature")
		if n := allocated(4, func() { _, _ = task.Deliver(context.Background(), in) }); n > mib/4 {
			t.Errorf("refusing a 1 MiB body allocated %.0f bytes, want no parse (under %d)", n, mib/4)
		}
	}
}

// Through the Router, an unsigned 1 MiB POST allocates at most 1.5 times its size: the body is read into one
// buffer of its Content-Length, and nothing else is built from it.
func TestRouterUnsignedPostAllocation(t *testing.T) {
	r := tool.NewRouter(tool.RouterOptions{})
	task := newTask(t, repoTool(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	body := nested(mib)
	post := func() int {
		req := httptest.NewRequest(http.MethodPost, "/v1/webhooks/events"+"/tests/repo-events", bytes.NewReader(body))
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w.Code
	}
	if code := post(); code != http.StatusUnauthorized {
		t.Fatalf("unsigned POST: status %d, want 401", code)
	}
	if n := allocated(8, func() { post() }); n > 1.5*mib {
		t.Errorf("an unsigned 1 MiB POST allocated %.0f bytes (%.2f× its size), want at most 1.5×", n, n/mib)
	}
}

// A payload an event without a secret takes is parsed only within Limits.InboundDepth and InboundValues; over
// them it is discarded as payload_too_complex, unparsed, and the Router answers 413.
func TestUnsignedPayloadParsingIsBounded(t *testing.T) {
	tl := openTool(t, tool.WithLimits(tool.Limits{InboundDepth: 8, InboundValues: 100}))
	task := newTask(t, tl, tool.TaskConfig{})
	in := func(body string) *tool.Inbound { return &tool.Inbound{Headers: http.Header{}, Body: []byte(body)} }

	ok := deliver(t, task, in(`{"kind":"hello","list":[[[[1]]]]}`))
	if wantOutcome(t, ok, "ping:activated"); ok.Activations[0].Message != "ping hello" {
		t.Errorf("message = %q", ok.Activations[0].Message)
	}
	tests := []struct{ name, body, detail string }{
		{"too deep", `{"kind":"x","a":` + strings.Repeat("[", 9) + strings.Repeat("]", 9) + `}`, "deeper than 8 levels"},
		{"too many values", `{"kind":"x","a":[` + strings.Repeat("0,", 100) + `0]}`, "more than 100 values"},
	}
	for _, tt := range tests {
		d := deliver(t, task, in(tt.body))
		wantOutcome(t, d, "ping:payload_too_complex")
		if !strings.Contains(d.Discarded[0].Detail, tt.detail) {
			t.Errorf("%s: detail %q, want it to say %q", tt.name, d.Discarded[0].Detail, tt.detail)
		}
	}
	// Text is one value whatever it holds.
	wantOutcome(t, deliver(t, task, in(strings.Repeat("a,", 500))), "ping:activated")

	r := tool.NewRouter(tool.RouterOptions{})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]int{tests[0].body: 413, tests[1].body: 413, `{"kind":"y"}`: 202} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/webhooks/events"+"/tests/open-events", strings.NewReader(body)))
		if w.Code != want {
			t.Errorf("POST %.30s…: status %d, want %d", body, w.Code, want)
		}
	}

	// A deeply nested 1 MiB body is refused at the default limits without being parsed.
	big := openTool(t)
	bigTask := newTask(t, big, tool.TaskConfig{})
	deep := &tool.Inbound{Headers: http.Header{}, Body: nested(mib)}
	wantOutcome(t, deliver(t, bigTask, deep), "ping:payload_too_complex")
	if n := allocated(4, func() { _, _ = bigTask.Deliver(context.Background(), deep) }); n > mib/4 {
		t.Errorf("refusing a deep 1 MiB body allocated %.0f bytes, want no parse (under %d)", n, mib/4)
	}
}

// holdingSink holds each activation until released, so a test knows a body is in flight.
type holdingSink struct {
	entered chan struct{}
	release chan struct{}
}

func (s *holdingSink) Accept(ctx context.Context, _ tool.Activation) error {
	s.entered <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

// The Router holds at most RouterOptions.InFlightBytes of bodies at once; a request over the cap is answered 503 with
// Retry-After before its body is read, and served once the cap has room.
func TestRouterCapsBodiesInFlight(t *testing.T) {
	sink := &holdingSink{entered: make(chan struct{}), release: make(chan struct{})}
	task := newTask(t, openTool(t), tool.TaskConfig{Sink: sink})
	r := tool.NewRouter(tool.RouterOptions{InFlightBytes: 3000})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	body := `{"kind":"k","pad":"` + strings.Repeat("x", 2000) + `"}`
	post := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/webhooks/events"+"/tests/open-events", strings.NewReader(body)))
		return w
	}
	first := make(chan int)
	go func() { first <- post().Code }()
	<-sink.entered // the first body is held
	if w := post(); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("second body over the cap: status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	sink.release <- struct{}{}
	if code := <-first; code != http.StatusAccepted {
		t.Errorf("first body: status %d, want 202", code)
	}
	go func() { <-sink.entered; sink.release <- struct{}{} }()
	if w := post(); w.Code != http.StatusAccepted {
		t.Errorf("after the first was answered: status %d, want 202", w.Code)
	}
	if peak := tool.InFlightPeak(r); peak > 3000 {
		t.Errorf("peak bodies in flight %d, want at most 3000", peak)
	}
}

// 200 concurrent unsigned 1 MiB POSTs: each is refused (401) or turned away before its body is read (503 with
// Retry-After), and the Router never holds more than its cap of bodies. Their heap cost is measured by
// BenchmarkRouterConcurrentUnsignedPosts.
func TestRouterConcurrentUnsignedPosts(t *testing.T) {
	t.Parallel()
	const capBytes = 16 * mib
	r := tool.NewRouter(tool.RouterOptions{InFlightBytes: capBytes})
	task := newTask(t, repoTool(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	body := nested(mib)
	var wg sync.WaitGroup
	codes := make(chan int, 200)
	for range 200 {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/webhooks/events"+"/tests/repo-events", "application/json", bytes.NewReader(body))
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				codes <- -2
				return
			}
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	seen := map[int]int{}
	for c := range codes {
		seen[c]++
	}
	// A request turned away before its body is read may see its connection closed while it is still sending
	// (-1): the server answered it without reading the body, which is the point.
	if seen[401]+seen[503]+seen[-1] != 200 || seen[401] == 0 {
		t.Errorf("statuses %v, want only 401, and 503 with Retry-After", seen)
	}
	if peak := tool.InFlightPeak(r); peak > capBytes {
		t.Errorf("peak bodies in flight %d, want at most %d", peak, capBytes)
	}
}
