// Package field builds the field paths and problems that manifest validation reports.
//
// It follows the shape of Kubernetes' validation/field package: validators take the path of the value they check,
// append problems to a List and carry on, so one pass reports every problem rather than the first. Backends
// registered by third parties use it to report problems in their own blocks at stable paths such as
// "actions[2].execute.stateless_http.url".
package field

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Type classifies a problem. Tests match on (Type, Path), never on the wording of Detail.
type Type string

// The problem types a manifest can have.
const (
	TypeRequired    Type = "required"    // a needed value is absent
	TypeInvalid     Type = "invalid"     // a value is malformed or out of range
	TypeUnsupported Type = "unsupported" // a key or value names something this library does not know
	TypeDuplicate   Type = "duplicate"   // a value that must be unique is repeated
	TypeForbidden   Type = "forbidden"   // a value is well-formed but not allowed here
)

// Path is an immutable field path. The zero value and nil are the empty (root) path.
// Paths are cheap to extend: each step shares its parent.
type Path struct {
	parent *Path
	step   string // ".name", "[3]" or `["key"]`; the first step has no leading dot
}

// NewPath returns the path made of name and more, joined by dots.
func NewPath(name string, more ...string) *Path {
	p := (*Path)(nil).Child(name)
	for _, m := range more {
		p = p.Child(m)
	}
	return p
}

// Child returns p extended by the field name (and more names after it).
func (p *Path) Child(name string, more ...string) *Path {
	c := &Path{parent: p, step: "." + name}
	if p == nil {
		c.parent, c.step = nil, name
	}
	for _, m := range more {
		c = c.Child(m)
	}
	return c
}

// Index returns p extended by a list index.
func (p *Path) Index(i int) *Path {
	return &Path{parent: p, step: "[" + strconv.Itoa(i) + "]"}
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// Key returns p extended by a map key: as a field name when the key is a plain identifier, else quoted in
// brackets (`headers["X.Y"]`), so a key containing dots cannot be mistaken for nesting.
func (p *Path) Key(key string) *Path {
	if plainKey.MatchString(key) {
		return p.Child(key)
	}
	return &Path{parent: p, step: "[" + strconv.Quote(key) + "]"}
}

// String renders the path, e.g. `actions[2].execute.stateless_http.url`.
func (p *Path) String() string {
	if p == nil {
		return ""
	}
	var steps []string
	for q := p; q != nil; q = q.parent {
		steps = append(steps, q.step)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if b.Len() == 0 && strings.HasPrefix(s, ".") {
			s = s[1:]
		}
		b.WriteString(s)
	}
	return b.String()
}

// Error is one problem at one path.
type Error struct {
	Type   Type
	Path   string
	Detail string
}

// Error renders "path: detail".
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Detail
	}
	return e.Path + ": " + e.Detail
}

func newError(t Type, p *Path, format string, args ...any) *Error {
	return &Error{Type: t, Path: p.String(), Detail: fmt.Sprintf(format, args...)}
}

// Required reports a missing value at p.
func Required(p *Path, format string, args ...any) *Error {
	return newError(TypeRequired, p, format, args...)
}

// Invalid reports a malformed value at p.
func Invalid(p *Path, format string, args ...any) *Error {
	return newError(TypeInvalid, p, format, args...)
}

// Unsupported reports an unknown key or value at p.
func Unsupported(p *Path, format string, args ...any) *Error {
	return newError(TypeUnsupported, p, format, args...)
}

// Duplicate reports a repeated unique value at p.
func Duplicate(p *Path, format string, args ...any) *Error {
	return newError(TypeDuplicate, p, format, args...)
}

// Forbidden reports a value that is not allowed at p.
func Forbidden(p *Path, format string, args ...any) *Error {
	return newError(TypeForbidden, p, format, args...)
}

// List collects problems. Its zero value is ready to use.
type List []*Error

// Add appends problems, skipping nils, and returns the list for chaining.
func (l *List) Add(errs ...*Error) {
	for _, e := range errs {
		if e != nil {
			*l = append(*l, e)
		}
	}
}

// Err returns nil when the list is empty, else the list as an error. It is nil-safe.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Error joins the problems, one per line.
func (l List) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}
