package schema

import (
	"runtime"
	"testing"

	"github.com/commonagents-go/tool/field"
)

// TestCompileCache pins that a schema compiled again is the same compiled schema while one is alive, that options
// and problems are never mixed up, and that a schema no one holds leaves the cache.
func TestCompileCache(t *testing.T) {
	doc := `{"properties":{"a":{"type":"string","x-cache-test":1}}}`
	a := mustCompile(t, doc, Options{Parameters: true})
	if b := mustCompile(t, doc, Options{Parameters: true}); b != a {
		t.Error("the same schema compiled twice: no cache hit")
	}
	if b := mustCompile(t, doc, Options{Parameters: true, Dialect: Draft2020}); b == a {
		t.Error("another dialect shared the compiled schema")
	}
	bad := decode(t, `{"properties":{"a":{"type":"strnig"}}}`)
	for range 2 {
		s, errs := Compile(bad, field.NewPath("p"), Options{})
		if s != nil || len(errs) != 1 || errs[0].Path != "p.properties.a.type" {
			t.Fatalf("broken schema: %v, %v", s, errs)
		}
	}
	key, _ := cacheKey(decode(t, doc), Options{Parameters: true})
	runtime.KeepAlive(a)
	a = nil
	runtime.GC()
	if cache.get(key) != nil {
		t.Fatal("a schema no one holds is still served by the cache")
	}
	// The entry itself goes in a cleanup, which runs on its own goroutine after the collection.
	for i := 0; ; i++ {
		cache.mu.Lock()
		_, held := cache.m[key]
		cache.mu.Unlock()
		if !held {
			break
		}
		if i == 1000 {
			t.Fatal("the entry of a collected schema stayed in the cache")
		}
		runtime.GC()
		runtime.Gosched()
	}
}
