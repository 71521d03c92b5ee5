package openapi

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// shape is the set of JSON kinds a parameter's schema allows, for its serialization style: a schema may mix them
// (Stripe's created is anyOf [object, integer]); the value's own kind decides at run time.
type shape uint8

const (
	primitive shape = 1 << iota
	array
	object
)

// shapeOf reads the kinds a schema allows from its type and, when it has none, from its anyOf, oneOf and allOf
// branches; a schema that says nothing is primitive.
func shapeOf(s *openapi3.Schema) shape {
	if s == nil {
		return primitive
	}
	var out shape
	for _, t := range s.Type.Slice() {
		switch t {
		case openapi3.TypeArray:
			out |= array
		case openapi3.TypeObject:
			out |= object
		case openapi3.TypeNull:
		default:
			out |= primitive
		}
	}
	if len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil {
		out |= object
	}
	if out != 0 {
		return out
	}
	for _, list := range []openapi3.SchemaRefs{s.AnyOf, s.OneOf, s.AllOf} {
		for _, r := range list {
			if r != nil && r.Value != nil {
				out |= shapeOf(r.Value)
			}
		}
	}
	if out == 0 {
		return primitive
	}
	return out
}

func (s shape) String() string {
	var names []string
	for _, k := range []struct {
		s    shape
		name string
	}{{primitive, "primitive"}, {array, "array"}, {object, "object"}} {
		if s&k.s != 0 {
			names = append(names, k.name)
		}
	}
	return strings.Join(names, " or ")
}

// objectKeys returns the property names an object parameter's schema declares (in it and its anyOf, oneOf and
// allOf branches) and whether it explicitly allows more: additionalProperties true or a schema, or
// patternProperties. An absent additionalProperties allows nothing more here, because the keys of an exploded
// object become query parameters (an LLM must not add "admin=true").
func objectKeys(s *openapi3.Schema, keys map[string]bool) (open bool) {
	if s == nil {
		return false
	}
	for name := range s.Properties {
		keys[name] = true
	}
	if ap := s.AdditionalProperties; ap.Schema != nil || ap.Has != nil && *ap.Has {
		open = true
	}
	for _, list := range []openapi3.SchemaRefs{s.AnyOf, s.OneOf, s.AllOf} {
		for _, r := range list {
			if r != nil && r.Value != nil && objectKeys(r.Value, keys) {
				open = true
			}
		}
	}
	return open
}

// supported accepts the serialization styles Invoke implements (OpenAPI 3 "Style Values").
func supported(p *param, sh shape) error {
	ok := false
	switch p.in + "/" + p.style {
	case "path/simple", "path/label", "path/matrix", "header/simple", "query/form":
		ok = true
	case "query/spaceDelimited", "query/pipeDelimited":
		ok = sh&object == 0
	case "query/deepObject":
		// A primitive in deepObject style (Stripe's on_behalf_of) is sent as name=value.
		ok = true
	case "cookie/form":
		ok = sh&object == 0
	}
	if !ok {
		return fmt.Errorf("%s parameter %q has style %s for a %s value, which OpenAPI does not define", p.in, p.name,
			p.style, sh)
	}
	return nil
}

// checkObject refuses an object value with a key its parameter's schema does not declare (unless the schema
// explicitly allows more), or, for an exploded form object whose keys become query parameters, a key that another
// parameter of the operation or the base URL's query already uses.
func (a *Action) checkObject(p *param, v map[string]any, baseQuery url.Values) *runtime.Error {
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if !p.open && !p.keys[k] {
			return runtime.Errorf(runtime.KindInvalidArguments,
				"parameter %s: key %q is not a property its schema declares (%s)", p.arg, k, strings.Join(slices.Sorted(maps.Keys(p.keys)), ", "))
		}
		if p.in == "query" && p.style == "form" && p.explode {
			if _, taken := baseQuery[k]; taken || a.queryNames[k] && k != p.name {
				return runtime.Errorf(runtime.KindInvalidArguments,
					"parameter %s: key %q is the name of another query parameter of the operation", p.arg, k)
			}
		}
	}
	return nil
}

// appendQuery adds the query pairs of one parameter: form (exploded or not), spaceDelimited, pipeDelimited and
// deepObject, the value's kind choosing among the forms its schema allows.
func appendQuery(query []string, p *param, v any) []string {
	name := url.QueryEscape(p.name)
	switch v := v.(type) {
	case []any:
		if p.style == "deepObject" {
			return nest(query, p.name, v)
		}
		items := make([]string, len(v))
		for i, e := range v {
			items[i] = url.QueryEscape(interp.Text(e))
		}
		if p.explode {
			for _, item := range items {
				query = append(query, name+"="+item)
			}
			return query
		}
		sep := map[string]string{"spaceDelimited": "%20", "pipeDelimited": "%7C"}[p.style]
		if sep == "" {
			sep = ","
		}
		return append(query, name+"="+strings.Join(items, sep))
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		switch {
		case p.style == "deepObject":
			return nest(query, p.name, v)
		case p.explode:
			for _, k := range keys {
				query = append(query, url.QueryEscape(k)+"="+url.QueryEscape(interp.Text(v[k])))
			}
			return query
		}
		items := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			items = append(items, url.QueryEscape(k), url.QueryEscape(interp.Text(v[k])))
		}
		return append(query, name+"="+strings.Join(items, ","))
	}
	return append(query, name+"="+url.QueryEscape(interp.Text(v)))
}

// nest appends v under prefix in the bracket form Rails, PHP and Stripe read (and OpenAPI's deepObject): objects
// as prefix[key], arrays of primitives as prefix[]=a, other arrays as prefix[0][key]; keys are sorted, so the
// output is deterministic. Empty objects and arrays add nothing.
func nest(pairs []string, prefix string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			pairs = nest(pairs, prefix+"["+k+"]", v[k])
		}
		return pairs
	case []any:
		flat := true
		for _, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				flat = false
			}
		}
		for i, e := range v {
			if flat {
				pairs = nest(pairs, prefix+"[]", e)
			} else {
				pairs = nest(pairs, prefix+"["+strconv.Itoa(i)+"]", e)
			}
		}
		return pairs
	}
	return append(pairs, url.QueryEscape(prefix)+"="+url.QueryEscape(interp.Text(v)))
}

// pathValue renders a path parameter in its style (simple, label or matrix) as escaped path text; it returns why
// it cannot: an empty value, or one with a "." or ".." piece between its slashes (SPEC §4.4).
func pathValue(p *param, v any) (string, string) {
	esc := url.PathEscape
	var items []string // escaped
	pairs := false     // items alternate key and value
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			items = append(items, esc(interp.Text(e)))
		}
	case map[string]any:
		pairs = true
		for _, k := range slices.Sorted(maps.Keys(v)) {
			items = append(items, esc(k), esc(interp.Text(v[k])))
		}
	default:
		text := interp.Text(v)
		if text == "" && p.style == "simple" {
			return "", "a path parameter must not be empty"
		}
		if dotPiece(text) {
			return "", "a path parameter must not have a \".\" or \"..\" piece between slashes"
		}
		items = []string{esc(text)}
	}
	seg := styled(p, items, pairs, esc)
	if seg == "" {
		return "", "a path parameter must not be empty"
	}
	if decoded, err := url.PathUnescape(seg); err != nil || dotPiece(decoded) {
		return "", "a path parameter must not have a \".\" or \"..\" piece between slashes"
	}
	return seg, ""
}

// styled joins escaped items in the path style of p (RFC 6570 as OpenAPI uses it).
func styled(p *param, items []string, pairs bool, esc func(string) string) string {
	join := func(sep, kv string) string {
		if !pairs {
			return strings.Join(items, sep)
		}
		parts := make([]string, 0, len(items)/2)
		for i := 0; i+1 < len(items); i += 2 {
			parts = append(parts, items[i]+kv+items[i+1])
		}
		return strings.Join(parts, sep)
	}
	switch p.style {
	case "label":
		if p.explode {
			return "." + join(".", "=")
		}
		return "." + strings.Join(items, ",")
	case "matrix":
		name := esc(p.name)
		switch {
		case p.explode && pairs:
			return ";" + join(";", "=")
		case p.explode:
			out := ""
			for _, it := range items {
				out += ";" + name + "=" + it
			}
			return out
		}
		return ";" + name + "=" + strings.Join(items, ",")
	}
	if p.explode {
		return join(",", "=")
	}
	return strings.Join(items, ",")
}
