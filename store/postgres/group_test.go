package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeCall is a call of a test group: its keys, and the statement that ran it.
type fakeCall struct {
	keys      []string
	statement int
}

// fakeGroup is a group of one lane whose statements the test holds: each waits for a value on release (an error
// to fail with, or nil), and records the calls it carried.
type fakeGroup struct {
	g       *group[*fakeCall]
	release chan error
	mu      sync.Mutex
	ran     [][]*fakeCall // the calls of each statement, in order
	ctxs    []context.Context
	onStart func(n int) // called as statement n (1-based) starts, before it waits (nil: nothing)
}

func newFakeGroup(wait time.Duration) *fakeGroup {
	f := &fakeGroup{release: make(chan error)}
	run := func(ctx context.Context, calls []*fakeCall) error {
		f.mu.Lock()
		f.ran = append(f.ran, calls)
		f.ctxs = append(f.ctxs, ctx)
		n := len(f.ran)
		for _, c := range calls {
			c.statement = n
		}
		f.mu.Unlock()
		if f.onStart != nil {
			f.onStart(n)
		}
		return <-f.release
	}
	f.g = &group[*fakeCall]{lanes: 1, wait: wait,
		one:  func(ctx context.Context, c *fakeCall) error { return run(ctx, []*fakeCall{c}) },
		many: run,
		keys: func(c *fakeCall, yield func(string) bool) bool {
			for _, k := range c.keys {
				if !yield(k) {
					return false
				}
			}
			return true
		}}
	return f
}

// succeedingGroup is a fakeGroup whose first eight statements succeed at once, without the test's hand.
func succeedingGroup() *fakeGroup {
	f := newFakeGroup(0)
	f.release = make(chan error, 8)
	for range cap(f.release) {
		f.release <- nil
	}
	return f
}

// heldGroup is a fakeGroup of acquire bound wait whose lane a first call, of no key, holds in its statement; that
// call's answer arrives on the channel returned. It runs in a synctest bubble.
func heldGroup(wait time.Duration) (*fakeGroup, <-chan error) {
	f := newFakeGroup(wait)
	_, out := f.start(context.Background())
	synctest.Wait()
	return f, out
}

// start runs a call of keys in its own goroutine; its answer arrives on the channel returned.
func (f *fakeGroup) start(ctx context.Context, keys ...string) (*fakeCall, <-chan error) {
	c, out := &fakeCall{keys: keys}, make(chan error, 1)
	go func() { out <- f.g.do(ctx, c) }()
	return c, out
}

func (f *fakeGroup) statements() [][]*fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ran)
}

// A call that finds the lane free runs alone at once; the calls that arrive while it runs wait, then share one
// statement, except one writing a key another of them writes, which runs in the statement after.
func TestGroupTakesTheWaitingCallsInOneStatement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeGroup(0)
		ctx := context.Background()
		first, firstOut := f.start(ctx, "a")
		synctest.Wait()
		var waiting []*fakeCall
		var outs []<-chan error
		for _, keys := range [][]string{{"b"}, {"c", "d"}, {"b"}, {}, {"e"}} {
			c, out := f.start(ctx, keys...)
			synctest.Wait() // queued in this order
			waiting, outs = append(waiting, c), append(outs, out)
		}
		if got := f.statements(); len(got) != 1 {
			t.Fatalf("%d statements while the first runs, want 1", len(got))
		}
		f.release <- nil
		if err := <-firstOut; err != nil || first.statement != 1 {
			t.Fatalf("the first call: %v, statement %d", err, first.statement)
		}
		synctest.Wait()
		f.release <- nil // the waiting calls but the second "b"
		synctest.Wait()
		f.release <- nil // the second "b", alone
		for i, out := range outs {
			if err := <-out; err != nil {
				t.Errorf("waiting call %d: %v", i, err)
			}
		}
		got := f.statements()
		want := [][]*fakeCall{{first}, {waiting[0], waiting[1], waiting[3], waiting[4]}, {waiting[2]}}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("statements %v, want %v", got, want)
		}
	})
}

// Calls made ready together share a statement. A call that finds the lane free lets the callers ready to run call
// first; a lane whose statement ended lets the callers it answered call again before it takes the calls that
// waited meanwhile. Three deliveries of two calls each (a claim, then its record) and a call that arrives during
// the first statement take two statements; without either yield, three. The group yields with
// runtime.Gosched; here with untilOthersBlock, which lets them run until they block.
func TestGroupLetsReadyCallersCallFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := succeedingGroup()
		f.g.yield = untilOthersBlock
		ctx := context.Background()
		var late *fakeCall
		var lateOut <-chan error
		f.onStart = func(n int) {
			if n == 1 {
				late, lateOut = f.start(ctx, "late")
				untilOthersBlock() // queued while the statement runs
			}
		}
		var claims, records []*fakeCall
		var wg sync.WaitGroup
		for i := range 3 {
			claim, record := &fakeCall{keys: []string{fmt.Sprint("claim", i)}}, &fakeCall{keys: []string{fmt.Sprint("record", i)}}
			claims, records = append(claims, claim), append(records, record)
			wg.Go(func() {
				if err := f.g.do(ctx, claim); err != nil {
					t.Error(err)
				}
				if err := f.g.do(ctx, record); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if err := <-lateOut; err != nil {
			t.Fatal(err)
		}
		untilOthersBlock() // the lane's last yield, after which it finds no call and is freed
		synctest.Wait()
		if f.g.busy != 0 {
			t.Errorf("%d lanes busy after the last statement", f.g.busy)
		}
		byKey := func(a, b *fakeCall) int { return strings.Compare(a.keys[0], b.keys[0]) }
		got := f.statements()
		for _, s := range got {
			slices.SortFunc(s, byKey)
		}
		want := [][]*fakeCall{claims, slices.SortedFunc(slices.Values(append([]*fakeCall{late}, records...)), byKey)}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("statements %s, want %s", keysOf(got), keysOf(want))
		}
	})
}

// A call whose ctx has ended by the time it would take the calls that queued behind it, as it let ready callers go
// first, never runs: it is answered ctx's error, and they run without it.
func TestGroupCallerGoneBeforeItsStatement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := succeedingGroup()
		ctx, cancel := context.WithCancel(context.Background())
		var other *fakeCall
		var otherOut <-chan error
		first := true // read and written by the lane's holders only, one after the other
		f.g.yield = func() {
			if first {
				first = false
				other, otherOut = f.start(context.Background(), "other")
				cancel()
			}
			untilOthersBlock()
		}
		gone := &fakeCall{keys: []string{"gone"}}
		if err := f.g.do(ctx, gone); !errors.Is(err, context.Canceled) {
			t.Errorf("the call whose ctx ended: %v, want %v", err, context.Canceled)
		}
		if err := <-otherOut; err != nil {
			t.Errorf("the call queued behind it: %v", err)
		}
		untilOthersBlock() // the lane's last yield
		synctest.Wait()
		if got := keysOf(f.statements()); !slices.EqualFunc(got, [][]string{{"other"}}, slices.Equal) || gone.statement != 0 || other.statement != 1 {
			t.Errorf("statements %v; want the queued call alone", got)
		}
		if f.g.busy != 0 {
			t.Errorf("%d lanes busy after the last statement", f.g.busy)
		}
	})
}

// untilOthersBlock returns once every other goroutine of the synctest bubble it runs in is durably blocked: a
// nanosecond's sleep on the bubble's fake clock, which advances only then. It measures no real time, so a loaded
// machine changes nothing; unlike synctest.Wait, several goroutines may call it at once.
func untilOthersBlock() { time.Sleep(time.Nanosecond) }

// keysOf names each statement's calls by their first key.
func keysOf(statements [][]*fakeCall) [][]string {
	var out [][]string
	for _, s := range statements {
		var keys []string
		for _, c := range s {
			keys = append(keys, c.keys[0])
		}
		out = append(out, keys)
	}
	return out
}

// sizes runs, on a fresh group, a first call that takes the lane, then one queued call of each of keys, releases
// every statement, and returns the number of calls each statement carried. It runs in a synctest bubble.
func sizes(t *testing.T, keys [][]string) []int {
	f, firstOut := heldGroup(0)
	ctx := context.Background()
	var outs []<-chan error
	for _, k := range keys {
		_, out := f.start(ctx, k...)
		outs = append(outs, out)
		synctest.Wait() // queued in this order
	}
	for len(outs) > 0 || firstOut != nil {
		f.release <- nil
		synctest.Wait()
		for len(outs) > 0 && len(outs[0]) > 0 {
			if err := <-outs[0]; err != nil {
				t.Fatal(err)
			}
			outs = outs[1:]
		}
		if firstOut != nil && len(firstOut) > 0 {
			<-firstOut
			firstOut = nil
		}
	}
	var n []int
	for _, s := range f.statements() {
		n = append(n, len(s))
	}
	return n
}

// A statement carries at most groupMax calls, and takes no more once they write groupMaxKeys keys; the others
// wait for the next one.
func TestGroupBoundsAStatement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if got, want := sizes(t, make([][]string, groupMax+2)), []int{1, groupMax, 2}; !slices.Equal(got, want) {
			t.Errorf("statements of %v calls, want %v", got, want)
		}
		var big [][]string
		for i := range 3 {
			keys := make([]string, groupMaxKeys*2/3)
			for k := range keys {
				keys[k] = fmt.Sprint(i, "/", k)
			}
			big = append(big, keys)
		}
		if got, want := sizes(t, big), []int{1, 2, 1}; !slices.Equal(got, want) {
			t.Errorf("statements of %v calls of %d keys each, want %v", got, groupMaxKeys*2/3, want)
		}
	})
}

// A failed statement fails every call it carried, and no other.
func TestGroupFailsEveryCallOfAFailedStatement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, firstOut := heldGroup(0)
		ctx := context.Background()
		_, a := f.start(ctx, "x")
		_, b := f.start(ctx, "y")
		synctest.Wait()
		f.release <- nil
		broken := errors.New("connection reset")
		synctest.Wait()
		f.release <- broken
		if err := <-firstOut; err != nil {
			t.Errorf("first call: %v", err)
		}
		for _, out := range []<-chan error{a, b} {
			if err := <-out; !errors.Is(err, broken) {
				t.Errorf("a call of the failed statement: %v, want %v", err, broken)
			}
		}
	})
}

// A call whose ctx ends while it waits is answered at once and never runs; one whose ctx ends while its statement
// runs is answered when the statement ends — ctx's error if it failed, nil if it committed — and the statement's
// ctx ends only when no call waits for it any more.
func TestGroupCallsThatGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, firstOut := heldGroup(0)
		bg := context.Background()
		ctx1, cancel1 := context.WithCancel(bg)
		gone, goneOut := f.start(ctx1, "gone")
		synctest.Wait()
		cancel1()
		if err := <-goneOut; !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiting call whose ctx ended: %v", err)
		}
		ctx2, cancel2 := context.WithCancel(bg)
		ctx3, cancel3 := context.WithCancel(bg)
		_, out2 := f.start(ctx2, "p")
		_, out3 := f.start(ctx3, "q")
		synctest.Wait()
		f.release <- nil
		<-firstOut
		synctest.Wait() // the statement of p and q runs
		st := f.statements()
		if len(st) != 2 || len(st[1]) != 2 || gone.statement != 0 {
			t.Fatalf("statements %v; the call that gave up ran in %d", st, gone.statement)
		}
		running := f.ctxs[1]
		answered := func(out <-chan error) bool {
			select {
			case err := <-out:
				t.Errorf("a call was answered %v before its statement ended", err)
				return true
			default:
				return false
			}
		}
		cancel2()
		synctest.Wait()
		answered(out2)
		if running.Err() != nil {
			t.Errorf("the statement's ctx ended while q still waits for it")
		}
		cancel3()
		synctest.Wait()
		if running.Err() == nil {
			t.Errorf("the statement's ctx did not end when no call waited for it any more")
		}
		answered(out2)
		answered(out3)
		f.release <- running.Err() // the statement, cancelled, fails
		for _, out := range []<-chan error{out2, out3} {
			if err := <-out; !errors.Is(err, context.Canceled) {
				t.Errorf("a call that gave up, its statement cancelled: %v", err)
			}
		}
		// A call that gave up while its statement ran, which then committed, is answered nil: it happened.
		_, again := f.start(bg)
		synctest.Wait()
		ctx4, cancel4 := context.WithCancel(bg)
		_, out4 := f.start(ctx4, "r")
		_, out5 := f.start(bg, "s")
		synctest.Wait()
		f.release <- nil
		<-again
		synctest.Wait()
		cancel4()
		synctest.Wait()
		answered(out4)
		if f.ctxs[len(f.ctxs)-1].Err() != nil {
			t.Errorf("the statement's ctx ended while s still waits for it")
		}
		f.release <- nil
		if err := <-out4; err != nil {
			t.Errorf("a call that gave up while its statement ran, which then committed: %v, want nil", err)
		}
		if err := <-out5; err != nil {
			t.Error(err)
		}
		synctest.Wait()
		if f.g.busy != 0 || len(f.g.queue) != 0 {
			t.Errorf("after the last statement: %d lanes busy, %d calls queued", f.g.busy, len(f.g.queue))
		}
	})
}

// With a bound (WithAcquireTimeout), a call that finds no lane within it fails with ErrPoolExhausted; one already
// taken into a statement waits for it.
func TestGroupWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, firstOut := heldGroup(time.Second)
		bg := context.Background()
		c, out := f.start(bg, "late")
		time.Sleep(time.Second + time.Millisecond) // the bubble's fake clock: it advances once every goroutine waits
		if err := <-out; !errors.Is(err, ErrPoolExhausted) || c.statement != 0 {
			t.Fatalf("a call waiting past the bound: %v (ran in statement %d), want ErrPoolExhausted", err, c.statement)
		}
		_, out2 := f.start(bg, "taken")
		synctest.Wait()
		f.release <- nil
		<-firstOut
		synctest.Wait()
		time.Sleep(2 * time.Second) // fake clock, as above: past the bound, in its statement
		select {
		case err := <-out2:
			t.Fatalf("a call taken into a running statement was answered %v before it ended", err)
		default:
		}
		f.release <- nil
		if err := <-out2; err != nil {
			t.Fatal(err)
		}
	})
}
