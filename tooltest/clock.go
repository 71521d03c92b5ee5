package tooltest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// Epoch is where a Clock made with a zero start begins: 2026-01-01T00:00:00Z.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a fake tool.Clock. Its time moves only by Advance and Set; timers fire, in deadline order, when the
// time reaches their deadline. It is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*timer // pending, unordered
	changed chan struct{}
}

// NewClock returns a Clock at start (Epoch when start is zero).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock reaches now + d; d ≤ 0 fires at once.
func (c *Clock) NewTimer(d time.Duration) tool.Timer {
	t := &timer{clock: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm(t, d)
	return t
}

// Advance moves the clock forward by d, firing every timer whose deadline is reached, earliest first; the clock
// reads each timer's deadline while it fires.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	c.Set(target)
}

// Set moves the clock to at (never backwards), firing the timers due by then, earliest first.
func (c *Clock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		next := -1
		for i, t := range c.timers {
			if !t.when.After(at) && (next < 0 || t.when.Before(c.timers[next].when)) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		t := c.timers[next]
		c.timers = slices.Delete(c.timers, next, next+1)
		if t.when.After(c.now) {
			c.now = t.when
		}
		t.fire(c.now)
	}
	if at.After(c.now) {
		c.now = at
	}
	c.notify()
}

// Timers returns how many timers are pending.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// BlockUntil waits until at least n timers are pending — the usual way to know that background work has
// finished a step and armed its next timer before the test advances the clock. It fails t after Timeout.
func (c *Clock) BlockUntil(t testing.TB, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	for {
		c.mu.Lock()
		pending, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if pending >= n {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("tooltest: %d timer(s) pending after %s, want %d", pending, Timeout, n)
		}
	}
}

// arm schedules t at now + d; c.mu is held.
func (c *Clock) arm(t *timer, d time.Duration) {
	t.when = c.now.Add(d)
	if d <= 0 {
		t.fire(c.now)
	} else {
		c.timers = append(c.timers, t)
	}
	c.notify()
}

// disarm removes t and reports whether it was pending; c.mu is held.
func (c *Clock) disarm(t *timer) bool {
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	c.notify()
	return true
}

// notify wakes BlockUntil; c.mu is held.
func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type timer struct {
	clock *Clock
	ch    chan time.Time
	when  time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

// fire delivers now unless an earlier firing is still unread, like a time.Timer's channel of capacity one.
func (t *timer) fire(now time.Time) {
	select {
	case t.ch <- now:
	default:
	}
}

// Stop disarms the timer; it reports whether it was pending.
func (t *timer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.disarm(t)
}

// Reset re-arms the timer at now + d, dropping an unread firing; it reports whether it was pending.
func (t *timer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.clock.disarm(t)
	select {
	case <-t.ch:
	default:
	}
	t.clock.arm(t, d)
	return was
}

var _ tool.Clock = (*Clock)(nil)
