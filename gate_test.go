package tool

import (
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A queued writer goes before readers that come after it, and a writer that gives up wakes the readers it held
// back. synctest orders the steps: Wait returns once every goroutine of the bubble is blocked.
func TestGateWritersGoFirstAndCancelledWaitersLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g gate
		if err := g.acquire(context.Background(), nil, true); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithCancel(context.Background())
		werr := make(chan error, 1)
		go func() { werr <- g.acquire(wctx, nil, false) }()
		synctest.Wait() // the writer is queued behind the reader
		rgot := make(chan error, 1)
		go func() { rgot <- g.acquire(context.Background(), nil, true) }()
		synctest.Wait() // the new reader is blocked, or got in
		select {
		case <-rgot:
			t.Fatal("a reader overtook a queued writer")
		default:
		}
		wcancel()
		if err := <-werr; err == nil {
			t.Fatal("cancelled writer acquired")
		}
		synctest.Wait()
		select {
		case err := <-rgot:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("reader not woken after the queued writer gave up (lost wakeup)")
		}
		g.release(true)
		g.release(true)
		if g.readers != 0 || g.writer || g.waiting != 0 {
			t.Fatalf("state readers=%d writer=%v waiting=%d", g.readers, g.writer, g.waiting)
		}
	})
}

func TestGateHoldsItsInvariantUnderStress(t *testing.T) {
	var g gate
	var readers, writers atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(i)))
			for j := 0; j < 300; j++ {
				shared := r.Intn(3) != 0
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.Intn(300))*time.Microsecond)
				if err := g.acquire(ctx, nil, shared); err != nil {
					cancel()
					continue
				}
				if shared {
					readers.Add(1)
					if writers.Load() != 0 {
						t.Error("reader with writer")
					}
				} else {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						t.Error("writer not alone")
					}
				}
				time.Sleep(time.Duration(r.Intn(50)) * time.Microsecond)
				if shared {
					readers.Add(-1)
				} else {
					writers.Add(-1)
				}
				g.release(shared)
				cancel()
			}
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("deadlock")
	}
	if g.readers != 0 || g.writer || g.waiting != 0 || g.changed != nil {
		t.Fatalf("final state readers=%d writer=%v waiting=%d", g.readers, g.writer, g.waiting)
	}
}
