package openapi

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// Cache bounds. A loaded *openapi3.T is never modified afterwards, so the cache holds immutable values, shared by
// every Tool loaded from the same document under the same policy.
const (
	// CacheEntries is how many parsed documents the process keeps; the least recently used goes first.
	CacheEntries = 8
	// CacheTTL is how long a document fetched over http(s) is reused before it is fetched again. A document read
	// from files is reused while every file it read keeps its size and modification time.
	CacheTTL = 5 * time.Minute
)

// documents is the process-wide cache of parsed documents (SPEC §7.5: fetched once), keyed by everything that
// changes the result: the location and the origins its $refs may use. Failures are not cached.
var documents = &docCache{entries: map[string]*cached{}, now: time.Now}

type docCache struct {
	mu      sync.Mutex
	entries map[string]*cached
	tick    uint64 // last-use counter, for eviction
	now     func() time.Time
}

type cached struct {
	done    chan struct{}
	doc     *openapi3.T
	raw     *rawSource
	files   []fileStamp
	err     error
	loaded  time.Time
	used    uint64
	fetched bool // read over http(s): expires after CacheTTL
}

// fileStamp is what tells that a file read for a document has changed.
type fileStamp struct {
	name string
	size int64
	mod  time.Time
}

// fresh reports whether a finished entry may still be served.
func (c *docCache) fresh(e *cached) bool {
	if e.fetched {
		return c.now().Sub(e.loaded) < CacheTTL
	}
	for _, f := range e.files {
		st, err := os.Stat(f.name)
		if err != nil || st.Size() != f.size || !st.ModTime().Equal(f.mod) {
			return false
		}
	}
	return true
}

func cacheKey(loc *url.URL, extra []string, limit int64) string {
	return loc.String() + "\x00" + strings.Join(extra, " ") + "\x00" + strconv.FormatInt(limit, 10)
}

// load returns the document at loc under the origins extra, reading it at most once while the cached copy is
// fresh. ctx bounds the read; a caller whose ctx ends while another caller's read of the same document is in
// flight stops waiting.
func (c *docCache) load(ctx context.Context, loc *url.URL, extra []string, limit int64) (*openapi3.T, *rawSource, error) {
	key := cacheKey(loc, extra, limit)
	for {
		c.mu.Lock()
		e := c.entries[key]
		if e != nil {
			select {
			case <-e.done:
				if e.err != nil || !c.fresh(e) {
					delete(c.entries, key)
					e = nil
				}
			default:
			}
		}
		if e != nil {
			c.tick++
			e.used = c.tick
			c.mu.Unlock()
			select {
			case <-e.done:
				if e.err == nil {
					return e.doc, e.raw, nil
				}
				continue // the read failed and was dropped: try again with this ctx
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		e = &cached{done: make(chan struct{}), fetched: loc.Scheme != ""}
		c.tick++
		e.used = c.tick
		c.entries[key] = e
		c.evict()
		c.mu.Unlock()

		e.doc, e.raw, e.files, e.err = read(ctx, loc, extra, limit)
		c.mu.Lock()
		e.loaded = c.now()
		if e.err != nil && c.entries[key] == e {
			delete(c.entries, key)
		}
		c.mu.Unlock()
		close(e.done)
		return e.doc, e.raw, e.err
	}
}

// evict drops the least recently used finished entries beyond CacheEntries; c.mu is held.
func (c *docCache) evict() {
	for len(c.entries) > CacheEntries {
		var oldest string
		var min uint64
		for k, e := range c.entries {
			select {
			case <-e.done:
			default:
				continue // in flight: its readers wait on it
			}
			if oldest == "" || e.used < min {
				oldest, min = k, e.used
			}
		}
		if oldest == "" {
			return
		}
		delete(c.entries, oldest)
	}
}

// len reports how many documents are cached.
func (c *docCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// clear empties the cache.
func (c *docCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = map[string]*cached{}
}
