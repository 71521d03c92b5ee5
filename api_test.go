package tool_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rootExportBudget bounds the root package's top-level exported identifiers (methods and fields not counted): a
// host meets the root first, so it stays small enough to read in one sitting.
const rootExportBudget = 110

// The exported API of every public package is recorded in api/next.txt, one line per name, method, field and
// interface method, as the Go project records its own in api/. A change to the surface shows in review as a line
// added or removed there: the test fails until the file agrees, and `go test -run TestAPI -update` rewrites it.
func TestAPI(t *testing.T) {
	lines := apiLines(t, ".")
	got := strings.Join(lines, "\n") + "\n"
	const path = "api/next.txt"
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestAPI -update writes it)", err)
	}
	if string(want) != got {
		wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
		for _, l := range lines {
			if !slices.Contains(wantLines, l) {
				t.Errorf("not in %s: %s", path, l)
			}
		}
		for _, l := range wantLines {
			if !slices.Contains(lines, l) {
				t.Errorf("in %s but not exported: %s", path, l)
			}
		}
		t.Errorf("the exported API differs from %s: review the lines above, then go test -run TestAPI -update", path)
	}
	var top []string
	for _, l := range lines {
		if strings.HasPrefix(l, "pkg tool, ") && !strings.Contains(l, ", method ") && !strings.Contains(l, " struct, ") &&
			!strings.Contains(l, " interface, ") {
			top = append(top, l)
		}
	}
	if len(top) > rootExportBudget {
		t.Errorf("the root package exports %d top-level identifiers, over its budget of %d", len(top), rootExportBudget)
	}
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), "deprecated") {
			t.Errorf("a deprecated name in the surface: %s", l)
		}
	}
}

// apiLines lists the exported API of every public package under root: not internal/, cmd/, examples/, scripts/,
// testdata/, nor a package main. Each package is read with the build context of this machine.
func apiLines(t *testing.T, root string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		switch base := filepath.Base(dir); {
		case dir != root && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")):
			return filepath.SkipDir
		case base == "internal" || base == "testdata" || base == "cmd" || base == "examples" || base == "scripts":
			return filepath.SkipDir
		}
		if dir != root {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own records its own API
			}
		}
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		if pkg.Name == "main" {
			return nil
		}
		name := "tool"
		if dir != root {
			name = "tool/" + filepath.ToSlash(dir)
		}
		pl, err := packageAPI(dir, name, pkg.GoFiles)
		if err != nil {
			return err
		}
		lines = append(lines, pl...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

func packageAPI(dir, name string, files []string) ([]string, error) {
	fset := token.NewFileSet()
	w := apiWriter{fset: fset, pkg: "pkg " + name + ", "}
	for _, f := range files {
		file, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			w.decl(decl)
		}
	}
	return w.lines, nil
}

type apiWriter struct {
	fset  *token.FileSet
	pkg   string
	lines []string
}

func (w *apiWriter) add(format string, args ...any) {
	w.lines = append(w.lines, w.pkg+fmt.Sprintf(format, args...))
}

func (w *apiWriter) expr(e ast.Expr) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, w.fset, e)
	return strings.Join(strings.Fields(b.String()), " ")
}

func (w *apiWriter) decl(decl ast.Decl) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		if d.Recv == nil {
			w.add("func %s%s", d.Name.Name, w.signature(d.Type))
			return
		}
		recv := d.Recv.List[0].Type
		base := recv
		if s, ok := base.(*ast.StarExpr); ok {
			base = s.X
		}
		switch b := base.(type) {
		case *ast.IndexExpr:
			base = b.X
		case *ast.IndexListExpr:
			base = b.X
		}
		if id, ok := base.(*ast.Ident); ok && id.IsExported() {
			w.add("method (%s) %s%s", w.expr(recv), d.Name.Name, w.signature(d.Type))
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				w.value(d.Tok, s)
			case *ast.TypeSpec:
				w.typeSpec(s)
			}
		}
	}
}

func (w *apiWriter) value(tok token.Token, s *ast.ValueSpec) {
	for i, n := range s.Names {
		if !n.IsExported() {
			continue
		}
		line := tok.String() + " " + n.Name
		if s.Type != nil {
			line += " " + w.expr(s.Type)
		}
		if tok == token.CONST && i < len(s.Values) {
			line += " = " + w.expr(s.Values[i])
		}
		w.add("%s", line)
	}
}

func (w *apiWriter) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	if s.TypeParams != nil {
		name += "[" + w.fields(s.TypeParams) + "]"
	}
	if s.Assign.IsValid() {
		w.add("type %s = %s", name, w.expr(s.Type))
		return
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		w.add("type %s struct", name)
		for _, f := range t.Fields.List {
			typ := w.expr(f.Type)
			if len(f.Names) == 0 {
				w.add("type %s struct, embedded %s", name, typ)
			}
			for _, n := range f.Names {
				if n.IsExported() {
					w.add("type %s struct, %s %s", name, n.Name, typ)
				}
			}
		}
	case *ast.InterfaceType:
		w.add("type %s interface", name)
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				w.add("type %s interface, embedded %s", name, w.expr(m.Type))
				continue
			}
			for _, n := range m.Names {
				if ft, ok := m.Type.(*ast.FuncType); ok && n.IsExported() {
					w.add("type %s interface, %s%s", name, n.Name, w.signature(ft))
				}
			}
		}
	default:
		w.add("type %s %s", name, w.expr(s.Type))
	}
}

// signature prints a function type without parameter names: renaming a parameter is not an API change.
func (w *apiWriter) signature(ft *ast.FuncType) string {
	out := "(" + w.types(ft.Params) + ")"
	if ft.TypeParams != nil {
		out = "[" + w.fields(ft.TypeParams) + "]" + out
	}
	if ft.Results != nil {
		res := w.types(ft.Results)
		if len(ft.Results.List) == 1 && len(ft.Results.List[0].Names) <= 1 {
			out += " " + res
		} else {
			out += " (" + res + ")"
		}
	}
	return out
}

func (w *apiWriter) types(fl *ast.FieldList) string {
	var parts []string
	for _, f := range fl.List {
		n := max(len(f.Names), 1)
		for range n {
			parts = append(parts, w.expr(f.Type))
		}
	}
	return strings.Join(parts, ", ")
}

func (w *apiWriter) fields(fl *ast.FieldList) string {
	var parts []string
	for _, f := range fl.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		parts = append(parts, strings.Join(names, ", ")+" "+w.expr(f.Type))
	}
	return strings.Join(parts, ", ")
}
