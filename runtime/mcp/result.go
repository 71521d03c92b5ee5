package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
)

// convert turns a tools/call result into a backend result: structured content when the server gives it, else
// its text parts joined by newlines. Content of other kinds (images, audio, resources) goes to ServerData
// "content", for the host; when there is nothing else the output lists them by type and index into it. isError
// is a recoverable tool_error carrying the text. A result larger than limit, counting the structured content, the text
// and the data of the other kinds, is a recoverable result_too_large, without its content.
func convert(res *mcp.CallToolResult, limit int64) *runtime.Result {
	var text []string
	var other []any
	size := int64(len(res.RawStructuredContent))
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			text = append(text, c.Text)
			size += int64(len(c.Text))
		case *mcp.TextContent:
			text = append(text, c.Text)
			size += int64(len(c.Text))
		default:
			other = append(other, c)
			size += contentSize(c)
		}
	}
	joined := strings.Join(text, "\n")
	out := &runtime.Result{BytesIn: size}
	if limit > 0 && size > limit {
		out.Error = runtime.Errorf(runtime.KindResultTooLarge, "mcp: the tool's result is %d bytes, over the %d-byte limit", size, limit)
		return out
	}
	if len(other) > 0 {
		out.ServerData = map[string]any{"content": other}
	}
	if res.IsError {
		if joined == "" {
			joined = "the tool reported an error without a message"
		}
		out.Error = runtime.Errorf(runtime.KindToolError, "%s", joined)
		return out
	}
	switch {
	case len(res.RawStructuredContent) > 0 && !bytes.Equal(res.RawStructuredContent, []byte("null")):
		out.Output = decodeJSON(res.RawStructuredContent, res.StructuredContent)
	case res.StructuredContent != nil:
		out.Output = res.StructuredContent
	case len(text) > 0:
		out.Output = joined
	case len(other) > 0:
		refs := make([]any, len(other))
		for n, c := range other {
			refs[n] = map[string]any{"type": contentType(c), "server_data_index": n}
		}
		out.Output = refs
	}
	return out
}

// decodeJSON decodes raw keeping numbers exact; fallback is the value mcp-go decoded, used if raw is invalid.
func decodeJSON(raw json.RawMessage, fallback any) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fallback
	}
	return v
}

// contentType is the MCP type of a content item: "image", "audio", "resource", "resource_link".
func contentType(c any) string {
	b, err := json.Marshal(c)
	if err != nil {
		return "unknown"
	}
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &t)
	return t.Type
}

// contentSize is what a non-text content item weighs against the response limit: its base64 data (images, audio),
// its text or blob (embedded resources), else its JSON encoding.
func contentSize(c mcp.Content) int64 {
	switch c := c.(type) {
	case mcp.ImageContent:
		return int64(len(c.Data))
	case *mcp.ImageContent:
		return int64(len(c.Data))
	case mcp.AudioContent:
		return int64(len(c.Data))
	case *mcp.AudioContent:
		return int64(len(c.Data))
	}
	b, err := json.Marshal(c)
	if err != nil {
		return 0
	}
	return int64(len(b))
}
