package tool_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/commonagents-go/tool"
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
