package openapi

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxSchemaNodes bounds the schemas of one operation shown to the LLM once every $ref is inlined: past it, deeper
// levels are shown as {} (convert).
const maxSchemaNodes = 20000

// maxWholeNodes and maxWholeBytes bound the full schema an operation's arguments are validated against when the
// schema shown is bounded: past them the operation is skipped with the reason.
const (
	maxWholeNodes = 200000
	maxWholeBytes = 8 << 20
)

// tooLargeError says an operation's schema is over a bound.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string { return e.msg }

// converter turns OpenAPI 3.0 and 3.1 schemas, with every $ref already resolved by kin-openapi, into the JSON
// Schema documents action parameters are (SPEC §3.1).
//
// For OpenAPI 3.0 (and a 3.1 document in draft-07 or earlier) the result is draft-07: `nullable: true`
// becomes a type list with "null" (without a type, anyOf the schema and {type: null}), 3.0's boolean exclusive
// bounds become numbers, prefixItems becomes a list of items, dependentRequired and dependentSchemas become
// dependencies, and what draft-07 does not know (discriminator, xml, externalDocs, unevaluated*, $defs, $id,
// $anchor, $dynamicRef) is left out. A schema met again inside itself (a recursive $ref) becomes `{}`, any value,
// with its description kept.
//
// For OpenAPI 3.1 in 2020-12 or 2019-09 (modern) the keywords of those dialects stay (prefixItems,
// unevaluatedProperties, unevaluatedItems, dependentRequired, dependentSchemas, minContains, maxContains; in
// 2019-09 prefixItems is written as a list of items), and a recursive $ref becomes a reference to the schema in the
// operation's `$defs` (defs), so it still validates.
type converter struct {
	modern    bool
	items2019 bool // modern, in 2019-09: prefixItems is written as items: [...]
	stack     []*openapi3.Schema
	nodes     int
	maxNodes  int
	maxBytes  int
	maxDepth  int // > 0: schemas deeper than this become {} with their description (depthCut)
	// refs keeps each schema the document names ($ref) once, in defs, and refers to it: the full schema a bounded
	// one is validated against, whose inlined form could be over any size (a validator compiles a shared component
	// once, not once per use).
	refs     bool
	refNames map[*openapi3.Schema]string
	cut      bool // a schema was cut at maxDepth
	err      error
	defs     map[string]any              // modern: recursive schemas, by the name their references use
	names    map[*openapi3.Schema]string // modern: the name of each recursive schema in defs
	// cache, for draft-07 schemas shown to the LLM: the schema an operation's parameter or body names is taken
	// from it, converted once for every operation (shownCache), and its size is known without encoding it.
	cache *shownCache
	size  int       // with cache: the bytes of the schemas taken from it so far
	last  rootValue // with cache: what root returned last
	// kids, when set, makes ref collect each subschema and return a hole (shownCache.own).
	kids *[]*openapi3.Schema
	// guard stops the conversion once lower, a lower bound of the JSON bytes of what it built, is over maxBytes:
	// a root converted for the cache without a depth bound (shownCache.build) costs at most about the bound.
	guard bool
	lower int
}

// recursion returns what stands for s met again inside itself.
func (c *converter) recursion(s *openapi3.Schema) map[string]any {
	if c.modern {
		name, ok := c.names[s]
		if !ok {
			if c.names == nil {
				c.names, c.defs = map[*openapi3.Schema]string{}, map[string]any{}
			}
			name = fmt.Sprintf("r%d", len(c.names)+1)
			c.names[s] = name
			c.defs[name] = map[string]any{} // filled once s is converted
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	out := map[string]any{}
	if s.Description != "" {
		out["description"] = s.Description
	}
	return out
}

func (c *converter) ref(r *openapi3.SchemaRef) any {
	if r == nil || r.Value == nil {
		return map[string]any{}
	}
	switch {
	case c.kids != nil:
		*c.kids = append(*c.kids, r.Value)
		return hole{}
	case c.refs && r.Ref != "" && r.Value.Always == nil:
		return c.shared(r)
	case c.cache != nil && len(c.stack) == 0:
		return c.root(r.Value)
	}
	return c.schema(r.Value)
}

// shared converts a named schema once into defs and returns a reference to it.
func (c *converter) shared(r *openapi3.SchemaRef) map[string]any {
	name, ok := c.refNames[r.Value]
	if !ok {
		if c.refNames == nil {
			c.refNames = map[*openapi3.Schema]string{}
		}
		if c.defs == nil {
			c.defs = map[string]any{}
		}
		base := r.Ref[strings.LastIndexAny(r.Ref, "/#")+1:]
		name = fmt.Sprintf("s%d_%s", len(c.refNames)+1, strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				return r
			}
			return '_'
		}, base))
		c.refNames[r.Value] = name
		c.defs[name] = map[string]any{}
		saved := c.stack
		c.stack = nil // a reference ends recursion: the named schema is converted at the root of defs
		c.defs[name] = c.schema(r.Value)
		c.stack = saved
	}
	return map[string]any{"$ref": "#/" + c.defsKey() + "/" + name}
}

// defsKey is the keyword defs go under: $defs in 2019-09 and 2020-12, definitions in draft-07, whose validators
// know that keyword's subschemas in advance (santhosh's compiler clones its records for each one it does not).
func (c *converter) defsKey() string {
	if c.modern {
		return "$defs"
	}
	return "definitions"
}

// newConverter returns a converter for schemas in dialect (schemaDialect) within the given bounds; maxDepth 0 is
// no depth bound.
func newConverter(dialect string, maxNodes, maxBytes, maxDepth int) *converter {
	return &converter{modern: dialect != "" && modernDialect(dialect), items2019: strings.Contains(dialect, "2019-09"),
		maxNodes: maxNodes, maxBytes: maxBytes, maxDepth: maxDepth}
}

func (c *converter) schema(s *openapi3.Schema) any {
	limit := c.maxNodes
	if limit == 0 {
		limit = maxSchemaNodes
	}
	if c.nodes++; c.nodes > limit {
		c.err = &tooLargeError{fmt.Sprintf("its schemas expand into more than %d nodes once $refs are inlined", limit)}
		return map[string]any{}
	}
	if c.guard {
		if c.lower = addSize(c.lower, lowerSize(s)); c.lower > c.maxBytes {
			c.err = &tooLargeError{fmt.Sprintf("its parameters schema is over the %d-byte bound", c.maxBytes)}
			return map[string]any{}
		}
	}
	if s.Always != nil {
		return *s.Always
	}
	if c.maxDepth > 0 && len(c.stack) >= c.maxDepth {
		return c.depthCut(s)
	}
	for _, seen := range c.stack {
		if seen == s {
			return c.recursion(s)
		}
	}
	c.stack = append(c.stack, s)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()

	result := c.build(s)
	if name, ok := c.names[s]; ok {
		c.defs[name] = result
	}
	return result
}

// build converts s itself, its subschemas through ref.
func (c *converter) build(s *openapi3.Schema) any {
	out := map[string]any{}
	c.types(s, out)
	c.annotations(s, out)
	c.numeric(s, out)
	c.strings(s, out)
	c.arrays(s, out)
	c.objects(s, out)
	c.logic(s, out)
	if s.Nullable && len(s.Type.Slice()) == 0 && len(s.Enum) == 0 {
		return nullable(out)
	}
	return out
}

// depthCut stands for a schema below the depth shown to the LLM: any value, with its title and description kept.
func (c *converter) depthCut(s *openapi3.Schema) map[string]any {
	c.cut = true
	out := map[string]any{}
	setString(out, "title", s.Title)
	setString(out, "description", s.Description)
	return out
}

// annotationKeys are the keywords that describe a schema without constraining it.
var annotationKeys = []string{"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}

// nullable makes a 3.0 schema with `nullable: true` but no type (e.g. {nullable: true, allOf: [{$ref}]}) accept
// null too: anyOf [schema, {type: null}], its annotations kept outside. A schema that constrains nothing already
// accepts null.
func nullable(out map[string]any) map[string]any {
	outer := map[string]any{}
	for _, k := range annotationKeys {
		if v, ok := out[k]; ok {
			outer[k] = v
			delete(out, k)
		}
	}
	if len(out) > 0 {
		outer["anyOf"] = []any{out, map[string]any{"type": openapi3.TypeNull}}
	}
	return outer
}

func (c *converter) types(s *openapi3.Schema, out map[string]any) {
	types := append([]string(nil), s.Type.Slice()...)
	if s.Nullable && len(types) > 0 && !s.Type.IncludesNull() {
		types = append(types, openapi3.TypeNull)
	}
	switch len(types) {
	case 0:
	case 1:
		out["type"] = types[0]
	default:
		list := make([]any, len(types))
		for i, t := range types {
			list[i] = t
		}
		out["type"] = list
	}
	if len(s.Enum) > 0 || c.modern && s.Enum != nil { // an empty enum allows nothing (2020-12 §6.1.2)
		enum := append([]any{}, s.Enum...)
		if s.Nullable && !containsNil(enum) {
			enum = append(enum, nil)
		}
		out["enum"] = enum
	}
	if s.Const != nil {
		out["const"] = s.Const
	}
}

func containsNil(list []any) bool {
	for _, v := range list {
		if v == nil {
			return true
		}
	}
	return false
}

func (c *converter) annotations(s *openapi3.Schema, out map[string]any) {
	setString(out, "title", s.Title)
	setString(out, "description", s.Description)
	setString(out, "format", s.Format)
	setString(out, "contentMediaType", s.ContentMediaType)
	setString(out, "contentEncoding", s.ContentEncoding)
	if s.Default != nil {
		out["default"] = s.Default
	}
	switch {
	case len(s.Examples) > 0:
		out["examples"] = append([]any(nil), s.Examples...)
	case s.Example != nil:
		out["examples"] = []any{s.Example}
	}
	setTrue(out, "readOnly", s.ReadOnly)
	setTrue(out, "writeOnly", s.WriteOnly)
	setTrue(out, "deprecated", s.Deprecated)
}

func (c *converter) numeric(s *openapi3.Schema, out map[string]any) {
	if s.Min != nil {
		out["minimum"] = *s.Min
	}
	if s.Max != nil {
		out["maximum"] = *s.Max
	}
	switch {
	case s.ExclusiveMin.Value != nil:
		out["exclusiveMinimum"] = *s.ExclusiveMin.Value
	case s.ExclusiveMin.IsTrue() && s.Min != nil:
		out["exclusiveMinimum"] = *s.Min
		delete(out, "minimum")
	}
	switch {
	case s.ExclusiveMax.Value != nil:
		out["exclusiveMaximum"] = *s.ExclusiveMax.Value
	case s.ExclusiveMax.IsTrue() && s.Max != nil:
		out["exclusiveMaximum"] = *s.Max
		delete(out, "maximum")
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		out["multipleOf"] = *s.MultipleOf
	}
}

func (c *converter) strings(s *openapi3.Schema, out map[string]any) {
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	// ECMA-262 patterns that Go's RE2 cannot compile (lookaheads, backreferences) are left out: the server still
	// checks them, and the validator (Go regexp) would otherwise reject the whole schema.
	if s.Pattern != "" && compiles(s.Pattern) {
		out["pattern"] = s.Pattern
	}
}

func compiles(pattern string) bool {
	if ok, found := compiled.Load(pattern); found {
		return ok.(bool)
	}
	_, err := regexp.Compile(pattern)
	if compiledCount.Add(1) <= maxCompiled {
		compiled.Store(pattern, err == nil)
	}
	return err == nil
}

// compiled remembers which patterns Go's regexp compiles: a document's shared components repeat the same patterns
// in every operation they are inlined into (Microsoft Graph: 13 % of its load compiled them again). At most
// maxCompiled patterns are kept.
var (
	compiled      sync.Map
	compiledCount atomic.Int64
)

const maxCompiled = 1 << 14

func (c *converter) arrays(s *openapi3.Schema, out map[string]any) {
	if s.MinItems > 0 {
		out["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	setTrue(out, "uniqueItems", s.UniqueItems)
	if c.modern {
		switch {
		case len(s.PrefixItems) > 0 && c.items2019:
			out["items"] = c.list(s.PrefixItems)
			if s.Items != nil {
				out["additionalItems"] = c.ref(s.Items)
			}
		case len(s.PrefixItems) > 0:
			out["prefixItems"] = c.list(s.PrefixItems)
			if s.Items != nil {
				out["items"] = c.ref(s.Items)
			}
		case s.Items != nil:
			out["items"] = c.ref(s.Items)
		}
		if s.Contains != nil {
			out["contains"] = c.ref(s.Contains)
		}
		if s.MinContains != nil {
			out["minContains"] = *s.MinContains
		}
		if s.MaxContains != nil {
			out["maxContains"] = *s.MaxContains
		}
		if u := c.boolSchema(s.UnevaluatedItems); u != nil {
			out["unevaluatedItems"] = u
		}
		return
	}
	if len(s.PrefixItems) > 0 {
		out["items"] = c.list(s.PrefixItems)
		if s.Items != nil {
			out["additionalItems"] = c.ref(s.Items)
		}
	} else if s.Items != nil {
		out["items"] = c.ref(s.Items)
	}
	if s.Contains != nil {
		out["contains"] = c.ref(s.Contains)
	}
}

func (c *converter) objects(s *openapi3.Schema, out map[string]any) {
	if len(s.Properties) > 0 {
		out["properties"] = c.schemas(s.Properties, false)
	}
	if len(s.PatternProperties) > 0 {
		if props := c.schemas(s.PatternProperties, true); len(props) > 0 {
			out["patternProperties"] = props
		}
	}
	if len(s.Required) > 0 {
		req := make([]any, len(s.Required))
		for i, r := range s.Required {
			req[i] = r
		}
		out["required"] = req
	}
	if s.MinProps > 0 {
		out["minProperties"] = s.MinProps
	}
	if s.MaxProps != nil {
		out["maxProperties"] = *s.MaxProps
	}
	switch ap := s.AdditionalProperties; {
	case ap.Schema != nil:
		out["additionalProperties"] = c.ref(ap.Schema)
	case ap.Has != nil:
		out["additionalProperties"] = *ap.Has
	}
	if s.PropertyNames != nil {
		out["propertyNames"] = c.ref(s.PropertyNames)
	}
	if c.modern {
		if u := c.boolSchema(s.UnevaluatedProperties); u != nil {
			out["unevaluatedProperties"] = u
		}
		if len(s.DependentRequired) > 0 {
			dr := map[string]any{}
			for name, req := range s.DependentRequired {
				dr[name] = stringList(req)
			}
			out["dependentRequired"] = dr
		}
		if len(s.DependentSchemas) > 0 {
			out["dependentSchemas"] = c.schemas(s.DependentSchemas, false)
		}
		return
	}
	deps := map[string]any{}
	for name, req := range s.DependentRequired {
		list := make([]any, len(req))
		for i, r := range req {
			list[i] = r
		}
		deps[name] = list
	}
	for name, sub := range s.DependentSchemas {
		deps[name] = c.ref(sub)
	}
	if len(deps) > 0 {
		out["dependencies"] = deps
	}
}

// boolSchema converts unevaluatedProperties or unevaluatedItems; nil when absent.
func (c *converter) boolSchema(b openapi3.BoolSchema) any {
	switch {
	case b.Schema != nil:
		return c.ref(b.Schema)
	case b.Has != nil:
		return *b.Has
	}
	return nil
}

func stringList(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

func (c *converter) logic(s *openapi3.Schema, out map[string]any) {
	if len(s.AllOf) > 0 {
		out["allOf"] = c.list(s.AllOf)
	}
	if len(s.AnyOf) > 0 {
		out["anyOf"] = c.list(s.AnyOf)
	}
	if len(s.OneOf) > 0 {
		out["oneOf"] = c.list(s.OneOf)
	}
	if s.Not != nil {
		out["not"] = c.ref(s.Not)
	}
	if s.If != nil {
		out["if"] = c.ref(s.If)
		if s.Then != nil {
			out["then"] = c.ref(s.Then)
		}
		if s.Else != nil {
			out["else"] = c.ref(s.Else)
		}
	}
}

func (c *converter) list(refs openapi3.SchemaRefs) []any {
	out := make([]any, len(refs))
	for i, r := range refs {
		out[i] = c.ref(r)
	}
	return out
}

// schemas converts a name → schema map in sorted order, so the node budget is spent deterministically.
func (c *converter) schemas(m openapi3.Schemas, patterns bool) map[string]any {
	names := make([]string, 0, len(m))
	for name := range m {
		if !patterns || compiles(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make(map[string]any, len(names))
	for _, name := range names {
		out[name] = c.ref(m[name])
	}
	return out
}

func setString(out map[string]any, k, v string) {
	if v != "" {
		out[k] = v
	}
}

func setTrue(out map[string]any, k string, v bool) {
	if v {
		out[k] = true
	}
}
