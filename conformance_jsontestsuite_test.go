package tool_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// jsonTestSuite returns the JSONTestSuite's parsing cases (testdata/conformance/jsontestsuite), file name → bytes.
func jsonTestSuite(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/conformance/jsontestsuite/test_parsing.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{}
	for r := tar.NewReader(z); ; {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if dir, name := path.Split(h.Name); dir == "test_parsing/" && strings.HasSuffix(name, ".json") {
			if cases[name], err = io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return cases
}

// The outcomes of the suite's i_ cases (the implementation's choice), as docs/events.md states them: "json" is
// read as encoding/json reads it (a number beyond float64 kept as its text, one below it 0, invalid UTF-8 and lone
// surrogates as U+FFFD), "text" is the body as text, "too_complex" is over the default InboundDepth (64).
var jsonTestSuiteChoices = map[string]string{
	"i_number_double_huge_neg_exp.json":                   "json", // 0
	"i_number_huge_exp.json":                              "json", // kept as written
	"i_number_neg_int_huge_exp.json":                      "json",
	"i_number_pos_double_huge_exp.json":                   "json",
	"i_number_real_neg_overflow.json":                     "json",
	"i_number_real_pos_overflow.json":                     "json",
	"i_number_real_underflow.json":                        "json", // 0
	"i_number_too_big_neg_int.json":                       "json", // kept as written: beyond int64
	"i_number_too_big_pos_int.json":                       "json",
	"i_number_very_big_negative_int.json":                 "json",
	"i_object_key_lone_2nd_surrogate.json":                "json", // U+FFFD
	"i_string_1st_surrogate_but_2nd_missing.json":         "json",
	"i_string_1st_valid_surrogate_2nd_invalid.json":       "json",
	"i_string_UTF-16LE_with_BOM.json":                     "text", // JSON between systems is UTF-8 (RFC 8259 §8.1)
	"i_string_UTF-8_invalid_sequence.json":                "json", // U+FFFD
	"i_string_UTF8_surrogate_U+D800.json":                 "json",
	"i_string_incomplete_surrogate_and_escape_valid.json": "json",
	"i_string_incomplete_surrogate_pair.json":             "json",
	"i_string_incomplete_surrogates_escape_valid.json":    "json",
	"i_string_invalid_lonely_surrogate.json":              "json",
	"i_string_invalid_surrogate.json":                     "json",
	"i_string_invalid_utf-8.json":                         "json",
	"i_string_inverted_surrogates_U+1D11E.json":           "json",
	"i_string_iso_latin_1.json":                           "json",
	"i_string_lone_second_surrogate.json":                 "json",
	"i_string_lone_utf8_continuation_byte.json":           "json",
	"i_string_not_in_unicode_range.json":                  "json",
	"i_string_overlong_sequence_2_bytes.json":             "json",
	"i_string_overlong_sequence_6_bytes.json":             "json",
	"i_string_overlong_sequence_6_bytes_null.json":        "json",
	"i_string_truncated-utf-8.json":                       "json",
	"i_string_utf16BE_no_BOM.json":                        "text",
	"i_string_utf16LE_no_BOM.json":                        "text",
	"i_structure_500_nested_arrays.json":                  "too_complex",
	"i_structure_UTF-8_BOM_empty_object.json":             "text", // no byte order mark: see docs/events.md
}

// The n_ cases that the default InboundDepth refuses before any reading (SPEC §12.6): texts that open more
// arrays than it allows, counted whether or not they are JSON.
var jsonTestSuiteTooDeep = []string{"n_structure_100000_opening_arrays.json", "n_structure_open_array_object.json"}

// TestJSONTestSuiteThroughWebhook delivers every parsing case of the JSONTestSuite through a signed webhook to a
// task with two events: `any` takes every payload, `object` only a JSON object (its filter reads every payload).
// Every y_ case is read as JSON, as encoding/json reads it, and activates; no n_ case is read as JSON: it
// activates `any` as text, or is refused over InboundDepth; every i_ case gets the outcome
// jsonTestSuiteChoices records. No payload holds ±Inf, and every Activation encodes with encoding/json.
func TestJSONTestSuiteThroughWebhook(t *testing.T) {
	t.Parallel()
	src := manifestHeader("json-test-suite") + `settings:
  properties:
    secret: {type: string, format: password}
events:
  - name: any
    description: Any payload.
    message: "delivered"
    receive:
      webhook:
        secret: "{settings.secret}"
  - name: object
    description: A JSON object.
    message: "an object"
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: type(event.payload) == map
`
	task := newTask(t, mustLoadSrc(t, src, tool.WithSettings(map[string]any{"secret": hookSecret})), tool.TaskConfig{})
	cases := jsonTestSuite(t)
	if len(cases) != 318 {
		t.Fatalf("%d cases, want the suite's 318", len(cases))
	}
	counts := map[string]int{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range cases {
			if !yield(name) {
				return
			}
		}
	}) {
		body := cases[name]
		want := map[byte]string{'y': "json", 'n': "text"}[name[0]]
		if name[0] == 'i' {
			want = jsonTestSuiteChoices[name]
		} else if slices.Contains(jsonTestSuiteTooDeep, name) {
			want = "too_complex"
		}
		d := deliver(t, task, signed(hookSecret, "", string(body)))
		got := jsonTestSuiteOutcome(t, name, body, d)
		counts[name[:1]+" "+got]++
		if got != want {
			t.Errorf("%s (%.60q): %s, want %s (%v %+v)", name, body, got, want, outcome(d), d.Discarded)
		}
	}
	t.Logf("JSONTestSuite through Deliver: %v", counts)
}

// jsonTestSuiteOutcome classifies what d did with body ("json", "text", "too_complex" or what went wrong), after
// checking what every activation must hold.
func jsonTestSuiteOutcome(t *testing.T, name string, body []byte, d *tool.Delivery) string {
	t.Helper()
	if slices.Equal(outcome(d), []string{"any:payload_too_complex", "object:payload_too_complex"}) {
		return "too_complex"
	}
	if len(d.Activations) == 0 || d.Activations[0].Event != "any" {
		return "not activated: " + strings.Join(outcome(d), " ")
	}
	a := d.Activations[0]
	if hasInf(a.Payload) {
		t.Errorf("%s: the payload holds ±Inf: %#v", name, a.Payload)
	}
	encoded, err := json.Marshal(a)
	if err != nil {
		t.Errorf("%s: json.Marshal(activation) = %v", name, err)
		return "unencodable"
	}
	_, isMap := a.Payload.(map[string]any)
	if object := slices.Contains(outcome(d), "object:activated"); object != isMap {
		t.Errorf("%s: object event %v for payload %T", name, object, a.Payload)
	}
	if text, ok := a.Payload.(string); ok && text == string(body) {
		return "text"
	}
	// Read as JSON: the payload the Activation encodes is what encoding/json reads from the body.
	var back struct{ Payload json.RawMessage }
	if err := json.Unmarshal(encoded, &back); err != nil {
		t.Fatal(err)
	}
	want, err := useNumber(body)
	if err != nil {
		return "read as JSON, though encoding/json refuses it: " + err.Error()
	}
	if got, err := useNumber(back.Payload); err != nil || !sameJSON(got, want) {
		t.Errorf("%s: the activation's payload is %s, encoding/json reads %#v", name, back.Payload, want)
	}
	return "json"
}

func useNumber(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

// sameJSON compares values decoded with UseNumber: numbers by their float64 value when both are within its
// range, else by their text.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, errA := strconv.ParseFloat(string(a), 64)
		fb, errB := strconv.ParseFloat(string(b), 64)
		if errA == nil && errB == nil {
			return fa == fb
		}
		return a == b
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			if y, ok := b[k]; !ok || !sameJSON(x, y) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func hasInf(v any) bool {
	switch v := v.(type) {
	case float64:
		return math.IsInf(v, 0) || math.IsNaN(v)
	case map[string]any:
		for _, x := range v {
			if hasInf(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasInf(x) {
				return true
			}
		}
	}
	return false
}
