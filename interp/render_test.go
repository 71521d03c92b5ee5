package interp

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// testData is what testResolver serves: each root's value is looked up along the ref's steps.
var testData = map[string]any{
	"parameters": map[string]any{
		"path": "docs/readme.md", "count": float64(3), "big": json.Number("12345678901234567890"),
		"flag": true, "none": nil, "obj": map[string]any{"b": 1, "a": []any{"x", 2.5}},
		"html": "<a&b>",
	},
	"settings": map[string]any{"github.token": "s3cret", "base_url": "https://api.example.com/v1/"},
	"auth":     map[string]any{"github": "tok"},
}

var testResolver = ResolverFunc(func(ref Ref) (any, error) {
	root, ok := testData[ref.Root].(map[string]any)
	if !ok {
		return nil, errors.New("no such root")
	}
	if ref.Root == RootSettings && len(ref.Steps) > 1 {
		// Settings keys may contain dots (SPEC §3.2): the longest declared key wins.
		names := make([]string, len(ref.Steps))
		for i, s := range ref.Steps {
			names[i] = s.Name
		}
		if v, ok := root[strings.Join(names, ".")]; ok {
			return v, nil
		}
	}
	v, _ := Lookup(root, ref.Steps)
	return v, nil
})

func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want any
	}{
		{"{parameters.path}", "docs/readme.md"},
		{"{parameters.count}", float64(3)},
		{"{parameters.big}", json.Number("12345678901234567890")},
		{"{parameters.flag}", true},
		{"{parameters.none}", nil},
		{"{parameters.missing}", nil},
		{"{parameters.obj}", map[string]any{"b": 1, "a": []any{"x", 2.5}}},
		{"{parameters.obj.a[1]}", 2.5},
		{"{settings.github.token}", "s3cret"},
		{"{settings['github.token']}", "s3cret"},
		{"n={parameters.count}", "n=3"},
		{"{parameters.count}{parameters.flag}", "3true"},
		{"[{parameters.none}]", "[]"},
		{"big {parameters.big}", "big 12345678901234567890"},
		{"obj {parameters.obj}", `obj {"a":["x",2.5],"b":1}`},
		{"{parameters.html}!", "<a&b>!"},
		{"Bearer {auth.github()}", "Bearer tok"},
		{"{{literal}} {parameters.path}", "{literal} docs/readme.md"},
		{`{"path": "{parameters.path}"}`, `{"path": "docs/readme.md"}`},
		{"no tokens", "no tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			tmpl := MustParse(tt.src)
			got, err := tmpl.Render(testResolver)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Render() = %#v, want %#v", got, tt.want)
			}
			s, err := tmpl.RenderString(testResolver)
			if err != nil {
				t.Fatalf("RenderString: %v", err)
			}
			if want := Text(tt.want); s != want {
				t.Errorf("RenderString() = %q, want %q", s, want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	secret := errors.New("backend down")
	r := ResolverFunc(func(ref Ref) (any, error) {
		if ref.Root == RootAuth {
			return nil, secret
		}
		return "value-not-in-error", nil
	})
	for _, src := range []string{"{auth.github()}", "x {parameters.a} {auth.github()}"} {
		_, err := MustParse(src).Render(r)
		if !errors.Is(err, secret) {
			t.Fatalf("Render(%q) error = %v, want it to wrap the resolver error", src, err)
		}
		if !strings.Contains(err.Error(), "{auth.github()}") || strings.Contains(err.Error(), "value-not-in-error") {
			t.Errorf("Render(%q) error = %q, want the token text and no value", src, err)
		}
	}
	if _, err := MustParse("{parameters.a}").Render(nil); err == nil {
		t.Error("Render(nil) of a template with tokens succeeded")
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"", ""},
		{"a \"b\" <c>", "a \"b\" <c>"},
		{true, "true"},
		{false, "false"},
		{float64(42), "42"},
		{-0.5, "-0.5"},
		{0.1, "0.1"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e-7, "1.5e-7"},
		{1e-6, "0.000001"},
		{123456789.125, "123456789.125"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{math.NaN(), "NaN"},
		{math.Inf(-1), "-Inf"},
		{float32(0.1), "0.1"},
		{float32(1e21), "1e+21"},
		{json.Number("12345678901234567890"), "12345678901234567890"},
		{json.Number("-0"), "-0"},
		{json.Number("1.50"), "1.5"},
		{json.Number("1e3"), "1000"},
		{json.Number("1E-7"), "1e-7"},
		{json.Number("007"), "7"},
		{json.Number("1e999"), "1e999"},
		{json.Number("bogus"), "bogus"},
		{42, "42"},
		{int8(-8), "-8"},
		{int16(16), "16"},
		{int32(-32), "-32"},
		{int64(math.MinInt64), "-9223372036854775808"},
		{uint(7), "7"},
		{uint8(8), "8"},
		{uint16(16), "16"},
		{uint32(32), "32"},
		{uint64(math.MaxUint64), "18446744073709551615"},
		{map[string]any{"z": 1, "a": map[string]any{"y": nil, "b": "<&>"}}, `{"a":{"b":"<&>","y":null},"z":1}`},
		{[]any{1, "two", false, nil, []any{}}, `[1,"two",false,null,[]]`},
		{map[string]any{}, "{}"},
		{[]string{"a"}, `["a"]`},
		{map[string]any{"n": json.Number("1.0")}, `{"n":1.0}`},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTextMatchesJSON(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1, -1, 0.5, 1e-7, 123e-9, 1e21, 1.25e22, 3.14159, 1e20, 99999999999999999999.0} {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := Text(f); got != string(b) {
			t.Errorf("Text(%v) = %q, json.Marshal = %q", f, got, b)
		}
	}
}

func TestTextUnencodable(t *testing.T) {
	t.Parallel()
	// JSON cannot encode a channel; Text falls back to fmt rather than failing.
	if got := Text(map[string]any{"c": make(chan int)}); !strings.HasPrefix(got, "map[c:") {
		t.Errorf("Text(unencodable) = %q", got)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	data := map[string]any{
		"a":    map[string]any{"b": []any{"x", map[string]any{"c": "deep"}}},
		"s":    map[string]string{"k": "v"},
		"list": []string{"p", "q"},
		"nil":  nil,
	}
	name := func(n string) Step { return Step{Name: n} }
	index := func(i int) Step { return Step{Index: i, IsIndex: true} }
	tests := []struct {
		steps []Step
		want  any
		ok    bool
	}{
		{nil, data, true},
		{[]Step{name("a"), name("b"), index(1), name("c")}, "deep", true},
		{[]Step{name("a"), name("b"), index(0)}, "x", true},
		{[]Step{name("a"), name("b"), index(2)}, nil, false},
		{[]Step{name("a"), name("b"), name("0")}, nil, false},
		{[]Step{name("a"), index(0)}, nil, false},
		{[]Step{name("s"), name("k")}, "v", true},
		{[]Step{name("s"), name("x")}, nil, false},
		{[]Step{name("list"), index(1)}, "q", true},
		{[]Step{name("list"), index(2)}, nil, false},
		{[]Step{name("nil")}, nil, true},
		{[]Step{name("nil"), name("x")}, nil, false},
		{[]Step{name("missing")}, nil, false},
		{[]Step{name("a"), name("b"), index(0), name("x")}, nil, false},
	}
	for _, tt := range tests {
		got, ok := Lookup(data, tt.steps)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Lookup(%+v) = %v, %v; want %v, %v", tt.steps, got, ok, tt.want, tt.ok)
		}
	}
}
