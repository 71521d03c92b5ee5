package openapi

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConvertTypeLists converts an operation of a real 3.1 document with type lists, a $ref'd header schema and
// a cookie parameter.
func TestConvertTypeLists(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs(filepath.Join("testdata", "swaggest-sample-3.1.json"))
	loc, err := location(abs, "")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := documents.load(context.Background(), loc, nil, MaxDocumentBytes)
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Paths.Find("/somewhere/{in_path}")
	o, err := convert("/somewhere/{in_path}", "POST", item, item.Post, schemaDialect(doc))
	if err != nil {
		t.Fatal(err)
	}
	props := o.schema["properties"].(map[string]any)
	tests := map[string]string{
		"array_csv":        `{"items":{"type":"string"},"type":["array","null"]}`,
		"array_swg2_pipes": `{"items":{"type":"string"},"type":["array","null"]}`,
		"uuid":             `{"items":{"minimum":0,"type":"integer"},"type":["array","null"]}`,
		"in_path":          `{"type":"integer"}`,
		"in_cookie":        `{"deprecated":true,"type":"string"}`,
		"body":             `{"properties":{"in_body1":{"type":"integer"},"in_body2":{"type":"string"}},"type":"object"}`,
	}
	for name, want := range tests {
		if got := encode(t, props[name]); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if got := encode(t, o.schema["required"]); got != `["in_path","in_query1","in_query2","in_query3"]` {
		t.Errorf("required = %s", got)
	}
	if o.dialect != dialect2020 {
		t.Errorf("dialect = %q, want 2020-12 (a 3.1 document without jsonSchemaDialect)", o.dialect)
	}
}

// TestConvertSchemas2020 pins the 3.1 conversion (issue 29): 2020-12 keywords stay, and a recursive $ref becomes a
// reference into the operation's $defs.
func TestConvertSchemas2020(t *testing.T) {
	t.Parallel()
	u := func(v uint64) *uint64 { return &v }
	no := false
	str := &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}}}
	recursive := &openapi3.Schema{Type: &openapi3.Types{"object"}}
	recursive.Properties = openapi3.Schemas{"next": &openapi3.SchemaRef{Ref: "#/components/schemas/Node", Value: recursive}}
	tests := []struct {
		name string
		in   *openapi3.Schema
		want string
		defs string
	}{
		{"prefixItems", &openapi3.Schema{PrefixItems: openapi3.SchemaRefs{str}, Items: str},
			`{"items":{"type":"string"},"prefixItems":[{"type":"string"}]}`, ``},
		{"contains counts", &openapi3.Schema{Contains: str, MinContains: u(2), MaxContains: u(3)},
			`{"contains":{"type":"string"},"maxContains":3,"minContains":2}`, ``},
		{"unevaluated", &openapi3.Schema{UnevaluatedProperties: openapi3.BoolSchema{Has: &no},
			UnevaluatedItems: openapi3.BoolSchema{Schema: str}},
			`{"unevaluatedItems":{"type":"string"},"unevaluatedProperties":false}`, ``},
		{"dependents", &openapi3.Schema{DependentRequired: map[string][]string{"a": {"b"}},
			DependentSchemas: openapi3.Schemas{"a": str}},
			`{"dependentRequired":{"a":["b"]},"dependentSchemas":{"a":{"type":"string"}}}`, ``},
		{"recursive $ref", recursive, `{"properties":{"next":{"$ref":"#/$defs/r1"}},"type":"object"}`,
			`{"r1":{"properties":{"next":{"$ref":"#/$defs/r1"}},"type":"object"}}`},
	}
	t.Run("2019-09 prefixItems", func(t *testing.T) {
		c := &converter{modern: true, items2019: true}
		in := &openapi3.Schema{PrefixItems: openapi3.SchemaRefs{str}, Items: str}
		if got, want := encode(t, c.schema(in)), `{"additionalItems":{"type":"string"},"items":[{"type":"string"}]}`; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &converter{modern: true}
			if got := encode(t, c.schema(tt.in)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if tt.defs != "" {
				if got := encode(t, c.defs); got != tt.defs {
					t.Errorf("defs %s, want %s", got, tt.defs)
				}
			}
		})
	}
}

func TestConvertSchemas(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	yes := true
	recursive := &openapi3.Schema{Type: &openapi3.Types{"object"}, Description: "a node"}
	recursive.Properties = openapi3.Schemas{"next": &openapi3.SchemaRef{Ref: "#/components/schemas/Node", Value: recursive}}
	tests := []struct {
		name string
		in   *openapi3.Schema
		want string
	}{
		{"3.0 nullable", &openapi3.Schema{Type: &openapi3.Types{"string"}, Nullable: true, Enum: []any{"a"}},
			`{"enum":["a",null],"type":["string","null"]}`},
		{"3.0 exclusive bounds", &openapi3.Schema{Type: &openapi3.Types{"number"}, Min: f(1), Max: f(9),
			ExclusiveMin: openapi3.ExclusiveBound{Bool: &yes}},
			`{"exclusiveMinimum":1,"maximum":9,"type":"number"}`},
		{"3.1 exclusive bounds", &openapi3.Schema{ExclusiveMax: openapi3.ExclusiveBound{Value: f(5)}},
			`{"exclusiveMaximum":5}`},
		{"3.1 const and examples", &openapi3.Schema{Const: "x", Examples: []any{"x"}},
			`{"const":"x","examples":["x"]}`},
		{"3.0 example", &openapi3.Schema{Type: &openapi3.Types{"integer"}, Example: 3.0}, `{"examples":[3],"type":"integer"}`},
		{"recursive $ref", recursive,
			`{"description":"a node","properties":{"next":{"description":"a node"}},"type":"object"}`},
		{"RE2-incompatible pattern dropped", &openapi3.Schema{Pattern: `^(?!x)`}, `{}`},
		{"prefixItems", &openapi3.Schema{PrefixItems: openapi3.SchemaRefs{{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}}}},
			Items: &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"integer"}}}},
			`{"additionalItems":{"type":"integer"},"items":[{"type":"string"}]}`},
		{"3.0 nullable without type", &openapi3.Schema{Nullable: true, Description: "d",
			AllOf: openapi3.SchemaRefs{{Value: &openapi3.Schema{Type: &openapi3.Types{"object"}}}}},
			`{"anyOf":[{"allOf":[{"type":"object"}]},{"type":"null"}],"description":"d"}`},
		{"3.0 nullable constraining nothing", &openapi3.Schema{Nullable: true, Description: "d"}, `{"description":"d"}`},
		{"3.0 nullable enum without type", &openapi3.Schema{Nullable: true, Enum: []any{"a"}}, `{"enum":["a",null]}`},
		{"draft-07 unknowns dropped", &openapi3.Schema{Discriminator: &openapi3.Discriminator{PropertyName: "k"},
			XML: &openapi3.XML{Name: "x"}, ExternalDocs: &openapi3.ExternalDocs{URL: "http://x"}}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &converter{}
			if got := encode(t, c.schema(tt.in)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
