package interp

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/commonagents-go/tool/field"
)

func TestValueRender(t *testing.T) {
	t.Parallel()
	body := map[string]any{
		"count":   "{parameters.count}",
		"flag":    "{parameters.flag}",
		"obj":     "{parameters.obj}",
		"none":    "{parameters.none}",
		"message": "Update {parameters.path}",
		"literal": "{{not a token}}",
		"json":    `{"a": 1}`,
		"{parameters.path}": []any{
			"{parameters.big}", 1.5, nil, true, json.Number("7"),
			map[string]any{"inner": "x={parameters.count}"},
		},
	}
	v, err := ParseValue(body)
	if err != nil {
		t.Fatalf("ParseValue: %v", err)
	}
	got, err := v.Render(testResolver)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := map[string]any{
		"count":   float64(3),
		"flag":    true,
		"obj":     map[string]any{"b": 1, "a": []any{"x", 2.5}},
		"none":    nil,
		"message": "Update docs/readme.md",
		"literal": "{not a token}",
		"json":    `{"a": 1}`,
		"{parameters.path}": []any{
			json.Number("12345678901234567890"), 1.5, nil, true, json.Number("7"),
			map[string]any{"inner": "x=3"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Render() =\n%#v\nwant\n%#v", got, want)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"count":3,"flag":true,"json":"{\"a\": 1}","literal":"{not a token}",` +
		`"message":"Update docs/readme.md","none":null,"obj":{"a":["x",2.5],"b":1},` +
		`"{parameters.path}":[12345678901234567890,1.5,null,true,7,{"inner":"x=3"}]}`
	if string(b) != wantJSON {
		t.Errorf("json =\n%s\nwant\n%s", b, wantJSON)
	}
}

func TestValueRenderIsFresh(t *testing.T) {
	t.Parallel()
	v, err := ParseValue(map[string]any{"a": []any{"x"}, "b": map[string]any{"c": "d"}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := v.Render(nil)
	first.(map[string]any)["a"].([]any)[0] = "changed"
	first.(map[string]any)["b"].(map[string]any)["c"] = "changed"
	second, err := v.Render(nil)
	if err != nil {
		t.Fatalf("Render(nil) of a body without tokens: %v", err)
	}
	want := map[string]any{"a": []any{"x"}, "b": map[string]any{"c": "d"}}
	if !reflect.DeepEqual(second, want) {
		t.Errorf("second Render() = %v, want %v", second, want)
	}
}

func TestValueNoJSONBreakout(t *testing.T) {
	t.Parallel()
	v, err := ParseValue(map[string]any{"text": "say {parameters.x}"})
	if err != nil {
		t.Fatal(err)
	}
	evil := `", "admin": true, "x": "`
	got, err := v.Render(ResolverFunc(func(Ref) (any, error) { return evil, nil }))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || back["text"] != "say "+evil {
		t.Errorf("value escaped its JSON string: %s", b)
	}
}

func TestValueRefs(t *testing.T) {
	t.Parallel()
	v, err := ParseValue(map[string]any{
		"b": "{parameters.b}",
		"a": []any{"{parameters.a0}", "{parameters.a1} {settings.s}"},
		"c": 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range v.Refs() {
		texts = append(texts, r.Text)
	}
	want := []string{"parameters.a0", "parameters.a1", "settings.s", "parameters.b"}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("Refs() = %v, want %v", texts, want)
	}
	if !v.HasRefs() {
		t.Error("HasRefs() = false")
	}
}

func TestValueRenderError(t *testing.T) {
	t.Parallel()
	v, err := ParseValue(map[string]any{"a": []any{"ok", "{auth.github()}"}})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_, err = v.Render(ResolverFunc(func(Ref) (any, error) { return nil, boom }))
	if !errors.Is(err, boom) {
		t.Errorf("Render error = %v, want boom", err)
	}
}

func TestParseValueErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  any
		paths []string
	}{
		{"top string", "{paramters.x}", []string{""}},
		{"nested", map[string]any{"items": []any{map[string]any{"name": "{nope}"}}}, []string{"items[0].name"}},
		{"dotted key", map[string]any{"a.b": "{parameters.x"}, []string{`["a.b"]`}},
		{"all problems", map[string]any{"z": "{bad}", "a": []any{"ok", "{worse}", make(chan int)}},
			[]string{"a[1]", "a[2]", "z"}},
		{"go type", []any{struct{}{}}, []string{"[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := ParseValue(tt.body)
			if v != nil {
				t.Error("ParseValue returned a Value with an error")
			}
			var list field.List
			if !errors.As(err, &list) {
				t.Fatalf("error = %v, want field.List", err)
			}
			var paths []string
			for _, e := range list {
				if e.Type != field.TypeInvalid {
					t.Errorf("problem type = %q", e.Type)
				}
				paths = append(paths, e.Path)
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths = %q, want %q", paths, tt.paths)
			}
		})
	}
}

func TestParseValueAt(t *testing.T) {
	t.Parallel()
	_, errs := ParseValueAt(map[string]any{"x": []any{"{nope.a}"}}, field.NewPath("actions").Index(2).Child("body"))
	if len(errs) != 1 || errs[0].Path != "actions[2].body.x[0]" {
		t.Fatalf("errs = %v", errs)
	}
}
