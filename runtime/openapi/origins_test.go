package openapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime/openapi"
)

// refDoc is a document whose request body schema is a $ref to ref.
func refDoc(ref string) string {
	return `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"http://api.example"}],"paths":{
"/things":{"post":{"operationId":"create","requestBody":{"content":{"application/json":{"schema":{"$ref":"` + ref + `"}}}},"responses":{"200":{"description":"ok"}}}}}}`
}

// origins serves a document on one origin and a schema on another, counting what the other origin serves.
type origins struct {
	home, other *httptest.Server
	otherHits   atomic.Int32
}

func newOrigins(t *testing.T, doc func(o *origins) string) *origins {
	t.Helper()
	o := &origins{}
	o.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.otherHits.Add(1)
		if r.URL.Path == "/doc.json" {
			doc := refDoc("#/components/schemas/Thing")
			_, _ = w.Write([]byte(doc[:len(doc)-1] + `,"components":{"schemas":{"Thing":{"type":"object"}}}}`))
			return
		}
		_, _ = w.Write([]byte(`{"type":"object","properties":{"secret_field":{"type":"string"}}}`))
	}))
	t.Cleanup(o.other.Close)
	o.home = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc.json":
			_, _ = w.Write([]byte(doc(o)))
		case "/moved.json":
			http.Redirect(w, r, o.other.URL+"/doc.json", http.StatusFound)
		case "/own.json":
			_, _ = w.Write([]byte(`{"type":"object","properties":{"name":{"type":"string"}}}`))
		}
	}))
	t.Cleanup(o.home.Close)
	return o
}

func remoteManifest(url string) []byte {
	return []byte("kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		url + "\n")
}

// TestRefsStayOnTheDocumentsOrigin: a fetched document follows $refs and redirects only to its own origin unless
// the host allows more; a local document's http(s) refs need the option too. A refused ref is a problem at the
// block's url naming the ref, and nothing is fetched for it.
func TestRefsStayOnTheDocumentsOrigin(t *testing.T) {
	t.Parallel()
	cross := newOrigins(t, func(o *origins) string { return refDoc(o.other.URL + "/schema.json") })
	own := newOrigins(t, func(o *origins) string { return refDoc(o.home.URL + "/own.json") })

	_, err := tool.Load(context.Background(), remoteManifest(cross.home.URL+"/doc.json"))
	ps := problems(t, err)
	if !hasProblem(ps, "openapi.url", "invalid", cross.other.URL+"/schema.json") ||
		!hasProblem(ps, "openapi.url", "invalid", "another origin") {
		t.Errorf("problems %+v", ps)
	}
	if n := cross.otherHits.Load(); n != 0 {
		t.Errorf("the other origin was contacted %d times", n)
	}

	_, err = tool.Load(context.Background(), remoteManifest(cross.home.URL+"/moved.json"))
	if ps := problems(t, err); !hasProblem(ps, "openapi.url", "invalid", "a redirect to") {
		t.Errorf("redirect: problems %+v", ps)
	}
	if n := cross.otherHits.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests", n)
	}

	if _, err := tool.Load(context.Background(), remoteManifest(own.home.URL+"/doc.json")); err != nil {
		t.Errorf("a $ref on the document's own origin: %v", err)
	}

	// A permissive Load never serves its document to a strict one: the cache is keyed by the origins too.
	permissive, err := tool.Load(context.Background(), remoteManifest(cross.home.URL+"/doc.json"),
		tool.WithDocumentOrigins(cross.other.URL))
	if err != nil {
		t.Fatalf("with the other origin allowed: %v", err)
	}
	if fns := permissive.Functions(tool.Capability{}); len(fns) != 1 || !strings.Contains(string(fns[0].Parameters), "secret_field") {
		t.Errorf("functions %+v", fns)
	}
	if _, err := tool.Load(context.Background(), remoteManifest(cross.home.URL+"/doc.json")); err == nil {
		t.Error("a strict Load after a permissive one was served the permissive document")
	}
	if _, err := tool.Load(context.Background(), remoteManifest(cross.home.URL+"/moved.json"),
		tool.WithDocumentOrigins(cross.other.URL)); err != nil {
		t.Errorf("redirect to an allowed origin: %v", err)
	}

	// A local document reads http(s) refs only from allowed origins.
	local := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(local, []byte(refDoc(cross.other.URL+"/schema.json")), 0o600); err != nil {
		t.Fatal(err)
	}
	hits := cross.otherHits.Load()
	_, err = tool.Load(context.Background(), remoteManifest(local))
	if ps := problems(t, err); !hasProblem(ps, "openapi.url", "invalid", "local file") {
		t.Errorf("local document: problems %+v", ps)
	}
	if cross.otherHits.Load() != hits {
		t.Error("a local document's http ref was fetched")
	}
	if _, err := tool.Load(context.Background(), remoteManifest(local), tool.WithDocumentOrigins(cross.other.URL)); err != nil {
		t.Errorf("local document, origin allowed: %v", err)
	}

	if _, err := tool.Load(context.Background(), remoteManifest(local), tool.WithDocumentOrigins("ftp://x")); err == nil ||
		!strings.Contains(err.Error(), "not an origin") {
		t.Errorf("a malformed origin: %v", err)
	}
}

// TestDocumentCacheRefreshes: a document read from a file is read again once the file changes, the cache holds at
// most CacheEntries documents, and a fetched document is fetched again after CacheTTL. Not parallel: it counts
// the process-wide cache.
func TestDocumentCacheRefreshes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "doc.json")
	write := func(id string, mod time.Time) {
		t.Helper()
		doc := strings.Replace(refDoc("#/components/schemas/X"), `"create"`, `"`+id+`"`, 1)
		doc = strings.TrimSuffix(doc, "}") + `,"components":{"schemas":{"X":{"type":"object"}}}}`
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	actions := func() string {
		tl, err := tool.Load(context.Background(), remoteManifest(p))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(actionNames(tl), ",")
	}
	write("first", time.Unix(1_700_000_000, 0))
	if got := actions(); got != "first" {
		t.Fatalf("actions %q", got)
	}
	write("second", time.Unix(1_700_000_100, 0))
	if got := actions(); got != "second" {
		t.Errorf("after the file changed: actions %q, want second", got)
	}

	for i := range openapi.CacheEntries + 3 {
		q := filepath.Join(dir, "d"+string(rune('a'+i))+".json")
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(q, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := tool.Load(context.Background(), remoteManifest(q)); err != nil {
			t.Fatal(err)
		}
		if n := openapi.CachedDocuments(); n > openapi.CacheEntries {
			t.Fatalf("%d documents cached, bound %d", n, openapi.CacheEntries)
		}
	}

	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		data, _ := os.ReadFile(p)
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	for range 2 {
		if _, err := tool.Load(context.Background(), remoteManifest(srv.URL+"/doc.json")); err != nil {
			t.Fatal(err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("fetched %d times within the TTL, want 1", n)
	}
	openapi.AdvanceCacheClock(openapi.CacheTTL)
	if _, err := tool.Load(context.Background(), remoteManifest(srv.URL+"/doc.json")); err != nil {
		t.Fatal(err)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("fetched %d times after the TTL, want 2", n)
	}
}
