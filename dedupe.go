package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// dedupeLog remembers the delivery ids a task activated, in the Store under "deliveries/<hash>" (SPEC §9.2,
// §13), so replicas sharing the Store and a resumed task see them too. The in-memory log only knows what to
// prune once the dedupe window has passed.
type dedupeLog struct {
	mu       sync.Mutex
	entries  []dedupeEntry     // oldest first
	inflight map[string]bool   // keys being activated: a concurrent retry of the same delivery is a duplicate
	claims   map[string][]byte // keys this task claimed in a shared Store, with the claim written
}

type dedupeEntry struct {
	key string
	at  time.Time
}

// dedupeKey is the state key of a delivery id for one event: hashed, since ids are the sender's text.
func (t *Task) dedupeKey(event, id string) string {
	sum := sha256.Sum256([]byte(event + "\x00" + id))
	return t.stateKey("deliveries/" + hex.EncodeToString(sum[:16]))
}

// seen reports whether the event already activated for delivery id within the dedupe window. A Store failure
// counts as not seen: a rare duplicate beats a lost event.
//
// A delivery not seen is claimed until release: the same id arriving meanwhile (a sender retrying while the
// Sink still works on the first attempt) is seen.
func (t *Task) seen(ctx context.Context, event, id string) bool {
	key := t.dedupeKey(event, id)
	log := &t.dedupe
	log.mu.Lock()
	if log.inflight[key] {
		log.mu.Unlock()
		return true
	}
	if log.inflight == nil {
		log.inflight, log.claims = map[string]bool{}, map[string][]byte{}
	}
	log.inflight[key] = true
	log.mu.Unlock()

	ctx, cancel := t.storeContext(ctx) // a caller giving up must not make a replay look new
	defer cancel()
	store := t.tool.opts.store
	b, err := store.Get(ctx, key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.tool.opts.logger.Warn("delivery id not checked", "tool", t.tool.Name(), "task", t.id, "error", err)
		return false
	}
	now := t.tool.opts.clock.Now()
	if err == nil {
		text, claim := strings.CutPrefix(string(b), claimPrefix)
		text, _, _ = strings.Cut(text, " ") // a claim is "claim <time> <replica>"
		at, perr := time.Parse(time.RFC3339Nano, text)
		fresh := perr == nil && now.Sub(at) < t.tool.opts.limits.DedupeWindow
		if claim {
			// Another replica is activating it; an older claim is from a replica that died meanwhile.
			fresh = perr == nil && now.Sub(at) < ClaimTimeout
		}
		if fresh {
			t.release(event, id)
			return true
		}
	} else {
		b = nil
	}
	// Replicas sharing the Store claim the id, so that only one of them activates a delivery sent to both.
	if swap, ok := store.(SwapStore); ok {
		claim := []byte(claimPrefix + now.UTC().Format(time.RFC3339Nano) + " " + t.tool.opts.replicaID())
		claimed, err := swap.CompareAndSwap(ctx, key, b, claim)
		if err == nil && !claimed {
			t.release(event, id)
			return true
		}
		if err == nil {
			log.mu.Lock()
			log.claims[key] = claim
			log.mu.Unlock()
		}
	}
	return false
}

// claimPrefix marks a delivery id that a replica is activating, not yet activated.
const claimPrefix = "claim "

// ClaimTimeout is how long a replica's claim on a delivery id holds off the same delivery at the other replicas
// sharing the Store (SPEC §9.2, §13): past it the claimant is taken for dead and a retry activates. A Sink that
// takes longer than this to accept can see a retry activated by another replica.
const ClaimTimeout = 5 * time.Minute

// unclaim removes the claim seen took in a shared Store on a delivery that did not activate, so that a retry
// activates it. Stores without compare-and-swap hold no claims.
func (t *Task) unclaim(ctx context.Context, event, id string) {
	store := t.tool.opts.store
	if _, ok := store.(SwapStore); !ok {
		return
	}
	key := t.dedupeKey(event, id)
	t.dedupe.mu.Lock()
	claim := t.dedupe.claims[key]
	delete(t.dedupe.claims, key)
	t.dedupe.mu.Unlock()
	if claim == nil {
		return
	}
	ctx, cancel := t.storeContext(ctx)
	defer cancel()
	if b, err := store.Get(ctx, key); err == nil && string(b) == string(claim) { // ours, not a later claimant's
		_ = store.Delete(ctx, key)
	}
}

// release ends the claim seen took on a delivery id.
func (t *Task) release(event, id string) {
	t.dedupe.mu.Lock()
	delete(t.dedupe.inflight, t.dedupeKey(event, id))
	t.dedupe.mu.Unlock()
}

// remember records that the event activated for delivery id, and forgets the ids older than the window.
func (t *Task) remember(ctx context.Context, event, id string) {
	now := t.tool.opts.clock.Now()
	key := t.dedupeKey(event, id)
	store := t.tool.opts.store
	ctx, cancel := t.storeContext(ctx)
	defer cancel()
	value := []byte(now.UTC().Format(time.RFC3339Nano))
	var err error
	if exp, ok := store.(ExpiringStore); ok {
		err = exp.PutTTL(ctx, key, value, t.tool.opts.limits.DedupeWindow)
	} else {
		err = store.Put(ctx, key, value)
	}
	if err != nil {
		t.tool.opts.logger.Warn("delivery id not recorded", "tool", t.tool.Name(), "task", t.id, "error", err)
	}
	log := &t.dedupe
	log.mu.Lock()
	delete(log.claims, key)
	log.entries = append(log.entries, dedupeEntry{key: key, at: now})
	n := 0
	for n < len(log.entries)-1 && now.Sub(log.entries[n].at) >= t.tool.opts.limits.DedupeWindow {
		n++
	}
	var old []string
	for _, e := range log.entries[:n] {
		if !slices.ContainsFunc(log.entries[n:], func(x dedupeEntry) bool { return x.key == e.key }) {
			old = append(old, e.key) // not re-recorded since
		}
	}
	log.entries = log.entries[n:]
	log.mu.Unlock()
	for _, k := range old {
		if err := store.Delete(ctx, k); err != nil && !errors.Is(err, ErrNotFound) {
			t.tool.opts.logger.Warn("old delivery id not deleted", "tool", t.tool.Name(), "task", t.id, "error", err)
		}
	}
}
