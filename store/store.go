// Package store is the contract between this library and the storage of task state (SPEC §10, §13): the Store
// interface, its optional upgrades (SwapStore, LeaseStore, ClaimStore, ExpiringStore, ScanStore), ErrNotFound and
// the in-memory implementation. It imports nothing from the library, so a Store implementation (store/postgres, or
// a third party's) depends on this package alone; package tool re-exports every name here. Package
// store/storetest is the conformance suite an implementation proves itself with.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by Store.Get for an absent key.
var ErrNotFound = errors.New("tool: not found")

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

// ScanStore is implemented by Stores that read every key under a prefix together with its value in one pass (a
// range scan), so that Tool.RestoreTasks reads the state of all of a tool's stored tasks at once instead of four
// queries per task. The memory store and store/postgres implement it.
type ScanStore interface {
	Store
	// Scan returns the live keys that start with prefix with their values, sorted by key.
	Scan(ctx context.Context, prefix string) ([]Entry, error)
}

// Entry is a key and its value, as ScanStore.Scan returns them.
type Entry struct {
	Key   string
	Value []byte
}
