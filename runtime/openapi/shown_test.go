package openapi_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	tool "github.com/commonagents-go/tool"
)

var updateShown = flag.Bool("update-shown", false, "rewrite testdata/shown.sha256 from this run")

// shownGolden is testdata/shown.sha256: for each real and directory-sample document, a digest of every function
// Load made of it (name, description, parameters as JSON) and their count. The copies shown to the LLM are built
// from subtrees shared among operations (convert.go); the digests, written by the code that converted every
// operation on its own (commit 7839e85), pin them byte for byte.
var shownGolden = struct {
	sync.Mutex
	sums map[string]string
	got  map[string]string
}{got: map[string]string{}}

const shownFile = "testdata/shown.sha256"

// checkShown compares the digest of fns with the one recorded for doc.
func checkShown(t *testing.T, doc string, fns []tool.Function) {
	t.Helper()
	h := sha256.New()
	for _, f := range fns {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", f.Name, f.Description, f.Parameters)
	}
	got := fmt.Sprintf("%s %d", hex.EncodeToString(h.Sum(nil)), len(fns))
	shownGolden.Lock()
	defer shownGolden.Unlock()
	if shownGolden.sums == nil {
		shownGolden.sums = map[string]string{}
		if f, err := os.Open(filepath.FromSlash(shownFile)); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if name, sum, ok := strings.Cut(sc.Text(), " "); ok {
					shownGolden.sums[name] = sum
				}
			}
			f.Close()
		}
	}
	shownGolden.got[doc] = got
	if want := shownGolden.sums[doc]; !*updateShown && want != got {
		t.Errorf("%s: the functions shown (digest, count) are %s, want %s (%s)", doc, got, want, shownFile)
	}
}

// writeShown rewrites the digests with -update-shown, keeping those of documents this run did not load.
func writeShown() error {
	if !*updateShown {
		return nil
	}
	all := map[string]string{}
	for k, v := range shownGolden.sums {
		all[k] = v
	}
	for k, v := range shownGolden.got {
		all[k] = v
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + " " + all[n] + "\n")
	}
	return os.WriteFile(filepath.FromSlash(shownFile), []byte(b.String()), 0o644)
}

// sharedDoc's two operations name the same components: the id parameter's schema (with a description of each
// operation's own) and a recursive body schema.
const sharedDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/a/{id}":{"post":{"operationId":"a","parameters":[{"name":"id","in":"path","required":true,"description":"A's id",
  "schema":{"$ref":"#/components/schemas/Id"}}],
  "requestBody":{"description":"A thing for a.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing"}}}},
  "responses":{"200":{"description":"ok"}}}},
"/b/{id}":{"put":{"operationId":"b","parameters":[{"name":"id","in":"path","required":true,"description":"B's id",
  "deprecated":true,"schema":{"$ref":"#/components/schemas/Id"}}],
  "requestBody":{"description":"A thing for b.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing"}}}},
  "responses":{"200":{"description":"ok"}}}}},
"components":{"schemas":{"Id":{"type":"string","pattern":"^[a-z]+$"},
  "Thing":{"type":"object","properties":{"name":{"type":"string","description":"The name."},
    "tags":{"type":"array","items":{"type":"string"}},"child":{"$ref":"#/components/schemas/Thing"}}}}}}`

// TestSharedComponentsShownApart pins that operations naming the same component get copies of their own: each
// parameter keeps its own description, and a caller changing one function's schema changes no other function's,
// nor what the same function returns next.
func TestSharedComponentsShownApart(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, sharedDoc, "", "")
	fns := map[string]tool.Function{}
	for _, f := range tl.Functions(tool.Capability{}) {
		fns[f.Action] = f
	}
	a, b := fns["a"], fns["b"]
	for _, c := range []struct {
		f          tool.Function
		id, body   string
		deprecated any
	}{{a, "A's id", "A thing for a.", nil}, {b, "B's id", "A thing for b.", true}} {
		props, _ := c.f.Properties()
		id, _ := props["id"].(map[string]any)
		body, _ := props["body"].(map[string]any)
		if id["description"] != c.id || id["pattern"] != "^[a-z]+$" || id["deprecated"] != c.deprecated ||
			body["description"] != c.body {
			t.Errorf("%s: id %v, body description %v; want id described %q (deprecated %v), body %q", c.f.Name, id,
				body["description"], c.id, c.deprecated, c.body)
		}
	}
	for _, s := range []map[string]any{a.Schema(), a.StrictSchema()} {
		body := s["properties"].(map[string]any)["body"].(map[string]any)
		name := body["properties"].(map[string]any)["name"].(map[string]any)
		name["description"] = "changed"
		body["properties"].(map[string]any)["child"] = "changed"
	}
	for _, f := range []tool.Function{a, b} {
		body := f.Schema()["properties"].(map[string]any)["body"].(map[string]any)
		inner := body["properties"].(map[string]any)
		if inner["name"].(map[string]any)["description"] != "The name." || inner["child"] == "changed" {
			t.Errorf("%s: the body schema shows a caller's change: %v", f.Name, inner)
		}
	}
}
