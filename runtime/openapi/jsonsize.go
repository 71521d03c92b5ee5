package openapi

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// hole stands for a subschema in the one-level conversion of a schema (shownCache.own): its JSON counts no bytes,
// so that a schema's size is its own bytes plus its subschemas' (JSON's size adds up over its parts).
type hole struct{}

// errSize is what jsonSize returns for a value encoding/json refuses (a NaN): more than any bound.
const errSize = math.MaxInt32

// jsonSize returns len(json.Marshal(v)) for v made of decoded-JSON values and what the converter puts in a schema,
// without encoding it; a hole counts 0. A value encoding/json refuses counts errSize.
func jsonSize(v any) int {
	switch t := v.(type) {
	case hole:
		return 0
	case nil:
		return 4
	case bool:
		if t {
			return 4
		}
		return 5
	case string:
		return quotedLen(t)
	case float64:
		return floatLen(t)
	case int:
		return len(strconv.AppendInt(make([]byte, 0, 24), int64(t), 10))
	case int64:
		return len(strconv.AppendInt(make([]byte, 0, 24), t, 10))
	case uint64:
		return len(strconv.AppendUint(make([]byte, 0, 24), t, 10))
	case map[string]any:
		n := 2
		if len(t) > 0 {
			n += len(t) - 1
		}
		for k, e := range t {
			n = addSize(n, quotedLen(k)+1, jsonSize(e))
		}
		return n
	case []any:
		n := 2
		if len(t) > 0 {
			n += len(t) - 1
		}
		for _, e := range t {
			n = addSize(n, jsonSize(e))
		}
		return n
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errSize
	}
	return len(b)
}

// addSize adds sizes, saturating at errSize.
func addSize(n int, more ...int) int {
	for _, m := range more {
		if n += m; n >= errSize {
			return errSize
		}
	}
	return n
}

// floatLen is the length of encoding/json's form of f: ES6 number formatting.
func floatLen(f float64) int {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return errSize
	}
	var buf [32]byte
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		return n - 1 // e-09 is written e-9
	}
	return len(b)
}

// quotedLen is the length of s as encoding/json writes it: quoted, with <, > and & escaped, invalid UTF-8 as
// \ufffd and U+2028, U+2029 escaped.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&':
				n++
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1, c == '\u2028', c == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
