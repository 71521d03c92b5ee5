package tool

import (
	"context"
	"sync"
)

// gate orders the calls of one task (SPEC §11): read-only, concurrency-safe calls share it; any other call holds
// it alone, waits for the calls in flight and holds back calls that arrive after it. Unlike sync.RWMutex, waiting
// ends when the caller's context does.
type gate struct {
	mu      sync.Mutex
	readers int
	writer  bool
	waiting int           // writers waiting; while > 0 new readers wait too
	changed chan struct{} // closed on every release; nil when nobody waits
}

// acquire waits until the call may run, or until ctx ends or closed (the task's end; nil for none) is closed.
func (g *gate) acquire(ctx context.Context, closed <-chan struct{}, shared bool) error {
	queued := false
	for {
		g.mu.Lock()
		free := !g.writer && (shared && g.waiting == 0 || !shared && g.readers == 0)
		if free {
			if shared {
				g.readers++
			} else {
				g.writer = true
				if queued {
					g.waiting--
				}
			}
			g.mu.Unlock()
			return nil
		}
		if !shared && !queued {
			g.waiting++
			queued = true
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()

		var err error
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			err = ctx.Err()
		case <-closed:
			err = ErrClosed
		}
		if queued {
			g.mu.Lock()
			g.waiting--
			g.broadcast()
			g.mu.Unlock()
		}
		return err
	}
}

func (g *gate) release(shared bool) {
	g.mu.Lock()
	if shared {
		g.readers--
	} else {
		g.writer = false
	}
	g.broadcast()
	g.mu.Unlock()
}

// broadcast wakes every waiter; g.mu is held.
func (g *gate) broadcast() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}
