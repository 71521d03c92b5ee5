package allowlist

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strconv"

	"github.com/commonagents-go/tool/internal/jsonvalue"
)

// Canonical returns the text under which v is de-duplicated in a List and under which a router indexes it
// (SPEC §6, §9.6): a string as it is; true or false; null; a number in shortest form, so 42, 42.0, int64(42) and
// json.Number("42") are all "42"; an object or array as compact JSON with sorted keys, numbers in the same form
// and no HTML escaping.
//
// Numbers are written as encoding/json writes a float64 (shortest round-trip digits, exponent only below 1e-6
// or from 1e21), except integers, which keep every digit when given as a Go integer, as an integral float below
// 1e21 or as json.Number integer text of any length. Other Go values are first converted by encoding/json.
// Canonical returns "" for a value that is not JSON (NaN, ±Inf, a channel, ...).
//
// Distinct JSON values can share a text (the string "42" and the number 42): texts narrow the candidates, and
// the filter itself always decides.
func Canonical(v any) string {
	text, _, ok := normalize(v)
	if !ok {
		return ""
	}
	return text
}

// normalize returns v's canonical text and v as a plain JSON value whose numbers are json.Number holding the
// canonical text (CEL reads an integral one as an int, any other as a double).
func normalize(v any) (text string, val any, ok bool) {
	val, ok = normalizeValue(v)
	if !ok {
		return "", nil, false
	}
	switch val := val.(type) {
	case nil:
		return "null", nil, true
	case string:
		return val, val, true
	case bool:
		return strconv.FormatBool(val), val, true
	case json.Number:
		return string(val), val, true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(val); err != nil {
		return "", nil, false
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), val, true
}

func normalizeValue(v any) (any, bool) {
	switch v := v.(type) {
	case nil, string, bool:
		return v, true
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			n, ok := normalizeValue(x)
			if !ok {
				return nil, false
			}
			out[k] = n
		}
		return out, true
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			n, ok := normalizeValue(x)
			if !ok {
				return nil, false
			}
			out[i] = n
		}
		return out, true
	}
	if b, isNum, ok := appendNumber(nil, v); isNum {
		return json.Number(b), ok
	}
	// Any other Go value (a struct, []string, a named string type) is taken as encoding/json sees it.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	decoded, err := jsonvalue.Decode(raw)
	if err != nil {
		return nil, false
	}
	return normalizeValue(decoded)
}

// appendNumber appends v's canonical text to dst when v is a Go number or json.Number; isNum reports whether it
// is one, ok whether it is a JSON number. It allocates only for integers beyond int64 and for float32.
func appendNumber(dst []byte, v any) (out []byte, isNum, ok bool) {
	switch v := v.(type) {
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true, true
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), true, true
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), true, true
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), true, true
	case int64:
		return strconv.AppendInt(dst, v, 10), true, true
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), true, true
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), true, true
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), true, true
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), true, true
	case uint64:
		return strconv.AppendUint(dst, v, 10), true, true
	case float32:
		// Take the shortest decimal that reads back as this float32, as encoding/json prints it.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
		out, ok = appendFloat(dst, f)
		return out, true, ok
	case float64:
		out, ok = appendFloat(dst, v)
		return out, true, ok
	case json.Number:
		out, ok = appendJSONNumber(dst, string(v))
		return out, true, ok
	}
	return dst, false, false
}

func appendJSONNumber(dst []byte, s string) ([]byte, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.AppendInt(dst, i, 10), true
	}
	if isIntegerText(s) {
		var z big.Int
		if _, ok := z.SetString(s, 10); !ok {
			return dst, false
		}
		return z.Append(dst, 10), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return dst, false
	}
	return appendFloat(dst, f)
}

func isIntegerText(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
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

// appendFloat writes f as encoding/json does, except that integral values below 1e21 get every digit.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	abs := math.Abs(f)
	if f == math.Trunc(f) && abs < 1e21 {
		if f == 0 {
			return append(dst, '0'), true // also -0
		}
		if f >= math.MinInt64 && f < math.MaxInt64 {
			return strconv.AppendInt(dst, int64(f), 10), true
		}
		return strconv.AppendFloat(dst, f, 'f', 0, 64), true // exact digits
	}
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 → e-7, as encoding/json writes it
		dst = dst[:n-1]
	}
	return dst, true
}
