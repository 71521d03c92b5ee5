// Package schema checks, compiles and applies the JSON Schemas of a tool (SPEC §2, §3.1): a manifest's settings,
// root, action and event parameters, and the parameters a backend takes from its source (an MCP tool's
// inputSchema, an OpenAPI operation).
//
// It is the only place that knows the validator, github.com/santhosh-tekuri/jsonschema/v6. Each schema is compiled
// in its dialect: the one its root `$schema` names, else Options.Dialect. Before a manifest's schema reaches the
// validator, Compile walks it: it reports unknown keywords (with a suggestion), malformed keyword values and every
// `$ref` that is not local, and it strips our extension keywords. A backend's schema (Options.Foreign) keeps what
// it says. The validator never loads anything: a reference that does not resolve within the schema is a problem.
// Each schema is compiled once; a *Schema is immutable and safe for concurrent use.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/commonagents-go/tool/field"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Options selects the rules Compile applies on top of JSON Schema.
type Options struct {
	// Parameters applies the SPEC §3.1 rules for a parameters or settings schema: the document must be an object
	// schema (`type: object` is implied when absent, a nil document is the empty object schema); a top-level
	// property without `default` is required and one with `default` is optional, unless the schema has an explicit
	// `required` array, which then decides.
	Parameters bool
	// Dialect is the dialect of a schema whose root has no `$schema`; the zero value is draft-07.
	Dialect Dialect
	// Foreign marks a schema a backend received from its source rather than one a manifest's author wrote: unknown
	// keywords are annotations rather than problems, identifiers (`$id`) and references that resolve within the
	// document are kept, and a default that does not validate is dropped rather than reported.
	Foreign bool
	// Against, when set, validates in place of the document's own compiled form: the document is a copy of the
	// schema shown to an LLM (simplified, references inlined) and Against the schema as its source wrote it,
	// compiled once per source (Document.Compile). The document is still checked and gives the properties; its
	// defaults are checked against Against. The properties' schemas are then the document's own, not copies (a
	// backend's schemas are large: Microsoft Graph's copies were 70 MB per Load): the caller gives the document
	// away and must not modify it.
	Against *Validator
}

// Schema is a checked and compiled JSON Schema. It is immutable and safe for concurrent use.
type Schema struct {
	doc        map[string]any // effective document; nil for a boolean schema
	dialect    Dialect
	uri        string // the root `$schema` as written; "" when absent
	compiled   *jsonschema.Schema
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
// Compile never performs I/O: a manifest's `$ref` that does not start with `#` is reported, and the validator is
// given a loader that refuses every URL.
func Compile(doc any, base *field.Path, opts Options) (*Schema, field.List) {
	if doc == nil && opts.Parameters {
		doc = map[string]any{}
	}
	key, cacheable := cacheKey(doc, opts)
	if cacheable {
		if s := cache.get(key); s != nil {
			return s, nil
		}
	}
	s, errs := compile(doc, base, opts)
	if s != nil && cacheable {
		cache.put(key, s)
	}
	return s, errs
}

func compile(doc any, base *field.Path, opts Options) (*Schema, field.List) {
	c := &compiler{base: base, draft: opts.Dialect, foreign: opts.Foreign, anchors: map[string]bool{}}
	c.detectDraft(doc)
	cleaned := c.schema(doc, base, roleRoot)
	if !c.foreign {
		c.resolveRefs(cleaned)
	}

	root, _ := cleaned.(map[string]any)
	written, _ := doc.(map[string]any)
	if opts.Parameters {
		c.checkParameters(doc)
	}
	s := &Schema{doc: root, dialect: c.draft, properties: properties(written, opts.Parameters, opts.Against == nil)}
	s.uri, _ = written["$schema"].(string)
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
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	if opts.Against != nil {
		// The fast check reads the document, which may say less than Against: every value goes to Against.
		s.compiled = opts.Against.compiled
		c.checkDefaults(nil, s)
		if len(c.errs) > 0 {
			return nil, c.errs
		}
		return s, nil
	}
	compiled, jc, err := c.compile(cleaned)
	if err != nil {
		return nil, field.List{field.Invalid(base, "is not a valid JSON Schema: %s", compileError(err))}
	}
	s.compiled = compiled
	c.checkDefaults(jc, s)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	s.fast = newTypeCheck(root)
	return s, nil
}

// rootURL is the base URI of every compiled schema. It names no reachable place: the loader refuses it anyway.
const rootURL = "urn:commonagents-go:tool:schema"

// compile hands a cleaned document to the validator, in a compiler of its own whose loader refuses every URL: only
// the document itself and the dialects' meta-schemas (built into the validator) are ever read.
func (c *compiler) compile(doc any) (*jsonschema.Schema, *jsonschema.Compiler, error) {
	v, err := canonical(doc)
	if err != nil {
		return nil, nil, err
	}
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(c.draft.draft())
	jc.UseLoader(refuseLoads{})
	if err := jc.AddResource(rootURL, v); err != nil {
		return nil, nil, err
	}
	s, err := jc.Compile(rootURL)
	return s, jc, err
}

// canonical returns doc as the validator reads JSON: doc itself when it is made of decoded-JSON types only, else
// doc encoded and decoded again.
func canonical(doc any) (any, error) {
	if plainJSON(doc) {
		return doc, nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// refuseLoads is the validator's URL loader: it loads nothing (SPEC §2: no fetching at load, no file reads).
type refuseLoads struct{}

var errNoLoad = errors.New("only references within the schema are followed")

// Load refuses every URL.
func (refuseLoads) Load(string) (any, error) { return nil, errNoLoad }

// compileError words a compile failure without the validator's internal base URI.
func compileError(err error) string {
	msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), documentURL, ""), rootURL, "")
	msg = strings.ReplaceAll(msg, "jsonschema: ", "")
	return msg
}

// checkDefaults validates each top-level default against its property's schema, compiled from the same document
// so that references inside the property resolve. A manifest's invalid default is a problem; a backend's is
// dropped (its server applies its own defaults).
func (c *compiler) checkDefaults(jc *jsonschema.Compiler, s *Schema) {
	props, _ := s.doc["properties"].(map[string]any)
	for i, p := range s.properties {
		if !p.HasDefault {
			continue
		}
		if _, ok := props[p.Name]; !ok {
			continue
		}
		// The root's compiled property schema, when it has one: compiling the pointer again would clone the
		// compiler's record of every subschema per default (Microsoft Graph: most of its load).
		compiled := s.compiled.Properties[p.Name]
		if compiled == nil && jc == nil {
			continue
		}
		if compiled == nil {
			ptr := strings.ReplaceAll(strings.ReplaceAll(p.Name, "~", "~0"), "/", "~1")
			var err error
			if compiled, err = jc.Compile(rootURL + "#/properties/" + url.PathEscape(ptr)); err != nil {
				continue // the property schema itself is broken: reported by the full compile
			}
		}
		vs := validate(compiled, p.Default)
		if len(vs) == 0 {
			continue
		}
		if c.foreign {
			s.properties[i].Default, s.properties[i].HasDefault = nil, false
			continue
		}
		c.errs.Add(field.Invalid(c.base.Child("properties").Key(p.Name).Child("default"),
			"does not validate against the property schema: %s", vs[0]))
	}
}

// properties lists the top-level properties of the schema as written, sorted by name.
// properties returns the top-level properties of doc; copied, their schemas and defaults are copies, else doc's own.
func properties(doc map[string]any, parameters, copied bool) []Property {
	cp := deepCopy
	if !copied {
		cp = func(v any) any { return v }
	}
	props, _ := doc["properties"].(map[string]any)
	explicit, hasExplicit := doc["required"].([]any)
	out := make([]Property, 0, len(props))
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := Property{Name: name}
		if ps, ok := props[name].(map[string]any); ok {
			p.Schema = cp(ps).(map[string]any)
			p.Default, p.HasDefault = ps["default"]
			p.Default = cp(p.Default)
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

// Doc returns the effective document the validator uses: extension keywords (`require_binding`, `x-*`), the root
// `$schema` and, in a manifest's schema, non-anchor `$id`s removed, and with Options.Parameters the computed
// `required` and `type: object` added. It is nil for a boolean schema. Callers must not mutate it.
func (s *Schema) Doc() map[string]any { return s.doc }

// Dialect returns the dialect the schema was compiled in.
func (s *Schema) Dialect() Dialect { return s.dialect }

// SchemaURI returns the root `$schema` as written, "" when the schema names no dialect.
func (s *Schema) SchemaURI() string { return s.uri }

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
