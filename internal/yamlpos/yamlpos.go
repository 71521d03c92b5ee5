// Package yamlpos maps field paths of a YAML (or JSON) document to lines and columns, and finds the keys YAML 1.1
// would silently turn into booleans.
//
// The manifest itself is decoded with sigs.k8s.io/yaml; this package reads the same source once more with the
// yaml.v3 node API, only when there is something to locate.
package yamlpos

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/commonagents-go/tool/field"
	yaml "go.yaml.in/yaml/v3"
)

// Position is a 1-based line and column.
type Position struct{ Line, Column int }

// Index maps rendered field paths to the positions of their keys (or list items).
type Index struct {
	pos        map[string]Position
	boolKeys   []string
	duplicates []string
	budget     int // nodes left to visit through aliases
	aliased    int // > 0 while walking an alias's target
}

// Document is a YAML source parsed into nodes; aliases stay references to their anchors, unexpanded.
type Document struct {
	root *yaml.Node // nil when the source could not be parsed or is empty
}

// Parse reads src into nodes without expanding aliases, so a source whose aliases expand exponentially (a
// "billion laughs" document) costs only its own size. A source yaml.v3 cannot parse gives an empty Document.
func Parse(src []byte) *Document {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 {
		return &Document{}
	}
	return &Document{root: doc.Content[0]}
}

// Expansion is how a Document grows once its aliases are expanded.
type Expansion struct {
	// Added is the number of nodes expanding the aliases adds, counted up to just over the limit given to Expand.
	Added int
	// Over is set when Added is over the limit; At is then the position of the alias that expands the most.
	Over bool
	At   Position
}

// Expand counts the nodes expanding the document's aliases would add, and reports whether that is more than
// limit. It counts without expanding: each node's expanded size is computed once, and sizes stop growing just
// past the limit, so the count takes time and memory in proportion to the source.
func (d *Document) Expand(limit int) Expansion {
	var e Expansion
	if d.root == nil {
		return e
	}
	plain := 0
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		plain++
		for _, c := range n.Content {
			count(c)
		}
	}
	count(d.root)
	ceiling := plain + limit + 1
	sizes := map[*yaml.Node]int{}
	biggest := 0
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			k := size(n.Alias)
			if k > biggest {
				biggest, e.At = k, Position{n.Line, n.Column}
			}
			return k
		}
		if s, ok := sizes[n]; ok {
			return s
		}
		sizes[n] = ceiling // an alias inside its own anchor (a cycle) is over any limit
		s := 1
		for _, c := range n.Content {
			s = min(s+size(c), ceiling)
		}
		sizes[n] = s
		return s
	}
	e.Added = max(size(d.root)-plain, 0)
	e.Over = e.Added > limit
	if !e.Over {
		e.At = Position{}
	}
	return e
}

// New parses src and indexes every key. A source yaml.v3 cannot parse gives an empty index.
func New(src []byte) *Index { return Parse(src).Index() }

// maxIndexed bounds the nodes an Index visits through aliases (Load refuses sources whose aliases add more than
// 10,000): a caller that did not check Expand first still gets an answer in bounded time.
const maxIndexed = 50_000

// Index indexes every key of the document, following aliases.
func (d *Document) Index() *Index {
	idx := &Index{pos: map[string]Position{}, budget: maxIndexed}
	if d.root != nil {
		idx.walk(d.root, nil)
	}
	return idx
}

func (idx *Index) walk(n *yaml.Node, p *field.Path) {
	if idx.aliased > 0 {
		if idx.budget--; idx.budget < 0 {
			return
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if k.Style == 0 && yaml11Bool(k.Value) {
				// sigs.k8s.io/yaml (YAML 1.1) turns this key into "true" or "false".
				idx.boolKeys = append(idx.boolKeys, p.Key(key).String())
				if as := p.Key(yaml11Name(key)).String(); idx.pos[as] == (Position{}) {
					idx.pos[as] = Position{k.Line, k.Column}
				}
			}
			cp := p.Key(key)
			if _, seen := idx.pos[cp.String()]; seen && !yaml11Bool(key) {
				idx.duplicates = append(idx.duplicates, cp.String())
				continue
			}
			idx.pos[cp.String()] = Position{k.Line, k.Column}
			idx.walk(v, cp)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			cp := p.Index(i)
			idx.pos[cp.String()] = Position{c.Line, c.Column}
			idx.walk(c, cp)
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			idx.aliased++
			idx.walk(n.Alias, p)
			idx.aliased--
		}
	}
}

var boolWords = map[string]bool{"y": true, "yes": true, "on": true, "true": true, "n": false, "no": false, "off": false, "false": false}

func yaml11Bool(s string) bool {
	_, ok := boolWords[strings.ToLower(s)]
	return ok
}

// yaml11Name is the key YAML 1.1 turns s into.
func yaml11Name(s string) string {
	return strconv.FormatBool(boolWords[strings.ToLower(s)])
}

// BoolKeys returns the paths of unquoted keys that YAML 1.1 reads as booleans (y, n, yes, no, on, off, true,
// false in any case), as written in the source.
func (idx *Index) BoolKeys() []string { return idx.boolKeys }

// Duplicates returns the paths of keys given twice in the same mapping (the second occurrence is not indexed).
func (idx *Index) Duplicates() []string { return idx.duplicates }

// Find returns the position of path, or of its nearest ancestor that has one.
func (idx *Index) Find(path string) (Position, bool) {
	for path != "" {
		if p, ok := idx.pos[path]; ok {
			return p, true
		}
		path = parent(path)
	}
	return Position{}, false
}

// parent strips the last step of a rendered path.
func parent(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

var mayHaveBoolKey = regexp.MustCompile(`(?mi)(^[\t ]*(- +)?|[{,][\t ]*)(y|n|yes|no|on|off|true|false)[\t ]*:`)

// MayHaveBoolKeys is a cheap test of the raw source: false means there is certainly no YAML 1.1 boolean key, in
// block or flow style, so the full index is not needed to look for them.
func MayHaveBoolKeys(src []byte) bool { return mayHaveBoolKey.Match(src) }
