package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
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

func validate(compiled *jsonschema.Schema, v any) (out []Violation) {
	doc, _, err := normalize(v)
	if err != nil {
		return []Violation{{Detail: err.Error()}}
	}
	defer func() {
		// A panic in the validator must not take the host down.
		if r := recover(); r != nil {
			out = []Violation{{Detail: "cannot be validated"}}
		}
	}()
	err = compiled.Validate(doc)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []Violation{{Detail: "cannot be validated"}}
	}
	collect(verr, &out)
	if len(out) == 0 {
		out = []Violation{{Detail: "does not match the schema"}}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Detail < out[j].Detail
	})
	return slices.Compact(out)
}

// collect turns a validation error tree into violations. The validator's own messages are not used: a message
// here is built only from the schema side of the error, never from the value. Errors that only group others
// (the root, a `$ref`, allOf) give way to their causes; anyOf and oneOf are reported as themselves, since the
// failures of their branches contradict each other.
func collect(e *jsonschema.ValidationError, out *[]Violation) {
	path := strings.Join(e.InstanceLocation, ".")
	kw := composing(e.SchemaURL)
	add := func(path, detail string) {
		switch {
		case kw == "":
		case strings.HasSuffix(detail, ")"):
			detail = detail[:len(detail)-1] + " in " + kw + ")"
		default:
			detail += " (" + kw + ")"
		}
		*out = append(*out, Violation{Path: path, Detail: detail})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			collect(c, out)
		}
		if len(e.Causes) == 0 {
			add(path, "does not match the schema")
		}
	case *kind.Required:
		for _, m := range k.Missing {
			add(joinPath(path, m), "is required")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			add(joinPath(path, p), "is not an allowed property")
		}
	case *kind.PropertyNames:
		add(joinPath(path, k.Property), "is not an allowed property name")
	case *kind.Dependency:
		if len(k.Missing) == 0 { // a schema dependency
			for _, c := range e.Causes {
				collect(c, out)
			}
			return
		}
		for _, m := range k.Missing {
			add(path, "requires property "+m)
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			add(path, "requires property "+m)
		}
	default:
		add(path, describe(e.ErrorKind))
	}
}

// composingKeywords are the keywords that apply subschemas to the same value: a copy of a schema that drops them
// (an LLM vendor's) lets through what they refuse, so a violation under one names it.
var composingKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true,
	"then": true, "else": true, "dependentSchemas": true, "dependencies": true}

// namingKeywords are followed in a schema location by a name, not a keyword.
var namingKeywords = map[string]bool{"properties": true, "patternProperties": true, "$defs": true,
	"definitions": true, "dependentSchemas": true, "dependencies": true}

// composing returns the last composing keyword on the way to the schema at url (its JSON pointer fragment), ""
// when there is none.
func composing(url string) string {
	_, frag, ok := strings.Cut(url, "#")
	if !ok {
		return ""
	}
	last, named := "", false
	for seg := range strings.SplitSeq(strings.TrimPrefix(frag, "/"), "/") {
		switch {
		case named:
			named = false
			continue
		case composingKeywords[seg]:
			last = seg
		}
		named = namingKeywords[seg]
	}
	return last
}

func joinPath(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

// describe words one failed keyword. Only the schema's side of it (a bound, an enum list, a pattern) appears.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be of type " + typeList(k.Want)
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.AnyOf:
		return "must match at least one of the allowed schemas (anyOf)"
	case *kind.OneOf:
		return "must match exactly one of the allowed schemas (oneOf)"
	case *kind.Not:
		return "must not match the excluded schema (not)"
	case *kind.Const:
		return "must equal the value the schema fixes (const)"
	case *kind.Enum:
		return "must be one of: " + jsonList(k.Want) // the schema's list; a failing value is never in it
	case *kind.AdditionalItems:
		return "must not have more items than the schema lists"
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.UniqueItems:
		return "must have unique items"
	case *kind.Contains:
		return "must contain at least one matching item"
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d matching items", k.Want)
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d matching items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties", k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.Minimum:
		return "must be greater than or equal to " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + ratString(k.Want)
	case *kind.Maximum:
		return "must be less than or equal to " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratString(k.Want)
	case *kind.ContentEncoding, *kind.ContentMediaType, *kind.ContentSchema:
		return "has content that does not match the schema"
	case *kind.InvalidJsonValue:
		return "is not representable as JSON"
	}
	return "is invalid"
}

// typeList renders the allowed types with "null" last ("integer or null"), as a nullable type is usually written.
func typeList(want []string) string {
	types := slices.Clone(want)
	if i := slices.Index(types, "null"); i >= 0 && len(types) > 1 {
		types = append(slices.Delete(types, i, i+1), "null")
	}
	return strings.Join(types, " or ")
}

// jsonList renders schema values as JSON, comma-separated: `"fast", "slow"`.
func jsonList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte("?")
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

// ratString renders a bound: an integer as written, else its shortest float form.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

var errNotFinite = errors.New("contains a number that is not finite")

// normalize returns v with every number as a json.Number, so that numeric keywords compare exact decimal values
// whatever Go type a number arrived as, and values of other Go types become decoded JSON. changed reports whether
// the result differs from v; maps and slices are copied only when something inside them changes.
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

// viaJSON converts any other Go value to decoded JSON: encode, then decode with UseNumber.
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
