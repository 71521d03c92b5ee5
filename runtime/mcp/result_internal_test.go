package mcp

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestNonTextContentCountsAgainstLimit checks that images, audio and resources weigh against the response limit
// like text, and that an oversized result hands none of its content to the host.
func TestNonTextContentCountsAgainstLimit(t *testing.T) {
	big := strings.Repeat("A", 1<<20)
	cases := []struct {
		name    string
		content mcp.Content
	}{
		{"image", mcp.NewImageContent(big, "image/png")},
		{"audio", mcp.NewAudioContent(big, "audio/wav")},
		{"resource", mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///x", Text: big})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := convert(&mcp.CallToolResult{Content: []mcp.Content{c.content}}, 1024)
			if out.Error == nil || out.Error.Kind != "result_too_large" {
				t.Fatalf("a 1 MiB %s passed a 1 KiB limit (BytesIn=%d, error %+v)", c.name, out.BytesIn, out.Error)
			}
			if out.BytesIn < 1<<20 {
				t.Errorf("BytesIn = %d, want at least the content's size", out.BytesIn)
			}
			if out.Content != nil {
				t.Errorf("an oversized result still hands its %d content blocks to the host", len(out.Content))
			}
			small := convert(&mcp.CallToolResult{Content: []mcp.Content{c.content}}, 4<<20)
			if small.Error != nil || len(small.Content) != 1 {
				t.Errorf("under the limit: error %+v, %d content blocks", small.Error, len(small.Content))
			}
		})
	}
}
