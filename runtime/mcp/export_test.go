package mcp

import (
	"github.com/commonagents-go/tool/field"
	"github.com/mark3labs/mcp-go/mcp"
)

// Parameters converts a raw input schema as Expand does, for tests.
func Parameters(raw []byte) (map[string]any, error) {
	return parameters(mcp.Tool{Name: "t", RawInputSchema: raw}, field.NewPath("mcp"))
}
