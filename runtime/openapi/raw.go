package openapi

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"

	"github.com/commonagents-go/tool/internal/jsonvalue"
	"github.com/commonagents-go/tool/runtime"
)

// rawSource is a document as it was read. Arguments are validated against its schemas as written (issue 29: kin-
// openapi's resolved tree loses $id and $anchor references, $dynamicRef, 2019-09 keywords, and turns recursion into
// {}), compiled once per document rather than once per operation (issue 31: Microsoft Graph's operations share
// large components). The copy shown to the LLM is still converted from kin-openapi's tree (convert).
type rawSource struct {
	data []byte
	// strict: kin-openapi read the document only without some of its references (kinCopy), so the schema shown
	// says less than the document: an operation whose arguments cannot be validated against the document as
	// written is skipped.
	strict bool
	once   sync.Once
	doc    *runtime.SchemaDocument // nil when the document cannot be decoded
	defs   string                  // the keyword restructure nests the document's schemas under
	// keepAll: a schema is a resource with an $id of its own, so restructure keeps every component.
	keepAll bool
	// alias names, by the pointer of a request schema's location, the location of the schema alike that is kept
	// in its place (restructure).
	alias       map[string]string
	refs        map[string]map[string]any // refTo's schemas, by position; under mu
	mu          sync.Mutex
	validations map[validationKey]*runtime.Validation // for every Load of the cached document
}

// schemaPositions are where an OpenAPI document keeps the schemas a request is validated against.
var schemaPositions = [][]string{
	{"components", "schemas", "*"},
	{"components", "parameters", "*", "schema"},
	{"components", "parameters", "*", "content", "*", "schema"},
	{"components", "requestBodies", "*", "content", "*", "schema"},
	{"paths", "*", "parameters", "[]", "schema"},
	{"paths", "*", "parameters", "[]", "content", "*", "schema"},
	{"paths", "*", "*", "parameters", "[]", "schema"},
	{"paths", "*", "*", "parameters", "[]", "content", "*", "schema"},
	{"paths", "*", "*", "requestBody", "content", "*", "schema"},
}

// document returns the validation form of the document, whose schemas are in dialect (schemaDialect): for
// OpenAPI 3.1 its schemas as written; for 3.0 its schema objects converted to draft-07 as convert does (nullable,
// boolean exclusive bounds). Only the parts a request's schemas live in are kept. It is built once.
func (r *rawSource) document(dialect string) *runtime.SchemaDocument {
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		kept, rawSchemas, ok := decodeRequestParts(r.data)
		if !ok {
			return
		}
		if dialect == "" {
			forPositions(kept, schemaPositions, convert30)
		}
		r.defs = "definitions"
		if modernDialect(dialect) {
			r.defs = "$defs"
		}
		schemas := map[string]any{}
		component := func(name string) (any, bool) {
			if v, ok := schemas[name]; ok {
				return v, true
			}
			raw, ok := rawSchemas[name]
			if !ok {
				return nil, false
			}
			v, err := jsonvalue.Decode(raw)
			if err != nil {
				return nil, false
			}
			if dialect == "" {
				v = convert30(v)
			}
			schemas[name] = v
			return v, true
		}
		r.doc = &runtime.SchemaDocument{Doc: r.restructure(kept, rawSchemas, component), Dialect: dialect}
	})
	return r.doc
}

// decodeRequestParts decodes of a JSON or YAML document only what a request's schemas live in: each path item's
// parameters, each operation's parameters and request body, and the components' parameters and request bodies.
// The component schemas are returned undecoded (slices of the document's text), to be decoded as they are reached.
// The parts are found in the text (members) rather than by encoding/json, which copied each one.
func decodeRequestParts(data []byte) (map[string]any, map[string]json.RawMessage, bool) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, nil, false
		}
		data = j
	}
	if !json.Valid(data) {
		return nil, nil, false
	}
	root, ok := members(data, skipSpace(data, 0))
	if !ok {
		return nil, nil, false
	}
	decode := func(m member) any {
		v, err := jsonvalue.Decode(data[m.start:m.end])
		if err != nil {
			return nil
		}
		return v
	}
	// A parameter or request body written alike in many operations (Microsoft Graph: 31,047 schemas, 1,736
	// distinct) is decoded once and the value shared. Converting a 3.0 schema (convert30) in place is idempotent:
	// each position holding the value converts it again into itself; and restructure keeps schemas alike once.
	seen := map[string]any{}
	shared := func(text []byte) any {
		if v, ok := seen[string(text)]; ok {
			return v
		}
		v, err := jsonvalue.Decode(text)
		if err != nil {
			v = nil
		}
		seen[string(text)] = v
		return v
	}
	list := func(m member) any {
		elems, ok := elements(data, m.start)
		if !ok {
			return decode(m)
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = shared(e)
		}
		return out
	}
	paths := map[string]any{}
	comps := map[string]any{}
	var schemas map[string]json.RawMessage
	for _, r := range root {
		switch r.key {
		case "paths":
			items, _ := members(data, r.start)
			clear(paths)
			for _, item := range items {
				ms, ok := members(data, item.start)
				if !ok {
					continue
				}
				kept := map[string]any{}
				for _, m := range ms {
					switch {
					case m.key == "parameters" && m.start < len(data) && data[m.start] == '[':
						if ps := list(m); ps != nil {
							kept["parameters"] = ps
						}
					case httpMethods[m.key]:
						ko := map[string]any{}
						parts, _ := members(data, m.start)
						for _, p := range parts {
							var v any
							switch p.key {
							case "parameters":
								v = list(p)
							case "requestBody":
								v = shared(data[p.start:p.end])
							}
							if v != nil {
								ko[p.key] = v
							}
						}
						kept[m.key] = ko
					}
				}
				paths[item.key] = kept
			}
		case "components":
			kinds, _ := members(data, r.start)
			clear(comps)
			schemas = nil
			for _, k := range kinds {
				switch k.key {
				case "schemas":
					names, _ := members(data, k.start)
					schemas = make(map[string]json.RawMessage, len(names))
					for _, n := range names {
						schemas[n.key] = json.RawMessage(data[n.start:n.end])
					}
				case "parameters", "requestBodies":
					if v := decode(k); v != nil {
						comps[k.key] = v
					}
				}
			}
		}
	}
	return map[string]any{"paths": paths, "components": comps}, schemas, true
}

// forPositions calls fn with a setter for every schema at positions in doc.
func forPositions(doc any, positions [][]string, fn func(v any) any) {
	var visit func(v any, path []string, set func(any))
	visit = func(v any, path []string, set func(any)) {
		if len(path) == 0 {
			set(fn(v))
			return
		}
		switch tok := path[0]; tok {
		case "*":
			m, _ := v.(map[string]any)
			for k, e := range m {
				visit(e, path[1:], func(x any) { m[k] = x })
			}
		case "[]":
			a, _ := v.([]any)
			for i, e := range a {
				visit(e, path[1:], func(x any) { a[i] = x })
			}
		default:
			m, _ := v.(map[string]any)
			if e, ok := m[tok]; ok {
				visit(e, path[1:], func(x any) { m[tok] = x })
			}
		}
	}
	for _, p := range positions {
		visit(doc, p, func(any) {})
	}
}

// convert30 converts an OpenAPI 3.0 schema object, in place, into the draft-07 schema convert makes of it:
// `nullable: true` also allows null, boolean exclusive bounds become numbers, an empty enum and a multipleOf
// that is not positive are left out, and patternProperties keys Go cannot compile are left out. A $ref's siblings
// are ignored, as in 3.0.
func convert30(v any) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if _, ok := s["$ref"]; ok {
		return s
	}
	for _, k := range []string{"additionalProperties", "not", "additionalItems", "contains", "propertyNames",
		"if", "then", "else"} {
		if sub, ok := s[k]; ok {
			s[k] = convert30(sub)
		}
	}
	switch items := s["items"].(type) {
	case map[string]any:
		s["items"] = convert30(items)
	case []any:
		for i := range items {
			items[i] = convert30(items[i])
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			for i := range list {
				list[i] = convert30(list[i])
			}
		}
	}
	for _, k := range []string{"properties", "patternProperties", "dependencies", "definitions"} {
		if m, ok := s[k].(map[string]any); ok {
			for name, sub := range m {
				if k == "patternProperties" && !compiles(name) {
					delete(m, name)
					continue
				}
				m[name] = convert30(sub)
			}
		}
	}
	bounds30(s, "exclusiveMinimum", "minimum")
	bounds30(s, "exclusiveMaximum", "maximum")
	if m, ok := s["multipleOf"]; ok && !(number(m) > 0) {
		delete(s, "multipleOf")
	}
	if e, ok := s["enum"].([]any); ok && len(e) == 0 {
		delete(s, "enum")
	}
	nullable, _ := s["nullable"].(bool)
	delete(s, "nullable")
	if !nullable {
		return s
	}
	enum, hasEnum := s["enum"].([]any)
	if hasEnum && !containsNil(enum) {
		s["enum"] = append(enum, nil)
	}
	switch t := s["type"].(type) {
	case string:
		if t != openapi3.TypeNull {
			s["type"] = []any{t, openapi3.TypeNull}
		}
		return s
	case []any:
		if !containsString(t, openapi3.TypeNull) {
			s["type"] = append(t, openapi3.TypeNull)
		}
		return s
	}
	if hasEnum {
		return s
	}
	return nullable30(s)
}

// nullable30 is nullable for a raw schema: anyOf the schema and {type: null}, its annotations kept outside.
func nullable30(s map[string]any) map[string]any {
	outer := map[string]any{}
	for _, k := range append(annotationKeys, "example") {
		if v, ok := s[k]; ok {
			outer[k] = v
			delete(s, k)
		}
	}
	constrains := false
	for k := range s {
		if !strings.HasPrefix(k, "x-") && k != "discriminator" && k != "xml" && k != "externalDocs" && k != "format" {
			constrains = true
		}
	}
	if constrains {
		outer["anyOf"] = []any{s, map[string]any{"type": openapi3.TypeNull}}
	}
	return outer
}

// bounds30 turns 3.0's boolean exclusive bound into the draft-07 number.
func bounds30(s map[string]any, exclusive, bound string) {
	b, ok := s[exclusive].(bool)
	if !ok {
		return
	}
	delete(s, exclusive)
	if v, has := s[bound]; b && has {
		s[exclusive] = v
		delete(s, bound)
	}
}

func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case interface{ Float64() (float64, error) }:
		f, _ := n.Float64()
		return f
	}
	return 0
}

func containsString(list []any, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// at reports whether the location tokens names in doc holds a schema (an object or a boolean).
func at(doc any, tokens []string) bool {
	cur := doc
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			var ok bool
			if cur, ok = c[t]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			cur = c[i]
		default:
			return false
		}
	}
	switch cur.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// localRef returns the tokens of a $ref to a component of the document itself ("#/components/parameters/x"):
// kind is its components key; nil for any other reference.
func localRef(ref, kind string) []string {
	name, ok := strings.CutPrefix(ref, "#/components/"+kind+"/")
	if !ok || strings.Contains(name, "/") {
		return nil
	}
	return []string{"components", kind, strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")}
}

// paramTokens returns the location of parameter r's schema in the raw document (content names the media type
// key of a parameter described by content); nil when it is not known there.
func paramTokens(path, method string, item *openapi3.PathItem, op *openapi3.Operation, r *openapi3.ParameterRef,
	content string) []string {
	var base []string
	switch {
	case r.Ref != "":
		base = localRef(r.Ref, "parameters")
	default:
		for i, x := range op.Parameters {
			if x == r {
				base = []string{"paths", path, strings.ToLower(method), "parameters", strconv.Itoa(i)}
			}
		}
		for i, x := range item.Parameters {
			if base == nil && x == r {
				base = []string{"paths", path, "parameters", strconv.Itoa(i)}
			}
		}
	}
	if base == nil {
		return nil
	}
	if r.Value.Schema != nil {
		return append(base, "schema")
	}
	return append(base, "content", content, "schema")
}

// bodyTokens returns the location of the request body's schema in media type key in the raw document; nil when
// it is not known there.
func bodyTokens(path, method string, rb *openapi3.RequestBodyRef, key string) []string {
	var base []string
	if rb.Ref != "" {
		base = localRef(rb.Ref, "requestBodies")
	} else {
		base = []string{"paths", path, strings.ToLower(method), "requestBody"}
	}
	if base == nil {
		return nil
	}
	return append(base, "content", key, "schema")
}

// validation returns what o's arguments are validated against: its parameters whose schema sits at a known
// location of the raw document refer to it there, the others keep their converted schema (the full one when the
// schema shown is bounded). nil when no parameter is located in the document.
func (r *rawSource) validation(op *openapi3.Operation, o *operation, strict bool) *runtime.Validation {
	raw := r.document("")
	if raw == nil || len(o.located) == 0 {
		return nil
	}
	// A second Load of the cached document gets the same Validation, whose compiled form the loader keeps.
	r.mu.Lock()
	defer r.mu.Unlock()
	key := validationKey{op: op, mount: o.body != nil && o.body.fromMount}
	if v, ok := r.validations[key]; ok {
		return v
	}
	v := r.newValidation(raw, o, strict)
	if r.validations == nil {
		r.validations = map[validationKey]*runtime.Validation{}
	}
	r.validations[key] = v
	return v
}

// validationKey tells an operation's Validations apart: with files_from_mount its body takes a path argument too.
type validationKey struct {
	op    *openapi3.Operation
	mount bool
}

// refTo returns the schema {"$ref": …} naming the location tokens of raw; one such schema of a whole position is
// shared by every Validation that names it (they are never modified), rather than one per operation.
func (r *rawSource) refTo(raw *runtime.SchemaDocument, tokens []string) map[string]any {
	if len(tokens) != 2 {
		return map[string]any{"$ref": raw.Ref(tokens...)}
	}
	if s, ok := r.refs[tokens[1]]; ok {
		return s
	}
	s := map[string]any{"$ref": raw.Ref(tokens...)}
	if r.refs == nil {
		r.refs = map[string]map[string]any{}
	}
	r.refs[tokens[1]] = s
	return s
}

func (r *rawSource) newValidation(raw *runtime.SchemaDocument, o *operation, strict bool) *runtime.Validation {
	src := o.schema
	if o.whole != nil {
		src = o.whole
	}
	props, _ := src["properties"].(map[string]any)
	out := make(map[string]any, len(props))
	located := 0
	for name, s := range props {
		if t, ok := r.located(o.located[name]); ok && at(raw.Doc, t) {
			out[name] = r.refTo(raw, t)
			located++
			continue
		}
		out[name] = s
	}
	if located == 0 || o.shownDepth > 0 && o.whole == nil && located < len(props) {
		return nil // the others' schemas are bounded: validate against the whole converted schema instead
	}
	schema := map[string]any{"type": "object", "properties": out, "required": src["required"]}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := src[k]; ok {
			schema[k] = d
		}
	}
	return &runtime.Validation{Document: raw, Schema: schema, Required: strict}
}

// decodeRaw decodes a JSON or YAML document; nil when it is not an object.
func decodeRaw(data []byte) map[string]any {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil
		}
		data = j
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil
	}
	root, _ := v.(map[string]any)
	return root
}

// kinCopy returns an OpenAPI 3.1 document without what kin-openapi v0.152 cannot read in its schemas: a $ref other
// than to a whole component ("#/components/schemas/x": a pointer into $defs, a reference to an embedded resource
// by its $id or to an $anchor), and a 2019-09 items list (written as prefixItems). nil for another version.
func kinCopy(data []byte) []byte {
	root := decodeRaw(data)
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				parts := strings.Split(ref, "/")
				if len(parts) != 4 || parts[0] != "#" || parts[1] != "components" {
					delete(x, "$ref")
				}
			}
			if items, ok := x["items"].([]any); ok {
				x["prefixItems"] = items
				delete(x, "items")
				if more, ok := x["additionalItems"]; ok {
					x["items"] = more
					delete(x, "additionalItems")
				}
			}
			for k, e := range x {
				switch k {
				case "enum", "const", "default", "examples", "example":
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(root["components"])
	walk(root["paths"])
	out, err := json.Marshal(root)
	if err != nil {
		return nil
	}
	return out
}

// restructure returns a document holding every schema at schemaPositions of doc under the dialect's definitions
// keyword, each under the JSON pointer of its location (components/schemas/X is at /$defs/~1components~1schemas~1X),
// with the document's own "#/..." references to them rewritten (located). So the validator finds every schema where a
// dialect keeps subschemas and collects them all in its first read of the document; asked for a location it has
// not collected, it would copy its record of the whole document each time. One level, rather than a level per
// token: the validator reads every object it is given, and the levels were as many objects as the schemas
// (Microsoft Graph: 120,000). A request's schema written alike in several places (Microsoft Graph writes 31,047
// parameter and body schemas, 1,736 of them distinct) is kept once, and its other locations name that one.
func (r *rawSource) restructure(doc map[string]any, names map[string]json.RawMessage,
	component func(name string) (any, bool)) map[string]any {
	defs := map[string]any{}
	// Only the components a request's schemas reach are decoded and kept: most of a document's components often
	// describe responses only (GitHub's), and the validator reads every schema it is given.
	reached := map[string]bool{}
	var queue []string
	reach := func(name string) {
		if _, ok := names[name]; ok && !reached[name] {
			reached[name] = true
			queue = append(queue, name)
		}
	}
	type placed struct {
		key    string
		schema any
	}
	var request []placed
	canon := map[string]string{}
	// A value decodeRequestParts shared among positions is encoded once.
	byValue := map[uintptr]string{}
	canonOf := func(v any) (string, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return alike(v)
		}
		p := reflect.ValueOf(m).Pointer()
		if b, ok := byValue[p]; ok {
			return b, b != ""
		}
		b, ok := alike(v)
		if !ok {
			b = ""
		}
		byValue[p] = b
		return b, ok
	}
	r.alias = map[string]string{}
	for _, pos := range schemaPositions {
		var visit func(v any, path, tokens []string)
		visit = func(v any, path, tokens []string) {
			if len(path) == 0 {
				if len(tokens) == 3 && tokens[0] == "components" && tokens[1] == "schemas" {
					return // placed below once reached
				}
				key := pointerOf(tokens)
				if b, ok := canonOf(v); ok {
					if first, seen := canon[b]; seen {
						r.alias[key] = first
						return
					}
					canon[b] = key
				}
				request = append(request, placed{key, v})
				return
			}
			switch path[0] {
			case "*":
				m, _ := v.(map[string]any)
				for k, e := range m {
					visit(e, path[1:], append(tokens[:len(tokens):len(tokens)], k))
				}
			case "[]":
				a, _ := v.([]any)
				for i, e := range a {
					visit(e, path[1:], append(tokens[:len(tokens):len(tokens)], strconv.Itoa(i)))
				}
			default:
				if m, ok := v.(map[string]any); ok {
					if e, ok := m[path[0]]; ok {
						visit(e, path[1:], append(tokens[:len(tokens):len(tokens)], path[0]))
					}
				}
			}
		}
		visit(doc, pos, nil)
	}
	// Every alias is known before a reference is rewritten: a reference to a schema kept once names the one kept.
	for _, p := range request {
		r.rewriteRefs(p.schema, reach)
		defs[p.key] = p.schema
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		v, ok := component(name)
		if !ok {
			continue
		}
		r.rewriteRefs(v, reach)
		defs[pointerOf([]string{"components", "schemas", name})] = v
		if len(queue) == 0 && r.keepAll {
			// A resource with an $id may be referred to by it, from anywhere: keep every component.
			for name := range names {
				reach(name)
			}
		}
	}
	return map[string]any{r.defs: defs}
}

// alike returns the canonical JSON of a request's schema that may be kept once for every location it is written
// at; ok is false for one that names itself ($id, anchors): its location is part of its meaning.
func alike(v any) (string, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	for _, k := range [][]byte{[]byte(`"$id"`), []byte(`"$anchor"`), []byte(`"$dynamicAnchor"`),
		[]byte(`"$recursiveAnchor"`)} {
		if bytes.Contains(b, k) {
			return "", false
		}
	}
	return string(b), true
}

// pointerOf is the JSON pointer of tokens.
func pointerOf(tokens []string) string {
	var b strings.Builder
	n := 0
	for _, t := range tokens {
		n += len(t) + 2
	}
	b.Grow(n)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// located returns the restructured form of the location tokens of the original document: the definitions
// keyword, the pointer of its schema position (or of the place a schema alike is kept), then the rest (inside the
// schema) as it is. ok is false for a location in no schema position.
func (r *rawSource) located(tokens []string) ([]string, bool) {
	for _, pos := range schemaPositions {
		if len(tokens) < len(pos) {
			continue
		}
		match := true
		for i, p := range pos {
			if p != "*" && p != "[]" && p != tokens[i] {
				match = false
				break
			}
			if p == "[]" {
				if _, err := strconv.Atoi(tokens[i]); err != nil {
					match = false
					break
				}
			}
		}
		if !match {
			continue
		}
		key := pointerOf(tokens[:len(pos)])
		if first, ok := r.alias[key]; ok {
			key = first
		}
		return append([]string{r.defs, key}, tokens[len(pos):]...), true
	}
	return nil, false
}

// rewriteRefs rewrites, in place, the "#/..." references of a schema that name a location in a schema position,
// outside subschemas with an $id of their own (there "#" is that resource).
func (r *rawSource) rewriteRefs(v any, reach func(schema string)) {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["$id"].(string); ok && id != "" && !strings.HasPrefix(id, "#") {
			r.keepAll = true // its references are its own: which components they reach is not followed here
			return
		}
		if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			original := pointerTokens(ref[1:])
			if tokens, ok := r.located(original); ok {
				x["$ref"] = refOf(tokens)
				if original[0] == "components" && original[1] == "schemas" {
					reach(original[2])
				}
			}
		}
		for k, e := range x {
			switch k {
			case "enum", "const", "default", "examples", "example":
				continue
			}
			r.rewriteRefs(e, reach)
		}
	case []any:
		for _, e := range x {
			r.rewriteRefs(e, reach)
		}
	}
}

// pointerTokens splits a JSON pointer ("/a/b~1c", percent-encoded as a URI fragment may be) into its tokens.
func pointerTokens(ptr string) []string {
	if u, err := url.PathUnescape(ptr); err == nil {
		ptr = u
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

// refOf is the document-local $ref of tokens.
func refOf(tokens []string) string {
	var b strings.Builder
	b.WriteByte('#')
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")))
	}
	return b.String()
}
