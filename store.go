package tool

import "github.com/commonagents-go/tool/store"

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

// RouteStore is store.RouteStore: a Store that keeps a routing index the replicas share, from the values webhooks
// carry to the tasks whose allow lists may hold them.
type RouteStore = store.RouteStore

// RouteHits is store.RouteHits: the tasks RouteStore.Lookup found for one route.
type RouteHits = store.RouteHits

// RouteHit is store.RouteHit: one task that has a route, and its generation.
type RouteHit = store.RouteHit

// TaskExpiryStore is store.TaskExpiryStore: a Store that indexes tasks by when they expire, so that
// Router.SweepExpired finds the expired tasks of store mode without reading the others.
type TaskExpiryStore = store.TaskExpiryStore

// TaskExpiry is store.TaskExpiry: a task and when it expires.
type TaskExpiry = store.TaskExpiry

// NewMemoryStore returns store.NewMemory(): a Store that keeps everything in memory, the default, lost when the
// process ends. It implements SwapStore, LeaseStore, ExpiringStore, ScanStore, RouteStore and TaskExpiryStore
// too.
func NewMemoryStore() Store { return store.NewMemory() }
