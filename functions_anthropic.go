package tool

import (
	"maps"
	"slices"
	"strings"
)

// AnthropicSchema returns the whole schema as Anthropic's input_schema takes it:
//
//	s := f.AnthropicSchema()
//	anthropic.ToolInputSchemaParam{Properties: s.Properties, Required: s.Required, ExtraFields: s.Extra}
//
// Unlike Properties, which returns only the first two parts, it keeps `$defs` (which properties may `$ref`) and
// `additionalProperties`.
func (f Function) AnthropicSchema() AnthropicInputSchema {
	return splitAnthropic(f.Schema())
}

// AnthropicStrictSchema returns the schema for Anthropic's strict tool use (a tool with `strict: true`, whose
// input Claude's sampling is held to), and true; or false when the schema needs what strict tool use cannot
// express, in which case offer the tool without strict. The strict form is the schema with
// `additionalProperties: false` on every object and annotations (default, examples, ...) left out: it never allows
// an argument that validation refuses. Optional parameters stay optional, as strict tool use allows.
//
// The schema has no strict form when it uses a keyword outside the subset strict tool use accepts (bounds on
// numbers, string lengths, patterns, array sizes beyond minItems 0 or 1, oneOf, not, conditionals, ...), a format
// outside its list, an enum of objects or lists, a recursive `$ref`, or an object open to any key (additional
// properties allowed and no declared ones), which strict tool use would close.
func (f Function) AnthropicStrictSchema() (AnthropicInputSchema, bool) {
	s := f.Schema()
	refs := map[string]any{}
	for _, kw := range []string{"$defs", "definitions"} {
		if defs, ok := s[kw].(map[string]any); ok {
			for name, d := range defs {
				refs["#/"+kw+"/"+name] = d
			}
		}
	}
	if !anthropicStrict(s, true) || recursiveRef(refs) {
		return AnthropicInputSchema{}, false
	}
	return splitAnthropic(s), true
}

// splitAnthropic splits a root schema into Anthropic's parts.
func splitAnthropic(s map[string]any) AnthropicInputSchema {
	out := AnthropicInputSchema{}
	out.Properties, _ = s["properties"].(map[string]any)
	if out.Properties == nil {
		out.Properties = map[string]any{}
	}
	for _, r := range asSlice(s["required"]) {
		if name, ok := r.(string); ok {
			out.Required = append(out.Required, name)
		}
	}
	for k, v := range s {
		switch k {
		case "type", "properties", "required":
			continue
		}
		if out.Extra == nil {
			out.Extra = map[string]any{}
		}
		out.Extra[k] = v
	}
	return out
}

// anthropicFormats are the string formats strict tool use accepts.
var anthropicFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6",
	"uuid"}

// anthropicAnnotations are left out of the strict form: they say nothing about which values are valid.
var anthropicAnnotations = []string{"default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
	"$schema", "$id"}

// anthropicStrict rewrites s in place into its strict form and reports whether it has one. root is true for the
// function's own schema, whose `$defs` are checked as schemas of their own.
func anthropicStrict(s map[string]any, root bool) bool {
	for _, kw := range anthropicAnnotations {
		delete(s, kw)
	}
	if types, ok := s["type"].([]any); ok { // ["string", "null"] → anyOf, the form strict tool use takes
		if len(types) != 2 || !slices.Contains(types, any("null")) {
			return false
		}
		other := types[0]
		if other == "null" {
			other = types[1]
		}
		branch := maps.Clone(s)
		branch["type"] = other
		if enum, ok := branch["enum"].([]any); ok {
			branch["enum"] = slices.DeleteFunc(slices.Clone(enum), func(v any) bool { return v == nil })
		}
		clear(s)
		s["anyOf"] = []any{branch, map[string]any{"type": "null"}}
	}
	isObject := s["type"] == "object" || s["properties"] != nil
	for k, v := range s {
		switch k {
		case "type", "description", "title", "required", "const":
		case "$defs", "definitions":
			if !root {
				return false
			}
			defs, _ := v.(map[string]any)
			for _, d := range defs {
				if m, ok := d.(map[string]any); !ok || !anthropicStrict(m, false) {
					return false
				}
			}
		case "properties":
			props, _ := v.(map[string]any)
			for _, p := range props {
				if m, ok := p.(map[string]any); !ok || !anthropicStrict(m, false) {
					return false
				}
			}
		case "additionalProperties":
			if v != false && len(objectOf(s["properties"])) == 0 {
				return false // open to any key: closing it would refuse every argument
			}
		case "items":
			if m, ok := v.(map[string]any); !ok || !anthropicStrict(m, false) {
				return false
			}
		case "anyOf", "allOf":
			for _, sub := range asSlice(v) {
				if m, ok := sub.(map[string]any); !ok || !anthropicStrict(m, false) {
					return false
				}
			}
		case "enum":
			for _, e := range asSlice(v) {
				switch e.(type) {
				case map[string]any, []any:
					return false
				}
			}
		case "format":
			if f, _ := v.(string); !slices.Contains(anthropicFormats, f) {
				return false
			}
		case "minItems":
			if n, _ := v.(float64); n != 0 && n != 1 {
				return false
			}
		case "$ref":
			if r, _ := v.(string); !strings.HasPrefix(r, "#/$defs/") && !strings.HasPrefix(r, "#/definitions/") {
				return false
			}
		default:
			return false
		}
	}
	if isObject {
		_, declared := s["additionalProperties"]
		if _, shaped := s["properties"]; !declared && !shaped {
			return false // an object of any keys
		}
		s["additionalProperties"] = false
	}
	return true
}

// recursiveRef reports whether some definition reaches itself through `$ref`s.
func recursiveRef(defs map[string]any) bool {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(ref string) bool
	var refsIn func(v any, found func(string) bool) bool
	refsIn = func(v any, found func(string) bool) bool {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok && found(r) {
				return true
			}
			for _, sub := range v {
				if refsIn(sub, found) {
					return true
				}
			}
		case []any:
			for _, sub := range v {
				if refsIn(sub, found) {
					return true
				}
			}
		}
		return false
	}
	visit = func(ref string) bool {
		switch state[ref] {
		case visiting:
			return true
		case done:
			return false
		}
		state[ref] = visiting
		if refsIn(defs[ref], visit) {
			return true
		}
		state[ref] = done
		return false
	}
	for ref := range defs {
		if visit(ref) {
			return true
		}
	}
	return false
}

// objectOf returns v as a JSON object; nil when it is not one.
func objectOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
