package facts_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/facts"
)

var factName = regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`)

// The catalogue and the code agree: no package reports a fact under a bare string (every name comes from this
// package), and every name listed here is reported somewhere.
func TestCatalogueMatchesTheCode(t *testing.T) {
	if len(facts.All) != len(slices.Compact(slices.Sorted(slices.Values(facts.All)))) {
		t.Fatalf("facts.All has duplicates: %q", facts.All)
	}
	used := map[string]bool{}
	fset := token.NewFileSet()
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "examples", ".git", "facts":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "facts" {
					used[n.Sel.Name] = true
				}
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				}
				if !strings.EqualFold(name, "observe") && name != "started" {
					return true
				}
				for _, arg := range n.Args {
					if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, _ := strconv.Unquote(lit.Value); factName.MatchString(s) {
							t.Errorf("%s: fact %q is a bare string: use a facts constant", fset.Position(lit.Pos()), s)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range catalogue(t) {
		if !used[name] {
			t.Errorf("facts.%s (%q) is reported nowhere", name, value)
		}
		if !slices.Contains(facts.All, value) {
			t.Errorf("facts.%s (%q) is missing from facts.All", name, value)
		}
	}
}

// catalogue reads the constants of facts.go: name → value.
func catalogue(t *testing.T) map[string]string {
	f, err := parser.ParseFile(token.NewFileSet(), "facts.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			lit := v.Values[0].(*ast.BasicLit)
			out[v.Names[0].Name], _ = strconv.Unquote(lit.Value)
		}
	}
	if len(out) != len(facts.All) {
		t.Fatalf("facts.go declares %d constants, facts.All lists %d", len(out), len(facts.All))
	}
	return out
}
