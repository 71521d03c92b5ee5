package jsonvalue

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/internal/jsonlimit"
)

// scanCases are texts at the edges of JSON's grammar, each valid or not to json.Valid.
var scanCases = []string{
	``, ` `, `{}`, `[]`, ` [ ] `, `{"a":1}`, `{"a" : [1, 2 , {"b": null}] }`, `[1,]`, `[,1]`, `{"a":1,}`, `{,}`,
	`{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `[`, `]`, `{`, `}`, `[}`, `{]`, `[[]`, `[]]`, `{"a":{}}}`,
	`"`, `"a`, `"\"`, `"\\"`, `"\u"`, `"\u12"`, `"\u12G4"`, `"\uD83D\uDE00"`, `"\ud800"`, `"\x"`, `"\/"`,
	"\"\t\"", "\"\x7f\"", "\"\xff\"", "\"caf\xc3\xa9\"", "\"\x00\"",
	`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5`, `1e`, `1e+`, `1e5`, `1E-5`, `-1.5e+10`, `+1`, `0x1`, `1e400`,
	`2.e3`, `0e1`, `-01`, `1.0.0`, `1e1e1`, `Infinity`, `NaN`, `-Infinity`,
	`true`, `false`, `null`, `tru`, `truex`, `nul`, `True`, `[true,false,null]`, `[truefalse]`,
	"\xef\xbb\xbf{}", `{} {}`, `1 2`, `"a" "b"`, "[1]\x00", "\x0c[]", "\u00a0[]", " \t\r\n[]\n",
	`/* c */ []`, `[] // c`, `{'a':1}`, `["a",]`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat("[", 64) + strings.Repeat("]", 63),
}

// scan accepts exactly what json.Valid accepts.
func TestScanIsJSONValid(t *testing.T) {
	t.Parallel()
	cases := scanCases
	for _, file := range []string{"octokit-github-payloads.json.gz", "json-schema-draft7.json.gz"} {
		for _, text := range corpus(t, file) {
			cases = append(cases, text, text[:len(text)/2], text+"]")
		}
	}
	// Each kind of byte a string must notice, at each place in the 8-byte steps of plainEnd.
	for _, special := range []string{`"`, `\`, `\n`, `\u00e9`, "\n", "\x00", "\x1f", "\x7f", "\xc3\xa9", "\xff", " "} {
		for at := range 18 {
			cases = append(cases, `"`+strings.Repeat("a", at)+special+strings.Repeat("b", 17-at)+`"`)
		}
	}
	for _, c := range cases {
		if _, got := scan([]byte(c)); got != json.Valid([]byte(c)) {
			t.Errorf("scan(%.80q) = %v, json.Valid says %v", c, got, !got)
		}
	}
}

// The shape flags the texts ojg may read otherwise than encoding/json.
func TestScanShape(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]shape{
		`{"a":[1,-2.5,"x",true,null]}`: {},
		`"\u00e9"`:                     {},
		`"\\ud83d"`:                    {},
		`123456789012345`:              {},
		`"\ud83d\ude00"`:               {surrogate: true},
		`"\uDC00"`:                     {surrogate: true},
		"\"caf\xc3\xa9\"":              {nonASCII: true},
		`1e400`:                        {bigNumber: true},
		`-1.5E-3`:                      {bigNumber: true},
		`1234567890123456`:             {bigNumber: true},
		`0.123456789012345`:            {bigNumber: true},
		`1e0`:                          {bigNumber: true, zeroExp: true},
	} {
		if got, ok := scan([]byte(raw)); !ok || got != want {
			t.Errorf("scan(%s) = %+v, %v; want %+v", raw, got, ok, want)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, c := range scanCases[:len(scanCases)-4] {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, got := scan(raw); got != json.Valid(raw) {
			t.Errorf("scan(%q) = %v, json.Valid says %v", raw, got, !got)
		}
	})
}

// withinAgrees checks DecodeWithin(raw) against its definition: jsonlimit.Check's error when the text goes over a
// bound, else Decode's answer.
func withinAgrees(t *testing.T, raw []byte, depth, values int) {
	t.Helper()
	got, err := DecodeWithin(raw, depth, values)
	if want := jsonlimit.Check(raw, depth, values); want != nil {
		if !reflect.DeepEqual(err, want) {
			t.Errorf("DecodeWithin(%.80q, %d, %d) = %v, jsonlimit.Check says %v", raw, depth, values, err, want)
		}
		return
	}
	v, decodeErr := Decode(raw)
	if !errors.Is(err, decodeErr) || !reflect.DeepEqual(got, v) {
		t.Errorf("DecodeWithin(%.80q, %d, %d) = %v, %v; Decode says %v, %v", raw, depth, values, got, err, v, decodeErr)
	}
}

// DecodeWithin measures a text in the pass that validates it, exactly as jsonlimit.Check measures it (the same
// bound, at the same point), and decodes as Decode what stays within the bounds: over the edge cases, the
// payload corpus cut anywhere, and bounds from none to tight.
func TestDecodeWithinIsCheckThenDecode(t *testing.T) {
	t.Parallel()
	cases := scanCases
	for _, text := range corpus(t, "octokit-github-payloads.json.gz") {
		cases = append(cases, text, text[:len(text)/3], text+"]", strings.Replace(text, ",", ",,", 1))
	}
	cases = append(cases, `[[[[1]]]] trailing`, `[1,2,3,4,5,6 x`, `{"a":[{"b":[{"c":1}]}]}`, `{"a":1,"b":2,"c":3}`,
		`[1,]`, `{"a":}`, `[:]`, `[}`, `[:[[[`, "["+strings.Repeat("0,", 99)+"]")
	for _, c := range cases {
		for _, lim := range [][2]int{{0, 0}, {1, 0}, {2, 3}, {3, 8}, {0, 5}, {4, 0}, {64, 10000}, {10001, 0},
			{0, 1}, {0, 2}, {1, 1}, {0, 100}} {
			withinAgrees(t, []byte(c), lim[0], lim[1])
		}
	}
}

func FuzzDecodeWithin(f *testing.F) {
	for _, c := range scanCases[:len(scanCases)-4] {
		f.Add([]byte(c), 3, 8)
	}
	f.Fuzz(func(t *testing.T, raw []byte, depth, values int) {
		withinAgrees(t, raw, depth%20, values%200)
	})
}
