package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/suggest"
)

// role tells the walker where a schema sits: only a top-level property may carry `require_binding`.
type role uint8

const (
	roleNested role = iota
	roleRoot
	roleTopProperty
)

// compiler carries the state of one Compile: the problems found so far and the local references to resolve.
type compiler struct {
	base    *field.Path
	draft   Dialect
	foreign bool // Options.Foreign
	errs    field.List
	refs    []refSite
	anchors map[string]bool // `$id: "#name"`, `$anchor` and `$dynamicAnchor` names, with their "#"
}

type refSite struct {
	ref  string
	path *field.Path
}

// modernKeywords are the keywords 2019-09 and 2020-12 add; in an older dialect they are unknown keywords.
var modernKeywords = []string{
	"$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$vocabulary", "contentSchema",
	"dependentRequired", "dependentSchemas", "maxContains", "minContains", "prefixItems", "unevaluatedItems",
	"unevaluatedProperties",
}

// keywordNames lists every keyword of drafts 04, 06 and 07, the annotations we accept and our extension; the
// walker's switch in keyword must stay in step with it and modernKeywords. It is the vocabulary for did-you-mean
// suggestions.
var keywordNames = []string{
	"$comment", "$defs", "$id", "$ref", "$schema", "additionalItems", "additionalProperties", "allOf", "anyOf",
	"const", "contains", "contentEncoding", "contentMediaType", "default", "definitions", "dependencies",
	"deprecated", "description", "else", "enum", "examples", "exclusiveMaximum", "exclusiveMinimum", "format", "id",
	"if", "items", "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties",
	"minimum", "multipleOf", "not", "oneOf", "pattern", "patternProperties", "properties", "propertyNames",
	"readOnly", "require_binding", "required", "then", "title", "type", "uniqueItems", "writeOnly",
}

var typeNames = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// detectDraft reads the root `$schema`; without one the document is in the dialect Options.Dialect names.
func (c *compiler) detectDraft(doc any) {
	m, _ := doc.(map[string]any)
	v, ok := m["$schema"]
	if !ok {
		return
	}
	s, ok := v.(string)
	if !ok {
		return // reported by the walker
	}
	d, ok := ParseDialect(s)
	if !ok {
		c.errs.Add(field.Unsupported(c.base.Child("$schema"),
			"only draft-04, draft-06, draft-07, 2019-09 and 2020-12 schemas are supported"))
		return
	}
	c.draft = d
}

// schema checks one schema at p and returns its cleaned copy: extension and unknown keywords are left out.
func (c *compiler) schema(node any, p *field.Path, r role) any {
	switch n := node.(type) {
	case bool:
		return n
	case map[string]any:
		out := make(map[string]any, len(n))
		for _, k := range slices.Sorted(maps.Keys(n)) {
			v := n[k]
			switch {
			case k == "require_binding":
				c.requireBinding(v, p.Child(k), r)
				continue
			case strings.HasPrefix(k, "x-"):
				continue
			}
			kept, keep, known := c.keyword(k, v, p.Child(k), r)
			if !known && c.draft.modern() {
				kept, keep, known = c.modernKeyword(k, v, p.Child(k))
			}
			if !known {
				if c.foreign {
					// A backend's schema is not ours to correct: an unknown keyword is an annotation (2020-12 §6.5).
					out[k] = deepCopy(v)
					continue
				}
				c.unknownKeyword(k, p.Key(k))
				continue
			}
			if keep {
				out[k] = kept
			}
		}
		return out
	default:
		c.errs.Add(field.Invalid(p, "must be a JSON Schema (an object or a boolean)"))
		return nil
	}
}

// keyword checks the value of keyword k and returns what to keep in the cleaned copy. known is false for a key
// that is no keyword we accept.
func (c *compiler) keyword(k string, v any, p *field.Path, r role) (kept any, keep, known bool) {
	ok := true
	switch k {
	case "properties":
		next := roleNested
		if r == roleRoot {
			next = roleTopProperty
		}
		return c.schemaMap(v, p, next, false), true, true
	case "patternProperties":
		return c.schemaMap(v, p, roleNested, true), true, true
	case "definitions", "$defs":
		return c.schemaMap(v, p, roleNested, false), true, true
	case "dependencies":
		return c.dependencies(v, p), true, true
	case "items":
		if _, isList := v.([]any); isList {
			return c.schemaList(v, p, false), true, true
		}
		return c.schema(v, p, roleNested), true, true
	case "additionalItems", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "not":
		return c.schema(v, p, roleNested), true, true
	case "allOf", "anyOf", "oneOf":
		return c.schemaList(v, p, true), true, true
	case "$ref":
		return v, c.ref(v, p), true
	case "$id", "id":
		return v, c.id(v, p), true
	case "$schema":
		_, ok = v.(string)
		// The root's names the dialect the validator is given; an embedded resource's stays for the validator.
		return v, ok && c.foreign && r != roleRoot, c.expect(ok, p, "must be a string")
	case "type":
		ok = c.typeValue(v, p)
	case "enum":
		list, isList := v.([]any)
		if c.draft == Draft4 {
			ok = c.expect(isList && len(list) > 0, p, "must be a non-empty array")
		} else {
			ok = c.expect(isList, p, "must be an array")
		}
	case "required":
		ok = c.stringSet(v, p)
	case "const", "default":
	case "examples":
		_, isList := v.([]any)
		ok = c.expect(isList, p, "must be an array")
	case "title", "description", "$comment", "format", "contentMediaType", "contentEncoding":
		_, isString := v.(string)
		ok = c.expect(isString, p, "must be a string")
	case "readOnly", "writeOnly", "deprecated", "uniqueItems":
		_, isBool := v.(bool)
		ok = c.expect(isBool, p, "must be a boolean")
	case "maximum", "minimum":
		_, isNumber := number(v)
		ok = c.expect(isNumber, p, "must be a number")
	case "exclusiveMaximum", "exclusiveMinimum":
		if c.draft == Draft4 {
			_, isBool := v.(bool)
			ok = c.expect(isBool, p, "must be a boolean in draft-04")
		} else {
			_, isNumber := number(v)
			ok = c.expect(isNumber, p, "must be a number")
		}
	case "multipleOf":
		f, isNumber := number(v)
		ok = c.expect(isNumber && f > 0, p, "must be a number greater than 0")
	case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
		ok = c.expect(nonNegativeInteger(v), p, "must be a non-negative integer")
	case "pattern":
		ok = c.regexp(v, p)
	default:
		return nil, false, false
	}
	if !ok {
		return nil, false, true
	}
	return deepCopy(v), true, true
}

// modernKeyword checks a keyword that 2019-09 and 2020-12 add. The validator's meta-schema check catches what is
// left, such as a 2020-12 keyword in a 2019-09 schema.
func (c *compiler) modernKeyword(k string, v any, p *field.Path) (kept any, keep, known bool) {
	ok := true
	switch k {
	case "prefixItems":
		return c.schemaList(v, p, true), true, true
	case "unevaluatedItems", "unevaluatedProperties", "contentSchema":
		return c.schema(v, p, roleNested), true, true
	case "dependentSchemas":
		return c.schemaMap(v, p, roleNested, false), true, true
	case "dependentRequired":
		m, isMap := v.(map[string]any)
		if !c.expect(isMap, p, "must be an object mapping names to arrays of names") {
			return nil, false, true
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			ok = c.stringSet(m[name], p.Key(name)) && ok
		}
	case "minContains", "maxContains":
		ok = c.expect(nonNegativeInteger(v), p, "must be a non-negative integer")
	case "$anchor", "$dynamicAnchor":
		s, isString := v.(string)
		if ok = c.expect(isString && s != "", p, "must be a name"); ok {
			c.anchors["#"+s] = true
		}
	case "$dynamicRef", "$recursiveRef":
		return v, c.ref(v, p), true
	case "$recursiveAnchor":
		ok = c.expect(isBool(v), p, "must be a boolean")
	case "$vocabulary":
		_, isMap := v.(map[string]any)
		ok = c.expect(isMap, p, "must be an object")
	default:
		return nil, false, false
	}
	if !ok {
		return nil, false, true
	}
	return deepCopy(v), true, true
}

// expect reports msg at p unless ok, and returns ok.
func (c *compiler) expect(ok bool, p *field.Path, msg string) bool {
	if !ok {
		c.errs.Add(field.Invalid(p, "%s", msg))
	}
	return ok
}

func (c *compiler) schemaMap(v any, p *field.Path, r role, patterns bool) any {
	m, ok := v.(map[string]any)
	if !c.expect(ok, p, "must be an object mapping names to schemas") {
		return nil
	}
	out := make(map[string]any, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if patterns {
			if !validPattern(name) {
				c.errs.Add(field.Invalid(p.Key(name), "property name pattern is not a valid regular expression"))
				continue
			}
		}
		out[name] = c.schema(m[name], p.Key(name), r)
	}
	return out
}

func (c *compiler) schemaList(v any, p *field.Path, nonEmpty bool) any {
	list, ok := v.([]any)
	if !c.expect(ok && (!nonEmpty || len(list) > 0), p, "must be a non-empty array of schemas") {
		return nil
	}
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = c.schema(e, p.Index(i), roleNested)
	}
	return out
}

func (c *compiler) dependencies(v any, p *field.Path) any {
	m, ok := v.(map[string]any)
	if !c.expect(ok, p, "must be an object") {
		return nil
	}
	out := make(map[string]any, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if _, isList := m[name].([]any); isList {
			if c.stringSet(m[name], p.Key(name)) {
				out[name] = deepCopy(m[name])
			}
			continue
		}
		out[name] = c.schema(m[name], p.Key(name), roleNested)
	}
	return out
}

// stringSet checks an array of unique strings (`required`, property dependencies).
func (c *compiler) stringSet(v any, p *field.Path) bool {
	list, ok := v.([]any)
	if !c.expect(ok, p, "must be an array of strings") {
		return false
	}
	seen := make(map[string]bool, len(list))
	for i, e := range list {
		s, isString := e.(string)
		switch {
		case !isString:
			c.errs.Add(field.Invalid(p.Index(i), "must be a string"))
			ok = false
		case seen[s]:
			c.errs.Add(field.Duplicate(p.Index(i), "repeats %q", s))
			ok = false
		}
		seen[s] = true
	}
	return ok
}

func (c *compiler) typeValue(v any, p *field.Path) bool {
	check := func(e any, p *field.Path) bool {
		s, ok := e.(string)
		if !ok {
			c.errs.Add(field.Invalid(p, "must be a type name"))
			return false
		}
		for _, t := range typeNames {
			if s == t {
				return true
			}
		}
		c.errs.Add(field.Invalid(p, "unknown type %q%s; use one of %s", s, didYouMean(s, typeNames),
			strings.Join(typeNames, ", ")))
		return false
	}
	list, isList := v.([]any)
	if !isList {
		return check(v, p)
	}
	if !c.expect(len(list) > 0, p, "must be a type name or a non-empty array of type names") {
		return false
	}
	ok := true
	seen := map[any]bool{}
	for i, e := range list {
		if seen[e] {
			c.errs.Add(field.Duplicate(p.Index(i), "repeats a type"))
			ok = false
			continue
		}
		seen[e] = true
		ok = check(e, p.Index(i)) && ok
	}
	return ok
}

func (c *compiler) regexp(v any, p *field.Path) bool {
	s, ok := v.(string)
	if !c.expect(ok, p, "must be a string") {
		return false
	}
	return c.expect(validPattern(s), p, "is not a valid regular expression")
}

// patterns remembers which patterns Go's regexp package compiles: the schemas a backend derives from one source
// repeat the same patterns in every action (Microsoft Graph's: 200 MB of regexp compiles per Load). At most
// maxPatterns, of at most maxPatternBytes each; past those a pattern is compiled each time.
var patterns = struct {
	sync.Mutex
	valid map[string]bool
}{valid: map[string]bool{}}

const (
	maxPatterns     = 4096
	maxPatternBytes = 1024
)

// validPattern reports whether Go's regexp package compiles s.
func validPattern(s string) bool {
	patterns.Lock()
	ok, known := patterns.valid[s]
	patterns.Unlock()
	if known {
		return ok
	}
	_, err := regexp.Compile(s)
	ok = err == nil
	if len(s) <= maxPatternBytes {
		patterns.Lock()
		if len(patterns.valid) < maxPatterns {
			patterns.valid[s] = ok
		}
		patterns.Unlock()
	}
	return ok
}

// ref checks a `$ref` and records a local one for resolution once the whole document is walked.
func (c *compiler) ref(v any, p *field.Path) bool {
	s, ok := v.(string)
	if !ok {
		c.errs.Add(field.Invalid(p, "must be a string"))
		return false
	}
	if c.foreign {
		// The validator resolves it within the document; its loader refuses anything else (no fetch, no file).
		return true
	}
	if !strings.HasPrefix(s, "#") {
		c.errs.Add(field.Forbidden(p, "only local references (#...) are allowed"))
		return false
	}
	c.refs = append(c.refs, refSite{ref: s, path: p})
	return true
}

// id keeps a `$id` (or draft-04 `id`) of a manifest's schema only when it is a plain-name anchor ("#name"): any
// other identifier would change the base URI that the `#...` references the walker checks resolve against, so it
// is accepted as an annotation and dropped. A backend's schema keeps its identifiers: its references resolve
// against them, and the validator never fetches.
func (c *compiler) id(v any, p *field.Path) bool {
	s, ok := v.(string)
	if !c.expect(ok, p, "must be a string") {
		return false
	}
	if c.foreign {
		return true
	}
	if strings.HasPrefix(s, "#") {
		c.anchors[s] = true
		return true
	}
	return false
}

func (c *compiler) requireBinding(v any, p *field.Path, r role) {
	if r != roleTopProperty {
		c.errs.Add(field.Invalid(p, "require_binding applies to top-level parameters only"))
		return
	}
	c.expect(isBool(v), p, "must be a boolean")
}

func (c *compiler) unknownKeyword(k string, p *field.Path) {
	if slices.Contains(modernKeywords, k) {
		c.errs.Add(field.Unsupported(p,
			"%s is a keyword of JSON Schema 2019-09 and later; name that dialect in the root $schema, this schema is %s",
			k, c.draft))
		return
	}
	vocabulary := keywordNames
	if c.draft.modern() {
		vocabulary = append(slices.Clip(keywordNames), modernKeywords...)
	}
	c.errs.Add(field.Unsupported(p, "unknown JSON Schema keyword%s; extensions must start with \"x-\"",
		didYouMean(k, vocabulary)))
}

// resolveRefs checks that every local `$ref` points at a schema inside the cleaned document.
func (c *compiler) resolveRefs(root any) {
	for _, site := range c.refs {
		if err := c.resolve(root, site.ref); err != nil {
			c.errs.Add(field.Invalid(site.path, "reference %q does not resolve within the schema: %v", site.ref, err))
		}
	}
}

func (c *compiler) resolve(root any, ref string) error {
	u, err := url.Parse(ref)
	if err != nil {
		return fmt.Errorf("malformed reference")
	}
	frag := u.Fragment
	if frag != "" && !strings.HasPrefix(frag, "/") {
		if !c.anchors["#"+frag] {
			return fmt.Errorf("no schema has $id %q", "#"+frag)
		}
		return nil
	}
	node := root
	for _, tok := range strings.Split(frag, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			next, ok := n[tok]
			if !ok {
				return fmt.Errorf("no key %q", tok)
			}
			node = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return fmt.Errorf("no index %q", tok)
			}
			node = n[i]
		default:
			return fmt.Errorf("cannot descend into %q", tok)
		}
	}
	if _, isMap := node.(map[string]any); !isMap && !isBool(node) {
		return fmt.Errorf("target is not a schema")
	}
	return nil
}

// checkParameters applies the SPEC §3.1 shape rules to a parameters or settings schema.
func (c *compiler) checkParameters(doc any) {
	written, ok := doc.(map[string]any)
	if !ok {
		c.errs.Add(field.Invalid(c.base, "must be an object schema"))
		return
	}
	// A string that names no type was reported by the walker already.
	if t, ok := written["type"]; ok && t != "object" && (!isString(t) || isTypeName(t)) {
		c.errs.Add(field.Invalid(c.base.Child("type"), "must be \"object\""))
	}
	// A property's schema may be a boolean (true: anything, false: never present), as JSON Schema allows.
	props, _ := written["properties"].(map[string]any)
	required, _ := written["required"].([]any)
	for i, e := range required {
		if name, ok := e.(string); ok {
			if _, declared := props[name]; !declared {
				c.errs.Add(field.Invalid(c.base.Child("required").Index(i), "names no declared property"))
			}
		}
	}
}

// didYouMean returns ` (did you mean "x"?)` for the closest candidate, else "".
func didYouMean(s string, candidates []string) string { return suggest.Hint(s, candidates) }

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

func isTypeName(v any) bool {
	for _, t := range typeNames {
		if v == t {
			return true
		}
	}
	return false
}

// number reports the value of a JSON number in any of the Go forms a decoder produces.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint:
		return float64(n), true
	}
	return 0, false
}

// nonNegativeInteger accepts an integral value, also when written with a fraction ("2.0" is the integer 2 since
// draft-06, and the suites of 2019-09 and 2020-12 check it).
func nonNegativeInteger(v any) bool {
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i >= 0
		}
	}
	f, ok := number(v)
	return ok && f >= 0 && f == math.Trunc(f) && !math.IsInf(f, 0)
}
