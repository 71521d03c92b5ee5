// Package store is the contract between this library and the storage of task state (SPEC §10, §13): the Store
// interface, its optional upgrades (SwapStore, LeaseStore, ClaimStore, ExpiringStore, ScanStore, RouteStore,
// TaskExpiryStore), ErrNotFound and the in-memory implementation. It imports nothing from the library, so a Store
// implementation (store/postgres, or a third party's) depends on this package alone; package tool re-exports every
// name here.
// Package store/storetest is the conformance suite an implementation proves itself with.
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
// PutTTL (the dedupe window), so they need no sweeping by the host, and a task keeps none of them in memory (over
// a Store without it, a task remembers each id it activated for the window, to delete its record then).
type ExpiringStore interface {
	Store
	// PutTTL is Put for a value that Get, List and CompareAndSwap no longer see once ttl has passed.
	PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// BatchStore is implemented by Stores that write several keys in one round trip, so that what a delivery writes
// after its Sink accepted — the delivery id's record and, at most once a minute, the task's last activity — costs
// one statement, not two. The memory store and store/postgres implement it.
type BatchStore interface {
	Store
	// PutBatch writes every one of writes, all or none (one transaction). A Write with a TTL > 0 is written as
	// ExpiringStore.PutTTL writes it, one without as Put; a Store that is not an ExpiringStore refuses a TTL.
	// Of two writes of one key, the last counts.
	PutBatch(ctx context.Context, writes []Write) error
}

// Write is one key that BatchStore.PutBatch writes.
type Write struct {
	Key   string
	Value []byte
	// TTL > 0 makes the value expire, as ExpiringStore.PutTTL's ttl; 0 keeps it until it is written or deleted.
	TTL time.Duration
}

// ScanStore is implemented by Stores that read every key under a prefix together with its value in one pass (a
// range scan), so that Tool.RestoreTasks reads the state of all of a tool's stored tasks at once instead of four
// queries per task. The memory store and store/postgres implement it.
type ScanStore interface {
	Store
	// Scan returns the live keys that start with prefix with their values, sorted by key.
	Scan(ctx context.Context, prefix string) ([]Entry, error)
}

// PartialScanStore is a ScanStore that leaves the keys under some prefixes out of a scan, in the same one pass,
// so that a task brought into memory in store mode does not read its delivery ids' records (one per delivery
// within the dedupe window), which only their claims need. The memory store and store/postgres implement it.
type PartialScanStore interface {
	ScanStore
	// ScanExcept is Scan(prefix) without the keys that start with one of except.
	ScanExcept(ctx context.Context, prefix string, except []string) ([]Entry, error)
}

// RouteStore is implemented by Stores that keep a routing index shared by the replicas: for each route (a value
// a webhook can carry), the tasks whose allow lists may hold it, so that a replica can find a webhook's tasks
// without holding them (the store-routed mode of issue 28). A route is opaque bytes the library builds (a hash of
// tool, event, parameter and value); a task is named by its key prefix. The index may name too many tasks, never
// too few: the library writes a task's routes before its allow list can match them, and each task's own filter
// decides. A task's generation counts the changes of its stored allow list, so that a replica holding an older
// copy of the task knows to read it again. The memory store and store/postgres implement it.
type RouteStore interface {
	Store
	// PutRoutes adds routes to task's. Adding a route the task has is no error. A route must not be empty.
	PutRoutes(ctx context.Context, task string, routes [][]byte) error
	// DeleteRoutes removes routes from task's; removing a route it does not have is no error. nil routes
	// removes all of the task's routes and its generation: the task is gone.
	DeleteRoutes(ctx context.Context, task string, routes [][]byte) error
	// BumpGeneration adds one to task's generation (0 until the first bump) and returns the new value. Of
	// concurrent bumps each returns a different value.
	BumpGeneration(ctx context.Context, task string) (uint64, error)
	// Lookup returns, for each of routes in order, the tasks that have the route with their generations: the
	// tasks after after (bytewise; "" for the first page), sorted, at most limit of them (limit > 0), and whether
	// more exist. All routes are looked up at once (one round trip for store/postgres).
	Lookup(ctx context.Context, routes [][]byte, after string, limit int) ([]RouteHits, error)
}

// RouteHits are the tasks RouteStore.Lookup found for one route.
type RouteHits struct {
	Hits []RouteHit
	// More reports that tasks after the last of Hits have the route too.
	More bool
}

// RouteHit is one task that has a route, and its generation.
type RouteHit struct {
	Task       string
	Generation uint64
}

// TaskExpiryStore is implemented by Stores that index tasks by when they expire (TaskConfig.ExpiresAt), so that
// Router.SweepExpired finds the tasks whose expiry has passed without reading the state of the others: in store
// mode a task that no webhook brings into memory has no timer to end it. A task is named by its key prefix, as in
// RouteStore. The memory store and store/postgres implement it.
type TaskExpiryStore interface {
	Store
	// SetTaskExpiry records that task expires at at, replacing its earlier record; a zero at removes the record
	// (removing an absent one is no error).
	SetTaskExpiry(ctx context.Context, task string, at time.Time) error
	// ExpiredTasks returns the records of the tasks that start with prefix and expire at or before now, in the
	// order of (At, Task), those after after (the zero TaskExpiry for the first page), at most limit (> 0).
	ExpiredTasks(ctx context.Context, prefix string, now time.Time, after TaskExpiry, limit int) ([]TaskExpiry, error)
}

// TaskExpiry is a task and when it expires, as TaskExpiryStore.ExpiredTasks returns them.
type TaskExpiry struct {
	Task string
	At   time.Time
}

// Entry is a key and its value, as ScanStore.Scan returns them.
type Entry struct {
	Key   string
	Value []byte
}
