// Package registry is the kind-keyed plugin table behind runtime.Registry and events.Registry.
package registry

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Kinded is anything registered by kind.
type Kinded interface{ Kind() string }

// Set maps kinds to plugins. The zero value is not usable; use New. It is safe for concurrent use.
type Set[T Kinded] struct {
	what  string // "runtime" or "events", for error messages
	mu    sync.RWMutex
	items map[string]T
}

// New returns an empty set whose errors are prefixed with what.
func New[T Kinded](what string) *Set[T] {
	return &Set[T]{what: what, items: map[string]T{}}
}

// Reserved are the manifest's core keys (tool.Manifest's fields), which no plugin kind may take: a backend's
// kind is also its top-level block's key.
var Reserved = []string{"kind", "namespace", "name", "description", "synchronous", "settings", "parameters",
	"actions", "events"}

// Register adds v; it fails when v has no kind, its kind is a core manifest key (Reserved) or it is already
// registered.
func (s *Set[T]) Register(v T) error {
	if any(v) == nil || v.Kind() == "" {
		return errors.New(s.what + ": register: nil plugin or empty kind")
	}
	if slices.Contains(Reserved, v.Kind()) {
		return fmt.Errorf("%s: register: kind %q is a core manifest key", s.what, v.Kind())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.items[v.Kind()]; dup {
		return fmt.Errorf("%s: register: kind %q is already registered", s.what, v.Kind())
	}
	s.items[v.Kind()] = v
	return nil
}

// Lookup returns the plugin registered for kind.
func (s *Set[T]) Lookup(kind string) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.items[kind]
	return v, ok
}

// Kinds returns the registered kinds, sorted.
func (s *Set[T]) Kinds() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	kinds := make([]string, 0, len(s.items))
	for k := range s.items {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Clone returns an independent copy of s.
func (s *Set[T]) Clone() *Set[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := New[T](s.what)
	for k, v := range s.items {
		c.items[k] = v
	}
	return c
}
