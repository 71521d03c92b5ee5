// Package schema checks, compiles and applies the JSON Schemas in a tool manifest (SPEC §2, §3.1): settings, root
// parameters, action parameters and event parameters.
//
// It is the only place that knows github.com/xeipuuv/gojsonschema. Before a document reaches it, Compile walks the
// schema itself: it reports unknown keywords (with a suggestion), malformed keyword values and every `$ref` that is
// not local — gojsonschema would fetch remote and file references at compile time — and it strips our extension
// keywords. Each schema is compiled once; a *Schema is immutable and safe for concurrent use.
package schema

import (
	"maps"
	"slices"
	"sort"

	"github.com/commonagents-go/tool/field"
	"github.com/xeipuuv/gojsonschema"
)

// Options selects the rules Compile applies on top of JSON Schema.
type Options struct {
	// Parameters applies the SPEC §3.1 rules for a parameters or settings schema: the document must be an object
	// schema (`type: object` is implied when absent, a nil document is the empty object schema); a top-level
	// property without `default` is required and one with `default` is optional, unless the schema has an explicit
	// `required` array, which then decides.
	Parameters bool
}

// Schema is a checked and compiled JSON Schema. It is immutable and safe for concurrent use.
type Schema struct {
	doc        map[string]any // effective document; nil for a boolean schema
	compiled   *gojsonschema.Schema
	properties []Property // sorted by name
	fast       *typeCheck // nil unless the schema only constrains property types
}

// Property describes one top-level property of a schema.
type Property struct {
	Name           string
	Schema         map[string]any // the property's own schema as written (a copy); nil for a boolean schema
	Required       bool           // per SPEC §3.1
	Default        any
	HasDefault     bool
	RequireBinding bool // `require_binding: true`
	Secret         bool // `format: password` or `writeOnly: true`
}

// Compile checks doc, a decoded JSON document (map[string]any, []any, string, bool, json.Number or other Go
// numbers, nil), and compiles it once. Every problem is reported, each at its path under base (for example
// "actions[2].parameters.properties.count.type"). When there is any problem the Schema is nil.
// Compile never performs I/O: a `$ref` that does not start with `#` is reported and the document is not compiled.
func Compile(doc any, base *field.Path, opts Options) (*Schema, field.List) {
	if doc == nil && opts.Parameters {
		doc = map[string]any{}
	}
	c := &compiler{base: base, draft: gojsonschema.Draft7, anchors: map[string]bool{}}
	c.detectDraft(doc)
	cleaned := c.schema(doc, base, roleRoot)
	c.resolveRefs(cleaned)

	root, _ := cleaned.(map[string]any)
	written, _ := doc.(map[string]any)
	if opts.Parameters {
		c.checkParameters(doc)
	}
	s := &Schema{doc: root, properties: properties(written, opts.Parameters)}
	if opts.Parameters && root != nil {
		if _, explicit := written["required"]; !explicit {
			if names := s.requiredNames(); len(names) > 0 {
				root["required"] = names
			}
		}
		if _, ok := root["type"]; !ok {
			root["type"] = "object"
		}
	}
	if !c.unsafe {
		c.checkDefaults(root, s.properties)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	compiled, err := c.compile(cleaned)
	if err != nil {
		return nil, field.List{field.Invalid(base, "is not a valid JSON Schema: %v", err)}
	}
	s.compiled = compiled
	s.fast = newTypeCheck(root)
	return s, nil
}

// compile hands a cleaned document to gojsonschema. Each document needs its own SchemaLoader: a loader refuses a
// second root schema. NewGoLoader re-encodes the document, so gojsonschema's in-place rewriting of `$ref`s never
// touches ours.
func (c *compiler) compile(doc any) (*gojsonschema.Schema, error) {
	loader := gojsonschema.NewSchemaLoader()
	loader.Draft = c.draft
	loader.AutoDetect = false
	loader.Validate = false
	return loader.Compile(gojsonschema.NewGoLoader(doc))
}

// properties lists the top-level properties of the schema as written, sorted by name.
func properties(doc map[string]any, parameters bool) []Property {
	props, _ := doc["properties"].(map[string]any)
	explicit, hasExplicit := doc["required"].([]any)
	out := make([]Property, 0, len(props))
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := Property{Name: name}
		if ps, ok := props[name].(map[string]any); ok {
			p.Schema = deepCopy(ps).(map[string]any)
			p.Default, p.HasDefault = ps["default"]
			p.Default = deepCopy(p.Default)
			p.RequireBinding = ps["require_binding"] == true
			p.Secret = ps["format"] == "password" || ps["writeOnly"] == true
		}
		switch {
		case hasExplicit:
			p.Required = containsString(explicit, name)
		case parameters:
			// `x: false` forbids x: requiring it too would make every call fail.
			p.Required = !p.HasDefault && props[name] != false
		}
		out = append(out, p)
	}
	return out
}

func (s *Schema) requiredNames() []any {
	var names []any
	for _, p := range s.properties {
		if p.Required {
			names = append(names, p.Name)
		}
	}
	return names
}

// Properties returns the top-level properties sorted by name. The caller must not mutate the result.
func (s *Schema) Properties() []Property { return s.properties }

// Property returns the top-level property called name.
func (s *Schema) Property(name string) (Property, bool) {
	i := sort.Search(len(s.properties), func(i int) bool { return s.properties[i].Name >= name })
	if i < len(s.properties) && s.properties[i].Name == name {
		return s.properties[i], true
	}
	return Property{}, false
}

// Doc returns the effective document the validator uses: extension keywords (`require_binding`, `x-*`), `$schema`
// and non-anchor `$id`s removed, and with Options.Parameters the computed `required` and `type: object` added.
// It is nil for a boolean schema. Callers must not mutate it.
func (s *Schema) Doc() map[string]any { return s.doc }

// ApplyDefaults returns a shallow copy of obj in which every top-level property that is absent and has a default
// is set to a copy of that default. obj itself is never modified; a nil obj yields a map of the defaults.
func (s *Schema) ApplyDefaults(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj)+len(s.properties))
	for k, v := range obj {
		out[k] = v
	}
	for _, p := range s.properties {
		if _, ok := out[p.Name]; !ok && p.HasDefault {
			out[p.Name] = deepCopy(p.Default)
		}
	}
	return out
}

// deepCopy copies maps and slices of a decoded JSON value; scalars are shared. Values of other types are
// returned as they are.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

func containsString(list []any, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
