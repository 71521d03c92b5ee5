package tool

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The last step of a webhook's path: the prepared payload delivered to the tasks an index named, one after
// another, each through its own pipeline (event_deliver.go).

// taskSource brings the tasks an index named into memory. The tasks of the index in memory are there already
// (heldTasks); in store mode a bounded cache hydrates them from the Store (taskCache, router_task_cache.go).
type taskSource interface {
	// task returns the task ref names, kept in memory until release is called; ctx bounds bringing it into
	// memory. errSkip: the task is not to be visited.
	task(ctx context.Context, ref taskRef) (t *Task, release func(), err error)
}

// heldTasks is the taskSource of tasks held in memory: a ref holds its task.
type heldTasks struct{}

func (heldTasks) task(_ context.Context, ref taskRef) (*Task, func(), error) {
	if ref.task == nil {
		return nil, nil, fmt.Errorf("tool: router: task %s is not held", ref.id)
	}
	return ref.task, func() {}, nil
}

// dispatch delivers p to the tasks refs names, one after another, and returns a Delivery for each task it
// visited and the errors of the others.
//
// A context that ends mid-dispatch is no outcome for the tasks not yet visited: dispatch stops, and its error
// wraps ErrNotAccepted and ctx's cause, so that the sender is answered 503 and retries. A task that closed
// meanwhile is skipped.
//
// A task that cannot be brought into memory because of its stored state is handed to dead (when not nil) with
// the payload; if dead takes it, the task counts as handled, else its error makes the answer 503.
func dispatch(ctx context.Context, p *inbound, refs []taskRef, src taskSource,
	dead func(context.Context, string, *Inbound, error) error) ([]*Delivery, []error) {
	var out []*Delivery
	var errs []error
	next, stop := fetch(ctx, refs, src)
	defer stop()
	for i, ref := range refs {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("%w: %d of %d tasks not handled: %w", ErrNotAccepted, len(refs)-i,
				len(refs), context.Cause(ctx)))
			break
		}
		t, release, err := next()
		var herr *hydrationError
		switch {
		case errors.Is(err, errSkip):
			continue
		case errors.As(err, &herr) && dead != nil:
			if derr := dead(ctx, ref.id, p.in, herr.err); derr != nil {
				errs = append(errs, fmt.Errorf("%w (the dead letter refused it: %w)", err, derr))
			}
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		d, err := t.deliver(ctx, p)
		release()
		switch {
		case errors.Is(err, ErrClosed):
			continue
		case err != nil:
			errs = append(errs, err)
		}
		if d != nil {
			out = append(out, d)
		}
	}
	return out, errs
}

// hydrateAhead is how many of a webhook's tasks a Router in store mode brings into memory ahead of the one it
// delivers to: their Scans overlap, while the deliveries stay one after another in the index's order.
const hydrateAhead = 8

// fetch returns the tasks of refs from src one after another (next, called once per ref in order), and stop,
// which gives back those fetched and not taken. From the task cache, with more than one ref, it brings up to
// hydrateAhead tasks into memory ahead of the one taken, each lent (pinned) until the dispatch releases it.
func fetch(ctx context.Context, refs []taskRef, src taskSource) (next func() (*Task, func(), error), stop func()) {
	i := 0
	if _, cache := src.(*taskCache); !cache || len(refs) < 2 {
		return func() (*Task, func(), error) { i++; return src.task(ctx, refs[i-1]) }, func() {}
	}
	type fetched struct {
		t       *Task
		release func()
		err     error
	}
	slots := make([]chan fetched, len(refs))
	for j := range slots {
		slots[j] = make(chan fetched, 1)
	}
	ahead := make(chan struct{}, hydrateAhead) // a token per task fetched and not yet taken
	done := make(chan struct{})
	started := 0 // written by the producer only; read once it has ended
	var producer sync.WaitGroup
	producer.Go(func() {
		for j := range refs {
			select {
			case ahead <- struct{}{}:
			case <-done:
				return
			}
			started = j + 1
			go func() {
				t, release, err := src.task(ctx, refs[j])
				slots[j] <- fetched{t, release, err}
			}()
		}
	})
	next = func() (*Task, func(), error) {
		f := <-slots[i]
		i++
		<-ahead
		return f.t, f.release, f.err
	}
	stop = func() {
		close(done)
		producer.Wait()
		for j := i; j < started; j++ {
			if f := <-slots[j]; f.err == nil {
				f.release()
			}
		}
	}
	return next, stop
}

// toolWide is the Delivery of the discards decided for every task (signature, misconfiguration); nil when
// there are none.
func toolWide(p *inbound) *Delivery {
	var d *Delivery
	for i := range p.events {
		if pe := &p.events[i]; pe.tried && pe.reason != "" {
			if d == nil {
				d = &Delivery{}
			}
			d.Discarded = append(d.Discarded, Discard{Event: pe.ev.def.Name, Reason: pe.reason, Detail: pe.detail})
		}
	}
	return d
}

var _ taskSource = heldTasks{}
