package tool

import (
	"encoding/json"
	"maps"
	"slices"
)

// Schema returns Parameters decoded, for SDKs that take a schema as a map (openai-go's
// shared.FunctionParameters, MCP tool definitions), without the `$schema` Parameters may keep: vendors take
// their own dialect. Each call returns a new map the caller may change.
func (f Function) Schema() map[string]any {
	var m map[string]any
	if err := json.Unmarshal(f.Parameters, &m); err != nil || m == nil {
		m = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	delete(m, "$schema")
	return m
}

// Properties returns the schema's properties and required names, for SDKs that take them apart (Anthropic's
// ToolInputSchemaParam). properties is never nil. Schemas whose properties use local `$ref`s also carry
// `$defs`/`definitions`, which only Schema returns.
func (f Function) Properties() (properties map[string]any, required []string) {
	s := f.Schema()
	properties, _ = s["properties"].(map[string]any)
	if properties == nil {
		properties = map[string]any{}
	}
	for _, r := range asSlice(s["required"]) {
		if name, ok := r.(string); ok {
			required = append(required, name)
		}
	}
	return properties, required
}

// StrictSchema returns the schema in the form OpenAI's structured outputs accept with `strict: true`: in every
// object with declared properties, all properties are required and `additionalProperties` is false; a property
// that was optional becomes nullable (its type gains "null", its enum gains null, or it is wrapped in
// `anyOf: [schema, {"type": "null"}]`). A call may then send null for an optional parameter: Invoke and
// InvokeFunction treat a null argument for an optional parameter as absent (its default applies), unless the
// parameter's own schema allows null.
func (f Function) StrictSchema() map[string]any {
	s := f.Schema()
	strict(s)
	return s
}

// strict rewrites one schema object and every schema below it.
func strict(s map[string]any) {
	if props, ok := s["properties"].(map[string]any); ok {
		req := map[string]bool{}
		for _, r := range asSlice(s["required"]) {
			if name, ok := r.(string); ok {
				req[name] = true
			}
		}
		names := make([]any, 0, len(props))
		for _, name := range slices.Sorted(maps.Keys(props)) {
			names = append(names, name)
			p, ok := props[name].(map[string]any)
			if !ok {
				continue
			}
			strict(p)
			if !req[name] {
				props[name] = nullable(p)
			}
		}
		s["required"] = names
		s["additionalProperties"] = false
	}
	for _, kw := range []string{"items", "additionalItems", "not"} {
		if sub, ok := s[kw].(map[string]any); ok {
			strict(sub)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf", "prefixItems", "items"} {
		for _, sub := range asSlice(s[kw]) {
			if m, ok := sub.(map[string]any); ok {
				strict(m)
			}
		}
	}
	for _, kw := range []string{"$defs", "definitions"} {
		if defs, ok := s[kw].(map[string]any); ok {
			for _, d := range defs {
				if m, ok := d.(map[string]any); ok {
					strict(m)
				}
			}
		}
	}
}

// nullable returns p also accepting null.
func nullable(p map[string]any) map[string]any {
	if allowsNull(p) {
		return p
	}
	switch t := p["type"].(type) {
	case string:
		p["type"] = []any{t, "null"}
	case []any:
		p["type"] = append(t, "null")
	default:
		return map[string]any{"anyOf": []any{p, map[string]any{"type": "null"}}}
	}
	if enum, ok := p["enum"].([]any); ok {
		p["enum"] = append(enum, nil)
	}
	return p
}

// allowsNull reports whether a property schema says in so many words that null is a value: its type lists
// "null", its enum holds null, or its const is null. A nil schema (the boolean schema true) allows anything.
func allowsNull(p map[string]any) bool {
	if p == nil {
		return true
	}
	switch t := p["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if slices.Contains(t, any("null")) {
			return true
		}
	}
	if enum, ok := p["enum"].([]any); ok && slices.Contains(enum, nil) {
		return true
	}
	if c, ok := p["const"]; ok && c == nil {
		return true
	}
	return false
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// Text returns the result as the text to hand back to the LLM: a string output as plain text (not JSON-quoted),
// any other output as its compact JSON (OutputJSON), and an error result as OutputJSON, the error object with
// its hint.
func (r *Result) Text() string {
	if s, ok := r.Output.(string); ok && !r.IsError && !r.Omitted {
		return s
	}
	return string(r.OutputJSON)
}
