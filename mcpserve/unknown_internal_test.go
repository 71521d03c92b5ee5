package mcpserve

import "testing"

// BenchmarkUnknownCallServed is what screening a served tool's call costs per call (stdio and HTTP).
func BenchmarkUnknownCallServed(b *testing.B) {
	sv := newServed([]string{"shout", "greet"})
	msg := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"shout","arguments":{"name":"ada"}}}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		if sv.unknownCall(msg) != nil {
			b.Fatal("a served tool's call was answered")
		}
	}
}
