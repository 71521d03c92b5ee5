package decode

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/field"
)

type inner struct {
	Method string            `json:"method"`
	Tags   map[string]string `json:"tags,omitempty"`
}

type outer struct {
	Name  string          `json:"name"`
	Count int             `json:"count,omitempty"`
	Ratio float64         `json:"ratio,omitempty"`
	On    bool            `json:"on,omitempty"`
	Items []inner         `json:"items,omitempty"`
	Ptr   *inner          `json:"ptr,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Any   any             `json:"any,omitempty"`
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := JSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIntoValid(t *testing.T) {
	t.Parallel()
	src := mustJSON(t, `{"name":"x","count":3,"ratio":0.5,"on":true,"items":[{"method":"GET","tags":{"a":"b"}}],
		"ptr":{"method":"POST"},"raw":{"k":[1,2]},"any":{"z":1}}`)
	var got outer
	if errs := Into(src, &got, field.NewPath("root")); len(errs) != 0 {
		t.Fatalf("unexpected problems: %v", errs)
	}
	want := outer{Name: "x", Count: 3, Ratio: 0.5, On: true,
		Items: []inner{{Method: "GET", Tags: map[string]string{"a": "b"}}},
		Ptr:   &inner{Method: "POST"}, Raw: json.RawMessage(`{"k":[1,2]}`),
		Any: map[string]any{"z": json.Number("1")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestIntoCollectsEveryProblem(t *testing.T) {
	t.Parallel()
	src := mustJSON(t, `{"nam":"x","count":"three","ratio":"big","on":"yes","items":[{"method":5},{"methd":"GET"}],
		"ptr":[],"Count":1.5}`)
	var got outer
	errs := Into(src, &got, field.NewPath("root"))
	want := map[string]field.Type{
		"root.nam":             field.TypeUnsupported,
		"root.count":           field.TypeInvalid,
		"root.ratio":           field.TypeInvalid,
		"root.on":              field.TypeInvalid,
		"root.items[0].method": field.TypeInvalid,
		"root.items[1].methd":  field.TypeUnsupported,
		"root.ptr":             field.TypeInvalid,
		"root.Count":           field.TypeUnsupported,
	}
	got2 := map[string]field.Type{}
	for _, e := range errs {
		got2[e.Path] = e.Type
	}
	if !reflect.DeepEqual(got2, want) {
		t.Errorf("problems = %v\nwant %v", got2, want)
	}
	for _, e := range errs {
		if e.Path == "root.nam" && e.Detail != `unknown field "nam" (did you mean "name"?)` {
			t.Errorf("detail = %q", e.Detail)
		}
	}
}

func TestIntoNeverEchoesValues(t *testing.T) {
	t.Parallel()
	src := mustJSON(t, `{"count":"hunter2-secret","name":{"password":"hunter2-secret"}}`)
	var got outer
	for _, e := range Into(src, &got, nil) {
		if contains(e.Error(), "hunter2") {
			t.Errorf("problem echoes the value: %v", e)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestKeys(t *testing.T) {
	t.Parallel()
	if got := Keys(&inner{}); !reflect.DeepEqual(got, []string{"method", "tags"}) {
		t.Errorf("Keys = %v", got)
	}
}
