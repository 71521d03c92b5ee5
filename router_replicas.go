package tool

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
)

// A Router in eager mode holds every task in memory and reads a task's allow list from the Store only when it
// restores the task or grows the list itself, so replicas sharing a Store do not see each other's growth (issue
// 28, finding 1): a webhook that reaches the replica that did not grow the list is lost. A Router therefore
// records, in the Store of each Tool it serves, that its replica (WithReplicaID, or the process's id) serves
// it, and warns with facts.RouterEagerReplicas when another replica recorded the same within presenceWindow.
// The record is refreshed at most every presenceEvery, by a webhook: it costs no goroutine and no round trip
// on the other webhooks.
const (
	presenceEvery  = 5 * time.Minute
	presenceWindow = 3 * presenceEvery
)

// presence is a Router's record of when it last announced its replica for one Tool value.
type presence struct {
	mu   sync.Mutex
	last time.Time
}

// due reports whether the replica is to be announced now, and if so counts it as announced: concurrent
// webhooks announce once.
func (p *presence) due(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.last.IsZero() && now.Sub(p.last) < presenceEvery {
		return false
	}
	p.last = now
	return true
}

// presenceKey is where replica id records its presence for the tool.
func presenceKey(t *Tool, id string) string {
	return "replicas/" + t.Namespace() + "/" + t.Name() + "/" + id
}

// announce records this replica as serving t and reports the other replicas recorded within presenceWindow,
// by the fact. A Store failure is not reported: the check is a warning, and it runs again later.
func (p *presence) announce(ctx context.Context, t *Tool) {
	o := t.opts
	now := o.clock.Now()
	if !p.due(now) || ctx.Err() != nil {
		return
	}
	self := o.replicaID()
	value := []byte(now.UTC().Format(time.RFC3339Nano))
	var err error
	if exp, ok := o.store.(store.ExpiringStore); ok {
		err = exp.PutTTL(ctx, presenceKey(t, self), value, presenceWindow)
	} else {
		err = o.store.Put(ctx, presenceKey(t, self), value)
	}
	if err != nil {
		return
	}
	prefix := presenceKey(t, "")
	keys, err := o.store.List(ctx, prefix)
	if err != nil {
		return
	}
	var others []string
	for _, key := range keys {
		id := strings.TrimPrefix(key, prefix)
		if id == self || strings.Contains(id, "/") {
			continue
		}
		b, err := o.store.Get(ctx, key)
		if err != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, string(b))
		if err == nil && now.Sub(at) < presenceWindow { // a Store without expiry keeps a dead replica's record
			others = append(others, id)
		}
	}
	if len(others) == 0 || o.observer == nil {
		return
	}
	slices.Sort(others)
	o.observer.Observe(ctx, Fact{Name: facts.RouterEagerReplicas, Tool: t.Name(), Time: now, Data: map[string]any{
		"replica": self, "replicas": others, "within": presenceWindow.String(),
		"detail": "several replicas share this Store while the Router holds tasks in memory: a webhook can miss " +
			"allow-list values another replica added; see docs/scaling.md",
	}})
}
