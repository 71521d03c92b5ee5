package tool_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/celenv"
	"sigs.k8s.io/yaml"
)

// BenchmarkLoad measures Load of the spec's github-pr manifest (goal ≤ 2 ms/op). The baseline only parses the same
// YAML into a generic map with sigs.k8s.io/yaml, with no validation or compilation.
func BenchmarkLoad(b *testing.B) {
	src, err := os.ReadFile("testdata/ok/github-pr.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("github-pr", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tool.Load(ctx, src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-yaml-unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := yaml.Unmarshal(src, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFunctions measures Tool.Functions (goal ≤ 20 µs/op), unbound and with a binding that hides a
// parameter. The baseline marshals one equivalent schema map per action with encoding/json.
func BenchmarkFunctions(b *testing.B) {
	t, err := tool.LoadFile(context.Background(), "testdata/ok/github-pr.yaml")
	if err != nil {
		b.Fatal(err)
	}
	unbound := tool.Capability{}
	bound := tool.Capability{Key: "prs", Bindings: map[string]any{"owner": "octo", "repo": "hello"}}
	b.Run("unbound", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(t.Functions(unbound)) != 2 {
				b.Fatal("want 2 functions")
			}
		}
	})
	b.Run("bound", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(t.Functions(bound)) != 2 {
				b.Fatal("want 2 functions")
			}
		}
	})
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"title": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"},
		"head": map[string]any{"type": "string"}, "base": map[string]any{"type": "string"},
	}, "required": []string{"base", "body", "head", "title"}, "additionalProperties": false}
	b.Run("baseline-json-marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 2 {
				if _, err := json.Marshal(schema); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkInvokeHTTP measures a stateless_http Invoke (goal ≤ 1.15× the baseline) against the same loopback
// server as the baseline, which makes the same request with plain net/http — the same URL, headers and JSON
// decoding of the response, and picks the same field — so the ratio is the library's own cost.
func BenchmarkInvokeHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"content": "hello", "sha": "3f2a9c1", "size": 5}`)
	}))
	defer srv.Close()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	tl, err := tool.Load(context.Background(), []byte(filesManifest), tool.WithHTTPClient(client),
		tool.WithSettings(map[string]any{"base_url": srv.URL, "token": "sk-SECRET-123"}))
	if err != nil {
		b.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer task.Close(context.Background())
	ctx := context.Background()
	args := map[string]any{"path": "docs/readme.md"}

	b.Run("invoke", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := task.Invoke(ctx, "get_file", args)
			if err != nil || res.Output != "hello" {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	raw := func(b *testing.B, withTimeout bool) {
		b.ReportAllocs()
		url := srv.URL + "/repos/files/docs/readme.md?ref=main&q=x"
		for b.Loop() {
			ctx, cancel := ctx, context.CancelFunc(func() {})
			if withTimeout { // as every call of the library has
				ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			req.Header.Set("Authorization", "Bearer sk-SECRET-123")
			req.Header.Set("X-Client", "tests")
			req.Header.Set("X-Ref", "main")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var body map[string]any
			dec := json.NewDecoder(resp.Body)
			dec.UseNumber()
			err = dec.Decode(&body)
			resp.Body.Close()
			cancel()
			if err != nil || body["content"] != "hello" {
				b.Fatal(body, err)
			}
		}
	}
	b.Run("baseline-net-http", func(b *testing.B) { raw(b, false) })
	b.Run("baseline-net-http-timeout", func(b *testing.B) { raw(b, true) })
}

// BenchmarkInvokeCEL measures a cel action Invoke with two arguments, one defaulted (goal ≤ 5 µs/op); the
// baseline evaluates the same compiled expression directly with celenv.
func BenchmarkInvokeCEL(b *testing.B) {
	tl, err := tool.Load(context.Background(), []byte(calcManifest))
	if err != nil {
		b.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Context: calcContext,
		Capability: tool.Capability{Bindings: map[string]any{"owner": "octo"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer task.Close(context.Background())
	ctx := context.Background()
	args := map[string]any{"a": 2}
	b.Run("invoke", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := task.Invoke(ctx, "add", args)
			if err != nil || res.Output != int64(12) {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("baseline-cel-eval", func(b *testing.B) {
		p, err := celenv.Compile(celenv.ScopeAction, "int(input.a) + int(input.b)", celenv.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		vars := map[string]any{"input": map[string]any{"a": 2, "b": 10, "owner": "octo"}, "context": map[string]any{}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Eval(ctx, vars); err != nil {
				b.Fatal(err)
			}
		}
	})
}
