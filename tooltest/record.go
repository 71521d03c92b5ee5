package tooltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// recorder is an append-only list that tests can wait on.
type recorder[T any] struct {
	mu      sync.Mutex
	items   []T
	changed chan struct{}
}

func (r *recorder[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

func (r *recorder[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// wait returns the items once keep selects at least n of them; it fails t after Timeout.
func (r *recorder[T]) wait(t testing.TB, what string, n int, keep func(T) bool) []T {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		var got []T
		for _, v := range r.items {
			if keep(v) {
				got = append(got, v)
			}
		}
		if len(got) >= n {
			r.mu.Unlock()
			return got
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("tooltest: %d %s after %s, want %d", len(got), what, Timeout, n)
			return nil
		}
	}
}

// Sink is a tool.Sink that records the activations it accepts. Refuse makes it refuse them instead.
type Sink struct {
	rec    recorder[tool.Activation]
	mu     sync.Mutex
	refuse error
}

// NewSink returns a Sink that accepts every activation.
func NewSink() *Sink { return &Sink{} }

// Accept records a, or returns the error set by Refuse.
func (s *Sink) Accept(_ context.Context, a tool.Activation) error {
	s.mu.Lock()
	err := s.refuse
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.rec.add(a)
	return nil
}

// Refuse makes Accept return err from now on; nil accepts again.
func (s *Sink) Refuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = err
}

// Activations returns the activations accepted so far.
func (s *Sink) Activations() []tool.Activation { return s.rec.snapshot() }

// Wait returns the accepted activations once there are at least n; it fails t after Timeout.
func (s *Sink) Wait(t testing.TB, n int) []tool.Activation {
	t.Helper()
	return s.rec.wait(t, "activation(s)", n, func(tool.Activation) bool { return true })
}

// Observer is a tool.Observer that records every fact.
type Observer struct{ rec recorder[tool.Fact] }

// NewObserver returns an empty Observer.
func NewObserver() *Observer { return &Observer{} }

// Observe records f.
func (o *Observer) Observe(_ context.Context, f tool.Fact) { o.rec.add(f) }

// Facts returns the facts recorded so far, optionally only those with one of names.
func (o *Observer) Facts(names ...string) []tool.Fact {
	all := o.rec.snapshot()
	if len(names) == 0 {
		return all
	}
	var out []tool.Fact
	for _, f := range all {
		if named(f, names) {
			out = append(out, f)
		}
	}
	return out
}

// Wait returns the facts named name once there are at least n; it fails t after Timeout.
func (o *Observer) Wait(t testing.TB, name string, n int) []tool.Fact {
	t.Helper()
	return o.rec.wait(t, name+" fact(s)", n, func(f tool.Fact) bool { return f.Name == name })
}

func named(f tool.Fact, names []string) bool {
	for _, n := range names {
		if f.Name == n {
			return true
		}
	}
	return false
}

var (
	_ tool.Sink     = (*Sink)(nil)
	_ tool.Observer = (*Observer)(nil)
)
