package tool_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// readGzipJSON decodes a gzip-compressed JSON file from testdata/conformance into v.
func readGzipJSON(t testing.TB, name string, v any) {
	t.Helper()
	f, err := os.Open("testdata/conformance/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// ctsCase is one case of the JSONPath Compliance Test Suite (testdata/conformance/SOURCE.md).
type ctsCase struct {
	Name     string              `json:"name"`
	Selector string              `json:"selector"`
	Document json.RawMessage     `json:"document"`
	Result   []json.RawMessage   `json:"result"`
	Results  [][]json.RawMessage `json:"results"`
	Invalid  bool                `json:"invalid_selector"`
}

func loadCTS(t testing.TB) []ctsCase {
	var suite struct{ Tests []ctsCase }
	readGzipJSON(t, "jsonpath-cts.json.gz", &suite)
	return suite.Tests
}

// ctsManifest declares one stateless_http action per case, each GETting /case/<i> with the case's selector as
// its response_path. The manifest is JSON, which YAML reads as is.
func ctsManifest(t testing.TB, cases []ctsCase) []byte {
	actions := make([]any, len(cases))
	for i, c := range cases {
		actions[i] = map[string]any{"name": "case_" + strconv.Itoa(i), "description": c.Name,
			"execute": map[string]any{"stateless_http": map[string]any{
				"method": "GET", "url": "{settings.base}/case/" + strconv.Itoa(i), "response_path": c.Selector}}}
	}
	m, err := json.Marshal(map[string]any{"kind": "commonagents.info/v1beta2/tool", "namespace": "tests",
		"name": "jsonpath-cts", "description": "The JSONPath Compliance Test Suite.",
		"settings": map[string]any{"properties": map[string]any{"base": map[string]any{"type": "string"}}},
		"actions":  actions})
	if err != nil {
		t.Fatal(err)
	}
	return yamlSafe(m)
}

// yamlSafe escapes the characters YAML forbids in a stream (DEL, C1 controls, U+FFFE/FFFF), which JSON allows
// raw in strings and which only occur in strings.
func yamlSafe(j []byte) []byte {
	var b bytes.Buffer
	for _, r := range string(j) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f && r != 0x85) || r == 0xfffe || r == 0xffff {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.Bytes()
}

// TestJSONPathComplianceSuite runs every case of the RFC 9535 compliance suite through the public API: each
// valid selector is an action's response_path applied to the case's document served over HTTP, and its output
// must be the suite's node list collapsed as SPEC §7.3 says (none → null, one → the value, several → a list);
// each invalid selector must be refused by Load at its field path.
func TestJSONPathComplianceSuite(t *testing.T) {
	t.Parallel()
	var valid, invalid []ctsCase
	for _, c := range loadCTS(t) {
		if c.Invalid {
			invalid = append(invalid, c)
		} else {
			valid = append(valid, c)
		}
	}
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/case/"))
			if err != nil || i < 0 || i >= len(valid) {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(valid[i].Document)
		}))
		t.Cleanup(srv.Close)
		tl, err := tool.Load(context.Background(), ctsManifest(t, valid), tool.WithSettings(map[string]any{"base": srv.URL}))
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		task := newTask(t, tl, tool.TaskConfig{})
		passed := 0
		for i, c := range valid {
			res := mustInvoke(t, task, "case_"+strconv.Itoa(i), nil)
			if res.IsError {
				t.Errorf("%s: %s: %v", c.Name, c.Selector, res.Error)
				continue
			}
			got := jsonValue(t, res.OutputJSON)
			wants := c.Results
			if c.Result != nil {
				wants = [][]json.RawMessage{c.Result}
			}
			ok := false
			for _, w := range wants {
				ok = ok || reflect.DeepEqual(got, collapse(t, w))
			}
			if !ok {
				t.Errorf("%s: %s: output %s, want the collapsed node list of %s", c.Name, c.Selector, res.OutputJSON, jsonText(wants))
				continue
			}
			passed++
		}
		t.Logf("valid selectors: %d of %d right", passed, len(valid))
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		_, err := tool.Load(context.Background(), ctsManifest(t, invalid))
		var verr *tool.ValidationError
		if !errors.As(err, &verr) {
			t.Fatalf("load = %v, want a *ValidationError", err)
		}
		refused := map[string]bool{}
		for _, p := range verr.Problems {
			refused[p.Path] = true
		}
		passed := 0
		for i, c := range invalid {
			path := fmt.Sprintf("actions[%d].execute.stateless_http.response_path", i)
			if !refused[path] {
				t.Errorf("%s: %q loaded (no problem at %s)", c.Name, c.Selector, path)
				continue
			}
			passed++
		}
		if len(verr.Problems) != len(invalid) {
			t.Errorf("%d problems for %d invalid selectors: %v", len(verr.Problems), len(invalid), err)
		}
		t.Logf("invalid selectors: %d of %d refused", passed, len(invalid))
	})
}

// collapse is SPEC §7.3's shape of a node list, as JSON decodes it.
func collapse(t testing.TB, nodes []json.RawMessage) any {
	switch len(nodes) {
	case 0:
		return nil
	case 1:
		return jsonValue(t, nodes[0])
	}
	list, _ := json.Marshal(nodes)
	return jsonValue(t, list)
}

func jsonValue(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
