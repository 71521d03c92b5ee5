package interp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Resolver supplies the value of a token at render time. A nil value means null or absent. Values are JSON-shaped
// Go values: nil, bool, string, float64, json.Number, the integer types, []any and map[string]any. A Resolver
// must not modify ref.Steps and must not put secret values into its errors.
type Resolver interface {
	Resolve(ref Ref) (value any, err error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ref Ref) (any, error)

// Resolve calls f(ref).
func (f ResolverFunc) Resolve(ref Ref) (any, error) { return f(ref) }

var errNoResolver = errors.New("no resolver for a template with tokens")

// Render renders t. A template that is exactly one token returns the resolved value with its type, nil included
// (SPEC §4.3); any other template returns a string in which each value is formatted by Text. Resolver errors are
// returned wrapped with the token text, never with a value.
func (t *Template) Render(r Resolver) (any, error) {
	if len(t.parts) == 1 && t.parts[0].ref == 0 {
		return t.resolve(r, 0)
	}
	return t.RenderString(r)
}

// RenderString renders t as text: literal text and the Text of each value. Errors are as for Render.
func (t *Template) RenderString(r Resolver) (string, error) {
	if len(t.refs) == 0 {
		return t.lit, nil
	}
	if len(t.parts) == 1 {
		v, err := t.resolve(r, 0)
		return Text(v), err
	}
	var b strings.Builder
	b.Grow(t.litLen + 16*len(t.refs))
	for _, p := range t.parts {
		if p.ref < 0 {
			b.WriteString(p.lit)
			continue
		}
		v, err := t.resolve(r, p.ref)
		if err != nil {
			return "", err
		}
		writeText(&b, v)
	}
	return b.String(), nil
}

func (t *Template) resolve(r Resolver, i int) (any, error) {
	if r == nil {
		return nil, errNoResolver
	}
	v, err := r.Resolve(t.refs[i])
	if err != nil {
		return nil, fmt.Errorf("{%s}: %w", t.refs[i].Text, err)
	}
	return v, nil
}

// Text formats a value as template text (SPEC §4.3): strings as they are, numbers in their shortest form as JSON
// writes them (a json.Number integer is kept as written, so large integers keep every digit), bools as
// true/false, objects and arrays as compact JSON with sorted keys and no HTML escaping, and nil as "".
func Text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	var scratch [64]byte
	return string(appendText(scratch[:0], v))
}

func writeText(b *strings.Builder, v any) {
	if s, ok := v.(string); ok {
		b.WriteString(s)
		return
	}
	var scratch [64]byte
	b.Write(appendText(scratch[:0], v))
}

func appendText(dst []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return dst
	case string:
		return append(dst, v...)
	case bool:
		return strconv.AppendBool(dst, v)
	case json.Number:
		return appendNumber(dst, string(v))
	case float64:
		return AppendFloat(dst, v, 64)
	case float32:
		return AppendFloat(dst, float64(v), 32)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int8:
		return strconv.AppendInt(dst, int64(v), 10)
	case int16:
		return strconv.AppendInt(dst, int64(v), 10)
	case int32:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(dst, v, 10)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Append(dst, v)
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// appendNumber keeps an integer literal as written and writes any other number in shortest form.
func appendNumber(dst []byte, s string) []byte {
	if isIntLiteral(s) {
		return append(dst, s...)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return append(dst, s...)
	}
	return AppendFloat(dst, f, 64)
}

// isIntLiteral reports whether s is a JSON integer: -?(0|[1-9][0-9]*).
func isIntLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// AppendFloat appends f formatted as encoding/json formats it: shortest representation, exponent form only below
// 1e-6 or from 1e21 on, with the exponent's leading zero dropped. NaN and infinities, which JSON lacks, use
// strconv's spelling; callers writing JSON must refuse them first. bits is 32 or 64.
func AppendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// Lookup walks v along steps: a Name step indexes a map[string]any or map[string]string, an index step a []any or
// []string. It reports false when a step does not apply or its key or index is absent. Resolvers use it to
// follow a Ref's Steps from the value of its root.
func Lookup(v any, steps []Step) (any, bool) {
	for _, s := range steps {
		var ok bool
		switch c := v.(type) {
		case map[string]any:
			v, ok = c[s.Name]
			ok = ok && !s.IsIndex
		case map[string]string:
			v, ok = c[s.Name]
			ok = ok && !s.IsIndex
		case []any:
			ok = s.IsIndex && s.Index < len(c)
			if ok {
				v = c[s.Index]
			}
		case []string:
			ok = s.IsIndex && s.Index < len(c)
			if ok {
				v = c[s.Index]
			}
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}
