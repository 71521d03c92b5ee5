package statelesshttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/commonagents-go/tool/runtime"
)

const benchReply = `{"id":42,"name":"widget","tags":["a","b"],"owner":{"login":"octo"}}`

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchReply)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkInvoke is one stateless_http call to a loopback server: render, send, read, decode. Compare with
// BenchmarkRawNetHTTP, the same exchange written by hand with net/http and encoding/json.
func BenchmarkInvoke(b *testing.B) {
	srv := benchServer(b)
	a := prepare(b, map[string]any{"method": "POST", "url": "{settings.base}/items/{parameters.id}?expand={parameters.expand}",
		"headers": map[string]any{"Authorization": "Bearer {settings.token}"},
		"body":    map[string]any{"name": "{parameters.name}", "count": "{parameters.count}"}}, nil)
	inst := initialize(b, srv.Client(), runtime.Limits{})
	c := call(map[string]any{"id": "42", "expand": "owner", "name": "widget", "count": 3},
		map[string]any{"base": srv.URL, "token": "tok"})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := inst.Invoke(ctx, a, c)
		if err != nil || res.Error != nil {
			b.Fatal(err, res.Error)
		}
	}
}

// BenchmarkRawNetHTTP is the baseline without a per-call timeout, BenchmarkRawNetHTTPTimeout with the
// context.WithTimeout every real call carries (it makes net/http watch the context).
func BenchmarkRawNetHTTP(b *testing.B)        { benchRaw(b, false) }
func BenchmarkRawNetHTTPTimeout(b *testing.B) { benchRaw(b, true) }

func benchRaw(b *testing.B, timeout bool) {
	srv := benchServer(b)
	client := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if timeout {
			ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		}
		body, _ := json.Marshal(map[string]any{"name": "widget", "count": 3})
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/items/42?expand=owner", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		var out any
		if err != nil || json.Unmarshal(raw, &out) != nil {
			b.Fatal(err)
		}
	}
}
