package openapi

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestJSONSizeMatchesEncoding pins jsonSize to encoding/json's output: escapes (HTML characters, control
// characters, invalid UTF-8, U+2028), number forms and nesting.
func TestJSONSizeMatchesEncoding(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, false, "", "plain", `quote " and \ backslash`, "<a href='x'>&amp;</a>", "tab\tnew\nline\r\b\f\x01\x1f\x7f",
		"caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf8 \xe2\x82", 0.0, math.Copysign(0, -1), 1.0, -1.5, 0.1, 1e20,
		1e21, 1.5e300, 1e-6, 1e-7, 1.234e-9, 123456789012345680.0, int(-42), int64(7), uint64(math.MaxUint64),
		[]any{}, map[string]any{}, []any{1.0, "x", nil, []any{map[string]any{"<k>": "v"}}},
		map[string]any{"a": 1.0, "b\u2028": []any{true, false}, "c": map[string]any{"d": "e\xff"}},
		[]string{"a typed", "slice"}, json.Number("12.50"),
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonSize(v); got != len(b) {
			t.Errorf("jsonSize(%#v) = %d, want %d (%s)", v, got, len(b), b)
		}
	}
	if got := jsonSize(math.NaN()); got != errSize {
		t.Errorf("jsonSize(NaN) = %d, want errSize", got)
	}
	if got := jsonSize(map[string]any{"a": hole{}, "b": []any{hole{}}}); got != len(`{"a":,"b":[]}`) {
		t.Errorf("jsonSize with holes = %d", got)
	}
}

// TestSharedShownCopiesMatch converts every operation of some test documents twice: each on its own, as before
// the copies were shared, and with one shownCache for the document, as Expand does. The copies shown (their JSON),
// the descriptions, the depth shown and the reasons an operation cannot be shown must be the same.
func TestSharedShownCopiesMatch(t *testing.T) {
	t.Parallel()
	// The directory sample's documents with operations shown bounded, and two with many shared components; the
	// digests of TestDirectorySample and TestRealDescriptions pin the functions of every other test document.
	files := []string{"petstore3.json", "swaggest-sample-3.1.json", "directory/googleapis.com_monitoring.json.gz",
		"directory/azure.com_network-applicationGateway.json.gz", "directory/amazonaws.com_dynamodb.json.gz",
		"directory/stream-io-api.com.json.gz"}
	// Two operations whose body is over the bound at every depth: its own description is.
	tooLarge := filepath.Join(t.TempDir(), "too-large.json")
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/a":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Big"}}}},"responses":{"200":{"description":"ok"}}}},
"/b":{"put":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Big"}}}},"responses":{"200":{"description":"ok"}}}}},
"components":{"schemas":{"Big":{"type":"object","description":"` + strings.Repeat("<&>", MaxSchemaBytes/12) + `",
"properties":{"x":{"$ref":"#/components/schemas/Big"}}}}}}`
	if err := os.WriteFile(tooLarge, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	files = append(files, tooLarge)
	bounded, refused := 0, 0
	for _, name := range files {
		path := filepath.Join("testdata", name)
		switch {
		case filepath.IsAbs(name):
			path = name
		case strings.HasSuffix(name, ".gz"):
			path = gunzip(t, path)
		}
		abs, _ := filepath.Abs(path)
		doc, _, err := readDocument(context.Background(), abs, "", nil, 64<<20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dialect := schemaDialect(doc)
		cache := newShownCache(dialect)
		walk(doc, func(path, method string, item *openapi3.PathItem, op *openapi3.Operation) {
			for _, withWhole := range []bool{false, true} {
				want, wantErr := convertShown(path, method, item, op, dialect, withWhole, nil)
				got, gotErr := convertShown(path, method, item, op, dialect, withWhole, cache)
				switch {
				case wantErr != nil || gotErr != nil:
					if wantErr == nil || gotErr == nil || wantErr.Error() != gotErr.Error() {
						t.Errorf("%s %s %s: error %v, want %v", name, method, path, gotErr, wantErr)
					}
					if strings.Contains(fmt.Sprint(wantErr), "bytes once $refs are inlined") {
						refused++
					}
				case encode(t, got.schema) != encode(t, want.schema) || got.description != want.description ||
					got.shownDepth != want.shownDepth || encode(t, got.whole) != encode(t, want.whole):
					t.Errorf("%s %s %s: shown at depth %d, %d bytes, want depth %d, %d bytes", name, method, path,
						got.shownDepth, len(encode(t, got.schema)), want.shownDepth, len(encode(t, want.schema)))
				default:
					if want.shownDepth > 0 && !withWhole {
						bounded++
					}
				}
			}
		})
	}
	if bounded == 0 || refused == 0 {
		t.Errorf("%d operations shown bounded, %d refused as over the bound: the depth search went untested", bounded,
			refused)
	}
}

// BenchmarkConvertShown converts the copy shown to the LLM of every operation of a document: each on its own
// (alone, as before the shownCache) and with one shownCache for the document (shared, as Expand does). The
// documents are GitHub's description and, when OPENAPI_GRAPH names its file, Microsoft Graph v1.0.
func BenchmarkConvertShown(b *testing.B) {
	docs := [][2]string{{"github", gunzip(b, filepath.Join("testdata", "real", "github-api.github.com.json.gz"))}}
	if g := os.Getenv("OPENAPI_GRAPH"); g != "" {
		docs = append(docs, [2]string{"graph", g})
	}
	for _, d := range docs {
		doc, _, err := readDocument(context.Background(), d[1], "", nil, 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		dialect := schemaDialect(doc)
		for _, mode := range []string{"alone", "shared"} {
			b.Run(d[0]+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var cache *shownCache
					if mode == "shared" {
						cache = newShownCache(dialect)
					}
					walk(doc, func(path, method string, item *openapi3.PathItem, op *openapi3.Operation) {
						_, _ = convertShown(path, method, item, op, dialect, false, cache)
					})
				}
			})
		}
	}
}

// gunzip decompresses a test document into the test's temporary directory.
func gunzip(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := io.Copy(w, zr); err != nil {
		t.Fatal(err)
	}
	return out
}
