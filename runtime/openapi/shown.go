package openapi

import (
	"fmt"
	"maps"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// shownCache holds the copies shown to the LLM (draft-07) of the schemas the operations of one expansion name at
// the root of a parameter or of the request body, one per schema and depth bound: each is converted once and
// shared by every operation that names it (issue 31: Microsoft Graph's operations inline the same large entity
// schemas). The copies are immutable: an operation changes only a shallow copy of a root (its description).
//
// Whether an operation fits the bounds (maxSchemaNodes, MaxSchemaBytes) is decided from sizes, never by encoding a
// copy (jsonSize is encoding/json's length). Without a depth bound, where most roots fit, a root is converted at
// once (stopping once a lower bound of its bytes is over) and then sized. With one, which only roots over the
// bounds reach, it is measured before anything is built: the JSON size of a conversion is the sum of each
// schema's own bytes (its one-level conversion, counted once per schema) over the tree the conversion would
// build, and the sum stops as soon as it is over a bound; a depth that does not fit costs no copy. A shownCache is
// used by one goroutine.
type shownCache struct {
	dialect string
	owns    map[*openapi3.Schema]*ownPart
	roots   map[rootKey]*shownRoot
}

func newShownCache(dialect string) *shownCache {
	return &shownCache{dialect: dialect, owns: map[*openapi3.Schema]*ownPart{}, roots: map[rootKey]*shownRoot{}}
}

// ownPart is what a schema converts into on its own.
type ownPart struct {
	size int                // JSON bytes of its conversion with each subschema a hole
	kids []*openapi3.Schema // its subschemas, in the order the converter visits them
}

type rootKey struct {
	s     *openapi3.Schema
	depth int // the converter's maxDepth: 0 is none
}

// shownRoot is a root schema's copy at one depth bound.
type shownRoot struct {
	// nodes and size are the converter's node count and the copy's JSON bytes; past a bound they only say it is
	// over.
	nodes, size int
	value       any // the copy, built on first use
	built       bool
}

// rootValue is what ref returned last at the root from the cache: its size, and the cache's map it is or is a
// shallow copy of (writable).
type rootValue struct {
	orig   map[string]any
	size   int
	ok     bool
	copied bool // writable made the shallow copy the caller holds
}

// root returns the copy of s shown at c's depth bound, from the cache, and counts its nodes and bytes; the caller
// changes a map only through writable. Past a bound, c.err says so and nothing is built.
func (c *converter) root(s *openapi3.Schema) any {
	if c.err != nil {
		return map[string]any{}
	}
	r := c.cache.root(s, c.maxDepth)
	c.nodes, c.size = addSize(c.nodes, r.nodes), addSize(c.size, r.size)
	switch {
	case c.nodes > c.maxNodes:
		c.err = &tooLargeError{fmt.Sprintf("its schemas expand into more than %d nodes once $refs are inlined", c.maxNodes)}
		return map[string]any{}
	case c.size > c.maxBytes:
		c.err = &tooLargeError{fmt.Sprintf("its parameters schema is over the %d-byte bound once $refs are inlined",
			c.maxBytes)}
		return map[string]any{}
	}
	v := c.cache.value(r, s, c.maxDepth)
	c.last = rootValue{size: r.size, ok: true}
	if m, ok := v.(map[string]any); ok {
		c.last.orig = m
	}
	return v
}

// writable returns m, the value ref returned last, as a map the caller may add keys to: a shallow copy when m is
// the cache's.
func (c *converter) writable(m map[string]any) map[string]any {
	if c.last.orig == nil || c.last.copied {
		return m
	}
	c.last.copied = true
	return maps.Clone(m)
}

// shownSize returns the JSON size of v, the value ref returned last (at the root), after the caller's changes to
// it: keys added or scalars set at its top. A value not taken from the cache is measured whole.
func (c *converter) shownSize(v any) int {
	last := c.last
	c.last = rootValue{}
	m, isMap := v.(map[string]any)
	switch {
	case !last.ok:
		return jsonSize(v)
	case last.orig == nil || !isMap || !last.copied:
		return last.size
	}
	n := last.size
	for k, e := range m {
		old, had := last.orig[k]
		switch {
		case !had:
			n = addSize(n, quotedLen(k)+2, jsonSize(e)) // the key, a colon and a comma
		case !container(e):
			n = addSize(n, jsonSize(e)-jsonSize(old))
		}
	}
	if len(last.orig) == 0 && len(m) > 0 {
		n-- // the first key takes no comma
	}
	return n
}

func container(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// root returns the measure of s's copy at depth (its copy built on first use: value). Without a depth bound,
// where most roots fit, the copy is built at once and then measured; with one, where the copy was over the
// bounds without, it is measured first.
func (sc *shownCache) root(s *openapi3.Schema, depth int) *shownRoot {
	k := rootKey{s, depth}
	if r := sc.roots[k]; r != nil {
		return r
	}
	var r *shownRoot
	if depth == 0 {
		r = sc.build(s)
	} else {
		m := measure{sc: sc, depth: depth}
		m.visit(s)
		r = &shownRoot{nodes: m.nodes, size: m.size}
	}
	sc.roots[k] = r
	return r
}

// build converts s without a depth bound, stopping once it is over a bound.
func (sc *shownCache) build(s *openapi3.Schema) *shownRoot {
	c := newConverter(sc.dialect, maxSchemaNodes, MaxSchemaBytes, 0)
	c.guard = true
	v := c.schema(s)
	if c.err != nil { // over: the count and size only need to say so
		return &shownRoot{nodes: c.nodes, size: max(c.lower, MaxSchemaBytes+1), built: true}
	}
	return &shownRoot{nodes: c.nodes, size: jsonSize(v), value: v, built: true}
}

// value returns r's copy of s, building it on first use.
func (sc *shownCache) value(r *shownRoot, s *openapi3.Schema, depth int) any {
	if !r.built {
		r.value, r.built = newConverter(sc.dialect, maxSchemaNodes, MaxSchemaBytes, depth).schema(s), true
	}
	return r.value
}

// own returns what s converts into on its own, computed once.
func (sc *shownCache) own(s *openapi3.Schema) *ownPart {
	if o := sc.owns[s]; o != nil {
		return o
	}
	var kids []*openapi3.Schema
	c := newConverter(sc.dialect, maxSchemaNodes, MaxSchemaBytes, 0)
	c.kids = &kids
	o := &ownPart{size: jsonSize(c.build(s)), kids: slices.Clip(kids)}
	sc.owns[s] = o
	return o
}

// measure adds up the nodes and bytes of one root's copy as converter.schema would build it: the same checks in
// the same order (a boolean schema, the depth bound, a schema met again inside itself), each schema's own bytes
// and its subschemas'.
type measure struct {
	sc          *shownCache
	depth       int
	stack       []*openapi3.Schema
	nodes, size int
}

func (m *measure) visit(s *openapi3.Schema) {
	if m.nodes > maxSchemaNodes || m.size > MaxSchemaBytes {
		return // over a bound: the rest does not matter
	}
	m.nodes++
	switch {
	case s.Always != nil:
		m.size = addSize(m.size, jsonSize(*s.Always))
	case m.depth > 0 && len(m.stack) >= m.depth:
		m.size = addSize(m.size, annotationsSize(s.Title, s.Description)) // depthCut
	case slices.Contains(m.stack, s):
		m.size = addSize(m.size, annotationsSize("", s.Description)) // recursion, in draft-07
	default:
		o := m.sc.own(s)
		m.size = addSize(m.size, o.size)
		m.stack = append(m.stack, s)
		for _, k := range o.kids {
			m.visit(k)
		}
		m.stack = m.stack[:len(m.stack)-1]
	}
}

// lowerSize is at most the JSON bytes of what converter.schema makes of s, wherever it meets it: a boolean, or an
// object that keeps the description.
func lowerSize(s *openapi3.Schema) int {
	if s.Always != nil {
		return 4
	}
	if s.Description == "" {
		return 2
	}
	return annotationsSize("", s.Description)
}

// annotationsSize is the JSON size of an object with the title and description given (those not empty).
func annotationsSize(title, description string) int {
	n, keys := 2, 0
	if title != "" {
		n += quotedLen("title") + 1 + quotedLen(title)
		keys++
	}
	if description != "" {
		n += quotedLen("description") + 1 + quotedLen(description)
		keys++
	}
	if keys == 2 {
		n++
	}
	return n
}
