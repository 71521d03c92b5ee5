package allowlist

import (
	"bytes"
	"unicode/utf8"

	"github.com/ohler55/ojg/oj"
)

// decodeFast decodes MarshalJSON's form with ojg, several times cheaper than encoding/json (resuming many tasks
// decodes one list each). It declines (ok false) whatever it cannot decode exactly as decodeStored's
// encoding/json path would: a number (which that path keeps as its json.Number text), a field other than
// "sealed" and "values", a shape that path would refuse, or a \uD… escape (ojg decodes surrogate pairs wrongly;
// encoding/json writes those characters unescaped, so stored lists seldom hold one), or invalid UTF-8 (which
// encoding/json replaces).
func decodeFast(data []byte) (in map[string]stored, ok bool) {
	if bytes.Contains(data, []byte(`\ud`)) || bytes.Contains(data, []byte(`\uD`)) || !utf8.Valid(data) {
		return nil, false
	}
	v, err := oj.Parse(data)
	if err != nil {
		return nil, false
	}
	top, isMap := v.(map[string]any)
	if !isMap {
		return nil, false
	}
	in = make(map[string]stored, len(top))
	for name, x := range top {
		fields, isMap := x.(map[string]any)
		if !isMap {
			return nil, false
		}
		var s stored
		for k, f := range fields {
			switch k {
			case "sealed":
				b, isBool := f.(bool)
				if !isBool {
					return nil, false
				}
				s.Sealed = b
			case "values":
				if f == nil {
					continue
				}
				vals, isList := f.([]any)
				if !isList || hasNumber(vals) {
					return nil, false
				}
				s.Values = vals
			default:
				return nil, false
			}
		}
		in[name] = s
	}
	return in, true
}

// hasNumber reports whether v holds a number at any depth.
func hasNumber(v any) bool {
	switch v := v.(type) {
	case nil, string, bool:
		return false
	case []any:
		for _, x := range v {
			if hasNumber(x) {
				return true
			}
		}
		return false
	case map[string]any:
		for _, x := range v {
			if hasNumber(x) {
				return true
			}
		}
		return false
	}
	return true
}
