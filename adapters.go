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
	// Get returns key's value, or an error wrapping ErrNotFound when it is absent.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put sets key's value, creating the key.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key; an absent key is no error.
	Delete(ctx context.Context, key string) error
	// List returns the keys that start with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// SwapStore is implemented by Stores that several host replicas share (SPEC §13): the task merges its allow list
// into the stored one with compare-and-swap, so that values added by concurrent calls on other replicas are not
// lost.
type SwapStore interface {
	Store
	// CompareAndSwap sets key to next when its value is old — nil old means the key must be absent — and reports
	// whether it did.
	CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error)
}

// LeaseStore is implemented by Stores that hand out leases, so that exactly one replica at a time runs a task's
// poll fetches and subscription renewals, and another takes over once the holder stops renewing (SPEC §13).
type LeaseStore interface {
	Store
	// Lease acquires or renews the lease on key for owner until ttl from now and reports whether owner holds it.
	// A lease whose holder let it run out is free for anyone.
	Lease(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)
	// Release gives up owner's lease on key; it does nothing when owner does not hold it.
	Release(ctx context.Context, key, owner string) error
}

// ClaimStore is implemented by Stores that several replicas share and that claim a key in one round trip, with
// the expiry on the Store's own clock, so that replicas whose clocks differ agree on when a claim lapsed. Delivery
// ids are claimed with it (SPEC §9.2); without it they are claimed with Get and CompareAndSwap.
type ClaimStore interface {
	Store
	// Claim sets key to value, expiring after ttl, when key is absent or expired, and reports whether it did;
	// when it did not, current is key's live value. Of racing claims exactly one wins.
	Claim(ctx context.Context, key string, value []byte, ttl time.Duration) (claimed bool, current []byte, err error)
}

// ExpiringStore is implemented by Stores that can forget a key by themselves: delivery ids are written with
// PutTTL (the dedupe window), so they need no sweeping by the host.
type ExpiringStore interface {
	Store
	// PutTTL is Put for a value that Get, List and CompareAndSwap no longer see once ttl has passed.
	PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// NewMemoryStore returns a Store that keeps everything in memory: the default, lost when the process ends. Keys
// are indexed by each of their "/"-ended prefixes, so listing one task's state (the prefixes the library lists)
// costs the size of that state, not of the store; other prefixes scan every key. It implements SwapStore,
// LeaseStore and ExpiringStore too (leases and expiries on the wall clock), for hosts that run several Tools of one
// manifest in one process, and for tests.
func NewMemoryStore() Store {
	return &memoryStore{data: map[string][]byte{}, dirs: map[string]map[string]struct{}{},
		expires: map[string]time.Time{}, leases: map[string]lease{}}
}

type memoryStore struct {
	mu      sync.RWMutex
	data    map[string][]byte
	dirs    map[string]map[string]struct{} // "/"-ended prefix → keys under it
	expires map[string]time.Time           // keys written with PutTTL
	leases  map[string]lease
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
	// C delivers the time when the timer fires; it holds at most one unread firing.
	C() <-chan time.Time
	// Stop prevents the timer from firing and reports whether it was pending.
	Stop() bool
	// Reset makes the timer fire d from now, dropping an unread firing, and reports whether it was pending.
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

var (
	_ SwapStore     = (*memoryStore)(nil)
	_ LeaseStore    = (*memoryStore)(nil)
	_ ExpiringStore = (*memoryStore)(nil)
)
