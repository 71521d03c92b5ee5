// Package redact keeps the set of secret values a task knows (password settings, auth tokens, secret bindings)
// and scrubs them from everything the library hands out: error messages, results, facts and log lines (SPEC
// §3.2, §12.2).
package redact

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// Set is a set of secrets. The zero value is empty and ready to use; a Set is safe for concurrent use. Reads are
// lock-free; adding a secret rebuilds the replacer, which happens rarely (once per new token).
type Set struct {
	mu      sync.Mutex
	secrets []string
	tokens  []string                         // the latest MaxTokens auth tokens, oldest first
	r       atomic.Pointer[strings.Replacer] // nil while the set is empty
	min     atomic.Int64                     // the length of the shortest secret or token: a shorter text holds none
	has     atomic.Pointer[map[string]bool]  // every secret and token, for Has
	enc     sync.Map                         // secret or token → its Encodings, filled on first need
	encR    atomic.Pointer[strings.Replacer] // the Encodings of every secret and token; built by Encoded
}

// MaxTokens is how many auth tokens a Set keeps masking (AddToken): a provider that rotates its token on every
// fetch would otherwise grow the set, and the cost of every scrub, for the life of the task. A token is only
// ever rendered into the request of the call that fetched it, and that call's result is scrubbed long before
// this many newer tokens arrive.
const MaxTokens = 64

// Clone returns an independent copy of s.
func (s *Set) Clone() *Set {
	c := &Set{}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.secrets = append([]string(nil), s.secrets...)
	c.tokens = append([]string(nil), s.tokens...)
	c.r.Store(s.r.Load())
	c.min.Store(s.min.Load())
	c.has.Store(s.has.Load())
	return c
}

// Add records secret values; empty strings are ignored.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range values {
		if v == "" || slices.Contains(s.secrets, v) {
			continue
		}
		s.secrets = append(s.secrets, v)
		changed = true
	}
	if changed {
		s.rebuild()
	}
}

// AddToken records an auth token, forgetting the oldest beyond MaxTokens.
func (s *Set) AddToken(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == "" || slices.Contains(s.secrets, v) || slices.Contains(s.tokens, v) {
		return
	}
	s.tokens = append(s.tokens, v)
	if len(s.tokens) > MaxTokens {
		s.tokens = s.tokens[len(s.tokens)-MaxTokens:]
	}
	s.rebuild()
}

// rebuild makes the replacer of the secrets and tokens; s.mu is held.
func (s *Set) rebuild() {
	all := append(append(make([]string, 0, len(s.secrets)+len(s.tokens)), s.secrets...), s.tokens...)
	// Longest first, so a secret that contains another is masked whole.
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	pairs := make([]string, 0, 2*len(all))
	has := make(map[string]bool, len(all))
	for _, v := range all {
		pairs = append(pairs, v, Mask)
		has[v] = true
	}
	s.min.Store(int64(len(all[len(all)-1]))) // sorted longest first; Add and AddToken keep no empty value
	s.encR.Store(nil)
	s.r.Store(strings.NewReplacer(pairs...))
	s.has.Store(&has)
	s.enc.Range(func(k, _ any) bool { // forget the encodings of tokens beyond MaxTokens
		if !has[k.(string)] {
			s.enc.Delete(k)
		}
		return true
	})
}

// EncodingsOf returns Encodings(v) for a secret or token of s, computed once per value; nil when v is not one.
// They are kept as long as v is in s.
func (s *Set) EncodingsOf(v string) []string {
	if !s.Has(v) {
		return nil
	}
	if e, ok := s.enc.Load(v); ok {
		return e.([]string)
	}
	e, _ := s.enc.LoadOrStore(v, Encodings(v))
	return e.([]string)
}

// Encoded returns text with the encoded forms (Encodings) of every secret and token of s masked, then the values
// themselves: for what a server returns that no call rendered, such as the base64 data of an MCP image.
func (s *Set) Encoded(text string) string {
	if s.Empty() || int64(len(text)) < s.min.Load() {
		return text
	}
	r := s.encR.Load()
	if r == nil {
		s.mu.Lock() // built and stored under the lock, so that rebuild's reset cannot be overwritten by a stale one
		var all []string
		for _, v := range append(append([]string(nil), s.secrets...), s.tokens...) {
			all = append(all, Encodings(v)...)
		}
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) }) // a longer form masked whole
		pairs := make([]string, 0, 2*len(all))
		for _, v := range all {
			pairs = append(pairs, v, Mask)
		}
		r = strings.NewReplacer(pairs...)
		s.encR.Store(r)
		s.mu.Unlock()
	}
	return s.String(r.Replace(text))
}

// Has reports whether v is one of the secrets or tokens of s (the exact value, not a part of one).
func (s *Set) Has(v string) bool {
	m := s.has.Load()
	return m != nil && (*m)[v]
}

// Encodings returns the forms in which v can come back from a server that echoes it encoded, or from a library
// that prints it, those that differ from v: base64 (standard and URL alphabets, padded and raw), URL-escaped
// (query, path segment, and path as net/url prints a URL: the slashes kept) and JSON-escaped (the text between
// the quotes of a JSON string, with and without HTML escaping). A server that decodes JSON, URL escapes or base64
// gives v itself back, which the set masks anyway.
func Encodings(v string) []string {
	b := []byte(v)
	forms := [...]string{
		base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(v), url.PathEscape(v), (&url.URL{Path: v}).EscapedPath(), jsonEscape(v, false), jsonEscape(v, true),
	}
	out := make([]string, 0, len(forms))
	for _, f := range forms {
		if f != v && f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// jsonEscape is v as JSON string content, without the quotes.
func jsonEscape(v string, html bool) string {
	if !strings.ContainsFunc(v, func(r rune) bool {
		return r < ' ' || r == '"' || r == '\\' || r == 0x2028 || r == 0x2029 || r == utf8.RuneError ||
			html && (r == '<' || r == '>' || r == '&')
	}) {
		return v
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return v
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	return strings.TrimSuffix(strings.TrimPrefix(out, `"`), `"`)
}

// Empty reports whether s holds no secret.
func (s *Set) Empty() bool { return s.r.Load() == nil }

// Replace is String, so that a Set and a List scrub alike.
func (s *Set) Replace(text string) string { return s.String(text) }

// String returns text with every secret masked.
func (s *Set) String(text string) string {
	r := s.r.Load()
	if r == nil || int64(len(text)) < s.min.Load() {
		return text
	}
	return r.Replace(text)
}

// Value returns v with every secret masked in its strings and map keys. Containers are copied only when
// something in them changes; v is never modified.
func (s *Set) Value(v any) any {
	if s.r.Load() == nil {
		return v
	}
	out, _ := scrub(s, v)
	return out
}

// ValueWith is s.Value(l.Value(v)) in one walk over v: the values of l and the secrets of s are masked. l may be
// nil.
func (s *Set) ValueWith(l *List, v any) any {
	switch {
	case l == nil || len(l.groups) == 0:
		return s.Value(v)
	case s.r.Load() == nil:
		return l.Value(v)
	}
	l.then = s // l is not shared while this runs: see List
	defer func() { l.then = nil }()
	out, _ := scrub(l, v)
	return out
}

// replacer masks secrets in a string: a *strings.Replacer, or a List.
type replacer interface{ Replace(string) string }

func scrub(r replacer, v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if y := r.Replace(x); y != x {
			return y, true
		}
		return v, false // v itself: no new interface value
	case json.Number:
		y := r.Replace(string(x))
		if y != string(x) {
			return y, true
		}
		return x, false
	case []any:
		var out []any
		for i, e := range x {
			if ne, changed := scrub(r, e); changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case map[string]any:
		return scrubMap(r, x, scrub)
	case map[string]string:
		return scrubMap(r, x, replaceString)
	case map[string][]string: // http.Header
		var out map[string][]string
		for k, vals := range x {
			for i, e := range vals {
				if ne := r.Replace(e); ne != e {
					if out == nil {
						out = make(map[string][]string, len(x))
						for k2, v2 := range x {
							out[k2] = v2
						}
					}
					if &out[k][0] == &x[k][0] {
						out[k] = append([]string(nil), vals...)
					}
					out[k][i] = ne
				}
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return v, false
}

// scrubMap scrubs the keys of m and its values with value (a function, not a closure: nothing to allocate); m
// itself is never changed: a copy is made on the first change.
func scrubMap[V any](r replacer, m map[string]V, value func(replacer, V) (V, bool)) (any, bool) {
	var out map[string]V
	for k, e := range m {
		nk := r.Replace(k)
		ne, changed := value(r, e)
		if !changed && nk == k {
			continue
		}
		if out == nil {
			out = make(map[string]V, len(m))
			for k2, e2 := range m {
				out[k2] = e2
			}
		}
		delete(out, k)
		out[nk] = ne
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func replaceString(r replacer, s string) (string, bool) {
	y := r.Replace(s)
	return y, y != s
}

// Error returns err with its message scrubbed of the secrets and their encoded forms (Encoded): an error's text
// often quotes what another party printed (a URL as net/url escapes it, a driver's connection string). The result
// keeps errors.Is answers for the sentinels given (such as ErrUnrecoverable or context.Canceled), but does not
// unwrap to err itself, whose message may hold a secret. A nil err stays nil; err is returned unchanged when its
// message holds no secret.
func (s *Set) Error(err error, sentinels ...error) error {
	if err == nil || s.Empty() {
		return err
	}
	return scrubError(err, s.Encoded, sentinels)
}

// EncodedValue is Value with the encoded forms of the secrets masked too (Encoded): for what other parties
// report (a backend's or a receiver's facts, a Store's errors), which no call rendered.
func (s *Set) EncodedValue(v any) any {
	if s.Empty() {
		return v
	}
	out, _ := scrub(encoded{s}, v)
	return out
}

func scrubError(err error, clean func(string) string, sentinels []error) error {
	msg := err.Error()
	out := clean(msg)
	if out == msg {
		return err
	}
	e := &scrubbed{msg: out}
	for _, target := range sentinels {
		if errors.Is(err, target) {
			e.is = append(e.is, target)
		}
	}
	return e
}

type scrubbed struct {
	msg string
	is  []error
}

func (e *scrubbed) Error() string   { return e.msg }
func (e *scrubbed) Unwrap() []error { return e.is }

// List is a short list of secrets that belong to one call, cheap to scrub with when none of them occurs: a
// replacer is built only when one does. The zero value is empty. It is not safe for concurrent use, and must not
// be copied once used (it points into itself).
type List struct {
	groups []group           // as given to Add: shared, never modified
	buf    [3]group          // the first groups, without an allocation
	min    int               // the length of the shortest value: a shorter text holds none
	r      *strings.Replacer // built on first need; nil after Add
	then   *Set              // while Set.ValueWith runs: its secrets, masked after l's values
}

// group is what one Add gave: the values, and those of them Contains searches.
type group struct{ values, probes []string }

// Add records values; empty strings are ignored. l keeps the slice itself (a call adds the same cached
// encodings every time, so they are not copied): the caller must not modify it afterwards.
func (l *List) Add(values ...string) { l.AddProbed(values, values) }

// AddProbed is Add for values of which searching probes tells whether a text holds one: each value holds one of
// probes (Probes(values) gives the fewest). Both slices are kept, as Add keeps values.
func (l *List) AddProbed(values, probes []string) {
	if len(values) > 0 {
		if l.groups == nil {
			l.groups = l.buf[:0]
		}
		l.groups = append(l.groups, group{values, probes})
		l.r = nil
		for _, v := range values {
			if v != "" && (l.min == 0 || len(v) < l.min) {
				l.min = len(v)
			}
		}
	}
}

// Probes returns the values of vs that hold no other value of vs, once each: a text holds a value of vs exactly
// when it holds one of them. Empty values are left out.
func Probes(vs []string) []string {
	var out []string
	for i, v := range vs {
		if v == "" || slices.Contains(out, v) {
			continue
		}
		minimal := true
		for j, w := range vs {
			if j != i && w != "" && w != v && strings.Contains(v, w) {
				minimal = false
				break
			}
		}
		if minimal {
			out = append(out, v)
		}
	}
	return out
}

// Len is how many values l holds, duplicates included.
func (l *List) Len() int {
	n := 0
	for _, g := range l.groups {
		n += len(g.values)
	}
	return n
}

// Contains reports whether text holds one of the values of l.
func (l *List) Contains(text string) bool {
	if len(text) < l.min || l.min == 0 {
		return false
	}
	for _, g := range l.groups {
		for _, v := range g.probes {
			if v != "" && strings.Contains(text, v) {
				return true
			}
		}
	}
	return false
}

// Replace returns text with every value of l masked.
func (l *List) Replace(text string) string {
	if l.then != nil {
		return l.then.String(l.replace(text))
	}
	return l.replace(text)
}

func (l *List) replace(text string) string {
	if !l.Contains(text) {
		return text
	}
	if l.r == nil {
		var all []string
		for _, g := range l.groups {
			for _, v := range g.values {
				if v != "" && !slices.Contains(all, v) {
					all = append(all, v)
				}
			}
		}
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
		pairs := make([]string, 0, 2*len(all))
		for _, v := range all {
			pairs = append(pairs, v, Mask)
		}
		l.r = strings.NewReplacer(pairs...)
	}
	return l.r.Replace(text)
}

// Value returns v with every value of l masked, as Set.Value does.
func (l *List) Value(v any) any {
	if len(l.groups) == 0 {
		return v
	}
	out, _ := scrub(l, v)
	return out
}

// Error returns err with its message scrubbed, as Set.Error does.
func (l *List) Error(err error, sentinels ...error) error {
	if err == nil || len(l.groups) == 0 {
		return err
	}
	return scrubError(err, l.Replace, sentinels)
}
