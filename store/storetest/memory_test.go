package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}

// basic hides every optional upgrade of the Store it wraps, as a third party's minimal Store would: the suite
// runs its core subtests and skips the others.
type basic struct{ s store.Store }

func (b basic) Get(ctx context.Context, key string) ([]byte, error) { return b.s.Get(ctx, key) }
func (b basic) Put(ctx context.Context, key string, v []byte) error { return b.s.Put(ctx, key, v) }
func (b basic) Delete(ctx context.Context, key string) error        { return b.s.Delete(ctx, key) }
func (b basic) List(ctx context.Context, prefix string) ([]string, error) {
	return b.s.List(ctx, prefix)
}

func TestWrapperStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return basic{store.NewMemory()} })
}

// The suite must be able to fail: a Store that loses writes does not pass it. The test binary runs itself with
// the lossy store (os/exec's helper-process pattern) and must exit with the suite's failures.
func TestSuiteCatchesABrokenStore(t *testing.T) {
	if os.Getenv("STORETEST_LOSSY") == "1" {
		storetest.Run(t, func(*testing.T) store.Store { return &lossy{basic: basic{store.NewMemory()}} })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteCatchesABrokenStore$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STORETEST_LOSSY=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--- FAIL: TestSuiteCatchesABrokenStore/GetPutDelete") {
		t.Fatalf("the suite passed a Store that drops every other Put (%v):\n%s", err, out)
	}
}

// lossy drops every second Put.
type lossy struct {
	basic
	n atomic.Int64
}

func (l *lossy) Put(ctx context.Context, key string, v []byte) error {
	if l.n.Add(1)%2 == 0 {
		return nil
	}
	return l.basic.Put(ctx, key, v)
}
