package interp

import (
	"encoding/json"
	"slices"

	"github.com/commonagents-go/tool/field"
)

// Value is a compiled JSON value whose string leaves are templates (a request body, SPEC §4.3). Map keys are
// not templates. It is immutable and safe for concurrent use.
type Value struct {
	root node
	refs []Ref
}

type nodeKind uint8

const (
	kindConst nodeKind = iota
	kindTemplate
	kindObject
	kindArray
)

type node struct {
	kind  nodeKind
	konst any       // kindConst: a scalar, or a string with no tokens
	tmpl  *Template // kindTemplate
	keys  []string  // kindObject, sorted
	kids  []node    // kindObject: the value of keys[i]; kindArray: the elements
}

// ParseValue compiles v, a tree of map[string]any, []any, strings and JSON scalars (nil, bool, float64,
// json.Number, integers). The error is a field.List naming the JSON path of each failing string inside v, such as
// items[0].name.
func ParseValue(v any) (*Value, error) {
	val, errs := ParseValueAt(v, nil)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return val, nil
}

// ParseValueAt is ParseValue reporting every problem at its path below p, for callers that validate a whole
// manifest. The Value is nil when there are problems.
func ParseValueAt(v any, p *field.Path) (*Value, field.List) {
	var errs field.List
	val := &Value{}
	val.root = compile(v, p, &errs, &val.refs)
	if len(errs) > 0 {
		return nil, errs
	}
	return val, nil
}

func compile(v any, p *field.Path, errs *field.List, refs *[]Ref) node {
	switch v := v.(type) {
	case string:
		t, err := Parse(v)
		if err != nil {
			errs.Add(field.Invalid(p, "%v", err))
			return node{}
		}
		if !t.HasRefs() {
			return node{konst: t.Literal()}
		}
		*refs = append(*refs, t.refs...)
		return node{kind: kindTemplate, tmpl: t}
	case map[string]any:
		n := node{kind: kindObject, keys: make([]string, 0, len(v))}
		for k := range v {
			n.keys = append(n.keys, k)
		}
		slices.Sort(n.keys)
		n.kids = make([]node, len(n.keys))
		for i, k := range n.keys {
			n.kids[i] = compile(v[k], p.Key(k), errs, refs)
		}
		return n
	case []any:
		n := node{kind: kindArray, kids: make([]node, len(v))}
		for i, e := range v {
			n.kids[i] = compile(e, p.Index(i), errs, refs)
		}
		return n
	case nil, bool, float64, float32, json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return node{konst: v}
	}
	errs.Add(field.Invalid(p, "unsupported value of Go type %T in a JSON body", v))
	return node{}
}

// Refs returns every token of v: object members in key order, array elements in index order.
func (v *Value) Refs() []Ref { return cloneRefs(v.refs) }

// HasRefs reports whether v has any token.
func (v *Value) HasRefs() bool { return len(v.refs) > 0 }

// Render builds a fresh Go value tree ready to be JSON-encoded once. A string that is exactly one token becomes
// the resolved value with its JSON type; other strings become text (Template.Render). Maps and slices are new
// on every call; values a Resolver returns are placed in the tree as they are, not copied.
func (v *Value) Render(r Resolver) (any, error) { return v.root.render(r) }

func (n *node) render(r Resolver) (any, error) {
	switch n.kind {
	case kindTemplate:
		return n.tmpl.Render(r)
	case kindObject:
		m := make(map[string]any, len(n.keys))
		for i := range n.kids {
			x, err := n.kids[i].render(r)
			if err != nil {
				return nil, err
			}
			m[n.keys[i]] = x
		}
		return m, nil
	case kindArray:
		s := make([]any, len(n.kids))
		for i := range n.kids {
			x, err := n.kids[i].render(r)
			if err != nil {
				return nil, err
			}
			s[i] = x
		}
		return s, nil
	}
	return n.konst, nil
}
