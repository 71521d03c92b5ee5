package schema

import (
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"
)

// typeCheck is a shortcut for the most common parameters schema: an object whose properties constrain nothing
// but their JSON type, numeric bounds and string lengths. For such a schema a valid value can be recognised
// without the validator, which costs microseconds per call on the Invoke hot path (it compares numbers as exact
// rationals). It only ever answers "valid"; anything else — a violation, a value of an unusual Go type, a number
// equal to a bound — goes to the validator, so messages and edge cases stay exactly the validator's.
type typeCheck struct {
	required []string
	props    map[string]propCheck
}

// propCheck is what a property's schema asks of its value.
type propCheck struct {
	typ            string // its one JSON type; "" accepts any
	min, max       *float64
	exMin, exMax   *float64
	minLen, maxLen int // -1: no bound
}

// annotations are keywords that never make a value invalid.
var annotations = map[string]bool{"description": true, "title": true, "$comment": true, "examples": true,
	"default": true}

// newTypeCheck returns the shortcut for the effective document doc, or nil when doc is not that simple.
func newTypeCheck(doc map[string]any) *typeCheck {
	if doc == nil || doc["type"] != "object" {
		return nil
	}
	tc := &typeCheck{props: map[string]propCheck{}}
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
				pc, ok := simpleProperty(p)
				if !ok {
					return nil
				}
				tc.props[name] = pc
			}
		default:
			return nil
		}
	}
	return tc
}

// simpleProperty returns what a property schema asks when it constrains nothing but its one JSON type, numeric
// bounds and string lengths.
func simpleProperty(p any) (propCheck, bool) {
	pc := propCheck{minLen: -1, maxLen: -1}
	m, ok := p.(map[string]any)
	if !ok {
		return pc, false
	}
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "type":
			s, ok := v.(string)
			if !ok {
				return pc, false
			}
			pc.typ = s
		case k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum":
			f, ok := number(v) // a draft-04 boolean exclusive bound is not a number: no shortcut
			if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
				return pc, false
			}
			switch k {
			case "minimum":
				pc.min = &f
			case "maximum":
				pc.max = &f
			case "exclusiveMinimum":
				pc.exMin = &f
			default:
				pc.exMax = &f
			}
		case k == "minLength" || k == "maxLength":
			f, ok := number(v)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
				return pc, false
			}
			if k == "minLength" {
				pc.minLen = int(f)
			} else {
				pc.maxLen = int(f)
			}
		default:
			return pc, false
		}
	}
	return pc, true
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
		if pc, declared := tc.props[name]; declared && !pc.valid(value) {
			return false
		}
		if !plainJSON(value) {
			return false
		}
	}
	return true
}

// valid reports whether value certainly satisfies the property's checks. A number is compared as the float64
// nearest to it, strictly: rounding to nearest is monotonic, so float(v) > float(b) implies v > b, while a value
// that rounds equal to a bound goes to the validator.
func (pc propCheck) valid(value any) bool {
	if pc.typ != "" && !hasType(value, pc.typ) {
		return false
	}
	if s, ok := value.(string); ok && (pc.minLen >= 0 || pc.maxLen >= 0) {
		n := utf8.RuneCountInString(s)
		if pc.minLen >= 0 && n < pc.minLen || pc.maxLen >= 0 && n > pc.maxLen {
			return false
		}
	}
	if pc.min == nil && pc.max == nil && pc.exMin == nil && pc.exMax == nil {
		return true
	}
	if !hasType(value, "number") {
		_, isString := value.(string)
		_, isBool := value.(bool)
		return isString || isBool || value == nil || isCollection(value) // numeric bounds apply to numbers only
	}
	f, ok := finiteNumber(value)
	if !ok {
		return false // e.g. 1e999: the validator says why
	}
	for _, lower := range []*float64{pc.min, pc.exMin} {
		if lower != nil && !(f > *lower) {
			return false
		}
	}
	for _, upper := range []*float64{pc.max, pc.exMax} {
		if upper != nil && !(f < *upper) {
			return false
		}
	}
	return true
}

func isCollection(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}

// finiteNumber returns the float64 nearest to a finite number value.
func finiteNumber(v any) (float64, bool) {
	if n, ok := v.(json.Number); ok && !isJSONNumber(string(n)) {
		return 0, false
	}
	f, ok := number(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
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
