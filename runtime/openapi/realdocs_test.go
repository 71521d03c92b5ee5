package openapi_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"sigs.k8s.io/yaml"
)

// realDocs are public API descriptions nobody here wrote (testdata/real/SOURCE.md names each one's source and
// version).
var realDocs = []string{
	"github-api.github.com.json.gz",
	"stripe-2024-04-10.json.gz",
	"twilio-api-v2010.json.gz",
	"oai-api-with-examples.yaml",
	"oai-callback-example.yaml",
	"oai-link-example.yaml",
	"oai-petstore-expanded.yaml",
	"oai-petstore.yaml",
	"oai-uspto.yaml",
}

// realDocs holds the decompressed copies of gzipped documents, one per test binary, so that a second Load of
// the same file is served by the document cache.
var (
	realMu  sync.Mutex
	realDir string
)

// realDoc returns the path of a real document, decompressed into a temporary directory when it is gzipped.
func realDoc(t testing.TB, name string) string {
	t.Helper()
	realMu.Lock()
	defer realMu.Unlock()
	src := filepath.Join("testdata", "real", name)
	if !strings.HasSuffix(name, ".gz") {
		abs, err := filepath.Abs(src)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if realDir == "" {
		dir, err := os.MkdirTemp("", "openapi-real-")
		if err != nil {
			t.Fatal(err)
		}
		realDir = dir
	}
	dst := filepath.Join(realDir, strings.TrimSuffix(filepath.Base(name), ".gz"))
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	return dst
}

// countOperations counts a document's operations without the code under test.
func countOperations(t testing.TB, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	unmarshal := func(b []byte, v any) error { return yaml.Unmarshal(b, v) }
	if strings.HasSuffix(path, ".json") {
		unmarshal = json.Unmarshal
	}
	if err := unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range doc.Paths {
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				n++
			}
		}
	}
	return n
}

// actionableReasons are the forms a skip reason takes: each names what is in the way.
var actionableReasons = regexp.MustCompile(`^(request body is in no media type Invoke can send \(.+\)|` +
	`the multipart request body has a file part \(property ".+"\).*|` +
	`parameters .+ and .+ both become the action parameter ".+"|` +
	`(path|query|header|cookie) parameter ".+" has style \w+ for an? .+ value, which OpenAPI does not define|` +
	`parameter ".+" is described by content, not a schema \(unsupported\)|` +
	`path ".+" has a "\." or "\.\." segment|` +
	`a (GET|HEAD|TRACE) operation with a request body \(unsupported: a \w+ request carries no body\)|` +
	`its schemas expand into more than \d+ nodes once \$refs are inlined|` +
	`its parameters schema is \d+ bytes once \$refs are inlined, over the \d+-byte bound.*)`)

// TestRealDescriptions loads each real description whole: at least 95 % of its operations become actions, and
// every skip has a reason of a known, actionable form. The numbers it logs are the README's table.
func TestRealDescriptions(t *testing.T) {
	for _, name := range realDocs {
		t.Run(name, func(t *testing.T) {
			if testing.Short() && (strings.HasPrefix(name, "github") || strings.HasPrefix(name, "stripe")) {
				t.Skip("GitHub's 13 MB description and Stripe's take seconds to load whole; run without -short " +
					"(TestRealRequests and TestStripeFileUpload load parts of them in -short too)")
			}
			path := realDoc(t, name)
			total := countOperations(t, path)
			m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
				path + "\n  base_url: http://api.example\n"
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			tl, err := tool.Load(context.Background(), []byte(m))
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			fns := tl.Functions(tool.Capability{})
			checkShown(t, name, fns)
			skipped := tl.Skipped()
			if len(fns)+len(skipped) != total {
				t.Errorf("%d functions + %d skipped, want %d operations", len(fns), len(skipped), total)
			}
			if len(fns)*100 < total*95 {
				t.Errorf("%d of %d operations expanded (%.1f %%), want ≥ 95 %%", len(fns), total, 100*float64(len(fns))/float64(total))
			}
			reasons := map[string]int{}
			for _, s := range skipped {
				if !actionableReasons.MatchString(s.Reason) {
					t.Errorf("skip of %s has a reason of no known form: %q", s.Name, s.Reason)
				}
				reasons[reasonKind(s.Reason)]++
				t.Logf("skipped %s: %s", s.Name, s.Reason)
			}
			seen := map[string]bool{}
			largest := 0
			for _, f := range fns {
				largest = max(largest, len(f.Parameters))
				if seen[f.Name] || len(f.Name) > 64 {
					t.Errorf("function name %q repeated or over 64 characters", f.Name)
				}
				seen[f.Name] = true
			}
			kinds := make([]string, 0, len(reasons))
			for k, n := range reasons {
				kinds = append(kinds, k+": "+itoa(n))
			}
			sort.Strings(kinds)
			t.Logf("| %s | %d | %d | %d (%s) | %.2f s | %d MiB | %d |", name, total, len(fns), len(skipped),
				strings.Join(kinds, "; "), elapsed.Seconds(), (after.TotalAlloc-before.TotalAlloc)>>20, largest)
		})
	}
}

func reasonKind(r string) string {
	switch {
	case strings.HasPrefix(r, "request body is in no media type"):
		return "body media type"
	case strings.HasPrefix(r, "the multipart request body has a file part"):
		return "file upload"
	case strings.Contains(r, "both become the action parameter"):
		return "parameter name clash"
	case strings.Contains(r, "which OpenAPI does not define"):
		return "parameter style"
	}
	return r
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := writeShown(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if realDir != "" {
		_ = os.RemoveAll(realDir)
	}
	os.Exit(code)
}
