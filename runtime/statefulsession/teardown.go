package statefulsession

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/statelesshttp"
)

// Teardown destroys every session the task created, and every session recorded by an earlier process whose key an
// action of this instance uses, in parallel: each destroy is bounded by its action's timeout and all by ctx. It
// waits for creates still running until ctx ends; a create that finishes after that destroys its own session.
// It runs once; later calls return the first call's result.
//
// Each outcome is reported as a "session.destroyed" or "session.destroy_failed" fact (session key, status, error
// kind; never a session value). Failures are also returned, joined; a failed session stays recorded in the state.
func (i *instance) Teardown(ctx context.Context) error {
	i.once.Do(func() { i.teardownErr = i.teardown(ctx) })
	return i.teardownErr
}

func (i *instance) teardown(ctx context.Context) error {
	i.mu.Lock()
	i.closed = true
	todo := make([]*session, 0, len(i.sessions)+len(i.leftovers))
	for _, s := range i.sessions {
		todo = append(todo, s)
	}
	sort.Slice(todo, func(a, b int) bool { return todo[a].key < todo[b].key })
	todo = append(todo, i.leftovers...)
	i.mu.Unlock()

	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for n, s := range todo {
		wg.Go(func() { errs[n] = i.end(ctx, s) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// end destroys s once its create, if one runs, has finished.
func (i *instance) end(ctx context.Context, s *session) error {
	i.mu.Lock()
	wait := s.pending
	i.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	i.mu.Lock()
	switch {
	case s.pending != nil:
		s.orphan = true
		i.mu.Unlock()
		i.observe(ctx, facts.SessionDestroyFailed, map[string]any{"session": s.key, "error": "still_creating"})
		return fmt.Errorf("stateful_session: session %s was still being created when teardown ended; "+
			"it is destroyed when its create finishes", s.key)
	case !s.ready || s.claimed:
		i.mu.Unlock()
		return nil
	case s.act == nil:
		i.mu.Unlock()
		i.observe(ctx, facts.SessionDestroyFailed, map[string]any{"session": s.key, "recorded": true,
			"error": "unknown_action"})
		return fmt.Errorf("stateful_session: session %s, recorded before a restart, is used by no action this "+
			"task ran, so its destroy request is unknown", s.key)
	}
	s.claimed = true
	i.mu.Unlock()
	return i.destroy(ctx, s)
}

// destroy sends s's destroy request, if it has one, and removes s from the state when that succeeds.
func (i *instance) destroy(ctx context.Context, s *session) error {
	if s.act.Destroy == nil {
		i.forget(ctx, s)
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, statelesshttp.CallTimeout(s.act.Timeout, i.limits))
	defer cancel()
	req, err := s.act.Destroy.Build(dctx, withSession{s.values, s.render})
	var resp *httpspec.Response
	if err == nil {
		resp, err = httpspec.Do(dctx, i.client, req, i.limits.ResponseBytes)
	}
	if err != nil {
		fact := map[string]any{"session": s.key, "error": kind(err)}
		if resp != nil {
			fact["status"] = resp.Status
		}
		i.observe(ctx, facts.SessionDestroyFailed, fact)
		return fmt.Errorf("stateful_session: destroying session %s: %w", s.key, err)
	}
	i.forget(ctx, s)
	i.observe(ctx, facts.SessionDestroyed, map[string]any{"session": s.key, "status": resp.Status})
	return nil
}

// kind names a failure for facts: a recoverable error's kind, "cancelled" or "unrecoverable".
func kind(err error) string {
	if rerr := httpspec.Recoverable(err); rerr != nil {
		return rerr.Kind
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	return "unrecoverable"
}

// forget marks s destroyed and saves the state without it.
func (i *instance) forget(ctx context.Context, s *session) {
	i.mu.Lock()
	s.gone = true
	i.mu.Unlock()
	i.save(ctx)
}

// save writes the sessions still to destroy to the task state, bounded by ctx and the teardown timeout. A failure
// is logged: the session works, only a restart could leak it.
func (i *instance) save(ctx context.Context) {
	i.saveMu.Lock()
	defer i.saveMu.Unlock()
	i.mu.Lock()
	recs := i.records()
	i.mu.Unlock()
	data, err := encodeState(recs)
	if err == nil {
		sctx, cancel := context.WithTimeout(ctx, i.teardownTimeout())
		err = i.state.Save(sctx, data)
		cancel()
	}
	if err != nil {
		i.logger.Warn("stateful_session: saving task state failed; a host restart could leak sessions", "error", err)
	}
}

// records lists the sessions still to destroy, created ones by key, then leftovers. i.mu is held.
func (i *instance) records() []record {
	var recs []record
	for _, s := range i.sessions {
		if s.ready && !s.gone {
			recs = append(recs, record{Key: s.key, CreatedAt: s.created, Values: s.values})
		}
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].Key < recs[b].Key })
	for _, s := range i.leftovers {
		if !s.gone {
			recs = append(recs, record{Key: s.key, CreatedAt: s.created, Values: s.values})
		}
	}
	return recs
}

// DestroyRecorded destroys the sessions that in.State records, without creating any: it is for a task resumed
// after a host restart (SPEC §7.4, §13) that will not Initialize this backend. Each record is destroyed with the
// destroy request of the action in actions whose Session is the record's key, rendered with in.Values for the
// roots other than session (the creating call's parameters are not recorded, so a destroy using them sees null);
// in.Action is ignored. Facts, errors and state updates are as for Teardown; ctx bounds the whole.
func DestroyRecorded(ctx context.Context, in *runtime.Init, actions []runtime.Action) error {
	i, err := newInstance(ctx, in)
	if err != nil {
		return err
	}
	i.mu.Lock()
	for _, a := range actions {
		if act, ok := a.(*Action); ok {
			i.adopt(act, in.Values)
		}
	}
	i.mu.Unlock()
	return i.Teardown(ctx)
}

// Detach ends the instance without destroying its sessions: they stay recorded in the task state, for the process
// that resumes the task (Task.Detach). Later calls fail as after Teardown.
func (i *instance) Detach(context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.closed = true
	return nil
}

var _ runtime.Detacher = (*instance)(nil)
