package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
)

// TestScan: Scan returns the live keys under a prefix with their values, sorted bytewise, in one range scan:
// neither keys beside the prefix nor expired ones.
func TestScan(t *testing.T) {
	s := open(t, newSchema(t))
	ctx := context.Background()
	for k, v := range map[string]string{"a/2": "two", "a/1": "one", "a/\xff": "high", "a": "bare", "b/1": "other"} {
		if err := s.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutTTL(ctx, "a/3", []byte("gone"), time.Microsecond); err != nil {
		t.Fatal(err)
	}
	got, err := s.Scan(ctx, "a/")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Entry{{Key: "a/1", Value: []byte("one")}, {Key: "a/2", Value: []byte("two")},
		{Key: "a/\xff", Value: []byte("high")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan(a/) = %q, want %q", got, want)
	}
	if all, err := s.Scan(ctx, ""); err != nil || len(all) != 5 {
		t.Errorf("Scan(\"\") = %d entries, %v; want 5", len(all), err)
	}
}

// TestResumeTasksOnPostgres: a fresh process resumes every stored task of a tool from one Scan.
func TestResumeTasksOnPostgres(t *testing.T) {
	store := open(t, newSchema(t))
	ctx := context.Background()
	load := func() *tool.Tool {
		tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(store), tool.WithSettings(map[string]any{"secret": "s"}))
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	cfg := tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
	want := map[string]map[string][]string{}
	for _, id := range []string{"x1", "x2", "x3"} {
		c := cfg
		c.ID = id
		task, err := load().NewTask(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := task.Invoke(ctx, "tag", map[string]any{"label": "l-" + id}); err != nil {
			t.Fatal(err)
		}
		want[id] = task.AllowList()
		if err := task.Detach(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := load().RestoreTasks(ctx, func(string) (tool.TaskConfig, bool) { return cfg, true })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string][]string{}
	for _, task := range tasks {
		got[task.ID()] = task.AllowList()
		if err := task.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resumed %v, want %v", got, want)
	}
	if left, err := store.Scan(ctx, "tasks/"); err != nil || len(left) != 0 {
		t.Errorf("after Close the store holds %d keys (%v)", len(left), err)
	}
}
