package jsonlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name              string
		data              string
		depth, values     int
		wantDepth, wantOK bool
	}{
		{"flat object", `{"a": 1, "b": "x", "c": [true, null]}`, 2, 9, false, true},
		{"one value too many", `{"a": 1, "b": "x", "c": [true, null]}`, 2, 8, false, false},
		{"depth at the limit", `[[[1]]]`, 3, 0, false, true},
		{"depth over the limit", `[[[[1]]]]`, 3, 0, true, false},
		{"brackets inside strings do not nest", `["[[[[{{{{", "\"[[[["]`, 1, 3, false, true},
		{"keys count", `{"a":{"b":{"c":1}}}`, 0, 6, false, false},
		{"scalar", `"[[[["`, 1, 1, false, true},
		{"numbers and literals", `[1, -2.5e3, true, false, null]`, 1, 6, false, true},
		{"no limits", strings.Repeat("[", 1000), 0, 0, false, true},
		{"unterminated string", `["abc`, 1, 2, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.data), tt.depth, tt.values)
			if (err == nil) != tt.wantOK {
				t.Fatalf("Check(%s) = %v, want ok %v", tt.data, err, tt.wantOK)
			}
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.Depth != tt.wantDepth) {
				t.Fatalf("Check(%s) = %#v, want depth %v", tt.data, err, tt.wantDepth)
			}
		})
	}
}

// TestCheckCountsWhatAParserBuilds: the count is never below the number of values encoding/json decodes, keys
// included.
func TestCheckCountsWhatAParserBuilds(t *testing.T) {
	for _, doc := range []string{`{"a":[1,2,{"b":null}],"c":"d"}`, `[[],{},"",0]`, `{"x":{"y":{"z":[1,[2,[3]]]}}}`} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		n := count(v)
		if err := Check([]byte(doc), 0, n-1); err == nil {
			t.Errorf("%s: %d values pass a limit of %d", doc, n, n-1)
		}
		if err := Check([]byte(doc), 0, n); err != nil {
			t.Errorf("%s: %d values refused at a limit of %d: %v", doc, n, n, err)
		}
	}
}

func count(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 1
		for _, x := range v {
			n += 1 + count(x)
		}
		return n
	case []any:
		n := 1
		for _, x := range v {
			n += count(x)
		}
		return n
	}
	return 1
}

func nesting(v any) int {
	deepest := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			deepest = max(deepest, nesting(x))
		}
	case []any:
		for _, x := range v {
			deepest = max(deepest, nesting(x))
		}
	default:
		return 0
	}
	return deepest + 1
}

func TestCheckAllocatesNothing(t *testing.T) {
	data := append([]byte("["), bytes.Repeat([]byte(`{"a":[1,"x",true]},`), 1000)...)
	if n := testing.AllocsPerRun(10, func() { _ = Check(data, 64, 1<<20) }); n != 0 {
		t.Errorf("Check allocated %v times", n)
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"\"]"}]}`), 3, 10)
	f.Fuzz(func(t *testing.T, data []byte, depth, values int) {
		err := Check(data, depth, values)
		var v any
		if err != nil || json.Unmarshal(data, &v) != nil {
			return
		}
		if values > 0 && count(v) > values {
			t.Errorf("%q: %d values passed a limit of %d", data, count(v), values)
		}
		if depth > 0 && nesting(v) > depth {
			t.Errorf("%q: nesting %d passed a limit of %d", data, nesting(v), depth)
		}
	})
}

// stringEndBytewise is stringEnd read forward, one byte at a time: each backslash takes the byte after it.
func stringEndBytewise(data []byte, i int) int {
	for ; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// TestStringEnd: finding quotes with bytes.IndexByte and counting the backslashes before each ends every string
// where reading it forward does.
func TestStringEnd(t *testing.T) {
	for _, s := range []string{`"`, `a"`, `\""`, `\\"`, `\\\"x"`, `\\\\"`, `\`, `\\`, `abc`, `a\\\"\\"b"`, `\u0022"`, ``} {
		if got, want := stringEnd([]byte(s), 0), stringEndBytewise([]byte(s), 0); got != want {
			t.Errorf("stringEnd(%s) = %d, want %d", s, got, want)
		}
	}
}

func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`\\\"x"`, `a\\\"\\"b"`, `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if got, want := stringEnd(data, 0), stringEndBytewise(data, 0); got != want {
			t.Errorf("stringEnd(%q) = %d, want %d", data, got, want)
		}
	})
}
