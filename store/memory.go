package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// NewMemory returns a Store that keeps everything in memory: the default, lost when the process ends. Keys
// are indexed by each of their "/"-ended prefixes, so listing one task's state (the prefixes the library lists)
// costs the size of that state, not of the store; other prefixes scan every key. It implements SwapStore,
// LeaseStore, ExpiringStore, ScanStore, RouteStore, TaskExpiryStore, BatchStore and PartialScanStore too (leases and expiries on the wall
// clock; task expiries on the time the caller gives), for hosts that
// run several Tools of one manifest in one process, and for tests.
func NewMemory() Store {
	return &memoryStore{data: map[string][]byte{}, dirs: map[string]map[string]struct{}{},
		expires: map[string]time.Time{}, leases: map[string]lease{}}
}

type memoryStore struct {
	mu      sync.RWMutex
	data    map[string][]byte
	dirs    map[string]map[string]struct{} // "/"-ended prefix → keys under it
	expires map[string]time.Time           // keys written with PutTTL
	leases  map[string]lease
	routes  routeTable  // RouteStore (memory_routes.go)
	expiry  expiryTable // TaskExpiryStore (memory_routes.go)
}

type lease struct {
	owner string
	until time.Time
}

// live reports whether key holds a value that has not expired; s.mu is held.
func (s *memoryStore) live(key string) ([]byte, bool) {
	v, ok := s.data[key]
	if !ok {
		return nil, false
	}
	if exp, ok := s.expires[key]; ok && !time.Now().Before(exp) {
		return nil, false
	}
	return v, true
}

func (s *memoryStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.live(key)
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

func (s *memoryStore) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(key, value)
	return nil
}

// PutTTL is Put for a value that expires after ttl.
func (s *memoryStore) PutTTL(_ context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(key, value)
	s.expires[key] = time.Now().Add(ttl)
	s.sweep()
	return nil
}

// PutBatch writes every one of writes under one lock: a reader sees all of them or none.
func (s *memoryStore) PutBatch(_ context.Context, writes []Write) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, w := range writes {
		s.put(w.Key, w.Value)
		if w.TTL > 0 {
			s.expires[w.Key] = now.Add(w.TTL)
		}
	}
	s.sweep()
	return nil
}

// sweep drops a few expired keys, so that a long-running store does not grow with them; s.mu is held.
func (s *memoryStore) sweep() {
	now, n := time.Now(), 0
	for key, exp := range s.expires {
		if n++; n > 8 {
			return
		}
		if !now.Before(exp) {
			s.delete(key)
		}
	}
}

// CompareAndSwap sets key to next when its value is old (nil: absent).
func (s *memoryStore) CompareAndSwap(_ context.Context, key string, old, next []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.live(key)
	if ok != (old != nil) || ok && string(cur) != string(old) {
		return false, nil
	}
	s.put(key, next)
	return true, nil
}

// Lease acquires or renews key for owner until ttl from now.
func (s *memoryStore) Lease(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if l, ok := s.leases[key]; ok && l.owner != owner && now.Before(l.until) {
		return false, nil
	}
	s.leases[key] = lease{owner: owner, until: now.Add(ttl)}
	return true, nil
}

// Release gives up owner's lease on key.
func (s *memoryStore) Release(_ context.Context, key, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leases[key].owner == owner {
		delete(s.leases, key)
	}
	return nil
}

// put writes key; s.mu is held.
func (s *memoryStore) put(key string, value []byte) {
	delete(s.expires, key)
	if _, ok := s.data[key]; !ok {
		for dir := range dirsOf(key) {
			if s.dirs[dir] == nil {
				s.dirs[dir] = map[string]struct{}{}
			}
			s.dirs[dir][key] = struct{}{}
		}
	}
	s.data[key] = append([]byte(nil), value...)
}

func (s *memoryStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delete(key)
	return nil
}

// delete removes key; s.mu is held.
func (s *memoryStore) delete(key string) {
	delete(s.expires, key)
	if _, ok := s.data[key]; ok {
		delete(s.data, key)
		for dir := range dirsOf(key) {
			delete(s.dirs[dir], key)
			if len(s.dirs[dir]) == 0 {
				delete(s.dirs, dir)
			}
		}
	}
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
	keys = slices.DeleteFunc(keys, func(k string) bool { _, ok := s.live(k); return !ok })
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

// Scan returns the live keys under prefix with their values, sorted by key: through the index when prefix ends
// with "/", else by scanning every key.
func (s *memoryStore) Scan(ctx context.Context, prefix string) ([]Entry, error) {
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		if v, ok := s.live(k); ok {
			out = append(out, Entry{Key: k, Value: append([]byte(nil), v...)})
		}
	}
	return out, nil
}

// ScanExcept is Scan without the keys under the prefixes of except.
func (s *memoryStore) ScanExcept(ctx context.Context, prefix string, except []string) ([]Entry, error) {
	out, err := s.Scan(ctx, prefix)
	return slices.DeleteFunc(out, func(e Entry) bool {
		return slices.ContainsFunc(except, func(x string) bool { return strings.HasPrefix(e.Key, x) })
	}), err
}

var (
	_ SwapStore     = (*memoryStore)(nil)
	_ LeaseStore    = (*memoryStore)(nil)
	_ ExpiringStore = (*memoryStore)(nil)
	_ ScanStore     = (*memoryStore)(nil)
	_ BatchStore    = (*memoryStore)(nil)

	_ PartialScanStore = (*memoryStore)(nil)
)
