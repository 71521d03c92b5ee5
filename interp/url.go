package interp

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
)

// ErrPrefix is returned, wrapped with the token text, when a URL's trusted prefix token does not render an absolute
// http(s) URL without query or fragment. It is a configuration problem, not a bad argument.
var ErrPrefix = errors.New("url prefix is not an absolute http(s) url without query or fragment")

// UnsafeValueError is returned when a value would change a URL's structure: a path piece "." or "..", a character
// that cannot appear in a host, or any change of scheme or host. Callers map it to a recoverable
// invalid_arguments error (SPEC §4.4). It never carries the value.
type UnsafeValueError struct {
	Token  string // the token text, e.g. "parameters.path"; "" when no single token is to blame
	Reason string
}

// Error renders the token and the reason.
func (e *UnsafeValueError) Error() string {
	if e.Token == "" {
		return "unsafe url: " + e.Reason
	}
	return fmt.Sprintf("unsafe value for {%s}: %s", e.Token, e.Reason)
}

// URL is a parsed URL template (SPEC §4.4). It is immutable and safe for concurrent use.
//
// Its text is split once, on literal text only, into authority, path, query and fragment; each value is escaped
// for the part it stands in, so no value can add a part, and every rendering is parsed again with net/url to
// check that scheme and host are the ones the template (or its trusted prefix) gave.
type URL struct {
	t           *Template
	prefix      int   // index in t.refs of the trusted leading token, or -1
	authority   []seg // scheme://host:port when there is no prefix
	scheme      string
	host        string // expected host when the authority has no tokens
	path        []seg
	query       []param
	hasQuery    bool
	fragment    []seg
	hasFragment bool
	authRefs    []Ref
	size        int // capacity estimate for a rendering

	lastPrefix atomic.Pointer[checkedPrefix] // the last prefix value that passed its checks
}

// checkedPrefix is a trusted prefix's value that parsed as an http(s) URL, with its scheme and host: a base URL
// from the settings is the same in every call, so it is parsed once.
type checkedPrefix struct{ text, scheme, host string }

// seg is literal text (ref < 0) or the token t.refs[ref].
type seg struct {
	lit string
	ref int
}

// param is one name=value pair of a query; omit is the token whose null value drops the whole pair, or -1.
type param struct {
	segs []seg
	omit int
}

type urlPart uint8

const (
	inAuthority urlPart = iota
	inPath
	inQuery
	inFragment
)

// ParseURL parses a URL template. It must either start with a literal http:// or https:// scheme, or start with a
// token that trusted accepts (the caller admits settings, runtime, mount and agent roots) whose value supplies the
// scheme, host and optionally a path prefix, followed by '/', '?', '#' or nothing. Tokens inside a literal
// authority are allowed and listed by AuthorityRefs for the caller to vet. A nil trusted trusts nothing.
// Errors are *Error.
func ParseURL(src string, trusted func(ref Ref) bool) (*URL, error) {
	t, err := Parse(src)
	if err != nil {
		return nil, err
	}
	u := &URL{t: t, prefix: -1, size: len(src) + 32*len(t.refs)}
	parts := t.parts
	var first part
	if len(parts) > 0 {
		first = parts[0]
	}
	var s splitter
	switch {
	case len(parts) > 0 && first.ref < 0 && httpScheme(first.lit) != "":
		u.scheme = httpScheme(first.lit)
		n := len(u.scheme) + len("://")
		s = splitter{u: u, at: inAuthority}
		u.authority = []seg{{lit: first.lit[:n], ref: -1}}
		s.text(first.lit[n:])
		parts = parts[1:]
	case len(parts) > 0 && first.ref >= 0:
		ref := t.refs[first.ref]
		if trusted == nil || !trusted(ref) {
			return nil, &Error{Offset: first.off, Msg: fmt.Sprintf("{%s} cannot supply the url's scheme and host: "+
				"only a trusted root (settings, runtime, mount, agent) can", ref.Text)}
		}
		u.prefix = first.ref
		u.authRefs = append(u.authRefs, ref)
		parts = parts[1:]
		if len(parts) > 0 && (parts[0].ref >= 0 || !strings.ContainsRune("/?#", rune(parts[0].lit[0]))) {
			return nil, &Error{Offset: parts[0].off,
				Msg: fmt.Sprintf(`the url prefix {%s} must be followed by "/", "?", "#" or nothing`, ref.Text)}
		}
		s = splitter{u: u, at: inPath}
	default:
		return nil, &Error{Offset: 0, Msg: "url must start with http:// or https:// or with a trusted prefix token " +
			"such as {settings.base_url}"}
	}
	for _, p := range parts {
		if p.ref >= 0 {
			s.token(p.ref)
		} else {
			s.text(p.lit)
		}
	}
	s.end()
	if u.prefix < 0 && len(u.authRefs) == 0 {
		u.host = hostOf(u.authority[0].lit)
	}
	if err := u.trial(); err != nil {
		return nil, &Error{Offset: 0, Msg: err.Error()}
	}
	return u, nil
}

// trial renders u with placeholder values so that a template whose literal text can never yield a valid URL
// (a bad port, a bad escape, an empty host) fails at load rather than on every call.
func (u *URL) trial() error {
	_, err := u.Render(ResolverFunc(func(ref Ref) (any, error) {
		if u.prefix >= 0 && ref.Offset == u.t.refs[u.prefix].Offset {
			return "https://example.com", nil
		}
		return "1", nil
	}))
	if err != nil {
		return fmt.Errorf("url template does not render a valid url: %w", err)
	}
	return nil
}

// httpScheme returns the http or https scheme (as written) that s starts with, or "".
func httpScheme(s string) string {
	for _, scheme := range []string{"https", "http"} {
		if len(s) >= len(scheme)+3 && strings.EqualFold(s[:len(scheme)], scheme) && s[len(scheme):len(scheme)+3] == "://" {
			return s[:len(scheme)]
		}
	}
	return ""
}

// hostOf returns the host[:port] of a rendered authority "scheme://userinfo@host:port", as net/url reports it for
// hosts without percent-escapes.
func hostOf(authority string) string {
	rest := authority[strings.Index(authority, "://")+3:]
	return rest[strings.LastIndexByte(rest, '@')+1:]
}

// splitter distributes the parts of a URL template over authority, path, query and fragment.
type splitter struct {
	u     *URL
	at    urlPart
	param []seg
}

func (s *splitter) text(lit string) {
	for lit != "" {
		var i int
		switch s.at {
		case inAuthority:
			i = strings.IndexAny(lit, "/?#")
		case inPath:
			i = strings.IndexAny(lit, "?#")
		case inQuery:
			i = strings.IndexAny(lit, "&#")
		default:
			i = -1
		}
		if i < 0 {
			s.add(seg{lit: lit, ref: -1})
			return
		}
		if i > 0 {
			s.add(seg{lit: lit[:i], ref: -1})
		}
		switch lit[i] {
		case '/':
			s.at = inPath
			lit = lit[i:]
			continue
		case '?':
			s.at, s.u.hasQuery = inQuery, true
		case '&':
			s.closeParam()
		case '#':
			if s.at == inQuery {
				s.closeParam()
			}
			s.at, s.u.hasFragment = inFragment, true
		}
		lit = lit[i+1:]
	}
}

func (s *splitter) token(ref int) {
	if s.at == inAuthority {
		s.u.authRefs = append(s.u.authRefs, s.u.t.refs[ref])
	}
	s.add(seg{ref: ref})
}

func (s *splitter) add(g seg) {
	var list *[]seg
	switch s.at {
	case inAuthority:
		list = &s.u.authority
	case inPath:
		list = &s.u.path
	case inQuery:
		list = &s.param
	default:
		list = &s.u.fragment
	}
	if n := len(*list); n > 0 && g.ref < 0 && (*list)[n-1].ref < 0 {
		(*list)[n-1].lit += g.lit
		return
	}
	*list = append(*list, g)
}

// closeParam ends the current query parameter; "name={token}" is dropped when the token renders null.
func (s *splitter) closeParam() {
	p := param{segs: s.param, omit: -1}
	if len(p.segs) == 2 && p.segs[0].ref < 0 && p.segs[1].ref >= 0 &&
		len(p.segs[0].lit) > 1 && strings.IndexByte(p.segs[0].lit, '=') == len(p.segs[0].lit)-1 {
		p.omit = p.segs[1].ref
	}
	s.u.query = append(s.u.query, p)
	s.param = nil
}

func (s *splitter) end() {
	if s.at == inQuery {
		s.closeParam()
	}
}

// Source returns the text u was parsed from.
func (u *URL) Source() string { return u.t.src }

// Refs returns every token of u in order of appearance.
func (u *URL) Refs() []Ref { return u.t.Refs() }

// AuthorityRefs returns the tokens that may influence scheme, host or port: the trusted prefix token, if any, and
// every token inside a literal authority. Callers admit parameters here only with require_binding (SPEC §4.4).
func (u *URL) AuthorityRefs() []Ref { return cloneRefs(u.authRefs) }

// Render renders u. Besides resolver errors (wrapped with the token text) it returns *UnsafeValueError when a
// value would change the URL's structure, and an error wrapping ErrPrefix when the trusted prefix is not an
// absolute http(s) URL. No error carries a value.
func (u *URL) Render(r Resolver) (string, error) {
	out, _, err := u.render(r)
	return out, err
}

// RenderParsed is Render that also returns the rendering as parsed by net/url, which Render does anyway to check
// it, so callers building an http.Request need not parse it a second time. The *url.URL is the caller's.
func (u *URL) RenderParsed(r Resolver) (*url.URL, error) {
	_, parsed, err := u.render(r)
	return parsed, err
}

func (u *URL) render(r Resolver) (string, *url.URL, error) {
	x, err := u.RenderUnchecked(r)
	if err != nil {
		return "", nil, err
	}
	parsed, err := url.Parse(x.Text)
	if err := x.Check(parsed, err); err != nil {
		return "", nil, err
	}
	return x.Text, parsed, nil
}

// Rendering is a URL rendered but not yet checked: its Text is to be parsed as net/http parses it (NewRequest
// does) and the result given to Check.
type Rendering struct {
	Text         string
	scheme, host string // what the template fixes
}

// RenderUnchecked renders u without the final check, for a caller that parses the text anyway (to build a
// request): it must then call Check with the parse. Its errors are Render's, but for those of Check.
func (u *URL) RenderUnchecked(r Resolver) (Rendering, error) {
	var b strings.Builder
	b.Grow(u.size)
	scheme, host, err := u.renderAuthority(&b, r)
	if err != nil {
		return Rendering{}, err
	}
	if err := u.renderPath(&b, r); err != nil {
		return Rendering{}, err
	}
	if err := u.renderQuery(&b, r); err != nil {
		return Rendering{}, err
	}
	if u.hasFragment {
		b.WriteByte('#')
		if err := u.renderEscaped(&b, r, u.fragment); err != nil {
			return Rendering{}, err
		}
	}
	return Rendering{Text: b.String(), scheme: scheme, host: host}, nil
}

// Check returns what Render returns for this rendering, given its parse: parsed, or the error of parsing it. The
// structure the template fixes already keeps values out of scheme and host; this checks the text the way net/http
// reads it. A host that net/http stripped of an empty port ("h:" → "h") counts as kept. The parse error is not
// wrapped: net/url errors quote the URL, values included.
func (x Rendering) Check(parsed *url.URL, parseErr error) error {
	if parseErr != nil || parsed == nil {
		return errors.New("rendered url does not parse")
	}
	host := parsed.Host
	if !strings.EqualFold(parsed.Scheme, x.scheme) || host != x.host && host != strings.TrimSuffix(x.host, ":") ||
		host == "" || parsed.Opaque != "" {
		return &UnsafeValueError{Reason: "rendered url does not keep the template's scheme and host"}
	}
	return nil
}

// renderAuthority writes scheme://host[:port] (or the trusted prefix) and returns the scheme and host the rest
// of the rendering must keep.
func (u *URL) renderAuthority(b *strings.Builder, r Resolver) (scheme, host string, err error) {
	if u.prefix >= 0 {
		return u.renderPrefix(b, r)
	}
	for _, g := range u.authority {
		if g.ref < 0 {
			b.WriteString(g.lit)
			continue
		}
		v, err := u.t.resolve(r, g.ref)
		if err != nil {
			return "", "", err
		}
		s := Text(v)
		if s == "" || !hostSafe(s) {
			return "", "", &UnsafeValueError{Token: u.t.refs[g.ref].Text,
				Reason: "a value in the url authority must be a non-empty host name, address or port"}
		}
		b.WriteString(s)
	}
	if len(u.authRefs) == 0 {
		return u.scheme, u.host, nil
	}
	return u.scheme, hostOf(b.String()), nil
}

func (u *URL) renderPrefix(b *strings.Builder, r Resolver) (scheme, host string, err error) {
	v, err := u.t.resolve(r, u.prefix)
	if err != nil {
		return "", "", err
	}
	s := Text(v)
	if last := u.lastPrefix.Load(); last != nil && last.text == s {
		b.WriteString(strings.TrimRight(s, "/"))
		return last.scheme, last.host, nil
	}
	p, err := url.Parse(s)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.Opaque != "" ||
		strings.ContainsAny(s, "?#") {
		return "", "", fmt.Errorf("{%s}: %w", u.t.refs[u.prefix].Text, ErrPrefix)
	}
	u.lastPrefix.Store(&checkedPrefix{text: s, scheme: p.Scheme, host: p.Host})
	b.WriteString(strings.TrimRight(s, "/"))
	return p.Scheme, p.Host, nil
}

func (u *URL) renderPath(b *strings.Builder, r Resolver) error {
	w := pathWriter{b: b, segStart: b.Len()}
	for _, g := range u.path {
		if g.ref < 0 {
			if err := w.literal(g.lit); err != nil {
				return err
			}
			continue
		}
		v, err := u.t.resolve(r, g.ref)
		if err != nil {
			return err
		}
		if err := w.value(Text(v), u.t.refs[g.ref].Text); err != nil {
			return err
		}
	}
	return w.endSegment()
}

func (u *URL) renderQuery(b *strings.Builder, r Resolver) error {
	wrote := false
	for _, p := range u.query {
		var omitVal any
		if p.omit >= 0 {
			v, err := u.t.resolve(r, p.omit)
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			omitVal = v
		}
		if wrote {
			b.WriteByte('&')
		} else {
			b.WriteByte('?')
		}
		wrote = true
		for _, g := range p.segs {
			if g.ref < 0 {
				b.WriteString(g.lit)
				continue
			}
			v := omitVal
			if g.ref != p.omit {
				var err error
				if v, err = u.t.resolve(r, g.ref); err != nil {
					return err
				}
			}
			writeQueryEscaped(b, Text(v))
		}
	}
	return nil
}

func (u *URL) renderEscaped(b *strings.Builder, r Resolver, segs []seg) error {
	for _, g := range segs {
		if g.ref < 0 {
			b.WriteString(g.lit)
			continue
		}
		v, err := u.t.resolve(r, g.ref)
		if err != nil {
			return err
		}
		writeQueryEscaped(b, Text(v))
	}
	return nil
}

// pathWriter writes a URL path, escaping values piece by piece, and rejects any segment that a value helped make
// into "." or ".." (also spelled with %2e).
type pathWriter struct {
	b        *strings.Builder
	segStart int    // offset in b of the current segment
	tainted  string // text of the last token that wrote into the current segment, or ""
}

func (w *pathWriter) literal(s string) error {
	for {
		i := strings.IndexByte(s, '/')
		if i < 0 {
			w.b.WriteString(s)
			return nil
		}
		w.b.WriteString(s[:i])
		if err := w.nextSegment(); err != nil {
			return err
		}
		s = s[i+1:]
	}
}

func (w *pathWriter) value(s, token string) error {
	for {
		piece, rest, more := strings.Cut(s, "/")
		if piece == "." || piece == ".." {
			return &UnsafeValueError{Token: token, Reason: `a path segment may not be "." or ".."`}
		}
		if piece != "" {
			writePathEscaped(w.b, piece)
			w.tainted = token
		}
		if !more {
			return nil
		}
		// A '/' from the value ends this segment and starts the next: both are the value's doing.
		w.tainted = token
		if err := w.nextSegment(); err != nil {
			return err
		}
		w.tainted = token
		s = rest
	}
}

func (w *pathWriter) nextSegment() error {
	if err := w.endSegment(); err != nil {
		return err
	}
	w.b.WriteByte('/')
	w.segStart = w.b.Len()
	return nil
}

func (w *pathWriter) endSegment() error {
	if w.tainted != "" && isDotSegment(w.b.String()[w.segStart:]) {
		return &UnsafeValueError{Token: w.tainted, Reason: `the value makes a path segment "." or ".."`}
	}
	w.tainted = ""
	return nil
}

// isDotSegment reports whether seg is "." or "..", with any dot possibly written %2e or %2E.
func isDotSegment(seg string) bool {
	dots := 0
	for i := 0; i < len(seg); dots++ {
		switch {
		case seg[i] == '.':
			i++
		case strings.HasPrefix(seg[i:], "%2e") || strings.HasPrefix(seg[i:], "%2E"):
			i += 3
		default:
			return false
		}
	}
	return dots == 1 || dots == 2
}

// hostSafe reports whether s holds only characters of host names, IP addresses (IPv6 in brackets) and ports.
func hostSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && !strings.ContainsRune("-._:[]", rune(c)) {
			return false
		}
	}
	return true
}

// writePathEscaped writes url.PathEscape(s) without an intermediate string. Escaping is byte by byte, so
// TestEscapeTables proves it equal to net/url's.
func writePathEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; pathSegmentSafe(c) {
			b.WriteByte(c)
		} else {
			writePercent(b, c)
		}
	}
}

// writeQueryEscaped writes url.QueryEscape(s) without an intermediate string.
func writeQueryEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case unreserved(c):
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			writePercent(b, c)
		}
	}
}

func writePercent(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}

// unreserved reports whether url.QueryEscape leaves c as it is (RFC 3986 §2.3).
func unreserved(c byte) bool { return isAlnum(c) || c == '-' || c == '_' || c == '.' || c == '~' }

// pathSegmentSafe reports whether url.PathEscape leaves c as it is.
func pathSegmentSafe(c byte) bool {
	return unreserved(c) || c == '$' || c == '&' || c == '+' || c == ':' || c == '=' || c == '@'
}

func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
