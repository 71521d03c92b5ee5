package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// A tools/call of a tool the server does not serve is the JSON-RPC error -32602 (invalid params), as the MCP
// specification says and mcp-go answers; mcp-go gives no way to add the names a model could call instead, so the
// transports mcpserve serves answer such a call themselves before mcp-go sees it, with the served names in the
// error's data: {"tool": the name asked for, "available": [the served names]}.

// served is the set of tool names a server serves, replaced whole when the served list changes
// (SessionHandler.Update).
type served struct {
	cur atomic.Pointer[servedSet]
}

// servedSet is one list of served names.
type servedSet struct {
	names []string
	set   map[string]struct{}
}

func newServed(names []string) *served {
	sv := &served{}
	sv.replace(names)
	return sv
}

// replace makes names the served ones.
func (sv *served) replace(names []string) {
	c := &servedSet{names: names, set: make(map[string]struct{}, len(names))}
	for _, n := range names {
		c.set[n] = struct{}{}
	}
	sv.cur.Store(c)
}

var toolsCall = []byte(`"tools/call"`)

// unknownCall returns the error reply to msg when it is a tools/call request of a tool not served, else nil.
func (sv *served) unknownCall(msg []byte) []byte {
	msg = bytes.TrimSpace(msg)
	c := sv.cur.Load()
	if len(msg) == 0 || msg[0] != '{' || !bytes.Contains(msg, toolsCall) || c.namesServed(msg) {
		return nil
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.Method != string(mcp.MethodToolsCall) || len(req.ID) == 0 ||
		string(req.ID) == "null" {
		return nil
	}
	if _, ok := c.set[req.Params.Name]; ok {
		return nil
	}
	reply, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": req.ID,
		"error": map[string]any{"code": mcp.INVALID_PARAMS, "message": fmt.Sprintf("tool '%s' not found", req.Params.Name),
			"data": map[string]any{"tool": req.Params.Name, "available": c.names}}})
	if err != nil {
		return nil
	}
	return reply
}

var nameKey = []byte(`"name":"`)

// namesServed reports whether msg holds "name":"N" (written compactly, without escapes) for a served N: then it is
// a served tool's call, left to mcp-go without decoding it here (a decode of every call cost about a tenth of
// serve-mcp's CPU). The one call it lets through unchecked, an unknown tool whose arguments hold a "name" equal to
// a served tool's, still gets mcp-go's own -32602, without the names in its data.
func (sv *servedSet) namesServed(msg []byte) bool {
	for rest := msg; ; {
		i := bytes.Index(rest, nameKey)
		if i < 0 {
			return false
		}
		rest = rest[i+len(nameKey):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return false
		}
		if _, ok := sv.set[string(rest[:end])]; ok && bytes.IndexByte(rest[:end], '\\') < 0 {
			return true
		}
		rest = rest[end:]
	}
}

// screened is a stdio server's input with the calls of unknown tools taken out and answered on out.
type screened struct {
	src     *bufio.Reader
	sv      *served
	out     *stdioStream
	rs      *relays // the answers to relayed requests are taken out too; nil: none are
	pending []byte
	err     error
}

func (s *screened) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		line, err := s.src.ReadBytes('\n')
		s.err = err
		if reply := s.sv.unknownCall(line); reply != nil {
			_, _ = s.out.Write(append(reply, '\n'))
			continue
		}
		if s.rs != nil && s.rs.take(stdioSession, line) {
			continue
		}
		s.pending = line
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}
