package tool_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/commonagents-go/tool"
)

// docPages returns README.md and every page of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 9 {
		t.Fatalf("found %d pages in docs/: the glob is broken", len(pages))
	}
	return append([]string{"README.md"}, pages...)
}

// pendingPages are linked before they exist: other branches write them. Once present they are checked as every
// page is; while absent, only a link to the page itself (no #fragment) passes.
var pendingPages = map[string]bool{"docs/scaling.md": true, "docs/schemas.md": true}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	explicitID = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
)

// markdownLines returns the lines of a Markdown file outside fenced code blocks, with their 1-based numbers.
func markdownLines(t *testing.T, path string) (lines []string, numbers []int) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			lines, numbers = append(lines, line), append(numbers, n)
		}
	}
	return lines, numbers
}

// headingAnchor is GitHub's anchor for a heading's text: lower case, spaces made hyphens, and of the rest only
// letters, marks, digits, "_" and "-" kept (so "§", "—" and backquotes go).
func headingAnchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdAnchors returns the anchors a Markdown file defines: one per heading (GitHub numbers repeats -1, -2, …) and
// each explicit <a id>.
func mdAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines, _ := markdownLines(t, path)
	for _, line := range lines {
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		a := headingAnchor(strings.TrimSpace(h))
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// Every relative link of the README and of docs/ leads to a file that exists, and a #fragment into a Markdown
// file to one of its headings or an explicit <a id>: moving a section cannot leave a link behind.
func TestDocsLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, page := range docPages(t) {
		lines, numbers := markdownLines(t, page)
		for i, line := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				at := fmt.Sprintf("%s:%d", page, numbers[i])
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
				}
				if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
					if pendingPages[path] && frag == "" {
						continue
					}
					t.Errorf("%s: the link %s leads to %s, which does not exist", at, target, path)
					continue
				} else if err != nil {
					t.Fatal(err)
				}
				if frag == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				if anchors[path] == nil {
					anchors[path] = mdAnchors(t, path)
				}
				if !anchors[path][frag] {
					t.Errorf("%s: the link %s names #%s, which is no heading or <a id> of %s", at, target, frag, path)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d relative links: the extraction is broken", checked)
	}
}

// Every page of docs/ is listed in the README's Documentation section and in docs/README.md, pending pages
// included, so a new page cannot go unfound.
func TestDocsPagesAreListed(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, docSection, ok := strings.Cut(string(readme), "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no ## Documentation section")
	}
	index, err := os.ReadFile("docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := docPages(t)[1:]
	for p := range pendingPages {
		if !slices.Contains(pages, p) {
			pages = append(pages, p)
		}
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name == "README.md" {
			continue
		}
		if !strings.Contains(docSection, "](docs/"+name+")") {
			t.Errorf("the README's Documentation section does not link %s", p)
		}
		if !strings.Contains(string(index), "]("+name+")") {
			t.Errorf("docs/README.md does not list %s", p)
		}
	}
}

// The YAML examples of the README and of docs/ (but manifest.md, which docs_manifest_test.go checks with its
// openapi document beside it) are what their fence says: a complete manifest (starting with kind:) loads without
// a problem or warning unless marked, a fragment is YAML and does not start with kind:.
func TestDocsYAMLExamples(t *testing.T) {
	found := 0
	for _, page := range docPages(t) {
		if page == docsManifest {
			continue
		}
		for _, e := range docExamples(t, page) {
			found++
			at := fmt.Sprintf("%s:%d", page, e.line)
			if complete := strings.HasPrefix(e.text, "kind:"); complete == (e.kind == "fragment") {
				t.Errorf("%s: a complete manifest starts with kind: and a fragment does not (this one is ```yaml %s)", at, e.kind)
				continue
			}
			if e.kind == "fragment" {
				var v any
				if err := yaml.Unmarshal([]byte(e.text), &v); err != nil {
					t.Errorf("%s: the fragment is not YAML: %v", at, err)
				}
				continue
			}
			loaded, err := tool.Load(context.Background(), []byte(e.text))
			checkDocExample(t, e, loaded, err)
		}
	}
	if found < 5 {
		t.Fatalf("found %d yaml examples: the extraction is broken", found)
	}
}

var specCite = regexp.MustCompile(`SPEC §(\d+(?:\.\d+)*)`)

// Every "SPEC §N" of the README and of docs/ names a section the manifest reference has an anchor for.
func TestDocsSpecReferencesResolve(t *testing.T) {
	anchors := mdAnchors(t, docsManifest)
	for _, page := range docPages(t) {
		lines, numbers := markdownLines(t, page)
		for i, line := range lines {
			for _, m := range specCite.FindAllStringSubmatch(line, -1) {
				if !anchors["spec-"+m[1]] {
					t.Errorf("%s:%d cites SPEC §%s, which %s has no anchor spec-%s for", page, numbers[i], m[1], docsManifest, m[1])
				}
			}
		}
	}
}
