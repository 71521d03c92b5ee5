package httpspec

import (
	"maps"
	"slices"
	"strings"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"github.com/commonagents-go/tool/field"
)

// Path is a compiled RFC 9535 JSONPath query (a response_path or an extract). It is immutable and safe for
// concurrent use.
//
// Selection follows RFC 9535 with one rule of its own where the RFC leaves the order open: the members of an
// object are visited in sorted key order (the JSON decoder keeps no member order), so the same document always
// gives the same node list.
type Path struct {
	text   string
	query  *spec.PathQuery
	direct []spec.Selector // the steps when every segment is one name or index: evaluated without allocating
}

// JSONPath compiles an RFC 9535 JSONPath query; a query the RFC does not accept is a problem at p carrying the
// parser's message.
func JSONPath(p *field.Path, s string) (*Path, *field.Error) {
	x, err := jsonpath.Parse(s)
	if err != nil {
		return nil, field.Invalid(p, "invalid JSONPath: %s", strings.TrimPrefix(err.Error(), "jsonpath: "))
	}
	q := x.Query()
	return &Path{text: s, query: q, direct: directSteps(q)}, nil
}

// String returns the query as the manifest wrote it.
func (x *Path) String() string { return x.text }

// Select returns the node list the query selects from a decoded JSON document: arrays in document order, object
// members in sorted key order, never nil.
func (x *Path) Select(doc any) []any {
	if x.direct != nil {
		if v, ok := selectDirect(doc, x.direct); ok {
			return []any{v}
		}
		return []any{}
	}
	nodes := []any{doc}
	for _, seg := range x.query.Segments() {
		next := make([]any, 0, len(nodes))
		for _, n := range nodes {
			if seg.IsDescendant() {
				next = descend(next, seg.Selectors(), n, doc)
			} else {
				next = apply(next, seg.Selectors(), n, doc)
			}
		}
		nodes = next
	}
	return nodes
}

// apply appends what each selector selects from node, in selector order.
func apply(out []any, sels []spec.Selector, node, root any) []any {
	obj, isObj := node.(map[string]any)
	for _, sel := range sels {
		switch sel := sel.(type) {
		case spec.Name, spec.Index: // the library's Select allocates a slice per node
			if v, ok := selectDirect(node, []spec.Selector{sel}); ok {
				out = append(out, v)
			}
			continue
		case spec.WildcardSelector:
			if isObj {
				for _, k := range slices.Sorted(maps.Keys(obj)) {
					out = append(out, obj[k])
				}
				continue
			}
		case *spec.FilterSelector:
			if isObj {
				for _, k := range slices.Sorted(maps.Keys(obj)) {
					if sel.Eval(obj[k], root) {
						out = append(out, obj[k])
					}
				}
				continue
			}
		}
		// Arrays, and name, index and slice selectors, come out in a fixed order already.
		out = append(out, sel.Select(node, root)...)
	}
	return out
}

// descend applies the selectors to node and to each of its descendants, visited depth first: array elements in
// order, object members in sorted key order (RFC 9535 §2.5.2.2).
func descend(out []any, sels []spec.Selector, node, root any) []any {
	out = apply(out, sels, node, root)
	switch v := node.(type) {
	case []any:
		for _, e := range v {
			out = descend(out, sels, e, root)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = descend(out, sels, v[k], root)
		}
	}
	return out
}

// directSteps returns the selectors of a query made only of child segments with one name or index each ($.a.b[0]),
// or nil for any other query.
func directSteps(q *spec.PathQuery) []spec.Selector {
	steps := make([]spec.Selector, 0, len(q.Segments()))
	for _, seg := range q.Segments() {
		sels := seg.Selectors()
		if seg.IsDescendant() || len(sels) != 1 {
			return nil
		}
		switch sels[0].(type) {
		case spec.Name, spec.Index:
			steps = append(steps, sels[0])
		default:
			return nil
		}
	}
	return steps
}

// selectDirect follows names and indexes from doc; ok is false when a step finds nothing.
func selectDirect(doc any, steps []spec.Selector) (v any, ok bool) {
	v = doc
	for _, s := range steps {
		switch s := s.(type) {
		case spec.Name:
			m, isObj := v.(map[string]any)
			if v, ok = m[string(s)]; !isObj || !ok {
				return nil, false
			}
		case spec.Index:
			a, isArr := v.([]any)
			n := int(s)
			if n < 0 {
				n += len(a)
			}
			if !isArr || n < 0 || n >= len(a) {
				return nil, false
			}
			v = a[n]
		}
	}
	return v, true
}
