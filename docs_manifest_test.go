package tool_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/commonagents-go/tool"
)

// docs/manifest.md's YAML examples are tested by what their fence says:
//
//	```yaml            a complete manifest: tool.Load accepts it with no problem and no warning.
//	```yaml warns      a complete manifest that loads, with at least one warning (Tool.Warnings): a legacy alias,
//	                   a setting used without a settings schema.
//	```yaml invalid    a complete manifest that Load refuses. Each of its "# problem: PATH TYPE" comment lines
//	                   names a problem Load must report (SPEC §2: tests match on path and type, not wording).
//	```yaml fragment   part of a manifest (one block, one field): it must be valid YAML, nothing more.
//
// A complete manifest starts with "kind:", and a fragment does not, so that a reader tells them apart without
// seeing the fences. Any other word after ```yaml fails the test, so a typo cannot quietly skip an example.
//
// Complete manifests load in a folder holding petstore.json (a copy of runtime/openapi/testdata/petstore3.json),
// which the openapi examples name. Manifests that use kubernetes_job are loaded by a generated program that
// registers jobspec.Validator, as cmd/tool does, because the root package does not link the Kubernetes types;
// -short skips them, as it skips the README's generated program.

const docsManifest = "docs/manifest.md"

// docExample is one ```yaml block of a document.
type docExample struct {
	line int    // the fence's line, 1-based
	kind string // "", "warns", "invalid" or "fragment"
	text string
}

func (e docExample) name() string { return fmt.Sprintf("line%d", e.line) }

// docExamples returns every ```yaml block of the file at path.
func docExamples(t *testing.T, path string) []docExample {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	var cur *docExample
	var body strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```yaml"):
			kind := strings.TrimSpace(strings.TrimPrefix(line, "```yaml"))
			if !slices.Contains([]string{"", "warns", "invalid", "fragment"}, kind) {
				t.Errorf("%s:%d: unknown example kind %q (use ```yaml, ```yaml warns, ```yaml invalid or ```yaml fragment)", path, n, kind)
			}
			cur = &docExample{line: n, kind: kind}
			body.Reset()
		case cur != nil && strings.HasPrefix(line, "```"):
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: the yaml block is not closed", path, cur.line)
	}
	return out
}

// inDocsFolder moves the test into a temporary folder holding what the examples name (petstore.json).
func inDocsFolder(t *testing.T) {
	t.Helper()
	doc, err := os.ReadFile("runtime/openapi/testdata/petstore3.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "petstore.json"), doc, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
}

var problemLine = regexp.MustCompile(`(?m)^\s*# problem: (\S+) (required|invalid|unsupported|duplicate|forbidden)\s*$`)

// Every YAML example of the manifest reference is what its fence says it is: complete manifests load (with
// warnings or problems exactly where the fence says so), fragments are YAML.
func TestDocsManifestExamplesLoad(t *testing.T) {
	examples := docExamples(t, docsManifest)
	counts := map[string]int{}
	for _, e := range examples {
		counts[e.kind]++
	}
	if counts[""] < 10 || counts["fragment"] == 0 || counts["invalid"] == 0 {
		t.Fatalf("found %d complete manifests, %d fragments and %d invalid ones in %s: the extraction is broken",
			counts[""], counts["fragment"], counts["invalid"], docsManifest)
	}
	moduleRoot, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var k8s []docExample
	inDocsFolder(t)
	for _, e := range examples {
		if e.kind != "fragment" && strings.Contains(e.text, "kubernetes_job:") {
			k8s = append(k8s, e)
			continue
		}
		t.Run(e.name(), func(t *testing.T) {
			if complete := strings.HasPrefix(e.text, "kind:"); complete == (e.kind == "fragment") {
				t.Fatalf("%s:%d: a complete manifest starts with kind: and a fragment does not (this one is ```yaml %s)",
					docsManifest, e.line, e.kind)
			}
			if e.kind == "fragment" {
				var v any
				if err := yaml.Unmarshal([]byte(e.text), &v); err != nil {
					t.Fatalf("%s:%d: the fragment is not YAML: %v\n%s", docsManifest, e.line, err, e.text)
				}
				return
			}
			loaded, err := tool.Load(context.Background(), []byte(e.text))
			checkDocExample(t, e, loaded, err)
		})
	}
	t.Run("kubernetes_job", func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs the go command")
		}
		loadK8sExamples(t, moduleRoot, k8s)
	})
}

// checkDocExample compares what Load did with what the example's fence promises.
func checkDocExample(t *testing.T, e docExample, loaded *tool.Tool, err error) {
	t.Helper()
	at := fmt.Sprintf("%s:%d", docsManifest, e.line)
	var verr *tool.ValidationError
	switch {
	case e.kind == "invalid":
		want := problemLine.FindAllStringSubmatch(e.text, -1)
		if len(want) == 0 {
			t.Fatalf("%s: an invalid example names no \"# problem: PATH TYPE\"", at)
		}
		if !errors.As(err, &verr) {
			t.Fatalf("%s: want a *ValidationError, got %v", at, err)
		}
		for _, w := range want {
			if !slices.ContainsFunc(verr.Problems, func(p tool.Problem) bool { return p.Path == w[1] && p.Type == w[2] }) {
				t.Errorf("%s: no problem %s %s among:\n%v", at, w[1], w[2], err)
			}
		}
	case err != nil:
		t.Fatalf("%s: the example does not load:\n%v\n%s", at, err, e.text)
	case e.kind == "warns" && len(loaded.Warnings()) == 0:
		t.Errorf("%s: the example is marked warns but loads without a warning", at)
	case e.kind == "" && len(loaded.Warnings()) > 0:
		t.Errorf("%s: the example loads with warnings (mark it ```yaml warns if that is its point): %v", at, loaded.Warnings())
	}
}

// k8sProgram loads each manifest file its arguments name, with jobspec.Validator registered, and prints for each
// "FILE warnings N", or one "FILE problem PATH TYPE" line per problem, or "FILE error TEXT".
const k8sProgram = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/jobspec"
)

func main() {
	runtime.Default().MustRegister(jobspec.Validator{})
	for _, file := range os.Args[1:] {
		src, err := os.ReadFile(file)
		if err != nil {
			fmt.Println(file, "error", err)
			continue
		}
		t, err := tool.Load(context.Background(), src)
		var verr *tool.ValidationError
		switch {
		case errors.As(err, &verr):
			for _, p := range verr.Problems {
				fmt.Println(file, "problem", p.Path, p.Type)
			}
		case err != nil:
			fmt.Println(file, "error", strings.ReplaceAll(err.Error(), "\n", " "))
		default:
			fmt.Println(file, "warnings", len(t.Warnings()))
		}
	}
}
`

// loadK8sExamples loads the kubernetes_job examples with k8sProgram, run from the module root.
func loadK8sExamples(t *testing.T, moduleRoot string, examples []docExample) {
	if len(examples) == 0 {
		t.Fatalf("%s has no kubernetes_job example: the extraction is broken", docsManifest)
	}
	dir, err := os.MkdirTemp(moduleRoot, "_docsmanifest") // inside the module, so the imports resolve; "_" keeps it out of ./...
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(k8sProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "./" + filepath.Base(dir)}
	byFile := map[string]docExample{}
	for _, e := range examples {
		file := filepath.Join(dir, e.name()+".yaml")
		if err := os.WriteFile(file, []byte(e.text), 0o600); err != nil {
			t.Fatal(err)
		}
		byFile[file] = e
		args = append(args, file)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	problems := map[string][]tool.Problem{}
	warnings := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, " ", 4)
		switch {
		case len(f) == 4 && f[1] == "problem":
			problems[f[0]] = append(problems[f[0]], tool.Problem{Path: f[2], Type: f[3]})
		case len(f) == 3 && f[1] == "warnings":
			warnings[f[0]] = f[2]
		default:
			t.Errorf("%s", line)
		}
	}
	for file, e := range byFile {
		at := fmt.Sprintf("%s:%d", docsManifest, e.line)
		switch {
		case e.kind == "invalid":
			for _, w := range problemLine.FindAllStringSubmatch(e.text, -1) {
				if !slices.ContainsFunc(problems[file], func(p tool.Problem) bool { return p.Path == w[1] && p.Type == w[2] }) {
					t.Errorf("%s: no problem %s %s among %v", at, w[1], w[2], problems[file])
				}
			}
			if len(problems[file]) == 0 {
				t.Errorf("%s: loads, but is marked invalid", at)
			}
		case len(problems[file]) > 0:
			t.Errorf("%s: the example does not load: %v", at, problems[file])
		case e.kind == "warns" && warnings[file] == "0":
			t.Errorf("%s: the example is marked warns but loads without a warning", at)
		case e.kind == "" && warnings[file] != "0":
			t.Errorf("%s: the example loads with %s warnings", at, warnings[file])
		}
	}
}

// specRef matches a section number cited after "SPEC", with the second end of a range (§9.1–9.2).
var specRef = regexp.MustCompile(`§(\d+(?:\.\d+)*)(?:[–-](\d+(?:\.\d+)*))?`)

// specSections returns the section numbers the code and the README cite as "SPEC §N", with one place each.
func specSections(t *testing.T, moduleRoot string) map[string]string {
	t.Helper()
	cited := map[string]string{}
	scan := func(path string) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(src), "\n") {
			i := strings.Index(line, "SPEC §")
			if i < 0 {
				continue
			}
			rest := line[i:]
			if j := strings.Index(rest, "RFC"); j >= 0 { // "SPEC §4.4, RFC 3986 §2.3": the RFC's sections are not ours
				rest = rest[:j]
			}
			for _, m := range specRef.FindAllStringSubmatch(rest, -1) {
				for _, s := range m[1:] {
					if s != "" && cited[s] == "" {
						cited[s] = fmt.Sprintf("%s:%d", path, n+1)
					}
				}
			}
		}
	}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != moduleRoot && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			scan(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scan(filepath.Join(moduleRoot, "README.md"))
	return cited
}

var docAnchor = regexp.MustCompile(`<a id="spec-(\d+(?:\.\d+)*)"></a>`)

// Every "SPEC §N" the code and the README cite resolves into docs/manifest.md: the section has an anchor there
// (spec-N), and each section of ../shared/SPEC.md, where that file is present, has one too.
func TestDocsManifestAnchorsCoverSpecReferences(t *testing.T) {
	doc, err := os.ReadFile(docsManifest)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range docAnchor.FindAllStringSubmatch(string(doc), -1) {
		if anchors[m[1]] {
			t.Errorf("%s: anchor spec-%s is given twice", docsManifest, m[1])
		}
		anchors[m[1]] = true
	}
	cited := specSections(t, ".")
	if len(cited) < 20 {
		t.Fatalf("found %d cited sections: the scan is broken", len(cited))
	}
	for _, s := range slices.Sorted(maps.Keys(cited)) {
		if !anchors[s] {
			t.Errorf("%s cites SPEC §%s, which %s has no anchor spec-%s for", cited[s], s, docsManifest, s)
		}
	}
	spec, err := os.ReadFile("../shared/SPEC.md")
	if errors.Is(err, fs.ErrNotExist) {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^#+ §(\d+(?:\.\d+)*) `)
	for _, m := range heading.FindAllStringSubmatch(string(spec), -1) {
		if !anchors[m[1]] {
			t.Errorf("SPEC has §%s, which %s has no anchor spec-%s for", m[1], docsManifest, m[1])
		}
	}
}
