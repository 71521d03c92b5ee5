package schema

import (
	"encoding/json"
	"math"
	"strings"
)

// typeCheck is a shortcut for the most common parameters schema: an object whose properties constrain nothing
// but their JSON type. For such a schema a valid value can be recognised without the validator, which costs
// microseconds per call on the Invoke hot path. It only ever answers "valid"; anything else — a violation, a
// value of an unusual Go type, a number whose integer-ness needs care — goes to the validator, so messages and
// edge cases stay exactly the validator's.
type typeCheck struct {
	required []string
	types    map[string]string // property → its one JSON type; "" accepts any value
}

// annotations are keywords that never make a value invalid.
var annotations = map[string]bool{"description": true, "title": true, "$comment": true, "examples": true,
	"default": true}

// newTypeCheck returns the shortcut for the effective document doc, or nil when doc is not that simple.
func newTypeCheck(doc map[string]any) *typeCheck {
	if doc == nil || doc["type"] != "object" {
		return nil
	}
	tc := &typeCheck{types: map[string]string{}}
	for k, v := range doc {
		switch {
		case k == "type" || annotations[k]:
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, n := range list {
				name, ok := n.(string)
				if !ok {
					return nil
				}
				tc.required = append(tc.required, name)
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range props {
				t, ok := simpleType(p)
				if !ok {
					return nil
				}
				tc.types[name] = t
			}
		default:
			return nil
		}
	}
	return tc
}

// simpleType returns the one JSON type a property schema allows ("" for any) when it constrains nothing else.
func simpleType(p any) (string, bool) {
	m, ok := p.(map[string]any)
	if !ok {
		return "", false
	}
	t := ""
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "type":
			s, ok := v.(string)
			if !ok {
				return "", false
			}
			t = s
		default:
			return "", false
		}
	}
	return t, true
}

// valid reports whether v certainly satisfies the schema; false means "ask the validator".
func (tc *typeCheck) valid(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, name := range tc.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, value := range obj {
		if t, declared := tc.types[name]; declared && t != "" && !hasType(value, t) {
			return false
		}
		if !plainJSON(value) {
			return false
		}
	}
	return true
}

// hasType reports whether v is certainly of JSON type t.
func hasType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		switch n := v.(type) {
		case json.Number:
			return isJSONNumber(string(n))
		case float64:
			return !math.IsNaN(n) && !math.IsInf(n, 0)
		case int, int64, int32:
			return true
		}
	case "integer":
		switch n := v.(type) {
		case json.Number:
			return isJSONNumber(string(n)) && !strings.ContainsAny(string(n), ".eE")
		case float64:
			return n == math.Trunc(n) && math.Abs(n) < 1e15
		case int, int64, int32:
			return true
		}
	}
	return false
}

// plainJSON reports whether v is made only of the decoded-JSON types the validator reads as they are.
func plainJSON(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, int, int64, int32:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		return isJSONNumber(string(x))
	case []any:
		for _, e := range x {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}
