package tool

import (
	"context"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/store"
)

// Store keeps task state (SPEC §10); it is store.Store, whose package holds the contract and its optional upgrades.
type Store = store.Store

// SwapStore is store.SwapStore: a Store that several host replicas share (compare-and-swap).
type SwapStore = store.SwapStore

// LeaseStore is store.LeaseStore: a Store that hands out leases.
type LeaseStore = store.LeaseStore

// ClaimStore is store.ClaimStore: a Store that claims a key in one round trip, on its own clock.
type ClaimStore = store.ClaimStore

// ExpiringStore is store.ExpiringStore: a Store that forgets keys written with PutTTL by itself.
type ExpiringStore = store.ExpiringStore

// ScanStore is store.ScanStore: a Store that reads every key under a prefix with its value in one range scan, so
// that Tool.RestoreTasks reads all of a tool's stored tasks at once.
type ScanStore = store.ScanStore

// Entry is store.Entry: a key and its value, as ScanStore.Scan returns them.
type Entry = store.Entry

// NewMemoryStore returns store.NewMemory(): a Store that keeps everything in memory, the default, lost when the
// process ends. It implements SwapStore, LeaseStore, ExpiringStore and ScanStore too.
func NewMemoryStore() Store { return store.NewMemory() }

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
