package tool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
)

// hangingStore's Put blocks until its ctx ends (a stuck database connection), after the first Put (NewTask).
type hangingStore struct {
	tool.Store
	puts atomic.Int32
}

func (s *hangingStore) Put(ctx context.Context, k string, v []byte) error {
	if s.puts.Add(1) > 1 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * time.Second):
		}
	}
	return s.Store.Put(ctx, k, v)
}

// Regression: persisting the allow list ignores the caller's deadline: Invoke with a 50ms ctx blocks on the Store.
func TestRegressionAllowListPersistIgnoresCtx(t *testing.T) {
	st := &hangingStore{Store: tool.NewMemoryStore()}
	task := newTask(t, loadProbe(t, &probe{}, tool.WithStore(st)), tool.TaskConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := task.Invoke(ctx, "read", map[string]any{"count": 7})
	if d := time.Since(start); d > time.Second {
		t.Errorf("Invoke with a 50ms deadline took %v (err %v): the Store write ignores ctx", d, err)
	}
}
