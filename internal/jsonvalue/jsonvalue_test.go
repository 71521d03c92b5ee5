package jsonvalue

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The ojg fast path must decode exactly as encoding/json does, or decline.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{
		`{"content": "hello", "sha": "3f2a9c1", "size": 5}`, `[1, -0, 0.5, 1e3, 1E+2, 1.5e-3, -12.25]`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775809`, `123456789012345678901234567890`,
		`0.1234567890123456789012345`, `1e308`, `1e309`, `1e400`, `[1e400]`, `-1e400`, `1e-400`, `4.9e-324`, `2.2250738585072014e-308`,
		`{"a":1,"a":2}`, `"\u00e9\u0000\n"`, `"\ud83d\ude00"`, `"\uD83D"`, "\"caf\xc3\xa9\"", "\"bad \xff\"",
		"\xef\xbb\xbf{}", `1.`, `01`, `.5`, `[1,]`, `{"a":1} x`, `{"a":1}{"b":2}`, "\"a\x01b\"", `nul`, `true`,
		`null`, " \t\n[ ] ", `{"nested":{"deep":[[[{"x":[1,{"y":null}]}]]]}}`,
		`1e0`, `[1E+00]`, `{"a\"b": 1e0}`, `["x\\", 2e-0]`, `"\\\"1e0"`, `{"e":"1e0","f":3e00}`,
	}
	cases = append(cases, strings.Repeat("[", 10001)+strings.Repeat("]", 10001)) // beyond encoding/json's depth
	for _, file := range []string{"octokit-github-payloads.json.gz", "json-schema-draft7.json.gz"} {
		for _, text := range corpus(t, file) {
			cases = append(cases, text)
		}
	}
	fast := 0
	for _, c := range cases {
		got, ok := viaOJG([]byte(c))
		if !ok {
			continue
		}
		fast++
		if want, err := decodeStd([]byte(c)); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeFast(%.80q) = %#v, encoding/json gives %#v", c, got, want)
		}
	}
	if exactFloats && fast < 60 {
		t.Errorf("the fast path took %d of %d documents: it should take every valid one without \\uD8xx escapes", fast, len(cases))
	}
	t.Logf("fast path: %d of %d documents", fast, len(cases))
}

// corpus returns the documents of a conformance file: a JSON object whose members are documents (as text, or
// as JSON values).
func corpus(t testing.TB, name string) map[string]string {
	f, err := os.Open("../../testdata/conformance/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var members map[string]json.RawMessage
	if err := json.NewDecoder(z).Decode(&members); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, raw := range members {
		var text string
		if json.Unmarshal(raw, &text) == nil {
			out[k] = text
		} else {
			out[k] = string(raw)
		}
	}
	return out
}

// TestZeroExponent: only a number's exponent counts, however the strings before it end.
func TestZeroExponent(t *testing.T) {
	for raw, want := range map[string]bool{
		`1e0`: true, `[1, 2E-00]`: true, `{"a\"b": 1e0}`: true, `["x\\", 2e+0]`: true, `["\\\"", 3e0]`: true,
		`1e1`: false, `10`: false, `"1e0"`: false, `["x\"1e0"]`: false, `{"1e0": true}`: false, `[true, false]`: false,
		`"\\"`: false, `["a\\\"1e0"]`: false,
	} {
		s, ok := scan([]byte(raw))
		if !ok {
			t.Fatalf("%s is not JSON to scan", raw)
		}
		if s.zeroExp != want {
			t.Errorf("scan(%s).zeroExp = %v, want %v", raw, s.zeroExp, want)
		}
	}
}

// viaOJG is decodeFast for a text scan accepts.
func viaOJG(raw []byte) (any, bool) {
	s, ok := scan(raw)
	if !ok {
		return nil, false
	}
	return decodeFast(raw, s)
}

func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `1e400`, `"\ud83d\ude00"`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := viaOJG(raw)
		if !ok {
			return
		}
		if want, err := decodeStd(raw); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeFast(%q) = %#v, encoding/json gives %#v", raw, got, want)
		}
	})
}
