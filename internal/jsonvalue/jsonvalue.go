// Package jsonvalue is the library's one reading of JSON from outside: pushed payloads (the root's Deliver), the
// LLM's arguments (Task.InvokeFunction), stored allow lists (allowlist) and response bodies (internal/httpspec).
//
// What is JSON is what encoding/json accepts: RFC 8259's grammar, nesting at most 10,000 deep. So "1.", "01", a
// byte order mark or a second value are not JSON. A text decodes exactly as encoding/json decodes it: objects as
// map[string]any (a repeated name keeps its last value), arrays as []any, invalid UTF-8 and lone UTF-16
// surrogates in strings as U+FFFD; numbers as int64 or float64, and as json.Number (the text as written) only
// when they fit neither: an integer beyond int64, a number beyond float64's range (1e400 is never ±Inf). A
// number too small for float64 (1e-400) is 0, as float64 rounds it.
//
// It decodes about twice as fast as encoding/json, through ojg wherever ojg is known to give the same result.
package jsonvalue

import (
	"encoding/json"
	"errors"
	"math"
	goruntime "runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/jsonlimit"
	"github.com/ohler55/ojg/oj"
)

// Decode decodes data, which must be exactly one JSON text (surrounding white space allowed). The error says
// only that data is not JSON.
func Decode(data []byte) (any, error) {
	s, ok := scan(data)
	if !ok {
		return nil, errNotJSON
	}
	if v, ok := decodeFast(data, s); ok {
		return v, nil
	}
	return decodeStd(data)
}

var errNotJSON = errors.New("not a JSON text")

// DecodeWithin is Decode for a text that must nest at most maxDepth arrays and objects deep and hold at most
// maxValues values, object keys included (a bound of zero or less is not checked): it returns a *jsonlimit.Error,
// as jsonlimit.Check would, when data goes over one, measured in the pass that validates it, before anything is
// built. A text that is not JSON is measured by jsonlimit.Check, and is a *jsonlimit.Error if it goes over too.
func DecodeWithin(data []byte, maxDepth, maxValues int) (any, error) {
	s, ok, over := scanWithin(data, bounds{depth: maxDepth, values: maxValues})
	switch {
	case over != nil:
		return nil, over
	case !ok:
		if err := jsonlimit.Check(data, maxDepth, maxValues); err != nil {
			return nil, err // over a bound past where the text stopped being JSON
		}
		return nil, errNotJSON
	}
	if v, ok := decodeFast(data, s); ok {
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

// decodeFast decodes the valid text raw of shape s with ojg (about twice as fast as encoding/json, with a third
// of the garbage) when that gives exactly what decodeStd gives, and declines (ok false) otherwise:
//   - ojg decodes \uD800-\uDFFF surrogate pairs wrongly, and keeps invalid UTF-8 that encoding/json replaces;
//   - a number beyond float64 is ±Inf in ojg, its text (json.Number) in encoding/json; an integer beyond int64
//     stays its text in both, but ojg may rewrite the text;
//   - an integer with a zero exponent (1e0) is an int64 in ojg, a float64 here;
//   - ojg refuses some valid texts (0e1);
//   - on arm64 ojg sums a float's digits instead of parsing them (ParseFloat, exact, everywhere else).
//
// What encoding/json refuses and ojg accepts ("1.", a byte order mark) never gets here: scan refused it.
func decodeFast(raw []byte, s shape) (any, bool) {
	if !exactFloats || s.surrogate || s.zeroExp || s.nonASCII && !utf8.Valid(raw) {
		return nil, false
	}
	v, err := oj.Parse(raw)
	if err != nil {
		return nil, false
	}
	if !s.bigNumber {
		return v, true
	}
	return ojgNumbers(v)
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
