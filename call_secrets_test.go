package tool

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/commonagents-go/tool/internal/redact"
)

// BenchmarkCallSecrets measures what a call that renders a secret into a header pays for encoded-secret
// scrubbing (BenchmarkInvokeHTTP's shape): recording the resolved secret, deriving from the rendered request, and
// scrubbing an output and ServerData in which no secret occurs. "none" is a call that resolved no secret.
func BenchmarkCallSecrets(b *testing.B) {
	task := &Task{secrets: &redact.Set{}}
	task.secrets.Add("sk-SECRET-123")
	u, _ := url.Parse("http://127.0.0.1:8080/repos/files/docs%2Freadme.md?ref=main&q=x")
	req := &http.Request{URL: u, Header: http.Header{"Authorization": {"Bearer sk-SECRET-123"},
		"X-Client": {"tests"}, "X-Ref": {"main"}}}
	serverData := map[string]any{"status": 200, "headers": map[string][]string{
		"Content-Type": {"application/json"}, "Date": {"Mon, 23 Nov 2026 22:00:00 GMT"}, "Content-Length": {"48"}}}
	run := func(b *testing.B, secret bool) {
		b.ReportAllocs()
		for b.Loop() {
			v := &callValues{task: task, encoded: true}
			c := &call{values: v}
			if secret {
				v.noteSecret("sk-SECRET-123")
			}
			v.Rendered(req, nil)
			if c.scrub("hello") != "hello" || c.scrub(serverData) == nil {
				b.Fatal("scrubbed what holds no secret")
			}
		}
	}
	b.Run("secret-in-header", func(b *testing.B) { run(b, true) })
	b.Run("none", func(b *testing.B) { run(b, false) })
}
