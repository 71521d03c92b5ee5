package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
)

// convert turns a tools/call result into a backend result: its blocks in order as Content, and as Output the
// structured content when the server gives it, else its text blocks joined by newlines, else a list of the other
// blocks by type and index into Content. isError is a recoverable tool_error carrying the text. A result larger
// than limit, counting the structured content, the text and the data of the other blocks, is a recoverable
// result_too_large, without its content.
func convert(res *mcp.CallToolResult, limit int64) *runtime.Result {
	var text []string
	size := int64(len(res.RawStructuredContent))
	blocks := make([]runtime.Content, 0, len(res.Content))
	for _, c := range res.Content {
		b := content(c)
		if b.Type == runtime.ContentText {
			text = append(text, b.Text)
		}
		size += blockSize(b)
		blocks = append(blocks, b)
	}
	joined := strings.Join(text, "\n")
	out := &runtime.Result{BytesIn: size}
	if limit > 0 && size > limit {
		out.Error = runtime.Errorf(runtime.KindResultTooLarge, "mcp: the tool's result is %d bytes, over the %d-byte limit", size, limit)
		return out
	}
	if len(blocks) > 0 {
		out.Content = blocks
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
	case len(blocks) > 0:
		refs := make([]any, len(blocks))
		for n, b := range blocks {
			refs[n] = map[string]any{"type": b.Type, "content_index": n}
		}
		out.Output = refs
	}
	return out
}

// content converts one block of mcp-go's into a runtime.Content through its JSON, which keeps its annotations
// and _meta.
func content(c mcp.Content) runtime.Content {
	var b runtime.Content
	raw, err := json.Marshal(c)
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err != nil || b.Type == "" {
		return runtime.Content{Type: runtime.ContentText, Text: fmt.Sprintf("(a content block that cannot be read: %T)", c)}
	}
	return b
}

// blockSize is what a block weighs against the response limit: its text, its base64 data, an embedded
// resource's text or blob, plus its link fields.
func blockSize(b runtime.Content) int64 {
	n := len(b.Text) + len(b.Data) + len(b.URI) + len(b.Name) + len(b.Title) + len(b.Description)
	if r := b.Resource; r != nil {
		n += len(r.URI) + len(r.Text) + len(r.Blob)
	}
	return int64(n)
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
