package tool_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/storetest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tool.NewMemoryStore()
	for _, k := range []string{"tasks/b/2", "tasks/a/1", "tasks/b/1", "tasks/ab", "other", "tasks/b/1"} {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string) []string {
		keys, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if got, want := list("tasks/b/"), []string{"tasks/b/1", "tasks/b/2"}; !slices.Equal(got, want) {
		t.Errorf("List(tasks/b/) = %v, want %v", got, want)
	}
	if got, want := list("tasks/a"), []string{"tasks/a/1", "tasks/ab"}; !slices.Equal(got, want) {
		t.Errorf("List(tasks/a) = %v, want %v", got, want)
	}
	if got := list(""); len(got) != 5 || !slices.IsSorted(got) {
		t.Errorf("List() = %v, want the 5 keys sorted", got)
	}
	if err := s.Delete(ctx, "tasks/b/1"); err != nil {
		t.Fatal(err)
	}
	_ = s.Delete(ctx, "absent")
	if got, want := list("tasks/b"), []string{"tasks/b/2"}; !slices.Equal(got, want) {
		t.Errorf("after Delete: %v, want %v", got, want)
	}
	if _, err := s.Get(ctx, "tasks/b/1"); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Get(deleted) = %v, want ErrNotFound", err)
	}
	v, _ := s.Get(ctx, "tasks/ab")
	v[0] = 'X' // the store keeps its own copy
	if again, _ := s.Get(ctx, "tasks/ab"); string(again) != "tasks/ab" {
		t.Errorf("stored value changed through a returned slice: %q", again)
	}
}

// The root's constructor is the leaf package's memory store, and passes the suite every Store passes.
func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) tool.Store { return tool.NewMemoryStore() })
}
