package httpspec

import (
	"github.com/commonagents-go/tool/runtime"
	"github.com/ohler55/ojg/jp"
)

// Output applies a response_path to a decoded body (SPEC §7.3): one match is that value, several are a []any,
// none is nil. A nil path returns body unchanged.
//
// Paths are evaluated by ojg's jp, which supports child and descendant steps, wildcards, indexes, slices, unions
// and filters comparing a member with a literal ([?(@.price > 10)], ==, !=, <, <=, >, >=, =~ with a regular
// expression, in, &&, ||). Filters comparing arrays or objects are not supported: ojg panics on some of them,
// which Output recovers into a recoverable malformed_response error.
func Output(body any, path jp.Expr) (out any, err error) {
	if path == nil {
		return body, nil
	}
	if v, ok := direct(body, path); ok {
		return v, nil
	}
	defer func() {
		if recover() != nil {
			out, err = nil, runtime.Errorf(runtime.KindMalformedResponse,
				"response_path %s cannot be applied to this response", path.String())
		}
	}()
	switch got := path.Get(body); len(got) {
	case 0:
		return nil, nil
	case 1:
		return got[0], nil
	default:
		return got, nil
	}
}

// direct evaluates a path made only of child names and indexes ($.a.b[0]) without ojg, whose Get allocates a
// stack per call; it reports false for any other path. It yields what Get would: the value, or nil for no match.
func direct(body any, path jp.Expr) (any, bool) {
	v := body
	for i, f := range path {
		switch f := f.(type) {
		case jp.Root, jp.At:
			if i != 0 {
				return nil, false
			}
		case jp.Child:
			m, ok := v.(map[string]any)
			if v, ok = m[string(f)]; !ok {
				return nil, validDirect(path[i+1:])
			}
		case jp.Nth:
			a, _ := v.([]any)
			n := int(f)
			if n < 0 {
				n += len(a)
			}
			if n < 0 || n >= len(a) {
				return nil, validDirect(path[i+1:])
			}
			v = a[n]
		default:
			return nil, false
		}
	}
	return v, true
}

// validDirect reports whether the rest of a path is still one direct can evaluate.
func validDirect(rest jp.Expr) bool {
	for _, f := range rest {
		switch f.(type) {
		case jp.Child, jp.Nth:
		default:
			return false
		}
	}
	return true
}
