package schema

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool/field"
)

// decode parses JSON the way the loader does: numbers as json.Number.
func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func mustCompile(t testing.TB, doc string, opts Options) *Schema {
	t.Helper()
	s, errs := Compile(decode(t, doc), field.NewPath("p"), opts)
	if len(errs) > 0 {
		t.Fatalf("Compile(%s): %v", doc, errs)
	}
	return s
}

type problem struct {
	Type field.Type
	Path string
}

func problems(errs field.List) []problem {
	out := make([]problem, len(errs))
	for i, e := range errs {
		out[i] = problem{e.Type, e.Path}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func TestCompileProblems(t *testing.T) {
	t.Parallel()
	params := Options{Parameters: true}
	tests := []struct {
		name   string
		doc    string
		opts   Options
		want   []problem
		detail string // a substring every reported detail must contain
	}{
		{
			name: "remote ref forbidden",
			doc:  `{"properties":{"a":{"$ref":"https://example.com/s.json#/x"}}}`,
			want: []problem{{field.TypeForbidden, "p.properties.a.$ref"}},
		},
		{
			name: "file ref forbidden",
			doc:  `{"properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
			want: []problem{{field.TypeForbidden, "p.properties.a.$ref"}},
		},
		{
			name: "relative document ref forbidden",
			doc:  `{"items":{"$ref":"other.json#/definitions/a"}}`,
			want: []problem{{field.TypeForbidden, "p.items.$ref"}},
		},
		{
			name: "non-string ref",
			doc:  `{"not":{"$ref":3}}`,
			want: []problem{{field.TypeInvalid, "p.not.$ref"}},
		},
		{
			name:   "unresolvable pointer ref",
			doc:    `{"definitions":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/zz"}}}`,
			want:   []problem{{field.TypeInvalid, "p.properties.a.$ref"}},
			detail: "does not resolve",
		},
		{
			name: "ref to a non-schema",
			doc:  `{"definitions":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/a/type"}}}`,
			want: []problem{{field.TypeInvalid, "p.properties.a.$ref"}},
		},
		{
			name: "ref into an extension keyword does not resolve",
			doc:  `{"x-shared":{"type":"string"},"properties":{"a":{"$ref":"#/x-shared"}}}`,
			want: []problem{{field.TypeInvalid, "p.properties.a.$ref"}},
		},
		{
			name: "unresolvable anchor",
			doc:  `{"properties":{"a":{"$ref":"#nope"}}}`,
			want: []problem{{field.TypeInvalid, "p.properties.a.$ref"}},
		},
		{
			name:   "unknown keyword with suggestion",
			doc:    `{"properties":{"count":{"type":"integer","minimun":1}}}`,
			want:   []problem{{field.TypeUnsupported, "p.properties.count.minimun"}},
			detail: `did you mean "minimum"?`,
		},
		{
			name:   "nullable is not draft-07",
			doc:    `{"properties":{"a":{"type":"string","nullable":true}}}`,
			want:   []problem{{field.TypeUnsupported, "p.properties.a.nullable"}},
			detail: "unknown JSON Schema keyword",
		},
		{
			name: "unknown keywords deep inside every schema position",
			doc: `{"definitions":{"d":{"foo":1}},"$defs":{"e":{"bar":1}},"items":[{"baz":1}],
				"additionalProperties":{"qux":1},"allOf":[{"quux":1}],"if":{"k1":1},"then":{"k2":1},"else":{"k3":1},
				"dependencies":{"a":{"k4":1},"b":["a"]},"patternProperties":{"^x":{"k5":1}},"propertyNames":{"k6":1},
				"contains":{"k7":1},"not":{"k8":1},"additionalItems":{"k9":1}}`,
			want: []problem{
				{field.TypeUnsupported, "p.$defs.e.bar"},
				{field.TypeUnsupported, "p.additionalItems.k9"},
				{field.TypeUnsupported, "p.additionalProperties.qux"},
				{field.TypeUnsupported, "p.allOf[0].quux"},
				{field.TypeUnsupported, "p.contains.k7"},
				{field.TypeUnsupported, "p.definitions.d.foo"},
				{field.TypeUnsupported, "p.dependencies.a.k4"},
				{field.TypeUnsupported, "p.else.k3"},
				{field.TypeUnsupported, "p.if.k1"},
				{field.TypeUnsupported, "p.items[0].baz"},
				{field.TypeUnsupported, "p.not.k8"},
				{field.TypeUnsupported, `p.patternProperties["^x"].k5`},
				{field.TypeUnsupported, "p.propertyNames.k6"},
				{field.TypeUnsupported, "p.then.k2"},
			},
		},
		{
			name: "values of default, enum, const, examples and extensions are not schemas",
			doc: `{"properties":{"a":{"default":{"nope":1,"$ref":"http://x"},"enum":[{"nope":1,"$ref":"http://x"}],
				"const":{"$ref":"http://x","nope":1},
				"examples":[{"$ref":"http://x"}],"x-ui":{"nope":1,"$ref":"http://x"}}}}`,
		},
		{
			name:   "bad type name",
			doc:    `{"properties":{"count":{"type":"strnig"}}}`,
			want:   []problem{{field.TypeInvalid, "p.properties.count.type"}},
			detail: `did you mean "string"?`,
		},
		{
			name: "bad type in a list",
			doc:  `{"properties":{"count":{"type":["integer","nul","integer"]}}}`,
			want: []problem{
				{field.TypeInvalid, "p.properties.count.type[1]"},
				{field.TypeDuplicate, "p.properties.count.type[2]"},
			},
		},
		{
			name: "keyword value types",
			doc: `{"required":"x","properties":{"a":{"minimum":"a","maxLength":-1,"pattern":"(","uniqueItems":"yes",
				"multipleOf":0,"title":3,"enum":"x","minItems":1.5}}}`,
			want: []problem{
				{field.TypeInvalid, "p.properties.a.enum"},
				{field.TypeInvalid, "p.properties.a.maxLength"},
				{field.TypeInvalid, "p.properties.a.minItems"},
				{field.TypeInvalid, "p.properties.a.minimum"},
				{field.TypeInvalid, "p.properties.a.multipleOf"},
				{field.TypeInvalid, "p.properties.a.pattern"},
				{field.TypeInvalid, "p.properties.a.title"},
				{field.TypeInvalid, "p.properties.a.uniqueItems"},
				{field.TypeInvalid, "p.required"},
			},
		},
		{
			name: "schema positions holding non-schemas",
			doc:  `{"properties":{"a":"string"},"items":3,"anyOf":[],"patternProperties":{"(":{}}}`,
			want: []problem{
				{field.TypeInvalid, "p.anyOf"},
				{field.TypeInvalid, "p.items"},
				{field.TypeInvalid, `p.patternProperties["("]`},
				{field.TypeInvalid, "p.properties.a"},
			},
		},
		{
			name: "draft-04 exclusiveMaximum must be boolean",
			doc:  `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":3,"exclusiveMaximum":3}`,
			want: []problem{{field.TypeInvalid, "p.exclusiveMaximum"}},
		},
		{
			name: "unsupported $schema",
			doc:  `{"$schema":"http://json-schema.org/draft-03/schema#"}`,
			want: []problem{{field.TypeUnsupported, "p.$schema"}},
		},
		{
			name:   "validator backstop: duplicate enum values reported at base",
			doc:    `{"properties":{"a":{"enum":["x","x"]}}}`,
			want:   []problem{{field.TypeInvalid, "p"}},
			detail: "is not a valid JSON Schema",
		},
		{
			name: "require_binding must be boolean",
			doc:  `{"properties":{"a":{"require_binding":"yes"}}}`,
			want: []problem{{field.TypeInvalid, "p.properties.a.require_binding"}},
		},
		{
			name: "require_binding only on top-level properties",
			doc: `{"require_binding":true,"properties":{"a":{"type":"object",
				"properties":{"b":{"require_binding":true}}}},"definitions":{"d":{"require_binding":true}}}`,
			want: []problem{
				{field.TypeInvalid, "p.definitions.d.require_binding"},
				{field.TypeInvalid, "p.properties.a.properties.b.require_binding"},
				{field.TypeInvalid, "p.require_binding"},
			},
			detail: "top-level parameters only",
		},
		{
			name: "property names with dots render as keys",
			doc:  `{"properties":{"github.token":{"type":"strnig"}}}`,
			want: []problem{{field.TypeInvalid, `p.properties["github.token"].type`}},
		},
		{
			name: "parameters: must be an object schema",
			doc:  `{"type":"string"}`,
			opts: params,
			want: []problem{{field.TypeInvalid, "p.type"}},
		},
		{
			name: "parameters: boolean document",
			doc:  `true`,
			opts: params,
			want: []problem{{field.TypeInvalid, "p"}},
		},
		{
			name: "parameters: property schemas may be booleans",
			doc:  `{"properties":{"a":true,"b":false,"c":{}}}`,
			opts: params,
			want: nil,
		},
		{
			name: "parameters: explicit required names undeclared property",
			doc:  `{"properties":{"a":{}},"required":["a","b"]}`,
			opts: params,
			want: []problem{{field.TypeInvalid, "p.required[1]"}},
		},
		{
			name: "parameters: default must validate against its property",
			doc: `{"definitions":{"small":{"type":"integer","maximum":10}},"properties":{
				"count":{"type":"integer","default":"ten"},
				"limit":{"$ref":"#/definitions/small","default":50},
				"ok":{"type":"integer","default":5}}}`,
			opts: params,
			want: []problem{
				{field.TypeInvalid, "p.properties.count.default"},
				{field.TypeInvalid, "p.properties.limit.default"},
			},
		},
		{
			name: "every problem is collected",
			doc: `{"properties":{"a":{"type":"strnig"},"b":{"$ref":"http://x/y"},"c":{"minimun":1},
				"d":{"default":"x","type":"integer"}},"required":["a","zz"]}`,
			opts: params,
			want: []problem{
				{field.TypeInvalid, "p.properties.a.type"},
				{field.TypeForbidden, "p.properties.b.$ref"},
				{field.TypeUnsupported, "p.properties.c.minimun"},
				{field.TypeInvalid, "p.required[1]"},
			},
		},
		{
			name: "valid: everything in its place",
			doc: `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"https://example.com/s.json",
				"title":"t","description":"d","$comment":"c","definitions":{"n":{"$id":"#num","type":"number"}},
				"$defs":{"s":{"type":"string"}},"properties":{
				"a":{"$ref":"#/definitions/n","require_binding":true},"b":{"$ref":"#num"},"c":{"$ref":"#/$defs/s"},
				"d":{"type":["string","null"],"x-ui":"textarea","format":"password","writeOnly":true,"deprecated":false},
				"e":{"type":"array","items":[{"type":"string"}],"additionalItems":false,"contains":{"const":"x"}},
				"f":{"if":{"minimum":0},"then":{"multipleOf":2},"else":{"not":{"type":"null"}}},
				"g":{"type":"object","propertyNames":{"pattern":"^[a-z]+$"},"dependencies":{"x":["y"],"y":{"required":["x"]}}},
				"h":{"oneOf":[true,{"type":"string","contentMediaType":"text/plain","contentEncoding":"base64"}]},
				"i":{"type":"number","exclusiveMaximum":5,"exclusiveMinimum":0,"readOnly":false,"examples":[1]}},
				"additionalProperties":false}`,
			opts: params,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, errs := Compile(decode(t, tt.doc), field.NewPath("p"), tt.opts)
			if got := problems(errs); !reflect.DeepEqual(got, problemsOrNil(tt.want)) {
				t.Fatalf("problems:\n got %v\nwant %v\n(%v)", got, tt.want, errs)
			}
			if (s == nil) != (len(tt.want) > 0) {
				t.Errorf("schema = %v with %d problems", s, len(tt.want))
			}
			for _, e := range errs {
				if !strings.Contains(e.Detail, tt.detail) {
					t.Errorf("%s: detail %q lacks %q", e.Path, e.Detail, tt.detail)
				}
			}
		})
	}
}

func problemsOrNil(p []problem) []problem {
	if p == nil {
		return []problem{}
	}
	return p
}

// TestCompileNeverFetches points every reference form at a server that fails the test when hit.
func TestCompileNeverFetches(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Errorf("schema server was fetched: %s", r.URL)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"absolute ref", `{"properties":{"a":{"$ref":"` + srv.URL + `/s.json"}}}`, false},
		{"ref in definitions", `{"definitions":{"d":{"$ref":"` + srv.URL + `/d.json#/x"}}}`, false},
		{"ref in a default check", `{"properties":{"a":{"default":1,"items":{"$ref":"` + srv.URL + `"}}}}`, false},
		{"remote $schema", `{"$schema":"` + srv.URL + `/schema"}`, false},
		{"local ref under a remote $id base", `{"$id":"` + srv.URL + `/base.json","definitions":{"a":{
			"$id":"` + srv.URL + `/nested/","type":"string"}},"properties":{"a":{"$ref":"#/definitions/a"},
			"b":{"$ref":"#/definitions/a","default":"x"}}}`, true},
		// A validator would resolve "#/definitions/a" against "<srv>/x.json", which is not in its pool: a fetch.
		{"local ref inside a remote $id with a fragment", `{"definitions":{"a":{"type":"string"},
			"d":{"$id":"` + srv.URL + `/x.json#frag","properties":{"z":{"$ref":"#/definitions/a"}}}},
			"properties":{"a":{"$ref":"#/definitions/d/properties/z"},"b":{"type":"string"}}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, errs := Compile(decode(t, tt.doc), field.NewPath("p"), Options{Parameters: true})
			if (len(errs) == 0) != tt.ok {
				t.Fatalf("ok = %v, problems: %v", len(errs) == 0, errs)
			}
			if s != nil {
				if vs := s.Validate(map[string]any{"a": 1.0, "b": "y"}); len(vs) != 1 || vs[0].Path != "a" {
					t.Errorf("violations = %v, want one at a", vs)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server hit %d times", n)
	}
}

func TestRequired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		doc     string
		opts    Options
		want    []string // names of required properties
		wantDoc any      // Doc()["required"]
	}{
		{
			name:    "without default required, with default optional",
			doc:     `{"properties":{"b":{"type":"string"},"a":{"type":"integer"},"c":{"type":"integer","default":3}}}`,
			opts:    Options{Parameters: true},
			want:    []string{"a", "b"},
			wantDoc: []any{"a", "b"},
		},
		{
			name:    "boolean property schemas: true required, false never",
			doc:     `{"properties":{"t":true,"f":false}}`,
			opts:    Options{Parameters: true},
			want:    []string{"t"},
			wantDoc: []any{"t"},
		},
		{
			name:    "explicit required wins",
			doc:     `{"properties":{"a":{},"b":{"default":1},"c":{}},"required":["b"]}`,
			opts:    Options{Parameters: true},
			want:    []string{"b"},
			wantDoc: []any{"b"},
		},
		{
			name:    "explicit empty required makes everything optional",
			doc:     `{"properties":{"a":{},"b":{}},"required":[]}`,
			opts:    Options{Parameters: true},
			want:    nil,
			wantDoc: []any{},
		},
		{
			name:    "all defaulted: no required array",
			doc:     `{"properties":{"a":{"default":1}}}`,
			opts:    Options{Parameters: true},
			want:    nil,
			wantDoc: nil,
		},
		{
			name:    "plain schema: only an explicit array counts",
			doc:     `{"properties":{"a":{},"b":{}},"required":["a"]}`,
			want:    []string{"a"},
			wantDoc: []any{"a"},
		},
		{
			name:    "plain schema: nothing implied",
			doc:     `{"properties":{"a":{}}}`,
			want:    nil,
			wantDoc: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.doc, tt.opts)
			var got []string
			for _, p := range s.Properties() {
				if p.Required {
					got = append(got, p.Name)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("required properties = %v, want %v", got, tt.want)
			}
			if got := s.Doc()["required"]; !reflect.DeepEqual(got, tt.wantDoc) {
				t.Errorf("Doc()[required] = %#v, want %#v", got, tt.wantDoc)
			}
		})
	}
}

func TestEffectiveDoc(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#","x-top":1,"properties":{
		"x-name":{"type":"string","require_binding":true,"x-ui":"a"}}}`, Options{Parameters: true})
	want := map[string]any{
		"type":       "object",
		"required":   []any{"x-name"},
		"properties": map[string]any{"x-name": map[string]any{"type": "string"}},
	}
	if !reflect.DeepEqual(s.Doc(), want) {
		t.Errorf("Doc() = %#v, want %#v", s.Doc(), want)
	}
	p, ok := s.Property("x-name")
	if !ok || !p.RequireBinding || p.Schema["x-ui"] != "a" {
		t.Errorf("Property(x-name) = %+v, %v; want the schema as written with require_binding", p, ok)
	}
	if _, ok := s.Property("nope"); ok {
		t.Error("Property(nope) found")
	}
}

func TestNilParameters(t *testing.T) {
	t.Parallel()
	s, errs := Compile(nil, field.NewPath("p"), Options{Parameters: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if vs := s.Validate(map[string]any{}); vs != nil {
		t.Errorf("empty object: %v", vs)
	}
	if vs := s.Validate("x"); len(vs) != 1 {
		t.Errorf("string: %v, want a type violation", vs)
	}
	if _, errs := Compile(nil, field.NewPath("p"), Options{}); len(errs) != 1 || errs[0].Path != "p" {
		t.Errorf("nil plain schema: %v, want one problem at p", errs)
	}
}

func TestCompileDoesNotAliasInput(t *testing.T) {
	t.Parallel()
	doc := decode(t, `{"properties":{"a":{"type":"object","default":{"k":"v"}}}}`).(map[string]any)
	s, errs := Compile(doc, nil, Options{Parameters: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := doc["properties"].(map[string]any)["a"].(map[string]any)
	a["type"] = "string"
	a["default"].(map[string]any)["k"] = "changed"
	if p, _ := s.Property("a"); p.Schema["type"] != "object" || p.Default.(map[string]any)["k"] != "v" {
		t.Errorf("property changed with the input document: %+v", p)
	}
	if got := s.Doc()["properties"].(map[string]any)["a"].(map[string]any)["type"]; got != "object" {
		t.Errorf("Doc changed with the input document: type %v", got)
	}
}

func TestApplyDefaults(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{"a":{"type":"integer","default":3},"b":{"type":"string"},
		"c":{"type":"array","default":["x"]},"d":{"default":null}}}`, Options{Parameters: true})
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"nil", nil, map[string]any{"a": json.Number("3"), "c": []any{"x"}, "d": nil}},
		{"present values win", map[string]any{"a": 7, "b": "y", "d": "z"},
			map[string]any{"a": 7, "b": "y", "c": []any{"x"}, "d": "z"}},
		{"unknown keys kept", map[string]any{"zz": 1}, map[string]any{"a": json.Number("3"), "c": []any{"x"}, "d": nil, "zz": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var before map[string]any
			if tt.in != nil {
				before = map[string]any{}
				for k, v := range tt.in {
					before[k] = v
				}
			}
			got := s.ApplyDefaults(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ApplyDefaults = %#v, want %#v", got, tt.want)
			}
			if tt.in != nil && !reflect.DeepEqual(tt.in, before) {
				t.Errorf("input modified: %#v", tt.in)
			}
		})
	}
	first := s.ApplyDefaults(nil)
	first["c"].([]any)[0] = "mutated"
	if got := s.ApplyDefaults(nil)["c"].([]any)[0]; got != "x" {
		t.Errorf("default shared between calls: %v", got)
	}
}

func TestSecret(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{"pw":{"type":"string","format":"password"},
		"token":{"type":"string","writeOnly":true},"user":{"type":"string","format":"email"},
		"ro":{"type":"string","writeOnly":false}}}`, Options{Parameters: true})
	want := map[string]bool{"pw": true, "token": true, "user": false, "ro": false}
	for name, secret := range want {
		p, ok := s.Property(name)
		if !ok || p.Secret != secret {
			t.Errorf("Property(%s).Secret = %v (found %v), want %v", name, p.Secret, ok, secret)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"minimun", ` (did you mean "minimum"?)`},
		{"MaxLength", ` (did you mean "maxLength"?)`},
		{"requried", ` (did you mean "required"?)`},
		{"additionalProps", ""},
		{"nullable", ""},
	}
	for _, tt := range tests {
		if got := didYouMean(tt.in, keywordNames); got != tt.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
