package tool

import "github.com/commonagents-go/tool/store"

// Store keeps task state (SPEC §10); it is store.Store, whose package holds the contract and its optional
// upgrades (store.SwapStore, store.ScanStore, store.RouteStore, ...), which a Store implementer imports.
type Store = store.Store

// NewMemoryStore returns store.NewMemory(): a Store that keeps everything in memory, the default, lost when the
// process ends. It implements every optional upgrade of the store package too.
func NewMemoryStore() Store { return store.NewMemory() }
