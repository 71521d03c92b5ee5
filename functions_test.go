package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/commonagents-go/tool"
)

// assertLLMSchema checks that a function is accepted by OpenAI, Anthropic and MCP tool definitions: an object
// schema with properties, a required list naming only declared properties, and no extension keywords.
func assertLLMSchema(t *testing.T, fn tool.Function) {
	t.Helper()
	var s struct {
		Type                 string                    `json:"type"`
		Properties           map[string]map[string]any `json:"properties"`
		Required             []string                  `json:"required"`
		AdditionalProperties *bool                     `json:"additionalProperties"`
	}
	if err := json.Unmarshal(fn.Parameters, &s); err != nil {
		t.Fatalf("%s: parameters are not JSON: %v", fn.Name, err)
	}
	if s.Type != "object" || s.Properties == nil || s.Required == nil {
		t.Errorf("%s: want type object with properties and required, got %s", fn.Name, fn.Parameters)
	}
	if s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("%s: want additionalProperties false", fn.Name)
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			t.Errorf("%s: required %q is not a property", fn.Name, r)
		}
	}
	for name, p := range s.Properties {
		if _, ok := p["require_binding"]; ok {
			t.Errorf("%s: property %q still has require_binding", fn.Name, name)
		}
	}
	if fn.Name == "" || len(fn.Name) > 64 || fn.Description == "" {
		t.Errorf("function name %q (want 1..64 chars) or empty description", fn.Name)
	}
}

// Actions whose names sanitize alike would share a function name: Load refuses them.
func TestActionsWhoseNamesSanitizeAlikeAreRefused(t *testing.T) {
	t.Parallel()
	verr := mustFailSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: c
description: x
actions:
  - name: get-item
    description: x
    execute: {cel: {expression: "'dash'"}}
  - name: get_item
    description: x
    execute: {cel: {expression: "'underscore'"}}
`)
	if len(verr.Problems) != 1 || verr.Problems[0].Path != "actions[1].name" || verr.Problems[0].Type != "duplicate" {
		t.Errorf("problems = %v, want one duplicate at actions[1].name", verr.Problems)
	}
}
