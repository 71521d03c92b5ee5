package schema

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"weak"
)

// maxCached bounds the number of compiled schemas the cache tracks.
const maxCached = 8192

// cache holds the compiled schemas of live tools by their canonical form (options and the document's JSON, keys
// sorted), so that loading the same schema again, as a second Load of one OpenAPI description does for every
// operation, costs an encoding instead of a compile. Entries are weak: a schema no tool holds any more is
// collected and its entry removed, so the cache keeps nothing alive. Only schemas without problems are cached;
// their problems depend on where they sit, their compiled form does not.
var cache = &compiledCache{m: map[string]weak.Pointer[Schema]{}}

type compiledCache struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[Schema]
}

// cacheKey returns the key of doc compiled with opts; ok is false when doc cannot be encoded. The canonical JSON is
// hashed as it is encoded rather than kept: the schemas a backend derives from a large source are large, and
// their keys were as many bytes again, allocated on each Load and held while the schemas live (Microsoft Graph: 93 MB
// per Load).
func cacheKey(doc any, opts Options) (string, bool) {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(doc); err != nil {
		return "", false
	}
	b := h.Sum(nil)
	flags := []byte{byte(opts.Dialect), 0, 0}
	if opts.Parameters {
		flags[1] = 1
	}
	if opts.Foreign {
		flags[2] = 1
	}
	if opts.Against != nil {
		// The same document validated by another compiled schema is another Schema.
		return fmt.Sprintf("%s%p\x00%s", flags, opts.Against.compiled, b), true
	}
	return string(flags) + string(b), true
}

func (c *compiledCache) get(key string) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.m[key]; ok {
		return wp.Value()
	}
	return nil
}

func (c *compiledCache) put(key string, s *Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		return
	}
	wp := weak.Make(s)
	c.m[key] = wp
	runtime.AddCleanup(s, c.remove, key)
}

// remove drops the entry of a collected schema, unless the key was compiled again since.
func (c *compiledCache) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.m[key]; ok && wp.Value() == nil {
		delete(c.m, key)
	}
}

// Forget empties the cache of compiled schemas, so that the next Compile of each schema compiles it: for
// benchmarks of a cold load.
func Forget() {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	clear(cache.m)
}
