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

	"github.com/commonagents-go/tool/store"
)

// dedupeLog remembers the delivery ids a task activated, in the Store under "deliveries/<hash>" (SPEC §9.2,
// §13), so replicas sharing the Store and a resumed task see them too. The in-memory log only knows what to
// prune once the dedupe window has passed, in a Store that does not expire records itself.
type dedupeLog struct {
	mu       sync.Mutex
	entries  []dedupeEntry     // oldest first; none in a store.ExpiringStore
	inflight map[string]bool   // keys being activated: a concurrent retry of the same delivery is a duplicate
	claims   map[string][]byte // keys this task claimed in a shared Store, with the claim written
}

// shrink drops the two maps once no delivery is in flight: a dormant task (store mode caches many) keeps none, and
// claim makes them again. Held: mu.
func (log *dedupeLog) shrink() {
	if len(log.inflight) == 0 && len(log.claims) == 0 {
		log.inflight, log.claims = nil, nil
	}
}

type dedupeEntry struct {
	key string
	at  time.Time
}

// dedupeKey is the state key of a delivery id for one event: hashed, since ids are the sender's text. It names
// the delivery in claim, unclaim, release and remember; a delivery computes it once.
func (e *taskEvents) dedupeKey(event, id string) string {
	sum := sha256.Sum256([]byte(event + "\x00" + id))
	return e.seam.stateKey(deliveriesDir + hex.EncodeToString(sum[:16]))
}

// deliveriesDir is the part of a task's state that holds its delivery ids' records.
const deliveriesDir = "deliveries/"

// claimOutcome is what claiming a delivery id found.
type claimOutcome int

const (
	claimTaken     claimOutcome = iota // the id is this attempt's to activate
	claimDuplicate                     // the event already activated for the id within the dedupe window
	claimInFlight                      // an attempt whose Sink has not accepted yet holds the id (here or at a replica)
)

// claim claims the delivery id of key (dedupeKey) until release, so that the same id arriving meanwhile — a sender
// retrying while a Sink still works on the first attempt, here or at another replica sharing the Store — is
// answered "in flight" (503: retry later), never "duplicate". An id already activated within the dedupe window
// is a duplicate. A Store failure is reported (store.failed) and counts as taken: a rare duplicate beats a lost
// event.
//
// Replicas share claims through the Store: a store.ClaimStore claims in one round trip, expiring on its own clock; a
// store.SwapStore by compare-and-swap, with claim times on this host's clock. A claim older than Limits.ClaimTimeout is a
// dead replica's, and the id is taken over.
func (e *taskEvents) claim(ctx context.Context, key string) claimOutcome {
	log := &e.dedupe
	log.mu.Lock()
	if log.inflight[key] {
		log.mu.Unlock()
		return claimInFlight
	}
	if log.inflight == nil {
		log.inflight, log.claims = map[string]bool{}, map[string][]byte{}
	}
	log.inflight[key] = true
	log.mu.Unlock()

	ctx, cancel := e.seam.storeContext(ctx) // a caller giving up must not make a replay look new
	defer cancel()
	now := e.tool.opts.clock.Now()
	value := []byte(claimPrefix + now.UTC().Format(time.RFC3339Nano) + " " + e.tool.opts.replicaID())
	out, claimed := e.claimIn(ctx, key, value, now)
	if out != claimTaken {
		e.release(key)
		return out
	}
	if claimed {
		log.mu.Lock()
		log.claims[key] = value
		log.mu.Unlock()
	}
	return claimTaken
}

// claimIn claims key in the Store with value; claimed reports whether the Store holds the claim (to be removed
// if the activation is refused).
func (e *taskEvents) claimIn(ctx context.Context, key string, value []byte, now time.Time) (out claimOutcome, claimed bool) {
	st := e.tool.opts.store
	if cs, ok := st.(store.ClaimStore); ok {
		ok, current, err := cs.Claim(ctx, key, value, e.tool.opts.limits.ClaimTimeout)
		switch {
		case err != nil:
			e.seam.storeFailed(ctx, "claim", recordDelivery, err)
			return claimTaken, false
		case ok:
			return claimTaken, true
		case strings.HasPrefix(string(current), claimPrefix):
			return claimInFlight, false
		}
		return claimDuplicate, false // a record lives as long as the dedupe window (PutTTL)
	}
	b, err := st.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
		b = nil
	case err != nil:
		e.seam.storeFailed(ctx, "read", recordDelivery, err)
		return claimTaken, false
	default:
		text, isClaim := strings.CutPrefix(string(b), claimPrefix)
		text, _, _ = strings.Cut(text, " ") // a claim is "claim <time> <replica>"
		at, perr := time.Parse(time.RFC3339Nano, text)
		switch {
		case isClaim && perr == nil && now.Sub(at) < e.tool.opts.limits.ClaimTimeout:
			return claimInFlight, false
		case !isClaim && perr == nil && now.Sub(at) < e.tool.opts.limits.DedupeWindow:
			return claimDuplicate, false
		}
		// An expired claim (its replica died) or record: taken over below.
	}
	swap, ok := st.(store.SwapStore)
	if !ok {
		return claimTaken, false // a Store no replicas share: the in-process claim is enough
	}
	ok, err = swap.CompareAndSwap(ctx, key, b, value)
	switch {
	case err != nil:
		e.seam.storeFailed(ctx, "claim", recordDelivery, err)
		return claimTaken, false
	case !ok:
		return claimInFlight, false // another replica claimed or recorded it just now: the sender's retry tells
	}
	return claimTaken, true
}

// claimPrefix marks a delivery id that a replica is activating, not yet activated.
const claimPrefix = "claim "

// defaultClaimTimeout is the default of Limits.ClaimTimeout: how long a replica's claim on a delivery id holds off
// the same delivery at the other replicas sharing the Store (SPEC §9.2, §13): meanwhile they answer the sender's retries 503 (in_flight); past it the
// claimant is taken for dead and the next retry activates. A Sink that takes longer than this to accept can see a
// retry activated by another replica. A store.ClaimStore measures it on its own clock.
const defaultClaimTimeout = 5 * time.Minute

// unclaim removes the claim that claim took in a shared Store on a delivery that did not activate, so that a retry
// activates it. Stores without compare-and-swap hold no claims.
func (e *taskEvents) unclaim(ctx context.Context, key string) {
	st := e.tool.opts.store
	e.dedupe.mu.Lock()
	claim := e.dedupe.claims[key]
	delete(e.dedupe.claims, key)
	e.dedupe.shrink()
	e.dedupe.mu.Unlock()
	if claim == nil {
		return
	}
	ctx, cancel := e.settleContext(ctx)
	defer cancel()
	b, err := st.Get(ctx, key)
	if err == nil && string(b) == string(claim) { // ours, not a later claimant's
		err = st.Delete(ctx, key)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		e.seam.storeFailed(ctx, "delete", recordDelivery, err) // the claim holds off retries until Limits.ClaimTimeout
	}
}

// settleContext bounds the Store calls that settle a claim (unclaim, remember): the store context of ctx, or
// one of their own once ctx's deadline has passed. A Sink that accepted after the caller's deadline, or an
// activation that did not happen because of it, must still reach the Store: a claim left in place holds off the
// sender's retry until Limits.ClaimTimeout.
func (e *taskEvents) settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := e.seam.storeContext(ctx)
	if sctx.Err() == nil {
		return sctx, cancel
	}
	cancel()
	return context.WithTimeout(context.WithoutCancel(ctx), e.tool.opts.limits.CallTimeout)
}

// release ends the in-process claim that claim took on a delivery id.
func (e *taskEvents) release(key string) {
	e.dedupe.mu.Lock()
	delete(e.dedupe.inflight, key)
	e.dedupe.shrink()
	e.dedupe.mu.Unlock()
}

// remember records that the event activated for delivery id. In a Store that does not expire what it holds
// (store.ExpiringStore), it deletes the records older than the window, which it keeps in memory to know them. With
// activity (noteActivity said the task's last activity is due to be written) it writes the event state too: in
// the same Store call when the Store is a store.BatchStore, so that a delivery costs one write either way.
func (e *taskEvents) remember(ctx context.Context, key string, activity bool) {
	now := e.tool.opts.clock.Now()
	st := e.tool.opts.store
	ctx, cancel := e.settleContext(ctx)
	defer cancel()
	value := []byte(now.UTC().Format(time.RFC3339Nano))
	exp, expiring := st.(store.ExpiringStore)
	var err error
	switch bs, batch := st.(store.BatchStore); {
	case activity && batch:
		w := store.Write{Key: key, Value: value}
		if expiring {
			w.TTL = e.tool.opts.limits.DedupeWindow
		}
		err = e.saveWith(ctx, bs, w)
		activity = false
	case expiring:
		err = exp.PutTTL(ctx, key, value, e.tool.opts.limits.DedupeWindow)
	default:
		err = st.Put(ctx, key, value)
	}
	if err != nil {
		e.seam.storeFailed(ctx, "write", recordDelivery, err) // a retry within the window activates again
	}
	if activity {
		_ = e.save(ctx)
	}
	log := &e.dedupe
	log.mu.Lock()
	delete(log.claims, key)
	log.shrink()
	if expiring { // the Store forgets the record after the window: a task that takes many deliveries keeps none
		log.mu.Unlock()
		return
	}
	log.entries = append(log.entries, dedupeEntry{key: key, at: now})
	n := 0
	for n < len(log.entries)-1 && now.Sub(log.entries[n].at) >= e.tool.opts.limits.DedupeWindow {
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
		if err := st.Delete(ctx, k); err != nil && !errors.Is(err, ErrNotFound) {
			e.seam.storeFailed(ctx, "delete", recordDelivery, err)
		}
	}
}
