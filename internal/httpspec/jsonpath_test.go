package httpspec

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/commonagents-go/tool/field"
)

func mustPath(t testing.TB, s string) *Path {
	t.Helper()
	x, err := JSONPath(field.NewPath("response_path"), s)
	if err != nil {
		t.Fatalf("JSONPath(%q): %v", s, err)
	}
	return x
}

func TestOutputCollapsesNodeList(t *testing.T) {
	t.Parallel()
	body := decodeBody([]byte(`{"items":[{"name":"a","price":5},{"name":"b","price":15.5}],"nested":[[1],[2]],"one":{"x":1},"n":null}`))
	tests := []struct {
		path string
		want any
	}{
		{"$.one", map[string]any{"x": int64(1)}},
		{"$.items[*].name", []any{"a", "b"}},
		{"$.items[?@.price > 10].name", "b"},
		{"$.items[?(@.price == 5)].name", "a"},
		{"$.missing", nil},
		{"$.n", nil},                              // one node whose value is null
		{"$.nested[?@[0] == 1]", []any{int64(1)}}, // one node, itself a list
		{"$.nested[?@ == @]", []any{[]any{int64(1)}, []any{int64(2)}}},
		{"$.nested[1,0][0]", []any{int64(2), int64(1)}},
		{"$..x", int64(1)},
	}
	if got := Output(body, nil); !reflect.DeepEqual(got, body) {
		t.Errorf("Output(nil path) = %#v, want the body", got)
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			if got := Output(body, mustPath(t, tc.path)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Output = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestSelectObjectMembersSorted pins the order RFC 9535 leaves open: object members in sorted key order, the same
// on every call, also inside descendant segments and filters.
func TestSelectObjectMembersSorted(t *testing.T) {
	t.Parallel()
	body := decodeBody([]byte(`{"c":{"z":3,"y":[2]},"a":1,"b":{"k":[0]}}`))
	tests := []struct {
		path string
		want []any
	}{
		{"$.*", []any{int64(1), map[string]any{"k": []any{int64(0)}}, map[string]any{"z": int64(3), "y": []any{int64(2)}}}},
		{"$[?@ != 1]", []any{map[string]any{"k": []any{int64(0)}}, map[string]any{"z": int64(3), "y": []any{int64(2)}}}},
		{"$..[0]", []any{int64(0), int64(2)}},
		{"$..*[?@ > 0]", []any{int64(3), int64(2)}},
	}
	for _, tc := range tests {
		x := mustPath(t, tc.path)
		for range 20 { // Go randomises map iteration: one lucky run proves nothing
			if got := x.Select(body); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s: Select = %#v, want %#v", tc.path, got, tc.want)
			}
		}
	}
}

// TestSelectDirectMatchesGeneral checks the fast path for names and indexes against the general evaluator.
func TestSelectDirectMatchesGeneral(t *testing.T) {
	t.Parallel()
	body := decodeBody([]byte(`{"items":[{"name":"a","price":5},{"name":"b"}],"nested":[[1]],"one":{"x":1},"nil":null}`))
	for _, p := range []string{"$", "$.one", "$.one.x", "$.one.x.y", "$['one']['x']", "$.items[1].name",
		"$.items[-1].name", "$.items[-3]", "$.items[5].name", "$.nested[0][0]", "$.nil", "$.nil.x",
		"$.missing.deeper[0]", "$.one[0]", "$.items.name"} {
		x := mustPath(t, p)
		if x.direct == nil {
			t.Errorf("%s: not evaluated directly", p)
			continue
		}
		general := *x
		general.direct = nil
		if got, want := x.Select(body), general.Select(body); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: direct = %#v, general = %#v", p, got, want)
		}
	}
	for _, p := range []string{"$.items[*].name", "$..name", "$.items[0,1]", "$.items[0:1]", "$.items[?@.price > 1]"} {
		if mustPath(t, p).direct != nil {
			t.Errorf("%s: evaluated directly", p)
		}
	}
}

func TestJSONPathRefusesNonRFCSelectors(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"$.1", "$..", "$[?@[*]==0]", "one.x", "@.a", "$.a["} {
		_, err := JSONPath(field.NewPath("actions").Index(0).Child("response_path"), s)
		if err == nil || err.Path != "actions[0].response_path" {
			t.Errorf("%q: err = %v, want a problem at actions[0].response_path", s, err)
		}
	}
}

// TestJSONPathComplianceNodeLists runs the valid cases of the RFC 9535 compliance suite on the node lists
// themselves, which the collapsed output of SPEC §7.3 cannot tell apart ([] and [null], [[1,2]] and [1,2]).
// Documents go through the response decoder. The public-API run is TestJSONPathComplianceSuite in the root package.
func TestJSONPathComplianceNodeLists(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../testdata/conformance/jsonpath-cts.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []struct {
			Name, Selector  string
			Document        json.RawMessage
			Result          json.RawMessage
			Results         []json.RawMessage
			InvalidSelector bool `json:"invalid_selector"`
		}
	}
	if err := json.NewDecoder(zr).Decode(&suite); err != nil {
		t.Fatal(err)
	}
	passed, total := 0, 0
	for _, c := range suite.Tests {
		if c.InvalidSelector {
			continue
		}
		total++
		x := mustPath(t, c.Selector)
		got, err := json.Marshal(x.Select(decodeBody(c.Document)))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		wants := c.Results
		if c.Result != nil {
			wants = []json.RawMessage{c.Result}
		}
		if !slices.ContainsFunc(wants, func(w json.RawMessage) bool { return sameJSON(t, got, w) }) {
			t.Errorf("%s: %s: node list %s, want %s", c.Name, c.Selector, got, wants)
			continue
		}
		passed++
	}
	if total == 0 {
		t.Fatal("no valid cases in the suite")
	}
	t.Logf("node lists: %d of %d right", passed, total)
}

func sameJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatalf("not JSON: %s or %s", a, b)
	}
	return reflect.DeepEqual(x, y)
}
