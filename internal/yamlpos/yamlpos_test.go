package yamlpos

import (
	"fmt"
	"reflect"
	"strings"
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

// laughs is a document of levels anchors, each a list of nine aliases of the one before.
func laughs(levels int) string {
	src := "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i <= levels; i++ {
		src += fmt.Sprintf("a%d: &a%d [*a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d]\n", i, i, i-1)
	}
	return src
}

func TestExpand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		limit  int
		added  int
		over   bool
		atLine int
	}{
		{"no aliases", doc, 10, 0, false, 0},
		{"one alias", "a: &x {b: 1, c: [2, 3]}\nd: *x\n", 10, 6, false, 0},
		{"one alias over", "a: &x {b: 1, c: [2, 3]}\nd: *x\n", 5, 6, true, 2},
		{"two levels", laughs(2), 1000, 891, false, 0},
		{"ten levels stop at the limit", laughs(10), 100_000, 100_001, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Parse([]byte(tt.src)).Expand(tt.limit)
			if e.Over != tt.over || (!tt.over && e.Added != tt.added) || (tt.over && (e.At.Line == 0 || tt.atLine > 0 && e.At.Line != tt.atLine)) {
				t.Errorf("Expand = %+v, want added %d, over %v at line %d", e, tt.added, tt.over, tt.atLine)
			}
		})
	}
}

func TestIndexOfAliasBombIsBounded(t *testing.T) {
	t.Parallel()
	idx := New([]byte(laughs(10)))
	if _, ok := idx.Find("a10"); !ok {
		t.Error("a10 not indexed")
	}
}

// Only nodes reached through aliases count against the index's bound: a large plain document is indexed whole.
func TestIndexOfLargeDocument(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 15_000 {
		fmt.Fprintf(&b, "k%d: [a, b]\n", i)
	}
	if _, ok := New([]byte(b.String())).Find("k14999[1]"); !ok {
		t.Error("the last key is not indexed")
	}
}
