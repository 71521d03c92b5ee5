package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xeipuuv/gojsonschema"
)

// Violation is one way a value fails a schema. Detail never contains the offending value, so a violation can be
// shown, logged or sent to an LLM even when the value is a secret.
type Violation struct {
	Path   string // dotted path of the failing value, e.g. "count" or "items.0.name"; "" is the value itself
	Detail string // e.g. "is required", "must be of type integer", "must be less than or equal to 100"
}

// String renders "path: detail", or just the detail for the value itself.
func (v Violation) String() string {
	if v.Path == "" {
		return v.Detail
	}
	return v.Path + ": " + v.Detail
}

// Satisfied reports whether obj certainly satisfies the schema when its properties that the schema does not
// declare are ignored. It answers from a fast type check and returns false whenever it cannot tell; callers
// then validate the properly restricted object with Validate.
func (s *Schema) Satisfied(obj map[string]any) bool {
	return s.fast != nil && s.fast.valid(obj)
}

// Validate checks v, a decoded JSON value, and returns every violation sorted by path (nil when v is valid).
// Numbers may be json.Number or any Go integer or float type; maps and slices of other Go types are converted
// through encoding/json. Validate is safe for concurrent use.
func (s *Schema) Validate(v any) []Violation {
	if s.fast != nil && s.fast.valid(v) {
		return nil
	}
	return validate(s.compiled, v)
}

func validate(compiled *gojsonschema.Schema, v any) (out []Violation) {
	doc, _, err := normalize(v)
	if err != nil {
		return []Violation{{Detail: err.Error()}}
	}
	defer func() {
		// gojsonschema is not ours to trust on every input; a panic in it must not take the host down.
		if r := recover(); r != nil {
			out = []Violation{{Detail: "cannot be validated"}}
		}
	}()
	res, err := compiled.Validate(gojsonschema.NewRawLoader(doc))
	if err != nil {
		return []Violation{{Detail: "cannot be validated"}}
	}
	if res.Valid() {
		return nil
	}
	for _, e := range res.Errors() {
		out = append(out, violation(e))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Detail < out[j].Detail
	})
	return slices.Compact(out)
}

// violation turns a gojsonschema error into a Violation. gojsonschema's own descriptions are not used: the
// messages here are built only from the schema side of the error details, never from the value.
func violation(e gojsonschema.ResultError) Violation {
	path := e.Field()
	if path == "(root)" {
		path = ""
	}
	d := e.Details()
	switch e.Type() {
	case "required", "additional_property_not_allowed", "invalid_property_name":
		// These are reported at the object; the property they name is the better path.
		if prop, ok := d["property"].(string); ok {
			path = joinPath(path, prop)
		}
	}
	return Violation{Path: path, Detail: describe(e.Type(), d)}
}

func joinPath(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

func describe(typ string, d gojsonschema.ErrorDetails) string {
	switch typ {
	case "required":
		return "is required"
	case "invalid_type":
		return "must be of type " + typeList(d["expected"])
	case "false":
		return "is not allowed"
	case "additional_property_not_allowed":
		return "is not an allowed property"
	case "invalid_property_name":
		return "is not an allowed property name"
	case "missing_dependency":
		return fmt.Sprintf("requires property %v", d["dependency"])
	case "number_any_of":
		return "must match at least one of the allowed schemas (anyOf)"
	case "number_one_of":
		return "must match exactly one of the allowed schemas (oneOf)"
	case "number_all_of":
		return "must match all of the schemas (allOf)"
	case "number_not":
		return "must not match the excluded schema (not)"
	case "condition_then":
		return "must match the \"then\" schema"
	case "condition_else":
		return "must match the \"else\" schema"
	case "const":
		return "must equal the value the schema fixes (const)"
	case "enum":
		return fmt.Sprintf("must be one of: %v", d["allowed"]) // the schema's list; a failing value is never in it
	case "array_no_additional_items":
		return "must not have more items than the schema lists"
	case "array_min_items":
		return fmt.Sprintf("must have at least %v items", d["min"])
	case "array_max_items":
		return fmt.Sprintf("must have at most %v items", d["max"])
	case "unique":
		return "must have unique items"
	case "contains":
		return "must contain at least one matching item"
	case "array_min_properties":
		return fmt.Sprintf("must have at least %v properties", d["min"])
	case "array_max_properties":
		return fmt.Sprintf("must have at most %v properties", d["max"])
	case "string_gte":
		return fmt.Sprintf("must be at least %v characters long", d["min"])
	case "string_lte":
		return fmt.Sprintf("must be at most %v characters long", d["max"])
	case "pattern":
		return fmt.Sprintf("must match the pattern %v", d["pattern"])
	case "format":
		return fmt.Sprintf("must be a valid %v", d["format"])
	case "multiple_of":
		return fmt.Sprintf("must be a multiple of %v", d["multiple"])
	case "number_gte":
		return fmt.Sprintf("must be greater than or equal to %v", d["min"])
	case "number_gt":
		return fmt.Sprintf("must be greater than %v", d["min"])
	case "number_lte":
		return fmt.Sprintf("must be less than or equal to %v", d["max"])
	case "number_lt":
		return fmt.Sprintf("must be less than %v", d["max"])
	default:
		return "is invalid"
	}
}

// typeList renders gojsonschema's "integer" or "[integer,null]" as "integer" or "integer or null".
func typeList(expected any) string {
	s, _ := expected.(string)
	return strings.ReplaceAll(strings.Trim(s, "[]"), ",", " or ")
}

var errNotFinite = errors.New("contains a number that is not finite")

// normalize returns v with every number as a json.Number, the only form for which gojsonschema applies numeric
// keywords (with float64 it silently skips them). changed reports whether the result differs from v; maps and
// slices are copied only when something inside them changes.
func normalize(v any) (out any, changed bool, err error) {
	switch t := v.(type) {
	case nil, bool, string:
		return v, false, nil
	case json.Number:
		if !isJSONNumber(string(t)) {
			return nil, false, errors.New("contains a malformed number")
		}
		return v, false, nil
	case float64:
		return floatNumber(t, 64)
	case float32:
		return floatNumber(float64(t), 32)
	case int, int8, int16, int32, int64:
		return json.Number(strconv.FormatInt(reflect.ValueOf(t).Int(), 10)), true, nil
	case uint, uint8, uint16, uint32, uint64:
		return json.Number(strconv.FormatUint(reflect.ValueOf(t).Uint(), 10)), true, nil
	case map[string]any:
		var copied map[string]any
		for k, e := range t {
			ne, ch, err := normalize(e)
			if err != nil {
				return nil, false, err
			}
			if ch {
				if copied == nil {
					copied = maps.Clone(t)
				}
				copied[k] = ne
			}
		}
		if copied == nil {
			return t, false, nil
		}
		return copied, true, nil
	case []any:
		var copied []any
		for i, e := range t {
			ne, ch, err := normalize(e)
			if err != nil {
				return nil, false, err
			}
			if ch {
				if copied == nil {
					copied = slices.Clone(t)
				}
				copied[i] = ne
			}
		}
		if copied == nil {
			return t, false, nil
		}
		return copied, true, nil
	default:
		return viaJSON(v)
	}
}

func floatNumber(f float64, bits int) (any, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false, errNotFinite
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits)), true, nil
}

// viaJSON converts any other Go value the way gojsonschema's NewGoLoader does: encode, then decode with UseNumber.
func viaJSON(v any) (any, bool, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false, errors.New("is not representable as JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, false, errors.New("is not representable as JSON")
	}
	return out, true, nil
}

// isJSONNumber reports whether s follows the JSON number grammar (RFC 8259 §6).
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
