package yamlpos

import (
	"reflect"
	"testing"
)

const doc = `kind: x
actions:
  - name: a
    execute:
      stateless_http:
        url: "https://x"
        headers:
          X.Y: "1"
parameters:
  properties:
    on: {type: string}
    "off": {type: string}
    Yes: {type: string}
`

func TestFind(t *testing.T) {
	t.Parallel()
	idx := New([]byte(doc))
	tests := []struct {
		path string
		want Position
	}{
		{"kind", Position{1, 1}},
		{"actions[0]", Position{3, 5}},
		{"actions[0].name", Position{3, 5}},
		{"actions[0].execute.stateless_http.url", Position{6, 9}},
		{`actions[0].execute.stateless_http.headers["X.Y"]`, Position{8, 11}},
		{"actions[0].execute.stateless_http.nope", Position{5, 7}},
		{"parameters.properties.true", Position{11, 5}},
	}
	for _, tc := range tests {
		got, ok := idx.Find(tc.path)
		if !ok || got != tc.want {
			t.Errorf("Find(%q) = %v, %v; want %v", tc.path, got, ok, tc.want)
		}
	}
	if _, ok := idx.Find("missing"); ok {
		t.Error("Find(missing) found a position")
	}
}

func TestBoolKeys(t *testing.T) {
	t.Parallel()
	if !MayHaveBoolKeys([]byte(doc)) {
		t.Fatal("MayHaveBoolKeys = false")
	}
	got := New([]byte(doc)).BoolKeys()
	want := []string{"parameters.properties.on", "parameters.properties.Yes"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BoolKeys = %v, want %v", got, want)
	}
	if MayHaveBoolKeys([]byte("kind: x\nname: on\n")) {
		t.Error("a boolean value is not a boolean key")
	}
}

func TestDuplicates(t *testing.T) {
	t.Parallel()
	got := New([]byte("a: 1\nb:\n  c: 1\n  c: 2\na: 3\n")).Duplicates()
	want := []string{"b.c", "a"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Duplicates = %v, want %v", got, want)
	}
}

func TestBoolKeysFlowStyle(t *testing.T) {
	t.Parallel()
	src := []byte("parameters: {properties: {y: {type: string}}}\nheaders: {a: 1, Off: 2}\n")
	if !MayHaveBoolKeys(src) {
		t.Fatal("MayHaveBoolKeys = false for flow-style keys")
	}
	got := New(src).BoolKeys()
	want := []string{"parameters.properties.y", "headers.Off"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BoolKeys = %v, want %v", got, want)
	}
}
