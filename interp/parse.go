package interp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/commonagents-go/tool/internal/suggest"
)

// MaxLen is the longest template source Parse accepts, in bytes (SPEC §12.5).
const MaxLen = 64 << 10

// Step is one step of a reference path after its root: .ident and ['key'] set Name, [3] sets Index and IsIndex.
type Step struct {
	Name    string
	Index   int
	IsIndex bool
}

// Ref is one token of a template. Resolvers receive it by value and must not modify Steps.
type Ref struct {
	Root  string // one of the Root constants
	Steps []Step // after the root; for auth the provider is Steps[0].Name
	// Call is true for auth.<provider>(). The legacy alias {auth.github} parses with Call false; loaders warn
	// about it (SPEC §1).
	Call   bool
	Offset int    // byte offset of the opening '{' in the source
	Text   string // the token text between the braces, e.g. "parameters.path"
}

// String returns the token as written, braces included.
func (r Ref) String() string { return "{" + r.Text + "}" }

// Error is a template syntax error.
type Error struct {
	Offset     int    // byte offset in the source of the offending character; for an unterminated token, its '{'
	Msg        string // what is wrong
	Suggestion string // for an unknown root, the root that was probably meant; else ""
}

// Error renders "offset N: msg", followed by the suggestion when there is one.
func (e *Error) Error() string {
	if e.Suggestion != "" {
		return fmt.Sprintf("offset %d: %s (did you mean %q?)", e.Offset, e.Msg, e.Suggestion)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

// Template is a parsed template. It is immutable and safe for concurrent use.
type Template struct {
	src    string
	parts  []part
	refs   []Ref
	lit    string // the whole text when there are no refs
	litLen int    // total length of the literal parts
}

// part is a literal run of text (ref < 0) or the token refs[ref]; off is its byte offset in the source.
type part struct {
	lit string
	ref int
	off int
}

// Parse parses src. Its errors are *Error.
func Parse(src string) (*Template, error) {
	if len(src) > MaxLen {
		return nil, &Error{Offset: MaxLen, Msg: fmt.Sprintf("template is longer than %d bytes", MaxLen)}
	}
	t := &Template{src: src}
	var lit strings.Builder
	litOff := 0
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String(), ref: -1, off: litOff})
			t.litLen += lit.Len()
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		if lit.Len() == 0 {
			litOff = i
		}
		switch {
		case (c == '{' || c == '}') && i+1 < len(src) && src[i+1] == c:
			lit.WriteByte(c)
			i += 2
		case c == '{' && i+1 < len(src) && isIdentStart(src[i+1]):
			ref, end, err := parseToken(src, i)
			if err != nil {
				return nil, err
			}
			flush()
			t.parts = append(t.parts, part{ref: len(t.refs), off: i})
			t.refs = append(t.refs, ref)
			i = end
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	if len(t.refs) == 0 && len(t.parts) == 1 {
		t.lit = t.parts[0].lit
	}
	return t, nil
}

// MustParse is like Parse but panics on error. It is for templates written in Go source, not manifests.
func MustParse(src string) *Template {
	t, err := Parse(src)
	if err != nil {
		panic(fmt.Sprintf("interp: MustParse(%q): %v", src, err))
	}
	return t
}

// Escape returns a template whose rendering is s: every brace doubled.
func Escape(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	return strings.NewReplacer("{", "{{", "}", "}}").Replace(s)
}

// Source returns the text t was parsed from.
func (t *Template) Source() string { return t.src }

// Refs returns the tokens of t in order of appearance, as a fresh copy.
func (t *Template) Refs() []Ref { return cloneRefs(t.refs) }

// HasRefs reports whether t has any token.
func (t *Template) HasRefs() bool { return len(t.refs) > 0 }

// SingleRef returns t's token when t is exactly one token and nothing else.
func (t *Template) SingleRef() (Ref, bool) {
	if len(t.parts) != 1 || t.parts[0].ref < 0 {
		return Ref{}, false
	}
	return cloneRefs(t.refs)[0], true
}

// Literal returns t's text with "{{" and "}}" unescaped. It is "" when t has tokens.
func (t *Template) Literal() string { return t.lit }

func cloneRefs(refs []Ref) []Ref {
	out := slices.Clone(refs)
	for i := range out {
		out[i].Steps = slices.Clone(out[i].Steps)
	}
	return out
}

// parseToken parses the token whose '{' is at src[start] and returns it with the offset just past its '}'.
func parseToken(src string, start int) (Ref, int, error) {
	root := ident(src, start+1)
	if !isRoot(root) {
		return Ref{}, 0, &Error{Offset: start + 1, Msg: fmt.Sprintf("unknown root %q", root), Suggestion: suggest.Closest(root, Roots())}
	}
	ref := Ref{Root: root, Offset: start}
	j := start + 1 + len(root)
	for {
		if j >= len(src) {
			return Ref{}, 0, &Error{Offset: start, Msg: `unterminated token: missing "}"`}
		}
		switch src[j] {
		case '}':
			ref.Text = src[start+1 : j]
			return ref, j + 1, checkShape(ref, start)
		case '.':
			name := ident(src, j+1)
			if name == "" {
				return Ref{}, 0, unexpected(src, j+1, `a name after "."`)
			}
			ref.Steps = append(ref.Steps, Step{Name: name})
			j += 1 + len(name)
		case '[':
			step, end, err := parseBracket(src, j)
			if err != nil {
				return Ref{}, 0, err
			}
			ref.Steps = append(ref.Steps, step)
			j = end
		case '(':
			if ref.Root != RootAuth || len(ref.Steps) != 1 || ref.Steps[0].IsIndex || ref.Call {
				return Ref{}, 0, &Error{Offset: j, Msg: "call syntax is only valid as auth.<provider>()"}
			}
			if j+1 >= len(src) || src[j+1] != ')' {
				return Ref{}, 0, unexpected(src, j+1, `")"`)
			}
			ref.Call = true
			j += 2
			if j < len(src) && src[j] != '}' {
				return Ref{}, 0, unexpected(src, j, `"}" after "()"`)
			}
		default:
			return Ref{}, 0, unexpected(src, j, `".", "[" or "}"`)
		}
	}
}

// checkShape enforces what the grammar alone does not: auth takes exactly one provider name.
func checkShape(ref Ref, start int) error {
	if ref.Root == RootAuth && (len(ref.Steps) != 1 || ref.Steps[0].IsIndex) {
		return &Error{Offset: start, Msg: "auth takes exactly one provider: {auth.<provider>()}"}
	}
	return nil
}

// parseBracket parses ['key'], ["key"] or [index] whose '[' is at src[open].
func parseBracket(src string, open int) (Step, int, error) {
	j := open + 1
	if j >= len(src) {
		return Step{}, 0, &Error{Offset: open, Msg: `unterminated "["`}
	}
	var step Step
	switch q := src[j]; {
	case q == '\'' || q == '"':
		n := strings.IndexByte(src[j+1:], q)
		if n < 0 {
			return Step{}, 0, &Error{Offset: j, Msg: "unterminated quoted key"}
		}
		if n == 0 {
			return Step{}, 0, &Error{Offset: j, Msg: "empty key"}
		}
		step.Name = src[j+1 : j+1+n]
		j += n + 2
	case isDigit(q):
		k := j
		for k < len(src) && isDigit(src[k]) {
			k++
		}
		digits := src[j:k]
		if len(digits) > 9 || len(digits) > 1 && digits[0] == '0' {
			return Step{}, 0, &Error{Offset: j, Msg: fmt.Sprintf("index %s is not a plain integer below 10^9", digits)}
		}
		step.Index, _ = strconv.Atoi(digits)
		step.IsIndex = true
		j = k
	default:
		return Step{}, 0, unexpected(src, j, `a quoted key or an index after "["`)
	}
	if j >= len(src) || src[j] != ']' {
		return Step{}, 0, unexpected(src, j, `"]"`)
	}
	return step, j + 1, nil
}

// unexpected reports the character at src[at] (or the end of src) where want was expected.
func unexpected(src string, at int, want string) *Error {
	if at >= len(src) {
		return &Error{Offset: at, Msg: "unexpected end of template, expected " + want}
	}
	r, _ := utf8.DecodeRuneInString(src[at:])
	return &Error{Offset: at, Msg: fmt.Sprintf("unexpected %q in token, expected %s", r, want)}
}

// ident returns the identifier starting at src[i], or "".
func ident(src string, i int) string {
	if i >= len(src) || !isIdentStart(src[i]) {
		return ""
	}
	j := i + 1
	for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j]) || src[j] == '-') {
		j++
	}
	return src[i:j]
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
