package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file finds where the parts of a JSON document lie in its text, without decoding it: the members of an
// object, and the `$ref`s of a value. The text must be valid JSON (json.Valid); the functions never panic on any
// other, they return false or stop.

// member is one member of a JSON object: its key (decoded) and where its key and value lie in the text.
type member struct {
	key        string
	keyStart   int // the key's opening quote
	start, end int // the value is text[start:end]
}

// skipSpace returns the index of the first byte at or after i that is not JSON whitespace.
func skipSpace(text []byte, i int) int {
	for i < len(text) {
		switch text[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just after the string whose opening quote is at i; len(text) when it does not end.
func skipString(text []byte, i int) int {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(text)
}

// skipValue returns the index just after the value that starts at i.
func skipValue(text []byte, i int) int {
	if i >= len(text) {
		return i
	}
	switch text[i] {
	case '"':
		return skipString(text, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(text); j++ {
			switch text[j] {
			case '"':
				j = skipString(text, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(text)
	}
	j := i
	for j < len(text) {
		switch text[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// decodeString decodes the JSON string text (quotes included).
func decodeString(text []byte) string {
	if len(text) < 2 {
		return ""
	}
	if bytes.IndexByte(text, '\\') < 0 {
		return string(text[1 : len(text)-1])
	}
	var s string
	_ = json.Unmarshal(text, &s)
	return s
}

// members returns the members of the object that starts at i, in order; ok is false when no object starts there.
func members(text []byte, i int) (out []member, ok bool) {
	if i >= len(text) || text[i] != '{' {
		return nil, false
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == '}' {
		return nil, true
	}
	for i < len(text) && text[i] == '"' {
		m := member{keyStart: i}
		e := skipString(text, i)
		m.key = decodeString(text[i:e])
		if i = skipSpace(text, e); i >= len(text) || text[i] != ':' {
			return nil, false
		}
		m.start = skipSpace(text, i+1)
		m.end = skipValue(text, m.start)
		out = append(out, m)
		var closed bool
		if i, closed, ok = afterValue(text, m.end, '}'); !ok {
			return nil, false
		}
		if closed {
			return out, true
		}
	}
	return nil, false
}

// afterValue reads what follows a container's value that ends at e: a ',' (next is where the next value starts) or
// the container's closing byte (closed); ok is false for anything else.
func afterValue(text []byte, e int, closing byte) (next int, closed, ok bool) {
	switch i := skipSpace(text, e); {
	case i < len(text) && text[i] == ',':
		return skipSpace(text, i+1), false, true
	case i < len(text) && text[i] == closing:
		return i, true, true
	}
	return 0, false, false
}

// isObject reports whether m's value is an object.
func isObject(text []byte, m member) bool { return m.start < len(text) && text[m.start] == '{' }

// refs calls fn with every `$ref` string of the value text[start:end], in any position (data included: a caller
// that keeps what they name keeps too much, never too little).
func refs(text []byte, start, end int, fn func(ref string)) {
	for i := start; i < end; i++ {
		if text[i] != '"' {
			continue
		}
		e := skipString(text, i)
		if k := skipSpace(text, e); k < end && text[k] == ':' && isRefKey(text[i:e]) {
			if v := skipSpace(text, k+1); v < end && text[v] == '"' {
				ve := skipString(text, v)
				fn(decodeString(text[v:ve]))
				e = ve
			}
		}
		i = e - 1
	}
}

func isRefKey(key []byte) bool {
	if string(key) == `"$ref"` {
		return true
	}
	return bytes.IndexByte(key, '\\') >= 0 && decodeString(key) == "$ref"
}

// httpMethods are the keys of a path item that hold an operation.
var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true,
	"head": true, "patch": true, "trace": true}

// trimmedKinds are the components whose members kinInput keeps only when a kept part refers to them.
var trimmedKinds = map[string]bool{"schemas": true, "responses": true, "parameters": true, "examples": true,
	"requestBodies": true, "headers": true, "links": true, "callbacks": true, "pathItems": true}

// knownKeys are the field names kin-openapi decodes at the levels kinInput cuts (the document, its components, a
// path item, an operation), by their lower case. kin-openapi decodes with encoding/json, which also takes a key
// that differs only in case ("Paths", "Parameters", "GET"), where kinInput reads keys exactly: a document that
// spells one so is read whole (caseVariant).
var knownKeys = lowerKeys("openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components",
	"security", "tags", "externalDocs", "schemas", "responses", "parameters", "examples", "requestBodies", "headers",
	"securitySchemes", "links", "callbacks", "pathItems", "$ref", "summary", "description", "get", "put", "post",
	"delete", "options", "head", "patch", "trace", "operationId", "requestBody", "deprecated")

func lowerKeys(names ...string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[strings.ToLower(n)] = n
	}
	return out
}

// caseVariant reports whether one of ms is a known key spelled in another case.
func caseVariant(ms []member) bool {
	for _, m := range ms {
		if known, ok := knownKeys[strings.ToLower(m.key)]; ok && known != m.key {
			return true
		}
	}
	return false
}

// kinInput returns the JSON document data without what Load never reads of kin-openapi's tree (issue 31: reading
// Microsoft Graph's responses and extensions was much of kin-openapi's cost inside Load): each operation's
// responses, callbacks and externalDocs, the extensions (x-...) of path items and operations, the 3.1 webhooks, and
// the components (schemas, responses, parameters, examples, ...) that no operation's parameters or request body
// reach through `$ref`s. The rest is kept byte for byte, in order, cut into the pieces loadKin hands kin-openapi one
// by one. nil when data is not a valid JSON object, repeats a key this reads, spells a key kin-openapi decodes in
// another case, has a path item that is not an object, or holds a `$ref` this does not follow (one to another file or to a place outside components):
// kin-openapi then reads the whole document.
func kinInput(data []byte) *kinParts {
	start := skipSpace(data, 0)
	if start >= len(data) || data[start] != '{' || !json.Valid(data) {
		return nil
	}
	root, ok := members(data, start)
	if !ok || caseVariant(root) {
		return nil
	}
	t := &trimmer{text: data, components: map[string]map[string]member{}}
	var paths, comps *member
	seen := map[string]bool{}
	for i := range root {
		m := &root[i]
		if seen[m.key] {
			return nil
		}
		seen[m.key] = true
		switch {
		case m.key == "paths" && isObject(data, *m):
			paths = m
		case m.key == "components" && isObject(data, *m):
			comps = m
		case m.key == "webhooks":
		default:
			t.scan(m.keyStart, m.end)
		}
	}
	if comps != nil {
		kinds, _ := members(data, comps.start)
		if caseVariant(kinds) {
			return nil
		}
		for _, k := range kinds {
			if _, dup := t.components[k.key]; dup {
				return nil
			}
			names, ok := members(data, k.start)
			if !trimmedKinds[k.key] || !ok {
				t.components[k.key] = nil
				t.scan(k.keyStart, k.end)
				continue
			}
			byName := make(map[string]member, len(names))
			for _, n := range names {
				if _, dup := byName[n.key]; dup {
					return nil
				}
				byName[n.key] = n
			}
			t.components[k.key] = byName
		}
	}
	var items []keptItem
	if paths != nil {
		all, _ := members(data, paths.start)
		for _, item := range all {
			if strings.HasPrefix(item.key, "x-") {
				continue // the paths object's extensions
			}
			ms, ok := members(data, item.start)
			if !ok || repeats(ms) || caseVariant(ms) {
				return nil
			}
			k := keptItem{item: item}
			for _, m := range ms {
				if strings.HasPrefix(m.key, "x-") {
					continue
				}
				if !httpMethods[m.key] || !isObject(data, m) {
					k.members = append(k.members, keptMember{member: m})
					t.scan(m.keyStart, m.end)
					continue
				}
				parts, _ := members(data, m.start)
				if repeats(parts) || caseVariant(parts) {
					return nil
				}
				op := keptMember{member: m, op: []member{}}
				for _, p := range parts {
					switch {
					case p.key == "responses", p.key == "callbacks", p.key == "externalDocs", strings.HasPrefix(p.key, "x-"):
					default:
						op.op = append(op.op, p)
						t.scan(p.keyStart, p.end)
					}
				}
				k.members = append(k.members, op)
			}
			items = append(items, k)
		}
	}
	t.follow()
	if t.refused {
		return nil
	}
	return t.parts(root, comps, items)
}

// repeats reports whether a key occurs twice among ms.
func repeats(ms []member) bool {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			return true
		}
		seen[m.key] = true
	}
	return false
}

// trimmer collects the components a document's kept parts reach.
type trimmer struct {
	text       []byte
	components map[string]map[string]member // kind → name → member; nil for a kind kept whole
	reached    map[string]map[string]bool
	queue      []member
	refused    bool // a $ref this does not follow
}

// scan reaches what the `$ref`s of text[start:end] name.
func (t *trimmer) scan(start, end int) {
	refs(t.text, start, end, t.reach)
}

func (t *trimmer) reach(ref string) {
	if t.refused {
		return
	}
	rest, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		t.refused = true
		return
	}
	kind, name, _ := strings.Cut(rest, "/")
	byName, known := t.components[kind]
	if !known || byName == nil {
		return // kept whole, or absent: kin-openapi says what it lacks
	}
	// kin-openapi and the JSON pointer rules read a name escaped (~1, %20) or not: reach both forms.
	for _, n := range []string{name, pointerTokens("/" + name)[0]} {
		if m, ok := byName[n]; ok && !t.reached[kind][n] {
			if t.reached == nil {
				t.reached = map[string]map[string]bool{}
			}
			if t.reached[kind] == nil {
				t.reached[kind] = map[string]bool{}
			}
			t.reached[kind][n] = true
			t.queue = append(t.queue, m)
		}
	}
}

// follow reaches what the reached components refer to, transitively.
func (t *trimmer) follow() {
	for len(t.queue) > 0 && !t.refused {
		m := t.queue[len(t.queue)-1]
		t.queue = t.queue[:len(t.queue)-1]
		t.scan(m.keyStart, m.end)
	}
}

// keptItem is a path item as kinInput keeps it: the members kept.
type keptItem struct {
	item    member
	members []keptMember
}

// keptMember is a kept member of a path item; op holds the members kept of an operation.
type keptMember struct {
	member
	op []member
}

// kinParts is a document cut for kin-openapi (kinInput): its root without paths, and each path item, operation and
// parameter on its own. kin-openapi's decoding of each level decodes the level's whole text once more into a map
// for its extensions, and it decodes the paths object into a map and encodes each path item again before
// decoding it (Microsoft Graph: two thirds of its read): decoded piece by piece, each text is decoded by fewer
// levels.
type kinParts struct {
	root    []byte // the root object, its paths and component schemas empty
	items   []kinItem
	schemas []kinSchema // the component schemas kept
}

// kinSchema is a component schema.
type kinSchema struct {
	name string
	text []byte
}

// kinItem is a path item: its members other than operations and parameters, its parameters, its operations.
type kinItem struct {
	path   string
	rest   []byte
	params *[][]byte // nil when the item has no parameters list
	ops    []kinOp
}

// kinOp is an operation: its members other than parameters and request body, its parameters, its request body.
type kinOp struct {
	method string // upper case
	rest   []byte
	params *[][]byte
	body   []byte // nil when it has none
}

// parts cuts the kept document into kinParts.
func (t *trimmer) parts(root []member, comps *member, items []keptItem) *kinParts {
	text := t.text
	var out []byte
	raw := func(m member) { out = append(out, text[m.keyStart:m.end]...) }
	key := func(m member) { out = append(out, text[m.keyStart:m.start]...) }
	object := func(n int, each func(i int)) {
		out = append(out, '{')
		for i := range n {
			if i > 0 {
				out = append(out, ',')
			}
			each(i)
		}
		out = append(out, '}')
	}
	// params splits off a parameters list: its elements' texts, when m is one.
	params := func(m member) (*[][]byte, bool) {
		if m.key != "parameters" {
			return nil, false
		}
		list, ok := elements(text, m.start)
		return &list, ok
	}
	piece := func(ms []member) []byte {
		n := 2 + len(ms)
		for _, m := range ms {
			n += m.end - m.keyStart
		}
		out = make([]byte, 0, n)
		object(len(ms), func(i int) { raw(ms[i]) })
		return out
	}
	p := &kinParts{}
	for _, it := range items {
		ki := kinItem{path: it.item.key}
		var rest []member
		for _, km := range it.members {
			switch list, ok := params(km.member); {
			case ok:
				ki.params = list
			case km.op != nil:
				op := kinOp{method: strings.ToUpper(km.key)}
				var opRest []member
				for _, m := range km.op {
					if list, ok := params(m); ok {
						op.params = list
					} else if m.key == "requestBody" && isObject(text, m) {
						op.body = text[m.start:m.end]
					} else {
						opRest = append(opRest, m)
					}
				}
				op.rest = piece(opRest)
				ki.ops = append(ki.ops, op)
			default:
				rest = append(rest, km.member)
			}
		}
		ki.rest = piece(rest)
		p.items = append(p.items, ki)
	}
	out = make([]byte, 0, 1024)
	var kept []member
	for _, m := range root {
		if m.key != "webhooks" {
			kept = append(kept, m)
		}
	}
	object(len(kept), func(i int) {
		m := kept[i]
		switch {
		case m.key == "paths" && isObject(text, m):
			key(m)
			out = append(out, "{}"...)
		case comps != nil && m.keyStart == comps.keyStart:
			key(m)
			kinds, _ := members(text, m.start)
			object(len(kinds), func(i int) {
				k := kinds[i]
				if t.components[k.key] == nil {
					raw(k)
					return
				}
				key(k)
				names, _ := members(text, k.start)
				var keep []member
				for _, n := range names {
					if t.reached[k.key][n.key] {
						keep = append(keep, n)
					}
				}
				if k.key == "schemas" {
					for _, n := range keep {
						p.schemas = append(p.schemas, kinSchema{n.key, text[n.start:n.end]})
					}
					keep = nil
				}
				object(len(keep), func(i int) { raw(keep[i]) })
			})
		default:
			raw(m)
		}
	})
	p.root = out
	return p
}

// elements returns the texts of the elements of the array that starts at i; ok is false when none starts there.
func elements(text []byte, i int) (out [][]byte, ok bool) {
	if i >= len(text) || text[i] != '[' {
		return nil, false
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == ']' {
		return [][]byte{}, true
	}
	for i < len(text) {
		e := skipValue(text, i)
		out = append(out, text[i:e])
		var closed, ok bool
		if i, closed, ok = afterValue(text, e, ']'); !ok {
			return nil, false
		}
		if closed {
			return out, true
		}
	}
	return nil, false
}

// loadKin reads parts as kin-openapi's loader reads the whole text they were cut from: the root, then each path
// item, operation and parameter decoded by kin-openapi's own decoders, then every reference resolved. The document's
// own references are all it has (kinInput): it is resolved as a document read from memory, which reads nothing else.
// The components' discriminators are left out. ctx bounds it.
func loadKin(ctx context.Context, parts *kinParts) (*openapi3.T, error) {
	doc := &openapi3.T{}
	if err := json.Unmarshal(parts.root, doc); err != nil {
		return nil, err
	}
	// Load reads no discriminator of kin-openapi's tree (the copies shown to the LLM leave it out; arguments are
	// validated against the document as written), and kin-openapi copies every entry of a component's mapping each
	// time it resolves the component (Microsoft Graph's entity: 90 MB per Load).
	if len(parts.schemas) > 0 {
		if doc.Components == nil {
			doc.Components = &openapi3.Components{}
		}
		if doc.Components.Schemas == nil {
			doc.Components.Schemas = make(openapi3.Schemas, len(parts.schemas))
		}
	}
	for _, c := range parts.schemas {
		if string(c.text) == "null" {
			doc.Components.Schemas[c.name] = nil
			continue
		}
		s := &openapi3.SchemaRef{}
		if err := json.Unmarshal(c.text, s); err != nil {
			return nil, err
		}
		if s.Value != nil {
			s.Value.Discriminator = nil
		}
		doc.Components.Schemas[c.name] = s
	}
	doc.Paths = openapi3.NewPathsWithCapacity(len(parts.items))
	// A parameter written alike in many operations is decoded once and its value shared, as kin-openapi shares a
	// component's (Microsoft Graph writes each entity's $select and $expand lists, hundreds of names long, in every
	// operation on it).
	alike := map[string]*openapi3.Parameter{}
	bodies := map[string]*openapi3.RequestBody{} // and a request body (Graph: one entity's in each of its PATCH)
	decodeParams := func(list *[][]byte) (openapi3.Parameters, error) {
		if list == nil {
			return nil, nil
		}
		out := make(openapi3.Parameters, len(*list))
		for i, b := range *list {
			if string(b) == "null" {
				continue
			}
			if v := alike[string(b)]; v != nil {
				out[i] = &openapi3.ParameterRef{Value: v}
				continue
			}
			out[i] = &openapi3.ParameterRef{}
			if err := json.Unmarshal(b, out[i]); err != nil {
				return nil, err
			}
			if out[i].Ref == "" && out[i].Value != nil {
				alike[string(b)] = out[i].Value
			}
		}
		return out, nil
	}
	for _, it := range parts.items {
		item := &openapi3.PathItem{}
		if err := json.Unmarshal(it.rest, item); err != nil {
			return nil, err
		}
		var err error
		if item.Parameters, err = decodeParams(it.params); err != nil {
			return nil, err
		}
		for _, o := range it.ops {
			op := &openapi3.Operation{}
			if err := json.Unmarshal(o.rest, op); err != nil {
				return nil, err
			}
			if op.Parameters, err = decodeParams(o.params); err != nil {
				return nil, err
			}
			if o.body != nil {
				if v := bodies[string(o.body)]; v != nil {
					op.RequestBody = &openapi3.RequestBodyRef{Value: v}
				} else {
					op.RequestBody = &openapi3.RequestBodyRef{}
					if err := json.Unmarshal(o.body, op.RequestBody); err != nil {
						return nil, err
					}
					if op.RequestBody.Ref == "" && op.RequestBody.Value != nil {
						bodies[string(o.body)] = op.RequestBody.Value
					}
				}
			}
			item.SetOperation(o.method, op)
		}
		doc.Paths.Set(it.path, item)
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	if err := loader.ResolveRefsIn(doc, nil); err != nil {
		return nil, err
	}
	return doc, nil
}
