// Package jsonvalue decodes one JSON document into Go values: objects as map[string]any, arrays as []any,
// numbers as int64 or float64, and as json.Number (their text) only when they fit neither (an integer beyond
// int64, a number beyond float64). It decodes exactly as encoding/json does (with UseNumber, then those
// conversions), about twice as fast through ojg wherever ojg is known to give the same result.
//
// It decodes response bodies (internal/httpspec), and the pushed payloads (the root's Deliver) that ojg alone
// would decode wrongly: those with an escaped UTF-16 surrogate.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"math"
	goruntime "runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/commonagents-go/tool/internal/decode"
	"github.com/ohler55/ojg/oj"
)

// Decode decodes data, which must be exactly one JSON value (surrounding whitespace allowed). The error is
// encoding/json's.
func Decode(data []byte) (any, error) {
	if v, ok := decodeFast(data); ok {
		return v, nil
	}
	return decodeStd(data)
}

// decodeStd is Decode with encoding/json: numbers are decoded from their text.
func decodeStd(data []byte) (any, error) {
	v, err := decode.JSON(data)
	if err != nil {
		return nil, err
	}
	return numbers(v), nil
}

// decodeFast decodes raw with ojg (about twice as fast as encoding/json, with a third of the garbage) when that
// gives exactly what decodeStd gives, and declines (ok false) otherwise:
//   - what encoding/json refuses, ojg may accept ("1.", a byte order mark): json.Valid, the same scanner, decides;
//   - ojg decodes \uD800-\uDFFF surrogate pairs wrongly, and keeps invalid UTF-8 that encoding/json replaces;
//   - a number beyond float64 is ±Inf in ojg, its text (json.Number) in encoding/json; an integer beyond int64
//     stays its text in both, but ojg may rewrite the text;
//   - an integer with a zero exponent (1e0) is an int64 in ojg, a float64 here;
//   - on arm64 ojg sums a float's digits instead of parsing them (ParseFloat, exact, everywhere else).
func decodeFast(raw []byte) (any, bool) {
	if !exactFloats || bytes.Contains(raw, []byte(`\ud`)) || bytes.Contains(raw, []byte(`\uD`)) ||
		!utf8.Valid(raw) || !json.Valid(raw) || zeroExponent(raw) {
		return nil, false
	}
	v, err := oj.Parse(raw)
	if err != nil {
		return nil, false
	}
	return ojgNumbers(v)
}

// zeroExponent reports whether a number of the valid JSON text raw has an exponent of zero (1e0, 2E-00). Strings
// are skipped whole: raw being valid, each ends at the next quote that no backslash escapes.
func zeroExponent(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for {
				j := bytes.IndexByte(raw[i+1:], '"')
				if j < 0 {
					return false
				}
				i += 1 + j
				if !escaped(raw, i) {
					break
				}
			}
		case (c == 'e' || c == 'E') && i > 0 && raw[i-1] >= '0' && raw[i-1] <= '9': // not true, false
			j := i + 1
			if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
				j++
			}
			zero := true
			for ; j < len(raw) && raw[j] >= '0' && raw[j] <= '9'; j++ {
				zero = zero && raw[j] == '0'
			}
			if zero {
				return true
			}
			i = j - 1
		}
	}
	return false
}

// escaped reports whether the byte at i follows an odd number of backslashes.
func escaped(raw []byte, i int) bool {
	n := 0
	for k := i - 1; k >= 0 && raw[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// exactFloats tells whether ojg parses floats with strconv.ParseFloat here (see decodeFast).
var exactFloats = goruntime.GOARCH != "arm64"

// ojgNumbers is numbers for ojg's output: its big numbers are json.Number texts. A number beyond float64 (±Inf,
// or a json.Number that stays one) declines.
func ojgNumbers(v any) (any, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsInf(x, 0)
	case json.Number: // beyond int64 or float64: ojg's text of it can differ (1e02000 → 1e2000)
		n := numbers(x)
		_, kept := n.(json.Number)
		return n, !kept
	case map[string]any:
		for k, e := range x {
			n, ok := ojgNumbers(e)
			if !ok {
				return nil, false
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, ok := ojgNumbers(e)
			if !ok {
				return nil, false
			}
			x[i] = n
		}
	}
	return v, true
}

// numbers turns json.Number leaves into int64 or float64 in place, keeping json.Number only for integers beyond
// int64 and numbers beyond float64, so that response_path filters such as [?@.price > 10] and CEL compare them as
// numbers.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		if isInteger(string(v)) {
			return v
		}
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
		return v
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
