package tool_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
)

// resumeManifest binds a repository and has an action that adds labels to the allow list.
const resumeManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: hooks
description: A webhook and an action that grows the allow list.
parameters:
  properties:
    repo: {type: string, require_binding: true}
    label: {type: string}
actions:
  - name: tag
    description: Tags the task.
    parameters:
      properties:
        label: {type: string}
    execute:
      cel:
        expression: "input.label"
events:
  - name: pushed
    description: A push.
    message: "push to {event.payload.ref}"
    receive:
      webhook:
        filter: "event.payload.repository.full_name == parameters.repo"
`

// countingStore counts the reads and writes that reach a Store; it offers Scan only when scan is set.
type countingStore struct {
	tool.Store
	scan                     bool
	gets, lists, puts, scans atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) List(ctx context.Context, prefix string) ([]string, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, prefix)
}

func (s *countingStore) Put(ctx context.Context, key string, value []byte) error {
	s.puts.Add(1)
	return s.Store.Put(ctx, key, value)
}

// scanning is a countingStore that is a ScanStore.
type scanning struct{ *countingStore }

func (s scanning) Scan(ctx context.Context, prefix string) ([]store.Entry, error) {
	s.scans.Add(1)
	return s.Store.(store.ScanStore).Scan(ctx, prefix)
}

// storeTasks starts n tasks of resumeManifest on store, tags each, and detaches them; it returns their allow lists.
func storeTasks(t *testing.T, store tool.Store, n int) map[string]map[string][]string {
	t.Helper()
	ctx := context.Background()
	tl, err := tool.Load(ctx, []byte(resumeManifest), tool.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string]map[string][]string{}
	for i := range n {
		id := fmt.Sprintf("task%02d", i)
		task, err := tl.NewTask(ctx, resumeConfig(id))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := task.Invoke(ctx, "tag", map[string]any{"label": "l" + id}); err != nil {
			t.Fatal(err)
		}
		lists[id] = task.AllowList()
		if err := task.Detach(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return lists
}

func resumeConfig(id string) tool.TaskConfig {
	return tool.TaskConfig{ID: id, Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
}

// TestResumeTasksReadsOnce: RestoreTasks resumes every stored task of the tool with its allow list, from one Scan
// of a ScanStore and without writing, and one by one from another Store; a task the host declines stays stored,
// and one that fails to resume does not stop the others.
func TestResumeTasksReadsOnce(t *testing.T) {
	for _, withScan := range []bool{true, false} {
		t.Run(fmt.Sprintf("scan=%v", withScan), func(t *testing.T) {
			ctx := context.Background()
			counted := &countingStore{Store: tool.NewMemoryStore()}
			var store tool.Store = counted
			if withScan {
				store = scanning{counted}
			}
			want := storeTasks(t, store, 12)
			tl, err := tool.Load(ctx, []byte(resumeManifest), tool.WithStore(store))
			if err != nil {
				t.Fatal(err)
			}
			counted.gets.Store(0)
			counted.lists.Store(0)
			counted.puts.Store(0)
			var offered []string
			tasks, err := tl.RestoreTasks(ctx, func(id string) (tool.TaskConfig, bool) {
				offered = append(offered, id)
				switch id {
				case "task03":
					return tool.TaskConfig{}, false
				case "task04": // the required binding is missing
					return tool.TaskConfig{}, true
				}
				return resumeConfig("ignored"), true
			})
			var verr *tool.ValidationError
			if !errors.As(err, &verr) {
				t.Errorf("err = %v, want task04's missing binding", err)
			}
			if len(offered) != 12 || !slices.IsSorted(offered) {
				t.Errorf("configure was asked for %v, want the 12 stored tasks in order", offered)
			}
			if withScan {
				if n := counted.scans.Load(); n != 1 {
					t.Errorf("%d scans, want 1", n)
				}
				if g, l, p := counted.gets.Load(), counted.lists.Load(), counted.puts.Load(); g+l+p != 0 {
					t.Errorf("resuming from a scan made %d gets, %d lists and %d puts, want none", g, l, p)
				}
			} else if counted.gets.Load() < 11 {
				t.Errorf("%d gets: without Scan each task reads its state", counted.gets.Load())
			}
			got := map[string]map[string][]string{}
			for _, task := range tasks {
				got[task.ID()] = task.AllowList()
				if err := task.Detach(ctx); err != nil {
					t.Fatal(err)
				}
			}
			delete(want, "task03")
			delete(want, "task04")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("resumed allow lists = %v\nwant %v", got, want)
			}
			// The declined task is still stored: RestoreTask finds it.
			task, err := tl.RestoreTask(ctx, resumeConfig("task03"))
			if err != nil {
				t.Fatal(err)
			}
			_ = task.Close(ctx)
		})
	}
}

// TestRestoreTasksWritesBackWhatChanged: RestoreTasks writes a task's allow list back only when restoring changed
// it — here a binding that now seals another repository (the stored sealed value is dropped) — and leaves the
// others as stored.
func TestRestoreTasksWritesBackWhatChanged(t *testing.T) {
	ctx := context.Background()
	counted := &countingStore{Store: tool.NewMemoryStore()}
	store := scanning{counted}
	storeTasks(t, store, 3)
	stored := func(id string) string {
		b, err := store.Get(ctx, "tasks/tests/hooks/"+id+"/allowlist")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := map[string]string{}
	for _, id := range []string{"task00", "task01", "task02"} {
		before[id] = stored(id)
	}
	tl, err := tool.Load(ctx, []byte(resumeManifest), tool.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	counted.puts.Store(0)
	tasks, err := tl.RestoreTasks(ctx, func(id string) (tool.TaskConfig, bool) {
		cfg := resumeConfig(id)
		if id == "task01" {
			cfg.Capability.Bindings = map[string]any{"repo": "o/moved"}
		}
		return cfg, true
	})
	if err != nil || len(tasks) != 3 {
		t.Fatalf("RestoreTasks: %d tasks, %v", len(tasks), err)
	}
	if n := counted.puts.Load(); n != 1 {
		t.Errorf("%d puts, want 1: only task01's allow list changed", n)
	}
	for id, old := range before {
		now := stored(id)
		switch {
		case id != "task01" && now != old:
			t.Errorf("%s: stored allow list rewritten from %s to %s", id, old, now)
		case id == "task01" && (!strings.Contains(now, `"o/moved"`) || strings.Contains(now, `"o/r"`) || !strings.Contains(now, `"ltask01"`)):
			t.Errorf("task01: stored allow list %s, want the new sealed repo and the tag, without the old repo", now)
		}
	}
	for _, task := range tasks {
		_ = task.Detach(ctx)
	}
}
