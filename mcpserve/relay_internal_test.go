package mcpserve

import (
	"encoding/json"
	"testing"
)

// TestRelayAnswerOnlyFromItsSession: the answer to a relayed request is taken only from the session it was sent to,
// only once, and only as a response: another session's client, a request that reuses the id, or a second answer
// goes on to mcp-go as any other message.
func TestRelayAnswerOnlyFromItsSession(t *testing.T) {
	t.Parallel()
	rs := &relays{}
	w := &waiter{session: "a", reply: make(chan relayReply, 1)}
	rs.add("relay-1", w)
	answer := []byte(`{"jsonrpc":"2.0","id":"relay-1","result":{"action":"accept","content":{"x":1}}}`)
	for _, c := range []struct {
		name, session string
		msg           []byte
		taken         bool
	}{
		{"another session", "b", answer, false},
		{"a request with the id", "a", []byte(`{"jsonrpc":"2.0","id":"relay-1","method":"tools/call"}`), false},
		{"an unknown id", "a", []byte(`{"jsonrpc":"2.0","id":"relay-2","result":{}}`), false},
		{"its session", "a", answer, true},
		{"again", "a", answer, false},
	} {
		if got := rs.take(c.session, c.msg); got != c.taken {
			t.Errorf("%s: taken %v, want %v", c.name, got, c.taken)
		}
	}
	rep := <-w.reply
	var got map[string]any
	if err := json.Unmarshal(rep.Result, &got); err != nil || got["action"] != "accept" {
		t.Errorf("the waiter got %s (%v), want the answer's result as it came", rep.Result, err)
	}
}
