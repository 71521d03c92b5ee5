package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/getkin/kin-openapi/openapi3"
)

// BodyParameter is the name of the parameter that carries an operation's JSON request body.
const BodyParameter = "body"

// MaxDescription bounds an action description taken from an operation, in runes: longer ones are cut (OpenAI
// refuses function descriptions over 1024 characters).
const MaxDescription = 1024

// MaxSchemaBytes bounds the JSON of one operation's parameters once every $ref is inlined: repeated subschemas must
// not make a function larger than an LLM request can carry alongside the others. GitHub's largest is 24 KB.
const MaxSchemaBytes = 128 << 10

// param is one parameter of an operation, in the form Invoke needs.
type param struct {
	name     string // as the document names it (sent on the wire)
	arg      string // the action parameter that carries it
	in       string // path, query, header or cookie
	style    string
	explode  bool
	required bool
	keys     map[string]bool // the properties an object value may have
	open     bool            // the schema explicitly allows other properties too
	json     bool            // described by content in a JSON media type: the value is sent as JSON text
}

// operation is an operation of the document converted into an action's parts.
type operation struct {
	id, method, path string
	urlPath          string // the path template sent: path without its query and fragment (route)
	fixed            []fixed
	description      string
	params           []param
	body             *requestBody // how the body in BodyParameter is sent; nil when there is none
	bodyRequired     bool
	routeNote        string         // what the path's query or fragment fixes (route.note)
	schema           map[string]any // the action's parameters: type object, properties, required
	// whole is the full schema when schema is shown to shownDepth levels only (convert); nil otherwise.
	whole      map[string]any
	shownDepth int
	dialect    string // the `$schema` URI schema is in; "" is draft-07 (OpenAPI 3.0)
	// located are the action parameters whose schema sits at a known location of the raw document (rawSource):
	// their JSON pointer tokens.
	located map[string][]string
}

// dialect2020 names JSON Schema 2020-12, the dialect of OpenAPI 3.1 schemas unless the document says otherwise.
const dialect2020 = "https://json-schema.org/draft/2020-12/schema"

// modernDialect reports whether the `$schema` URI d names 2019-09 or 2020-12.
func modernDialect(d string) bool {
	return strings.Contains(d, "json-schema.org/draft/2019-09/") || strings.Contains(d, "json-schema.org/draft/2020-12/")
}

// schemaDialect returns the JSON Schema dialect of doc's schemas as a `$schema` URI: "" for OpenAPI 3.0, whose
// schema objects are converted to draft-07; for 3.1 the document's jsonSchemaDialect, else 2020-12. The OpenAPI
// dialects (https://spec.openapis.org/oas/3.1/dialect/...) are 2020-12 with annotations of their own.
func schemaDialect(doc *openapi3.T) string {
	if !doc.IsOpenAPI31OrLater() {
		return ""
	}
	d := doc.JSONSchemaDialect
	if d == "" || strings.HasPrefix(d, "https://spec.openapis.org/oas/") {
		return dialect2020
	}
	return d
}

// walk calls fn for every operation of doc in a stable order: paths sorted, methods in http.Method order.
func walk(doc *openapi3.T, fn func(path, method string, item *openapi3.PathItem, op *openapi3.Operation)) {
	if doc.Paths == nil {
		return
	}
	paths := doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, p := range keys {
		item := paths[p]
		if item == nil {
			continue
		}
		for _, m := range methodOrder {
			if op := item.GetOperation(m); op != nil {
				fn(p, m, item, op)
			}
		}
	}
}

var methodOrder = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace}

// find returns the operation whose operationId is id verbatim, else the one whose base action name is id (so an
// action can name "repos/get" either way).
func find(doc *openapi3.T, id string) (path, method string, item *openapi3.PathItem, op *openapi3.Operation) {
	var byName *entry
	walk(doc, func(p, m string, i *openapi3.PathItem, o *openapi3.Operation) {
		switch {
		case op == nil && o.OperationID == id:
			path, method, item, op = p, m, i, o
		case byName == nil && baseName(p, m, o.OperationID) == id:
			byName = &entry{path: p, method: m, item: i, op: o}
		}
	})
	if op == nil && byName != nil {
		return byName.path, byName.method, byName.item, byName.op
	}
	return
}

// operators spells the comparison suffixes of filter parameters (Twilio's "StartTime<", "StartTime>=") as words,
// so they stay apart once other characters become "_".
var operators = strings.NewReplacer("<=", "_lte", ">=", "_gte", "<", "_lt", ">", "_gt", "!=", "_ne")

// argName maps a document parameter name to an action parameter name the LLM providers accept (property keys
// matching ^[a-zA-Z0-9_.-]{1,64}$): comparison operators become _lt, _gt, _lte, _gte, _ne; other characters "_".
func argName(name string) string {
	out := strings.Map(func(r rune) rune {
		if r == '_' || r == '.' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, operators.Replace(name))
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}

// convert builds an operation whose schemas are in dialect (schemaDialect); the error says why it cannot become an
// action. When the parameters' schema shown to the LLM would exceed the bounds (MaxSchemaBytes, 20,000 nodes), it
// shows the deepest form within them, whose deeper levels are {} with their descriptions kept, says so in the
// description, and keeps the full schema in operation.whole to validate arguments against.
func convert(path, method string, item *openapi3.PathItem, op *openapi3.Operation, dialect string) (*operation, error) {
	return convertShown(path, method, item, op, dialect, true, nil)
}

// convertShown is convert; without withWhole, a bounded operation gets no operation.whole: its arguments are
// validated against the document as written (validation). With a cache, the draft-07 schemas the operation names
// at its roots are shared with the other operations of the expansion (shownCache).
func convertShown(path, method string, item *openapi3.PathItem, op *openapi3.Operation, dialect string,
	withWhole bool, cache *shownCache) (*operation, error) {
	if dialect != "" && modernDialect(dialect) {
		cache = nil // a recursive schema becomes a $defs entry named in the order met: not shareable
	}
	converterAt := func(depth int) *converter {
		c := newConverter(dialect, maxSchemaNodes, MaxSchemaBytes, depth)
		c.cache = cache
		return c
	}
	o, err := convertWith(path, method, item, op, dialect, converterAt(0))
	var tooLarge *tooLargeError
	if !errors.As(err, &tooLarge) {
		return o, err
	}
	var whole *operation
	if withWhole {
		full := newConverter(dialect, maxWholeNodes, maxWholeBytes, 0)
		full.refs = true
		if whole, err = convertWith(path, method, item, op, dialect, full); err != nil {
			return nil, err
		}
	}
	for depth := 8; depth >= 1; depth-- {
		shown, err := convertWith(path, method, item, op, dialect, converterAt(depth))
		if errors.As(err, &tooLarge) {
			continue
		}
		if err != nil {
			return nil, err
		}
		shown.shownDepth = depth
		if whole != nil {
			shown.whole = whole.schema
			shown.whole["additionalProperties"] = false
		}
		note := fmt.Sprintf("Parameters are shown %d levels deep: deeper values are any JSON, checked against the "+
			"full schema.", depth)
		if shown.routeNote != "" {
			note = shown.routeNote + " " + note
		}
		shown.description = describe(op, method, path, note)
		return shown, nil
	}
	if cache != nil {
		// The reason gives the bytes of the copy at depth 1, which the cache only measures up to the bound.
		if _, err := convertWith(path, method, item, op, dialect, newConverter(dialect, maxSchemaNodes, MaxSchemaBytes,
			1)); errors.As(err, &tooLarge) {
			return nil, tooLarge
		}
	}
	return nil, tooLarge
}

// convertWith converts an operation with c.
func convertWith(path, method string, item *openapi3.PathItem, op *openapi3.Operation, dialect string,
	c *converter) (*operation, error) {
	r, err := splitRoute(path)
	if err != nil {
		return nil, err
	}
	o := &operation{id: op.OperationID, method: method, path: path, urlPath: r.path, dialect: dialect}
	if err := checkPath(r.path); err != nil {
		return nil, err
	}
	props := map[string]any{}
	var required []any
	seen := map[string]string{}
	var list []*param
	schemas := map[*param]propSchema{}
	propBytes := 0 // with c.cache: the JSON bytes of the properties, each "name":schema
	located := map[*param][]string{}
	for _, pr := range merged(item.Parameters, op.Parameters) {
		c.last = rootValue{}
		p, schema, err := parameter(c, pr)
		if err != nil {
			return nil, err
		}
		if p != nil {
			list = append(list, p)
			schemas[p] = propSchema{schema, 0}
			if c.cache != nil {
				schemas[p] = propSchema{schema, c.shownSize(schema)}
			}
			var key string
			for k := range pr.Value.Content {
				key = k
			}
			if t := paramTokens(path, method, item, op, pr, key); t != nil {
				located[p] = t
			}
		}
	}
	o.located = map[string][]string{}
	list, o.fixed, err = r.bind(list)
	if err != nil {
		return nil, err
	}
	o.routeNote = r.note(o.fixed)
	o.description = describe(op, method, path, o.routeNote)
	separate(list)
	for _, p := range list {
		if first, dup := seen[p.arg]; dup {
			return nil, fmt.Errorf("parameters %s and %s %q both become the action parameter %q", first, p.in, p.name, p.arg)
		}
		seen[p.arg] = fmt.Sprintf("%s %q", p.in, p.name)
		props[p.arg] = schemas[p].schema
		propBytes = addSize(propBytes, quotedLen(p.arg)+1, schemas[p].size)
		if t := located[p]; t != nil {
			o.located[p.arg] = t
		}
		if p.required {
			required = append(required, p.arg)
		}
		o.params = append(o.params, *p)
	}
	if err := pathParamsDeclared(r.path, o.params); err != nil {
		return nil, err
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil && !(emptyBody(rb.Value) && !bodyUsual(method)) {
		if !bodyAllowed(method) {
			return nil, fmt.Errorf("a %s operation with a request body (unsupported: a %s request carries no body)",
				method, method)
		}
		reqBody, mt, err := bodyMedia(rb.Value.Content)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[BodyParameter]; dup {
			return nil, fmt.Errorf("parameter %s is named like the request body parameter %q", first, BodyParameter)
		}
		body := map[string]any{}
		var boolean any // a boolean body schema: true takes any body, false none
		c.last = rootValue{}
		if reqBody.kind == bodyRaw {
			body["type"] = "string"
		} else if mt != nil && mt.Schema != nil {
			switch b := c.ref(mt.Schema).(type) {
			case map[string]any:
				body = b
			case bool:
				boolean = b
			}
		}
		if _, has := body["description"]; !has && rb.Value.Description != "" {
			body = c.writable(body)
			body["description"] = rb.Value.Description
		}
		props[BodyParameter] = body
		if (reqBody.kind == bodyJSON || reqBody.kind == bodyForm || reqBody.kind == bodyMultipart) && mt != nil && mt.Schema != nil {
			for k, m := range rb.Value.Content {
				if m == mt {
					if t := bodyTokens(path, method, rb, k); t != nil {
						o.located[BodyParameter] = t
					}
				}
			}
		}
		if boolean != nil {
			props[BodyParameter] = boolean
		}
		if c.cache != nil {
			propBytes = addSize(propBytes, quotedLen(BodyParameter)+1, c.shownSize(props[BodyParameter]))
		}
		o.body, o.bodyRequired = reqBody, rb.Value.Required
		if rb.Value.Required {
			required = append(required, BodyParameter)
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	if required == nil {
		required = []any{}
	}
	sort.Slice(required, func(i, j int) bool { return required[i].(string) < required[j].(string) })
	o.schema = map[string]any{"type": "object", "properties": props, "required": required}
	if len(c.defs) > 0 {
		o.schema[c.defsKey()] = c.defs
	}
	if c.cache != nil {
		if n := shownSchemaSize(len(props), propBytes, required); n > c.maxBytes {
			return nil, &tooLargeError{fmt.Sprintf(
				"its parameters schema is %d bytes once $refs are inlined, over the %d-byte bound", n, c.maxBytes)}
		}
		return o, nil
	}
	if raw, err := json.Marshal(o.schema); err != nil || len(raw) > c.maxBytes {
		return nil, &tooLargeError{fmt.Sprintf(
			"its parameters schema is %d bytes once $refs are inlined, over the %d-byte bound", len(raw), c.maxBytes)}
	}
	return o, nil
}

// propSchema is a property's schema shown and, with a shownCache, its JSON size.
type propSchema struct {
	schema any
	size   int
}

// shownSchemaSize is len(json.Marshal(schema)) for an operation's parameters schema (type object, properties,
// required) whose n properties take propBytes.
func shownSchemaSize(n, propBytes int, required []any) int {
	const frame = len(`{"properties":{},"required":,"type":"object"}`)
	return addSize(frame+max(n-1, 0), propBytes, jsonSize(required))
}

// separate renames parameters of different locations that share an action parameter name (a path "id" and a
// query "id"): the path parameter keeps it, the others are prefixed with their location ("query_id").
func separate(list []*param) {
	count := map[string]int{}
	for _, p := range list {
		count[p.arg]++
	}
	for _, p := range list {
		if count[p.arg] > 1 && p.in != openapi3.ParameterInPath {
			p.arg = argName(p.in + "_" + p.arg)
		}
	}
}

// merged returns the path item's parameters overridden by the operation's (same name and location).
func merged(shared, own openapi3.Parameters) []*openapi3.ParameterRef {
	out := make([]*openapi3.ParameterRef, 0, len(shared)+len(own))
	key := func(r *openapi3.ParameterRef) string {
		if r == nil || r.Value == nil {
			return ""
		}
		return r.Value.In + "\x00" + r.Value.Name
	}
	overridden := map[string]bool{}
	for _, r := range own {
		overridden[key(r)] = true
	}
	for _, r := range shared {
		if !overridden[key(r)] {
			out = append(out, r)
		}
	}
	return append(out, own...)
}

// ignoredHeaders are header parameters the OpenAPI specification says to ignore: the request's media types and
// its authorization come from elsewhere (the manifest's headers).
var ignoredHeaders = map[string]bool{"Accept": true, "Content-Type": true, "Authorization": true}

// parameter converts one parameter; it returns a nil param for one that is ignored.
func parameter(c *converter, r *openapi3.ParameterRef) (*param, any, error) {
	if r == nil || r.Value == nil {
		return nil, nil, nil
	}
	v := r.Value
	p := &param{name: v.Name, arg: argName(v.Name), in: v.In, style: v.Style, required: v.Required}
	if v.Name == "" {
		return nil, nil, fmt.Errorf("a %s parameter has no name", v.In)
	}
	if v.In == openapi3.ParameterInHeader && ignoredHeaders[http.CanonicalHeaderKey(v.Name)] {
		return nil, nil, nil
	}
	schemaRef := v.Schema
	if schemaRef == nil {
		if schemaRef = jsonContent(v.Content); schemaRef == nil {
			return nil, nil, fmt.Errorf("parameter %q is described by content, not a schema (unsupported)", v.Name)
		}
		p.json = true
	}
	var defaultStyle string
	switch v.In {
	case openapi3.ParameterInPath:
		defaultStyle, p.required = openapi3.SerializationSimple, true
	case openapi3.ParameterInQuery:
		defaultStyle = openapi3.SerializationForm
	case openapi3.ParameterInHeader:
		defaultStyle = openapi3.SerializationSimple
		if !httpguts.ValidHeaderFieldName(v.Name) {
			return nil, nil, fmt.Errorf("header parameter %q is not a valid header name", v.Name)
		}
	case openapi3.ParameterInCookie:
		defaultStyle = openapi3.SerializationForm
		if !httpguts.ValidHeaderFieldName(v.Name) {
			return nil, nil, fmt.Errorf("cookie parameter %q is not a valid cookie name", v.Name)
		}
	default:
		return nil, nil, fmt.Errorf("parameter %q is in %q (unsupported)", v.Name, v.In)
	}
	if p.style == "" {
		p.style = defaultStyle
	}
	p.explode = p.style == openapi3.SerializationForm
	if v.Explode != nil {
		p.explode = *v.Explode
	}
	if !p.json {
		sh := shapeOf(v.Schema.Value)
		if err := supported(p, sh); err != nil {
			return nil, nil, err
		}
		if sh&object != 0 {
			p.keys = map[string]bool{}
			p.open = objectKeys(v.Schema.Value, p.keys)
		}
	}
	schema := c.ref(schemaRef)
	if m, ok := schema.(map[string]any); ok {
		if _, has := m["description"]; !has && v.Description != "" {
			m = c.writable(m)
			m["description"] = v.Description
		}
		if v.Deprecated {
			m = c.writable(m)
			m["deprecated"] = true
		}
		schema = m
	}
	return p, schema, nil
}

// jsonContent returns the schema of a parameter described by content in one JSON media type (a JSON-encoded query
// or header value), nil otherwise.
func jsonContent(content openapi3.Content) *openapi3.SchemaRef {
	if len(content) != 1 {
		return nil
	}
	for k, mt := range content {
		if parsed, _, err := mime.ParseMediaType(k); err == nil && jsonMediaType(parsed) && mt != nil {
			if mt.Schema == nil {
				return &openapi3.SchemaRef{Value: &openapi3.Schema{}}
			}
			return mt.Schema
		}
	}
	return nil
}

var pathTemplate = regexp.MustCompile(`\{([^{}/]+)\}`)

// checkPath refuses path templates whose literal parts could change the URL's structure or hold a "." or ".."
// segment (also spelled %2e, or between %2F escapes). Other characters invalid in a URL path are escaped by
// splitPath.
func checkPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("path %q does not start with /", path)
	}
	literal := pathTemplate.ReplaceAllString(path, "x")
	if strings.ContainsAny(literal, "?#{} ") {
		return fmt.Errorf("path %q holds characters a path template cannot", path)
	}
	if decoded, err := url.PathUnescape(escapeLiteral(literal)); err != nil || dotPiece(decoded) {
		return fmt.Errorf("path %q has a \".\" or \"..\" segment", path)
	}
	return nil
}

func pathParamsDeclared(path string, params []param) error {
	for _, m := range pathTemplate.FindAllStringSubmatch(path, -1) {
		found := false
		for _, p := range params {
			found = found || p.in == openapi3.ParameterInPath && p.name == m[1]
		}
		if !found {
			return fmt.Errorf("path parameter %q is not declared", m[1])
		}
	}
	return nil
}

// emptyBody reports whether an optional request body can carry nothing: every media type's schema is an object
// without properties that allows no others (Stripe gives each GET operation such a form body).
func emptyBody(rb *openapi3.RequestBody) bool {
	if rb.Required {
		return false
	}
	for _, mt := range rb.Content {
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			return false
		}
		s := mt.Schema.Value
		if len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil ||
			s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			return false
		}
	}
	return true
}

// bodyUsual reports whether a request with method usually carries a body: RFC 9110 gives a GET, HEAD or TRACE
// body no defined meaning.
func bodyUsual(method string) bool {
	return method != http.MethodGet && bodyAllowed(method)
}

// bodyAllowed reports whether a request with method may carry a body: a GET may, where the document says so
// (search APIs such as Elasticsearch's take their query as a GET body); a HEAD or TRACE body is dropped or refused
// by servers and proxies.
func bodyAllowed(method string) bool {
	return method != http.MethodHead && method != http.MethodTrace
}

// describe is the action description: the summary, then the description when it says more, then note (what the
// path's query or fragment fixes), which a cut never removes.
func describe(op *openapi3.Operation, method, path, note string) string {
	d := strings.TrimSpace(op.Summary)
	if desc := strings.TrimSpace(op.Description); desc != "" && desc != d {
		if d != "" {
			d += "\n\n"
		}
		d += desc
	}
	if d == "" {
		d = method + " " + path
	}
	limit := MaxDescription
	if note != "" {
		limit -= utf8.RuneCountInString(note) + 2
	}
	if limit > 0 && utf8.RuneCountInString(d) > limit {
		r := []rune(d)
		d = string(r[:limit-1]) + "…"
	}
	if note != "" {
		d += "\n\n" + note
	}
	return d
}
