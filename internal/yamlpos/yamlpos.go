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
}

// New parses src and indexes every key. A source yaml.v3 cannot parse gives an empty index.
func New(src []byte) *Index {
	idx := &Index{pos: map[string]Position{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 {
		return idx
	}
	idx.walk(doc.Content[0], nil)
	return idx
}

func (idx *Index) walk(n *yaml.Node, p *field.Path) {
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
			idx.walk(n.Alias, p)
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
