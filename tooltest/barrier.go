package tooltest

import (
	"context"
	"net/http"
	"sync"
)

// Barrier is an HTTP backend that answers a request only once N requests are in flight at the same time: then it
// answers the N waiting ones with Body (as application/json) and starts over. A concurrency test calls through it
// and needs no timing in its assertion: the calls complete only if N of them reach the backend at once. A
// request still waiting ends with its context (the client gave up or closed the connection) with status 503.
// Set the fields before serving; a Barrier is safe for concurrent use.
type Barrier struct {
	N    int
	Body string

	mu      sync.Mutex
	waiting int
	release chan struct{}
	most    int           // the most requests in flight at once
	changed chan struct{} // closed when waiting changes
}

// notify wakes the Await calls; b.mu is held.
func (b *Barrier) notify() {
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// Await returns once n requests wait at the barrier at the same time (nil), or when ctx ends (its error).
func (b *Barrier) Await(ctx context.Context, n int) error {
	for {
		b.mu.Lock()
		if b.waiting >= n {
			b.mu.Unlock()
			return nil
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ServeHTTP holds the request until N are in flight, then answers.
func (b *Barrier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	if b.release == nil {
		b.release = make(chan struct{})
	}
	release := b.release
	b.waiting++
	b.most = max(b.most, b.waiting)
	b.notify()
	if b.waiting >= b.N {
		close(release)
		b.release, b.waiting = nil, 0
	}
	b.mu.Unlock()
	select {
	case <-release:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(b.Body))
	case <-r.Context().Done():
		b.mu.Lock()
		if b.release == release {
			b.waiting--
			b.notify()
		}
		b.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}
}

// MostInFlight returns the most requests that were in flight at once.
func (b *Barrier) MostInFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.most
}
