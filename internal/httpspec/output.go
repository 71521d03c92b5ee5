package httpspec

// Output applies a response_path to a decoded body (SPEC §7.3): one match is that value, several are a []any,
// none is nil. A nil path returns body unchanged. The full RFC 9535 syntax is supported (see Path).
func Output(body any, path *Path) any {
	if path == nil {
		return body
	}
	if path.direct != nil { // one node at most: no list
		v, _ := selectDirect(body, path.direct)
		return v
	}
	switch got := path.Select(body); len(got) {
	case 0:
		return nil
	case 1:
		return got[0]
	default:
		return got
	}
}
