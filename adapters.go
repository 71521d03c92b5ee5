package tool

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps task state (SPEC §10). Keys are namespaced by tool and task. Implementations must be safe for
// concurrent use. Get returns ErrNotFound for an absent key.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, value []byte) error
	Delete(ctx context.Context, key string) error
	// List returns the keys that start with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// NewMemoryStore returns a Store that keeps everything in memory: the default, lost when the process ends. Keys
// are indexed by each of their "/"-ended prefixes, so listing one task's state (the prefixes the library lists)
// costs the size of that state, not of the store; other prefixes scan every key.
func NewMemoryStore() Store {
	return &memoryStore{data: map[string][]byte{}, dirs: map[string]map[string]struct{}{}}
}

type memoryStore struct {
	mu   sync.RWMutex
	data map[string][]byte
	dirs map[string]map[string]struct{} // "/"-ended prefix → keys under it
}

func (s *memoryStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.data[key]
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

func (s *memoryStore) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.data[key]; !ok {
		for dir := range dirsOf(key) {
			if s.dirs[dir] == nil {
				s.dirs[dir] = map[string]struct{}{}
			}
			s.dirs[dir][key] = struct{}{}
		}
	}
	s.data[key] = append([]byte(nil), value...)
	return nil
}

func (s *memoryStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.data[key]; ok {
		delete(s.data, key)
		for dir := range dirsOf(key) {
			delete(s.dirs[dir], key)
			if len(s.dirs[dir]) == 0 {
				delete(s.dirs, dir)
			}
		}
	}
	return nil
}

func (s *memoryStore) List(_ context.Context, prefix string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []string
	if strings.HasSuffix(prefix, "/") {
		for k := range s.dirs[prefix] {
			keys = append(keys, k)
		}
	} else {
		for k := range s.data {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// dirsOf yields each "/"-ended prefix of key.
func dirsOf(key string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i := 0; i < len(key); i++ {
			if key[i] == '/' && !yield(key[:i+1]) {
				return
			}
		}
	}
}

// AuthRequest describes what a token is for.
type AuthRequest struct {
	Tool, Task, Action, Event string
}

// AuthProvider supplies tokens for {auth.<provider>()} (SPEC §10). It must be safe for concurrent use.
type AuthProvider interface {
	Token(ctx context.Context, provider string, req AuthRequest) (string, error)
}

// Clock tells the time and makes timers; tests substitute a fake one (package tooltest).
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's timer.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// Observer receives lifecycle facts (SPEC §11). Observe must not block for long.
type Observer interface {
	Observe(ctx context.Context, f Fact)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, f Fact)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, fact Fact) { f(ctx, fact) }

// Fact is one lifecycle fact, such as "tool.catalog.resolved" or "tool.result".
type Fact struct {
	Name   string
	Tool   string
	TaskID string
	CallID string
	Seq    uint64
	Time   time.Time
	// Data carries the fact's details; argument values in it are redacted.
	Data map[string]any
}

// Mux is where a Router registers its webhook endpoint; *http.ServeMux satisfies it.
type Mux interface {
	Handle(pattern string, h http.Handler)
}
