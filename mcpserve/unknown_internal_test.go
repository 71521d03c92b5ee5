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

// The shortcut for served names decides as the decode would, except for the one case its comment names.
func TestNamesServedShortcut(t *testing.T) {
	sv := newServed([]string{"shout", "greet"})
	for msg, unknown := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{"name":"ada"}}}`:   false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name" : "shout","arguments":{}}}`:             false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"ada"},"name":"greet"}}`:   false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shoutx","arguments":{"name":"ada"}}}`:  true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sh\u006fut2","arguments":{}}}`:         true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name" : "nope","arguments":{"x":"shout"}}}`:   true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{"name":"shouty"}}}`: true,
	} {
		if got := sv.unknownCall([]byte(msg)) != nil; got != unknown {
			t.Errorf("%s: answered as unknown = %v, want %v", msg, got, unknown)
		}
	}
}
