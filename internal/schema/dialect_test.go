package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/field"
)

// TestDialects pins SPEC §3.1: a schema is validated in the dialect its `$schema` names, else Options.Dialect.
func TestDialects(t *testing.T) {
	t.Parallel()
	const modern = `"prefixItems":[{"type":"integer"}],"items":false`
	tests := []struct {
		name  string
		doc   string
		opts  Options
		value string
		want  []Violation
	}{
		{"2020-12 named: prefixItems applies", `{"$schema":"https://json-schema.org/draft/2020-12/schema",
			"properties":{"a":{` + modern + `}}}`, Options{}, `{"a":[1,2]}`,
			[]Violation{{"a.1", "is not allowed"}}},
		{"2020-12 by default: prefixItems applies", `{"properties":{"a":{` + modern + `}}}`,
			Options{Dialect: Draft2020}, `{"a":[1]}`, nil},
		{"2020-12: format is an annotation", `{"properties":{"e":{"type":"string","format":"email"}}}`,
			Options{Dialect: Draft2020}, `{"e":"nope"}`, nil},
		{"draft-07: format asserts", `{"properties":{"e":{"type":"string","format":"email"}}}`,
			Options{}, `{"e":"nope"}`, []Violation{{"e", "must be a valid email"}}},
		{"2019-09: unevaluatedProperties", `{"$schema":"https://json-schema.org/draft/2019-09/schema",
			"allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`, Options{}, `{"a":1,"b":2}`,
			[]Violation{{"b", "is not allowed"}}},
		{"2020-12: dependentRequired", `{"dependentRequired":{"a":["b"]}}`, Options{Dialect: Draft2020},
			`{"a":1}`, []Violation{{"", "requires property b"}}},
		{"2020-12: $ref siblings apply", `{"$defs":{"s":{"type":"string"}},
			"properties":{"a":{"$ref":"#/$defs/s","maxLength":1}}}`, Options{Dialect: Draft2020}, `{"a":"xy"}`,
			[]Violation{{"a", "must be at most 1 characters long"}}},
		{"foreign: unknown keywords are annotations", `{"properties":{"a":{"type":"string","x_ui":1,"widget":"t"}}}`,
			Options{Dialect: Draft2020, Foreign: true}, `{"a":3}`, []Violation{{"a", "must be of type string"}}},
		{"foreign: $anchor reference", `{"$defs":{"s":{"$anchor":"str","type":"string"}},
			"properties":{"a":{"$ref":"#str"}}}`, Options{Dialect: Draft2020, Foreign: true}, `{"a":3}`,
			[]Violation{{"a", "must be of type string"}}},
		{"foreign: an embedded resource resolves by its $id", `{"$defs":{"s":{"$id":"https://example.com/s.json",
			"type":"integer"}},"properties":{"a":{"$ref":"https://example.com/s.json"}}}`,
			Options{Dialect: Draft2020, Foreign: true}, `{"a":"x"}`, []Violation{{"a", "must be of type integer"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.doc, tt.opts)
			if got := s.Validate(decode(t, tt.value)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate(%s) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

// TestDialectProblems pins what Compile refuses per dialect, and that it never loads a URL.
func TestDialectProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		doc    string
		opts   Options
		path   string
		detail string
	}{
		{"a 2020-12 keyword in a draft-07 schema", `{"properties":{"a":{"prefixItems":[{}]}}}`, Options{},
			"p.properties.a.prefixItems", "name that dialect in the root $schema"},
		{"a typo in a 2020-12 manifest schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema",
			"properties":{"a":{"unevaluatedPropertie":false}}}`, Options{}, "p.properties.a.unevaluatedPropertie",
			`did you mean "unevaluatedProperties"?`},
		{"a manifest's remote $ref", `{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`,
			Options{Dialect: Draft2020}, "p.properties.a.$ref", "only local references"},
		{"a backend's remote $ref is never fetched", `{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`,
			Options{Dialect: Draft2020, Foreign: true}, "p", "only references within the schema are followed"},
		{"a backend's file $ref is never read", `{"properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
			Options{Dialect: Draft2020, Foreign: true}, "p", "only references within the schema are followed"},
		{"2020-12 refuses items as a list", `{"$schema":"https://json-schema.org/draft/2020-12/schema",
			"properties":{"a":{"items":[{}]}}}`, Options{}, "p", "is not a valid JSON Schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, errs := Compile(decode(t, tt.doc), field.NewPath("p"), tt.opts)
			if s != nil || len(errs) != 1 {
				t.Fatalf("Compile = %v, %v; want one problem", s, errs)
			}
			if errs[0].Path != tt.path || !strings.Contains(errs[0].Detail, tt.detail) {
				t.Errorf("problem %s: %s; want at %s containing %q", errs[0].Path, errs[0].Detail, tt.path, tt.detail)
			}
		})
	}
}
