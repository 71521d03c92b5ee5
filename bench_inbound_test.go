package tool_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/commonagents-go/tool"
)

// signedTask is a task of repoEvents, whose pushed events are all signed.
func signedTask(b *testing.B) *tool.Task {
	tl, err := tool.Load(context.Background(), []byte(repoEvents("")), tool.WithSettings(map[string]any{"secret": hookSecret}))
	if err != nil {
		b.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = task.Close(context.Background()) })
	return task
}

// BenchmarkRouterUnsignedPost is one unsigned 1 MiB POST (deeply nested JSON) to a tool whose events are all
// signed, through Router.ServeHTTP; ReadAll is the baseline of reading the same body with io.ReadAll.
func BenchmarkRouterUnsignedPost(b *testing.B) {
	body := nested(mib)
	b.Run("ReadAll", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(mib)
		for b.Loop() {
			_, _ = io.ReadAll(bytes.NewReader(body))
		}
	})
	b.Run("Router", func(b *testing.B) {
		r := tool.NewRouter(tool.RouterOptions{})
		if err := r.Add(signedTask(b)); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(mib)
		for b.Loop() {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/webhooks/events"+"/tests/repo-events", bytes.NewReader(body)))
			if w.Code != http.StatusUnauthorized {
				b.Fatalf("status %d", w.Code)
			}
		}
	})
}

// BenchmarkRouterConcurrentUnsignedPosts sends 200 unsigned 1 MiB POSTs at once to a Router behind a real HTTP
// server and reports how far the live heap rose above where it started (heap-MiB), sampled while they run, and
// how many were turned away with 503 (rejected/op).
func BenchmarkRouterConcurrentUnsignedPosts(b *testing.B) {
	r := tool.NewRouter(tool.RouterOptions{})
	if err := r.Add(signedTask(b)); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(r)
	b.Cleanup(srv.Close)
	body := nested(mib)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() float64 { metrics.Read(sample); return float64(sample[0].Value.Uint64()) }
	var rise, rejected float64
	for b.Loop() {
		start, peak := heap(), 0.0
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				peak = max(peak, heap())
				select {
				case <-done:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 200 {
			wg.Go(func() {
				resp, err := http.Post(srv.URL+"/v1/webhooks/events"+"/tests/repo-events", "application/json", bytes.NewReader(body))
				if err == nil {
					resp.Body.Close()
				}
				// Turned away before the body was read: 503, or the connection closed while still sending.
				if err != nil || resp.StatusCode == http.StatusServiceUnavailable {
					mu.Lock()
					rejected++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(done)
		<-sampled
		rise = max(rise, peak-start)
	}
	b.ReportMetric(rise/mib, "heap-MiB")
	b.ReportMetric(rejected/float64(b.N), "rejected/op")
}
