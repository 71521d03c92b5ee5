package httpspec

import (
	"context"
	"testing"
)

// BenchmarkBuild renders a typical request: trusted prefix, a path and a query token, two headers, a body of
// three fields.
func BenchmarkBuild(b *testing.B) {
	c := compiled(b, "POST", "{settings.base}/repos/{parameters.repo}/issues?state={parameters.state}",
		map[string]string{"Authorization": "Bearer {settings.token}", "Accept": "application/json"},
		map[string]any{"title": "{parameters.title}", "labels": "{parameters.labels}", "draft": false})
	values := roots{
		"settings":   map[string]any{"base": "https://api.example.com/v3", "token": "t0ken"},
		"parameters": map[string]any{"repo": "octo/cat", "state": "open", "title": "Fix it", "labels": []any{"bug"}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Build(ctx, values); err != nil {
			b.Fatal(err)
		}
	}
}
