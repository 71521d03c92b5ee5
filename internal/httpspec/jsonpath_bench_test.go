package httpspec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ohler55/ojg/jp"
)

// BenchmarkResponsePath compares response_path evaluation before (ojg's jp, the pre-RFC dialect the library used)
// and after (RFC 9535) on the same decoded body of 50 items, in the same run.
func BenchmarkResponsePath(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"data":{"id":"abc"},"items":[`)
	for i := range 50 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"name":"item-%d","price":%d,"tags":{"a":1,"b":2}}`, i, i)
	}
	sb.WriteString(`]}`)
	body := decodeBody([]byte(sb.String()))
	paths := []struct{ name, rfc, ojg string }{
		{"name", "$.data.id", "$.data.id"},
		{"wildcard", "$.items[*].name", "$.items[*].name"},
		{"filter", "$.items[?@.price > 40].name", "$.items[?(@.price > 40)].name"},
		{"descendant", "$..name", "$..name"},
	}
	for _, p := range paths {
		before := jp.MustParseString(p.ojg)
		after := mustPath(b, p.rfc)
		if got, want := len(after.Select(body)), len(before.Get(body)); got != want {
			b.Fatalf("%s: %d nodes, ojg %d", p.name, got, want)
		}
		b.Run(p.name+"/ojg", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				before.Get(body)
			}
		})
		b.Run(p.name+"/rfc9535", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Output(body, after)
			}
		})
	}
}
