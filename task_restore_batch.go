package tool

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/commonagents-go/tool/store"
)

// RestoreTasks restores every task of the tool that the Store holds, as RestoreTask restores one (SPEC §13): for each
// stored task ID, in order, configure returns the configuration to restore it with (its ID field is ignored), or
// false to leave the task stored and not restore it; it is called from the calling goroutine, then the tasks are
// rebuilt on GOMAXPROCS goroutines. With a store.ScanStore the state of all the tasks is read with one
// Scan and a task whose stored allow list is unchanged is not written back, so restoring costs one range scan and
// the CPU to rebuild the tasks; with another Store each task is restored by RestoreTask. Task IDs that contain "/"
// are not found: restore those with RestoreTask.
//
// It returns the tasks it restored, in ID order, and an error joining, for each task that failed to restore, RestoreTask's error
// (which names the task); the other tasks are restored all the same. A failed Scan or List restores nothing. ctx
// bounds the reads and each task's start, as it bounds RestoreTask.
func (t *Tool) RestoreTasks(ctx context.Context, configure func(id string) (TaskConfig, bool)) ([]*Task, error) {
	prefix := "tasks/" + t.Namespace() + "/" + t.Name() + "/"
	var snaps []*stateSnapshot
	if scan, ok := t.opts.store.(store.ScanStore); ok {
		entries, err := scan.Scan(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("tool: restore tasks: %w", err)
		}
		snaps = groupSnapshots(prefix, entries)
	} else {
		keys, err := t.opts.store.List(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("tool: restore tasks: %w", err)
		}
		for _, key := range keys {
			if id, ok := strings.CutSuffix(strings.TrimPrefix(key, prefix), "/allowlist"); ok && !strings.Contains(id, "/") {
				snaps = append(snaps, &stateSnapshot{id: id}) // no state: RestoreTask reads it
			}
		}
	}
	type job struct {
		cfg  TaskConfig
		snap *stateSnapshot
	}
	var jobs []job
	for _, snap := range snaps {
		cfg, ok := configure(snap.id)
		if !ok {
			continue
		}
		cfg.ID = snap.id
		if snap.parts == nil {
			snap = nil
		}
		jobs = append(jobs, job{cfg, snap})
	}
	// Rebuilding a task is CPU work once its state is read: spread it over the processors.
	tasks, errs := make([]*Task, len(jobs)), make([]error, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(jobs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				tasks[i], errs[i] = t.startTask(ctx, jobs[i].cfg, true, jobs[i].snap)
				errs[i] = t.startFailed(jobs[i].cfg, errs[i])
			}
		})
	}
	wg.Wait()
	tasks = slices.DeleteFunc(tasks, func(task *Task) bool { return task == nil })
	return tasks, errors.Join(errs...)
}

// stateSnapshot is a task's stored state read ahead by RestoreTasks: its parts (the keys without the task's
// prefix) and their values, sorted. A task resumed from it reads its state there instead of from the Store.
type stateSnapshot struct {
	id    string
	parts []store.Entry
}

// groupSnapshots splits the entries of a tool's tasks, sorted, by task ID; tasks without an allow list (state a
// Close left behind) are left out.
func groupSnapshots(prefix string, entries []store.Entry) []*stateSnapshot {
	var out []*stateSnapshot
	var cur *stateSnapshot
	for _, e := range entries {
		id, part, ok := strings.Cut(strings.TrimPrefix(e.Key, prefix), "/")
		if !ok {
			continue
		}
		if cur == nil || cur.id != id {
			cur = &stateSnapshot{id: id}
			out = append(out, cur)
		}
		cur.parts = append(cur.parts, store.Entry{Key: part, Value: e.Value})
	}
	return slices.DeleteFunc(out, func(s *stateSnapshot) bool { _, ok := s.get("allowlist"); return !ok })
}

// get returns part's value.
func (s *stateSnapshot) get(part string) ([]byte, bool) {
	i, ok := slices.BinarySearchFunc(s.parts, part, func(e store.Entry, p string) int { return strings.Compare(e.Key, p) })
	if !ok {
		return nil, false
	}
	return s.parts[i].Value, true
}

// readState returns the stored value of the task's state part (ErrNotFound when absent): from the snapshot the
// task is being resumed from, else from the Store.
func (t *Task) readState(ctx context.Context, part string) ([]byte, error) {
	if t.snap == nil {
		return t.tool.opts.store.Get(ctx, t.stateKey(part))
	}
	if v, ok := t.snap.get(part); ok {
		return v, nil
	}
	return nil, ErrNotFound
}

// listState returns the names under the task's state part dir ("receivers/": the key's rest), sorted: from the
// snapshot the task is being resumed from, else from the Store.
func (t *Task) listState(ctx context.Context, dir string) ([]string, error) {
	var names []string
	if t.snap == nil {
		prefix := t.stateKey(dir)
		keys, err := t.tool.opts.store.List(ctx, prefix)
		for _, key := range keys {
			names = append(names, strings.TrimPrefix(key, prefix))
		}
		return names, err
	}
	for _, e := range t.snap.parts {
		if name, ok := strings.CutPrefix(e.Key, dir); ok {
			names = append(names, name)
		}
	}
	return names, nil
}

// unchanged reports whether the task, resumed from a snapshot, holds exactly the stored value of part, which then
// needs no writing back; current encodes the task's value.
func (t *Task) unchanged(part string, current func() ([]byte, error)) bool {
	if t.snap == nil {
		return false
	}
	stored, ok := t.snap.get(part)
	now, err := current()
	return ok && err == nil && string(now) == string(stored)
}
