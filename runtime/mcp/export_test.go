package mcp

import (
	"github.com/commonagents-go/tool/field"
)

// Parameters converts a raw input schema as Expand does, for tests: the LLM copy and the whole schema.
func Parameters(raw []byte) (llm, whole map[string]any, err error) {
	return parameters("t", raw, field.NewPath("mcp"))
}
